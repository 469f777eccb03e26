"""The exact dependences of a rewritten in-place kernel, under a limit of CPU time.

After a rewrite (``cache_write``, ``cache_read``, ``compute_at``) of an in-place kernel,
later steps are checked against the exact dependences of the rewritten program under
its schedule as it is then.  isl's dataflow analysis on a schedule with symbolic
``nparts`` splits and tilings can run for many minutes (on hang_m2's kernel, more
than 5), and one isl call cannot be interrupted; the analysis therefore runs in a
forked copy of the process (:func:`.time_limit.run_limited`) for at most
:data:`DEPENDENCE_SECONDS` of CPU.  Past that the step is refused with a
:class:`CheckEffortError` that says so: the schedule is neither accepted nor proved
illegal, and nothing unproved is accepted.

>>> import polyopt as po
>>> n = po.var("n")
>>> @po.kernel
... def double(A: po.f64[n]):
...     for i in range(1, n):
...         A[i] = A[i - 1] * 2.0
>>> [d.kind for d in limited_dependences(po.create_schedule(double).program)]
['flow']
"""

from __future__ import annotations

import json
import os

import islpy as isl

from ..deps.dataflow import Dependence, Dependences, compute_dependences
from ..domain.program import Program
from ..errors import CheckEffortError
from .time_limit import run_limited

def _seconds_from_environment(default: float = 20.0) -> float:
    try:
        value = float(os.environ.get("POLYOPT_DEPENDENCE_SECONDS", "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


DEPENDENCE_SECONDS = _seconds_from_environment()


def limited_dependences(program: Program, seconds: float | None = None) -> Dependences:
    """``compute_dependences(program)``, or :class:`CheckEffortError` when it needs more
    than ``seconds`` (default :data:`DEPENDENCE_SECONDS`) of CPU time."""
    limit = DEPENDENCE_SECONDS if seconds is None else seconds
    status, text = run_limited(lambda: _as_text(compute_dependences(program)), limit)
    if status == "ok":
        return _from_text(text)
    if status == "timeout":
        raise CheckEffortError(
            f"the exact dependences of the rewritten kernel took more than {limit:g} s of "
            "CPU (isl's dataflow analysis under this schedule) and were stopped; the step "
            "is neither accepted nor proved illegal. Apply the rewrite (cache_write, "
            "cache_read, compute_at) before the loop transformations, or use a constant "
            "split factor instead of nparts=; or raise the limit with "
            "POLYOPT_DEPENDENCE_SECONDS=N", what="the dependences of the rewritten kernel",
            limit=limit)
    return compute_dependences(program)  # it failed in the copy: fail here, as it does


def _as_text(deps: Dependences) -> str:
    return json.dumps([[d.kind, d.source, d.sink, d.array, str(d.relation), str(d.elements)]
                       for d in deps])


def _from_text(text: str) -> Dependences:
    return Dependences(tuple(
        Dependence(kind, source, sink, array, isl.Map(relation), isl.Map(elements))
        for kind, source, sink, array, relation, elements in json.loads(text)))

"""Exact dependences and what they allow: ``deps.dataflow`` (the dependences),
``deps.legality`` (is a schedule legal, does a loop carry a dependence), ``deps.races``,
``deps.reductions``, ``deps.equivalence`` and ``deps.effort`` (the bound on a check).

The package is also ``po.deps``, the function of the README: calling it gives the exact
dependences of a schedule's program.  (A plain function of that name would hide the
package, and ``import polyopt.deps.legality`` would fail.)

>>> import polyopt as po
>>> import polyopt.deps.legality
>>> A = po.placeholder((4,), name="A")
>>> B = po.compute((4,), lambda i: A[i] + 1, name="B")
>>> print(po.deps(po.create_schedule(B)))
(no dependences)
"""

import sys
import types

from ..domain.program import Program
from ..errors import InvalidArgumentError, public
from .dataflow import Dependences, compute_dependences


@public
def deps(schedule_or_program) -> Dependences:
    """Exact dependences of a schedule's program: ``print(po.deps(s))``."""
    program = getattr(schedule_or_program, "program", schedule_or_program)
    if not isinstance(program, Program):
        raise InvalidArgumentError(
            f"po.deps expects a schedule (po.create_schedule(...)) or its program, got "
            f"{type(schedule_or_program).__name__}")
    return compute_dependences(program)


class _CallablePackage(types.ModuleType):
    """This package, callable as :func:`deps`."""

    def __call__(self, *args, **kwargs) -> Dependences:
        return deps(*args, **kwargs)  # (its checks of the arguments: errors.public)


sys.modules[__name__].__class__ = _CallablePackage

"""Diamond tiling of a (time, space) band: all tiles of the first time band start at once.

A Jacobi-style stencil (``A[t + 1] = f(A[t][i - 1 .. i + 1])``) has dependence
distances ``(dt, di)`` with ``|di| <= dt``: they stay inside the cone between the
hyperplanes ``t + i`` and ``t - i``.  Tiling along those two hyperplanes gives diamonds
in ``(t, i)``: tile ``(u, v) = (floor((t + i)/size), floor((t - i)/size))``.  Every
dependence goes to the same tile or to ``u + 1``, ``v + 1`` or both, so the tiles of
one time band ``u + v`` are independent, and the first band already spans the whole space
(where a parallelogram wavefront starts with one tile).  :func:`diamond_tile` replaces
loops ``time, space`` by

    ``<time>.diamond`` (the time band ``u + v``, serial), ``<space>.diamond`` (``u``,
    parallel), ``time``, ``space``

so that the points of a tile run in their source order, and inner loops (``j`` of a
2-D stencil) stay where they were and may still be vectorized or, after a skew by
time, tiled.  Legality is checked like any other schedule: a stencil whose
dependences leave the cone (Gauss-Seidel's ``(0, 1)``) is refused with a concrete pair
of instances.

>>> import polyopt as po
>>> N, T = po.var("N"), po.var("T")
>>> @po.kernel
... def heat_1d(A: po.f64[2, N]):
...     for t in range(T):
...         for i in range(1, N - 1):
...             A[(t + 1) % 2, i] = 0.25 * (A[t % 2, i - 1] + 2.0 * A[t % 2, i] + A[t % 2, i + 1])
>>> s = po.create_schedule(heat_1d)
>>> band, tile = s["S0"].diamond_tile("t", "i", 8)
>>> [(a.name, a.kind) for a in s["S0"].axes]
[('t.diamond', 'serial'), ('i.diamond', 'parallel'), ('t', 'serial'), ('i', 'serial')]

As an affine map (what ``s[S].transform`` would take for a stage with loops ``t, i``):
``{ [t, i] -> [floor((t + i)/8) + floor((t - i)/8), floor((t + i)/8), t, i] }``.
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..domain.program import Program
from ..domain.schedule import Axis
from ..schedule_errors import LoopsNotAdjacentError
from .group import edit_band, fresh_axis_name
from .loops import _positive_int

# appended to the refusal of a diamond tiling (transform.check.suggest_repair)
DIAMOND_REPAIR = (
    "diamond tiles need every dependence to advance in time at least as far as it moves "
    "in space (|di| <= dt, as in Jacobi stencils), and this pair does not; time-tile "
    "after a skew instead (skew the space loop by time until every distance is "
    "non-negative, tile, then wavefront the tile loops)")


def diamond_tile(program: Program, stage: str, time: str, space: str, size: int
                 ) -> tuple[Program, tuple[str, str]]:
    """Replace the adjacent loops ``time, space`` of ``stage`` (and of the stages sharing
    them) by ``<time>.diamond, <space>.diamond, time, space`` with diamonds of ``size`` along
    ``time + space`` and ``time - space``; the tile loop is marked parallel (the
    caller's legality check refuses it when a dependence joins two tiles of one band)."""
    _positive_int(size, "diamond size")
    current = program.stage(stage)
    lo = current.axis(time) + 1
    if current.axis(space) != lo:
        raise LoopsNotAdjacentError("diamond tiling", stage, (time, space), "time first")
    val = isl.Val(size)
    names = {}

    def change(member, loops):
        t, i = loops
        u = t.value.add(i.value).scale_down_val(val).floor()
        v = t.value.sub(i.value).scale_down_val(val).floor()
        taken = {t.name, i.name}
        band = fresh_axis_name(member, f"{t.name}.diamond", taken)
        tile = fresh_axis_name(member, f"{i.name}.diamond", taken | {band})
        names[member.name] = (band, tile)
        return [Axis(band, u.add(v).coalesce()), Axis(tile, u.coalesce(), "parallel"),
                dataclasses.replace(t, kind="serial"), dataclasses.replace(i, kind="serial")]

    result = edit_band(program, stage, lo, lo + 1, change)
    return result, names[stage]

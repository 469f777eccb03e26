"""Loops shared between stages move together.

When stage ``P`` shares its first loops with stage ``C`` (``compute_with``,
``compute_at`` or statements of one loop nest), splitting or reordering one of those
loops changes it for both.  :func:`edit_band` applies a change to a band of loops
(levels ``lo..hi``, 1-based) of every stage that shares it, and keeps the attachment
depths of deeper stages right.

>>> import polyopt as po
>>> A = po.placeholder((8, 8), name="A")
>>> B = po.compute((8, 8), lambda i, j: A[i, j] * 2, name="B")
>>> program = po.create_schedule(B).program
>>> [s.name for s in band_group(program, "B", 1, 2)]
['B']
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ..domain.program import Program
from ..domain.schedule import Axis, StageRecord
from ..schedule_errors import (BandMismatchError, FusedPartsError, NotEnoughLoopsError,
                               PartlySharedLoopsError)


def band_group(program: Program, name: str, lo: int, hi: int) -> list[StageRecord]:
    """The stages that share loops ``lo..hi`` of stage ``name``: first the one that owns
    them (it is at the root or shares only outer loops), then the others in definition
    order."""
    stages = {s.name: s for s in program.stages}
    owner = stages[name]
    while owner.attach.kind == "with" and owner.attach.depth >= lo:
        if owner.attach.depth < hi:
            raise PartlySharedLoopsError(name, owner.attach.stage, lo, hi,
                                         owner.attach.depth)
        owner = stages[owner.attach.stage]
    group, queue = [owner], [owner]
    while queue:
        parent = queue.pop()
        for stage in program.stages:
            if stage.attach.kind == "with" and stage.attach.stage == parent.name:
                if lo <= stage.attach.depth < hi:
                    raise PartlySharedLoopsError(stage.name, parent.name, lo, hi,
                                                 stage.attach.depth, attached=True)
                if stage.attach.depth >= lo:
                    group.append(stage)
                    queue.append(stage)
    order = {s.name: k for k, s in enumerate(program.stages)}
    # the owner first (callers attach to it), then the stages sharing its loops
    return [owner] + sorted(group[1:], key=lambda s: order[s.name])


def edit_band(program: Program, name: str, lo: int, hi: int,
              change: Callable[[StageRecord, list[Axis]], list[Axis]], *,
              fused_parts: bool = False) -> Program:
    """Replace loops ``lo..hi`` of stage ``name`` and of every stage sharing them by
    ``change(stage, old_loops)``; all stages must produce the same number of loops.
    A loop fused of two symbolic extents (``Axis.fused_part``) is refused
    (:class:`FusedPartsError`) unless ``fused_parts`` (marking it parallel)."""
    group = band_group(program, name, lo, hi)
    for stage in group:
        if len(stage.axes) < hi:
            raise NotEnoughLoopsError(stage.name, len(stage.axes), hi)
        band = stage.axes[lo - 1:hi + 1]  # (and the loop after: a part of the last one)
        if not fused_parts and any(a.fused_part for a in band):
            outer = next(b for a, b in zip(band[1:], band) if a.fused_part) \
                if not band[0].fused_part else stage.axes[lo - 2]
            raise FusedPartsError(stage.name, outer.name)
    new_axes = {s.name: change(s, list(s.axes[lo - 1:hi])) for s in group}
    counts = {len(v) for v in new_axes.values()}
    if len(counts) != 1:
        raise BandMismatchError(name, tuple(s.name for s in group))
    grown = counts.pop() - (hi - lo + 1)
    members = {s.name for s in group}
    stages = []
    for stage in program.stages:
        if stage.name in members:
            axes = stage.axes[:lo - 1] + tuple(new_axes[stage.name]) + stage.axes[hi:]
            attach = stage.attach
            if attach.kind == "with" and attach.stage in members and attach.depth >= hi:
                attach = dataclasses.replace(attach, depth=attach.depth + grown)
            stage = dataclasses.replace(stage, axes=axes, attach=attach)
        stages.append(stage)
    return program.with_stages(tuple(stages))


def fresh_axis_name(stage: StageRecord, base: str, taken: set[str] | None = None) -> str:
    """``base`` or ``base.1``, ``base.2``... so that loop names in a stage stay unique."""
    used = {a.name for a in stage.axes} | (taken or set())
    candidate, counter = base, 0
    while candidate in used:
        counter += 1
        candidate = f"{base}.{counter}"
    return candidate

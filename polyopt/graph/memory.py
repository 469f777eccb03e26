"""Memory planning: every intermediate tensor at an offset of one arena.

Liveness comes from the execution order: a tensor is live from the step that computes
it to the last step that reads it (a view -- a reshape -- shares its input's memory, so
the two are one buffer live over both ranges).  Buffers are placed largest first, each
in the smallest free gap of the arena that holds it among the buffers already placed
whose lifetimes meet its own (best fit by size), else above them.  The report puts the
arena next to the lower bound (the most bytes live at once) and the naive sum.

>>> plan = plan_memory([("a", 0, 1, 100), ("b", 1, 2, 100), ("c", 2, 3, 100)])
>>> plan.offsets["a"] == plan.offsets["c"], plan.arena_bytes, plan.lower_bound
(True, 256, 256)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import public, public_methods

ALIGNMENT = 64


def _aligned(size: int) -> int:
    return -(-size // ALIGNMENT) * ALIGNMENT


@public_methods
@dataclass(frozen=True)
class MemoryPlan:
    """Offsets (bytes) of the buffers in the arena, their sizes and live step ranges."""

    offsets: dict
    sizes: dict
    intervals: dict
    arena_bytes: int
    lower_bound: int
    naive_bytes: int
    in_place: dict = field(default_factory=dict)  # tensor -> the input it was written over

    def report(self) -> str:
        ratio = self.arena_bytes / self.lower_bound if self.lower_bound else 1.0
        reused = (f"; {len(self.in_place)} tensors written in place over an input"
                  if self.in_place else "")
        return (f"arena {self.arena_bytes / 2**20:.2f} MiB for {len(self.offsets)} buffers: "
                f"{ratio:.3f}x the lower bound {self.lower_bound / 2**20:.2f} MiB (most bytes "
                f"live at once); the naive sum is {self.naive_bytes / 2**20:.2f} MiB{reused}")


def live_together(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two inclusive step ranges meet."""
    return a[0] <= b[1] and b[0] <= a[1]


@public
def plan_memory(buffers, in_place=()) -> MemoryPlan:
    """Place ``buffers``, each ``(name, first_step, last_step, bytes)``.  ``in_place``
    lists the tensors written over another's buffer, each ``(name, source, bytes)``:
    reported, and counted in the naive sum."""
    sizes = {name: _aligned(size) for name, _, _, size in buffers}
    intervals = {name: (first, last) for name, first, last, _ in buffers}
    order = sorted(sizes, key=lambda n: (-sizes[n], intervals[n][0], n))
    offsets: dict[str, int] = {}
    for name in order:
        busy = sorted((offsets[o], offsets[o] + sizes[o]) for o in offsets
                      if live_together(intervals[o], intervals[name]))
        offsets[name] = _best_fit(busy, sizes[name])
    arena = max((offsets[n] + sizes[n] for n in offsets), default=0)
    steps = {s for first, last in intervals.values() for s in (first, last)}
    bound = max((sum(sizes[n] for n in sizes if intervals[n][0] <= s <= intervals[n][1])
                 for s in steps), default=0)
    naive = sum(sizes.values()) + sum(_aligned(size) for _, _, size in in_place)
    return MemoryPlan(offsets, sizes, intervals, arena, bound, naive,
                      {name: source for name, source, _ in in_place})


def _best_fit(busy: list[tuple[int, int]], size: int) -> int:
    """The start of the smallest gap between the ``busy`` ranges that holds ``size``
    bytes, else the end of the highest one."""
    best, best_gap, cursor = None, None, 0
    for start, end in busy:
        gap = start - cursor
        if gap >= size and (best_gap is None or gap < best_gap):
            best, best_gap = cursor, gap
        cursor = max(cursor, end)
    return cursor if best is None else best


def overlapping_pairs(plan: MemoryPlan) -> list[tuple[str, str]]:
    """Pairs of buffers that are live together and share bytes (empty for a valid plan)."""
    names = sorted(plan.offsets)
    pairs = []
    for k, a in enumerate(names):
        for b in names[k + 1:]:
            if live_together(plan.intervals[a], plan.intervals[b]) and \
                    plan.offsets[a] < plan.offsets[b] + plan.sizes[b] and \
                    plan.offsets[b] < plan.offsets[a] + plan.sizes[a]:
                pairs.append((a, b))
    return pairs

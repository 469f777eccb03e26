"""Memory planning: every intermediate tensor at an offset of one arena.

Liveness comes from the execution order: a tensor is live from the step that computes
it to the last step that reads it (a view -- a reshape -- shares its input's memory, so
the two are one buffer live over both ranges).  Buffers are placed largest first, each
in the smallest free gap of the arena that holds it among the buffers already placed
whose lifetimes meet its own (best fit by size), else above them.  The report puts the
arena next to the lower bound (the most bytes live at once) and the naive sum.

Planning takes time near-linear in the number of buffers and the pairs of them live
together (a chain of 20,000 operators: 20,000 buffers, each live with one or two
others): the placed buffers are indexed by their step ranges (:class:`_Lifetimes`, a
segment tree), so a buffer looks only at those it meets, and the lower bound is one
sweep over the steps.

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
    placed = _Lifetimes(sorted({s for span in intervals.values() for s in span}))
    offsets: dict[str, int] = {}
    for name in order:
        busy = sorted((offsets[o], offsets[o] + sizes[o])
                      for o in placed.meeting(*intervals[name]))
        offsets[name] = _best_fit(busy, sizes[name])
        placed.add(name, *intervals[name])
    arena = max((offsets[n] + sizes[n] for n in offsets), default=0)
    naive = sum(sizes.values()) + sum(_aligned(size) for _, _, size in in_place)
    return MemoryPlan(offsets, sizes, intervals, arena, _most_live(sizes, intervals), naive,
                      {name: source for name, source, _ in in_place})


def _most_live(sizes: dict, intervals: dict) -> int:
    """The most bytes live at one step (one sweep over the starts and ends)."""
    events = sorted([(first, 0, sizes[n]) for n, (first, _) in intervals.items()]
                    + [(last, 1, -sizes[n]) for n, (_, last) in intervals.items()])
    live = most = 0
    for _, _, change in events:  # at one step, the starts count before the ends
        live += change
        most = max(most, live)
    return most


class _Lifetimes:
    """Named inclusive step ranges, indexed so that the names whose ranges meet a given
    range are found without looking at the others: a segment tree over the ``steps``
    (sorted, distinct), each range kept at the O(log n) nodes that cover it exactly.
    ``work`` counts the nodes and names visited (it grows with what is found).

    >>> index = _Lifetimes([0, 1, 2, 3, 5])
    >>> index.add("a", 0, 1); index.add("b", 2, 5); index.add("c", 3, 3)
    >>> sorted(index.meeting(1, 2)), sorted(index.meeting(5, 5))
    (['a', 'b'], ['b'])
    """

    def __init__(self, steps: list[int]):
        self.position = {step: k for k, step in enumerate(steps)}
        self.size = 1
        while self.size < len(steps):
            self.size *= 2
        self.names: dict[int, list] = {}          # node -> the ranges it covers
        self.holding = bytearray(2 * self.size)   # node -> its subtree covers some range
        self.work = 0

    def add(self, name, first: int, last: int) -> None:
        low, high = self.position[first] + self.size, self.position[last] + self.size + 1
        while low < high:
            if low & 1:
                self._keep(low, name)
                low += 1
            if high & 1:
                high -= 1
                self._keep(high, name)
            low, high = low // 2, high // 2

    def _keep(self, node: int, name) -> None:
        self.names.setdefault(node, []).append(name)
        while node and not self.holding[node]:
            self.holding[node] = 1
            node //= 2

    def meeting(self, first: int, last: int) -> set:
        """The names whose ranges meet ``[first, last]`` (both among the steps)."""
        low, high = self.position[first], self.position[last]
        found: set = set()
        stack = [(1, 0, self.size - 1)]
        while stack:
            node, start, end = stack.pop()
            if not self.holding[node] or end < low or start > high:
                continue
            held = self.names.get(node, ())
            self.work += 1 + len(held)
            found.update(held)
            if start < end:
                middle = (start + end) // 2
                stack.append((2 * node, start, middle))
                stack.append((2 * node + 1, middle + 1, end))
        return found


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
    """Pairs of buffers that are live together and share bytes (empty for a valid plan);
    one sweep over the steps, looking only at the buffers live together."""
    names = sorted(plan.offsets, key=lambda n: (plan.intervals[n][0], n))
    live: list[str] = []
    pairs = []
    for name in names:
        first = plan.intervals[name][0]
        live = [other for other in live if plan.intervals[other][1] >= first]
        for other in live:
            if plan.offsets[name] < plan.offsets[other] + plan.sizes[other] and \
                    plan.offsets[other] < plan.offsets[name] + plan.sizes[name]:
                pairs.append(tuple(sorted((name, other))))
        live.append(name)
    return sorted(pairs)

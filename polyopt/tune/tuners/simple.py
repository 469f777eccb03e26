"""Tuners without a model: random points, every point in order, a genetic search.

>>> import polyopt as po
>>> space = po.tune.ConfigSpace(); space.define_knob("x", list(range(10)))
>>> task = po.tune.Task("t", space, lambda c: None)
>>> sorted(RandomTuner(task, seed=1).next_batch(10)) == list(range(10))
True
>>> GridSearchTuner(task).next_batch(3)
[0, 1, 2]
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError, public_methods
from .base import Tuner

__all__ = ["GATuner", "GridSearchTuner", "RandomTuner"]


def random_unvisited(tuner: Tuner, count: int, taken=()) -> list[int]:
    """Up to ``count`` distinct unvisited points drawn at random."""
    size, taken = len(tuner.space), set(taken)
    left = size - len(tuner.visited) - len(taken - tuner.visited)
    count = min(count, max(left, 0))
    found: list[int] = []
    if size <= 4 * (len(tuner.visited) + len(taken) + count):  # (dense: enumerate)
        free = [i for i in range(size) if i not in tuner.visited and i not in taken]
        picks = tuner.rng.permutation(len(free))[:count]
        return [free[k] for k in picks]
    while len(found) < count:
        index = int(tuner.rng.integers(size))
        if index not in tuner.visited and index not in taken and index not in found:
            found.append(index)
    return found


@public_methods
class RandomTuner(Tuner):
    """Points drawn at random, none twice."""

    def next_batch(self, count: int) -> list[int]:
        return random_unvisited(self, count)


@public_methods
class GridSearchTuner(Tuner):
    """Every point in index order."""

    def __init__(self, task, **options):
        super().__init__(task, **options)
        self._next = 0

    def next_batch(self, count: int) -> list[int]:
        found = []
        while len(found) < count and self._next < len(self.space):
            if self._next not in self.visited:
                found.append(self._next)
            self._next += 1
        return found


@public_methods
class GATuner(Tuner):
    """A genetic search: a population of points (their knob values are the genes),
    the fittest (least cost) kept, children from two parents' genes, mutated."""

    def __init__(self, task, pop_size: int = 16, elite_num: int = 3,
                 mutation_prob: float = 0.1, **options):
        super().__init__(task, **options)
        if not (isinstance(pop_size, int) and isinstance(elite_num, int) and
                1 <= elite_num <= pop_size) or not 0 <= mutation_prob <= 1:
            raise InvalidArgumentError("GATuner: 1 <= elite_num <= pop_size (ints) and "
                                       "0 <= mutation_prob <= 1")
        self.pop_size, self.elite_num, self.mutation_prob = pop_size, elite_num, mutation_prob

    def _fitness(self, index: int) -> float:
        result = self.measured.get(index)
        return 0.0 if result is None or not result.ok else 1.0 / result.cost

    def next_batch(self, count: int) -> list[int]:
        scored = sorted(self.measured, key=self._fitness, reverse=True)
        population = [i for i in scored if self._fitness(i) > 0][:self.pop_size]
        if len(population) < 2:
            return random_unvisited(self, count)
        weights = np.array([self._fitness(i) for i in population])
        weights = weights / weights.sum()
        dims = self.space.dims
        found: list[int] = []
        for _ in range(count * 20):
            if len(found) >= count:
                break
            a, b = self.rng.choice(len(population), size=2, p=weights)
            genes_a = self.space.digits(population[a])
            genes_b = self.space.digits(population[b])
            cut = int(self.rng.integers(len(dims) + 1))
            child = genes_a[:cut] + genes_b[cut:]
            for position, size in enumerate(dims):
                if size > 1 and self.rng.random() < self.mutation_prob:
                    child[position] = int(self.rng.integers(size))
            index = self.space.index_of(child)
            if index not in self.visited and index not in found:
                found.append(index)
        if len(found) < count:  # (a converged population: fresh blood)
            found += random_unvisited(self, count - len(found), found)
        return found


def finite_costs(results) -> list[float]:
    return [r.cost for r in results if r.ok and math.isfinite(r.cost)]

"""The sub-nest under a loop cut into tiles, on isl maps: the pieces a tensorize matches.

A *tile* is one iteration of the loops outside the tensorized loop (the schedule's
first ``dim`` dimensions, its *outer values*); :func:`tile_positions` places every
instance of a statement at its tile and at its position relative to the tile's first
instance, which a match compares with the intrinsic's domain.  :class:`Mismatch` is
how a candidate is refused (with how far it got); the points give readable examples.

>>> import islpy as isl
>>> box_extent(isl.Set("{ [i, j] : 0 <= i < 4 and 2 <= j <= 9 }"), 1)
8
"""

from __future__ import annotations

import islpy as isl

from ..deps.counterexample import first_point
from ..domain.program import Program, Statement
from ..transform.check import loop_dimension


class Mismatch(Exception):
    """Where a sub-nest differs from an intrinsic: ``stage`` is how far the matcher got
    (0 the iteration domain, 1 the expression, 2 to 4 the accesses: rank, offsets,
    strides), ``kind`` names that part."""

    KINDS = ("domain", "expression", "access", "access", "access")

    def __init__(self, stage: int, message: str):
        super().__init__(message)
        self.stage, self.kind = stage, self.KINDS[stage]

    def __reduce__(self):
        return Mismatch, (self.stage, str(self))


def pick_dims(width: int, dims, params_of) -> isl.Map:
    names = [f"t{k}" for k in range(width)]
    text = f"{{ [{', '.join(names)}] -> [{', '.join(names[d] for d in dims)}] }}"
    return isl.Map(text).align_params(params_of.get_space())


def tile_maps(program: Program, stmt: str, dim: int, inner_dims):
    """``(outer, relative)``: each instance's outer loop values (the schedule's first
    ``dim`` dimensions) and its inner loop values relative to its tile's first instance."""
    row = program.schedule_of(stmt)
    width = row.dim(isl.dim_type.out)
    outer = row.apply_range(pick_dims(width, range(dim), row))
    inner = row.apply_range(pick_dims(width, inner_dims, row))
    tile = outer.reverse().apply_range(inner)
    first = tile.lexmin()
    relative = inner.sum(outer.apply_range(first).neg())
    return outer, relative


def tile_positions(program: Program, stmt: Statement, i_stmt: Statement, dim: int, inner_dims):
    """``(placed, tiles, expected)``: each instance at its tile (outer values O) and its
    position R in it (``D -> [O -> R]``), the tiles' positions (``O -> R``), and what
    they would be if every tile were the intrinsic's domain."""
    outer, relative = tile_maps(program, stmt.name, dim, inner_dims)
    placed = outer.range_product(relative)           # D -> [O -> R]
    tiles = placed.range().unwrap()                   # O -> R
    domain = anonymous(i_stmt.domain).align_params(tiles.get_space())
    return placed, tiles, isl.Map.from_domain_and_range(tiles.domain(), domain)


def anonymous(domain: isl.Set) -> isl.Set:
    return domain.reset_tuple_id()


def constant_in_tiles(program: Program, stmt: str, dim: int, axis) -> bool:
    """Whether loop ``axis`` has one iteration in every tile (it renames nothing)."""
    row = program.schedule_of(stmt)
    width = row.dim(isl.dim_type.out)
    at = loop_dimension(program, stmt, axis)
    outer = row.apply_range(pick_dims(width, range(dim), row))
    value = row.apply_range(pick_dims(width, [at], row))
    return outer.reverse().apply_range(value).is_single_valued()


def outer_of(program: Program, stmt: str, dim: int) -> isl.Map:
    row = program.schedule_of(stmt)
    return row.apply_range(pick_dims(row.dim(isl.dim_type.out), range(dim), row))


def box_extent(box: isl.Set, q: int) -> int | None:
    lo, hi = box.dim_min_val(q), box.dim_max_val(q)
    if not (lo.is_int() and hi.is_int()):
        return None
    return hi.to_python() - lo.to_python() + 1


def example_point(wrapped_or_set: isl.Set) -> tuple[list[int], list[int]]:
    """Small parameters and the first point for them (a stable, readable example)."""
    if wrapped_or_set.is_wrapping():
        return first_point(wrapped_or_set.unwrap())
    sample = wrapped_or_set.lexmin().sample_point()
    n_par = wrapped_or_set.dim(isl.dim_type.param)
    n_set = wrapped_or_set.dim(isl.dim_type.set)
    return ([sample.get_coordinate_val(isl.dim_type.param, k).to_python() for k in range(n_par)],
            [sample.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n_set)])


def point_image(relation: isl.Map, space: isl.Space, values) -> list[int] | None:
    point = isl.Set.universe(space)
    for q, v in enumerate(values):
        point = point.fix_val(isl.dim_type.set, q, isl.Val(v))
    image = relation.intersect_domain(point).range()
    if image.is_empty():
        return None
    sample = image.sample_point()
    return [sample.get_coordinate_val(isl.dim_type.set, k).to_python()
            for k in range(image.dim(isl.dim_type.set))]


def image_at(relation: isl.Map, params, values) -> list[int] | None:
    fixed = relation
    for k, v in enumerate(params):
        fixed = fixed.fix_val(isl.dim_type.param, k, isl.Val(v))
    domain = isl.Set.universe(fixed.get_space().domain())
    wrapped = domain
    for k, v in enumerate(values):
        wrapped = wrapped.fix_val(isl.dim_type.set, k, isl.Val(v))
    image = fixed.intersect_domain(wrapped).range()
    if image.is_empty():
        return None
    return example_point(image)[1]

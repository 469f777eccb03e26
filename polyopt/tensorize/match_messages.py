"""Why a sub-nest is not an intrinsic's: the messages of a refused tensorize.

Each names a tile (its outer loops' values, and the smallest sizes where it happens),
the loop or access that differs, and what to do (split by the intrinsic's extent, pad,
change the layout).

>>> import islpy as isl
>>> _relation_text(isl.Map("[n] -> { A[i, j] -> B[j, i] : 0 <= i < n }"))
'A[i, j] -> B[j, i]'
"""

from __future__ import annotations

import islpy as isl

from ..domain.program import Program
from .tiles import box_extent, example_point, image_at, point_image, tile_positions


def _outer_text(program: Program, stmt: str, values: list[int], dim: int) -> str:
    parts = []
    for d in range(dim):
        axis = program.axis_at(stmt, d)
        if axis is not None:
            parts.append(f"{axis.name}={values[d]}")
    return ", ".join(parts) or "the only tile"


def _params_text(program: Program, params: list[int], names) -> str:
    if not params:
        return ""
    return " when " + ", ".join(f"{n}={v}" for n, v in zip(names, params))


def domain_message(program, stmt, dim, inner_dims, loop_names, i_stmt, *,
                    strict: bool = False, no_full_tile: bool = False) -> str:
    _, tiles, expected = tile_positions(program, stmt, i_stmt, dim, inner_dims)
    domain = expected.range()
    diff = expected.subtract(tiles).union(tiles.subtract(expected)).intersect_params(
        program.context)
    params, values = example_point(diff.wrap())
    names = diff.get_space().get_var_names(isl.dim_type.param)
    outer_values, r = values[:dim], values[dim:]
    fixed = tiles
    for k, v in enumerate(params):
        fixed = fixed.fix_val(isl.dim_type.param, k, isl.Val(v))
    for k, v in enumerate(outer_values):
        fixed = fixed.fix_input_si(k, v) if hasattr(fixed, "fix_input_si") else \
            fixed.fix_val(isl.dim_type.in_, k, isl.Val(v))
    present = fixed.range()
    where = (f"in the tile at {_outer_text(program, stmt.name, outer_values, dim)}"
             f"{_params_text(program, params, names)}")
    for q, (loop, i_dim) in enumerate(zip(loop_names, i_stmt.dims)):
        extent = box_extent(domain, q)
        if present.is_empty():
            break
        have = box_extent(present, q)
        if have != extent:
            if have is not None and have > extent:
                why = "(the loop is longer)"
            elif no_full_tile:
                why = "and no tile of the loop is complete"
            elif strict:
                why = ("and strict=True refuses partial tiles (without it they run as "
                       "scalar code)")
            else:
                why = f"({extent} does not divide the loop's extent)"
            return (f"loop '{loop}' has {have} iteration(s) {where} but the intrinsic's "
                    f"dimension '{i_dim}' has extent {extent} {why}: split the loop by "
                    f"{extent} (or a multiple of it) so that its tiles are complete, or pad "
                    f"the tensors to a multiple of {extent}")
    missing = not expected.subtract(tiles).is_empty()
    point = ", ".join(f"{d}={v}" for d, v in zip(i_stmt.dims, r))
    return (f"the sub-nest's instances differ from the intrinsic's domain {where}: "
            f"the intrinsic's point ({point}) {'has no' if missing else 'is not the'} "
            f"instance of {stmt.name}{' there' if missing else ''} (loops "
            f"{', '.join(loop_names)})")


def access_message(program, stmt, access, i_access, buffer, offsets, expected, origin,
                    loop_names, dim, what, read_text) -> str:
    diff = offsets.subtract(expected).union(expected.subtract(offsets)).intersect_params(
        program.context)
    params, values = example_point(diff.wrap())
    names = diff.get_space().get_var_names(isl.dim_type.param)
    n_r = len(loop_names)
    outer_values, r = values[:dim], values[dim:dim + n_r]
    got = image_at(offsets, params, values[:dim + n_r])
    probe = i_access.relation.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(
        isl.dim_type.out)
    element = point_image(probe, probe.get_space().domain(), r)
    point = ", ".join(f"{n}={v}" for n, v in zip(loop_names, r))
    touched = ("touches nothing" if element is None else
               f"touches {buffer.name}[{', '.join(map(str, element))}]")
    return (f"the {what} {read_text} is not the intrinsic's '{buffer.name}' "
            f"({_relation_text(i_access.relation)}) relative to the buffer origin: in the "
            f"tile at {_outer_text(program, stmt.name, outer_values, dim)}"
            f"{_params_text(program, params, names)}, at {point} it "
            f"{'touches nothing' if got is None else 'is offset ' + str(tuple(got))} from the "
            f"origin where the intrinsic {touched}")


def _relation_text(relation: isl.Map) -> str:
    text = str(relation)
    body = text[text.index("{") + 1:].split(":")[0].rstrip(" }")
    return body.strip()

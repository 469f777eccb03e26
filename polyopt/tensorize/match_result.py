"""What an accepted tensorize records: the :class:`Match` and its :class:`Operand` buffers.

:func:`.match.match` makes them; the lowering (:mod:`polyopt.ast.intrinsic_calls`)
replaces the matched sub-nest by a call of the intrinsic on these operands.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .intrin import TensorIntrin


@dataclass(frozen=True)
class Operand:
    """One buffer of the intrinsic bound to an access of the statement: ``position`` is
    the index of the read in the value (pre-order), or None for the write."""

    buffer: int
    array: str
    stmt: str
    position: int | None
    strides: tuple            # per buffer dimension: an int, or an Expr of the array shape
    unit_dims: tuple[int, ...]  # per buffer dimension: the intrinsic dimension moving it


@dataclass(frozen=True)
class Match:
    """An accepted tensorize: what the lowering needs to replace the sub-nest."""

    stage: str
    axis: str
    intrin: TensorIntrin
    main: str
    init: str | None          # the init statement when it runs inside the sub-nest
    part: str                 # "body" or "update"
    dim: int                  # the schedule dimension of ``axis`` (main's row)
    inner_dims: tuple[int, ...]  # per intrinsic dimension, the schedule dimension
    operands: tuple[Operand, ...]
    # the tiles the intrinsic runs, as values of the schedule's first ``dim`` dimensions
    # (simplified within the tiles that exist); None: all of them.  The others (partial
    # tiles, when the extent does not divide) run as scalar code.
    full: isl.Set | None = None

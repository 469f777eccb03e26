"""Tensor expressions: the classic TVM language (``placeholder``, ``compute``,
reductions, scans, externs) as immutable expression trees."""

from . import expr as _expr
from .printer import render as _render

_expr.RENDERER[0] = _render  # expressions print as C-like text (te.printer)

"""Array annotations of kernel parameters: ``A: po.f64[N, N]``.

``po.f32``, ``po.f64``, ``po.i8``, ``po.u8``, ``po.i32`` and ``po.i64`` are element
types; subscripting one with a shape (integers, ``po.var`` and affine arithmetic on
them) gives an :class:`ArraySpec`.

>>> from ..te.tensor import var
>>> N = var("N")
>>> spec = f64[N + 1, 3]
>>> spec
f64[N + 1, 3]
>>> spec.dtype, len(spec.shape), f32[()].shape
('float64', 2, ())
"""

from __future__ import annotations

from dataclasses import dataclass

from ..te.expr import Expr
from ..te.tensor import placeholder


@dataclass(frozen=True, slots=True, eq=False)
class ArraySpec:
    """The dtype and shape of an array parameter."""

    short: str
    dtype: str
    shape: tuple[Expr, ...]

    def __repr__(self) -> str:
        return f"{self.short}[{', '.join(str(e) for e in self.shape)}]"


@dataclass(frozen=True, slots=True)
class ElementType:
    """An element type; ``f64[N, N]`` makes the annotation of an N x N array."""

    short: str
    dtype: str

    def __getitem__(self, shape) -> ArraySpec:
        shape = shape if isinstance(shape, tuple) else (shape,)
        # placeholder() checks every extent and raises InvalidArgumentError naming it
        checked = placeholder(shape, name=f"po.{self.short}[...]", dtype=self.dtype).shape
        return ArraySpec(self.short, self.dtype, checked)

    def __repr__(self) -> str:
        return f"po.{self.short}"


f32 = ElementType("f32", "float32")
f64 = ElementType("f64", "float64")
i8 = ElementType("i8", "int8")
u8 = ElementType("u8", "uint8")
i32 = ElementType("i32", "int32")
i64 = ElementType("i64", "int64")

"""Translate index expressions and conditions into exact isl objects.

An :class:`AffineSpace` knows the statement's dimensions (by axis) and the program's
parameters (by var name); it turns affine expressions (``2*h + kh - 1``,
``i // 4``, ``i % 4``) into ``isl.PwAff`` and conditions into ``isl.Set``.  Anything
that is not quasi-affine raises :class:`NonAffineError` naming the culprit.

>>> from ..te.expr import Var, IterVar, Const
>>> n = Var("n"); i = IterVar("i", Const(0, "int64", True), n)
>>> space = AffineSpace("S", (i,), ("i",), ("n",))
>>> str(space.pw_aff(i * 2 + n // 3))
'[n] -> { S[i] -> [(2i + floor((n)/3))] }'
"""

from __future__ import annotations

import islpy as isl

from ..errors import NonAffineError
from ..te.expr import (BinOp, Call, Cast, Compare, Const, Expr, IterVar, Logical, Var)
from ..te.printer import render

CTX = isl.DEFAULT_CONTEXT


def param_space(params: tuple[str, ...]) -> isl.Space:
    return isl.Space.create_from_names(CTX, set=[], params=list(params))


class AffineSpace:
    """The isl space of one statement: tuple ``name[dims]`` with parameters ``params``."""

    def __init__(self, name: str, axes: tuple[IterVar, ...], dims: tuple[str, ...],
                 params: tuple[str, ...]):
        space = isl.Space.create_from_names(CTX, set=list(dims), params=list(params))
        self.space = space.set_tuple_name(isl.dim_type.set, name)
        self._local = isl.LocalSpace.from_space(self.space)
        self._axis_pos = {id(axis): pos for pos, axis in enumerate(axes)}
        self._param_pos = {p: pos for pos, p in enumerate(params)}
        self.context = ""  # what is being translated, for error messages

    def universe(self) -> isl.Set:
        return isl.Set.universe(self.space)

    def dim(self, position: int) -> isl.PwAff:
        """Dimension ``position`` as a function."""
        return isl.PwAff.var_on_domain(self._local, isl.dim_type.set, position)

    def box(self, bounds: list[tuple[Expr, Expr]]) -> isl.Set:
        """The set ``lo_d <= dim_d < hi_d`` for every dimension d."""
        result = self.universe()
        for pos, (lo, hi) in enumerate(bounds):
            dim = self.dim(pos)
            result = result.intersect(dim.ge_set(self.pw_aff(lo)))
            result = result.intersect(dim.lt_set(self.pw_aff(hi)))
        return result

    def constant(self, value: int) -> isl.PwAff:
        aff = isl.Aff.zero_on_domain(self._local)
        return isl.PwAff.from_aff(aff.set_constant_val(isl.Val(str(int(value)))))

    def pw_aff(self, expr: Expr) -> isl.PwAff:
        """The exact quasi-affine function ``expr`` of the dimensions and parameters."""
        if isinstance(expr, Const) and isinstance(expr.value, int):
            return self.constant(expr.value)
        if isinstance(expr, IterVar) and id(expr) in self._axis_pos:
            return isl.PwAff.var_on_domain(self._local, isl.dim_type.set,
                                           self._axis_pos[id(expr)])
        if isinstance(expr, Var) and expr.name in self._param_pos:
            return isl.PwAff.var_on_domain(self._local, isl.dim_type.param,
                                           self._param_pos[expr.name])
        if isinstance(expr, Cast) and expr.value.weak:
            return self.pw_aff(expr.value)
        if isinstance(expr, Call) and expr.func == "neg":
            return self.pw_aff(expr.args[0]).neg()
        if isinstance(expr, Call) and expr.func in ("maximum", "minimum"):
            a, b = (self.pw_aff(x) for x in expr.args)
            return a.max(b) if expr.func == "maximum" else a.min(b)
        if isinstance(expr, BinOp):
            return self._binop(expr)
        raise self._error(expr, self._why(expr))

    def _binop(self, expr: BinOp) -> isl.PwAff:
        if expr.op in ("+", "-"):
            a, b = self.pw_aff(expr.a), self.pw_aff(expr.b)
            return a.add(b) if expr.op == "+" else a.sub(b)
        if expr.op == "*":
            a, b = self.pw_aff(expr.a), self.pw_aff(expr.b)
            if not (a.is_cst() or b.is_cst()):
                raise self._error(expr, f"'{expr.a}' times '{expr.b}' multiplies two "
                                        "non-constant terms")
            return a.mul(b)
        if expr.op in ("//", "%"):
            divisor = expr.b
            if not (isinstance(divisor, Const) and isinstance(divisor.value, int)
                    and divisor.value > 0):
                raise self._error(expr, f"'{expr.op}' is affine only by a positive integer "
                                        f"constant, not by '{divisor}'")
            a, val = self.pw_aff(expr.a), isl.Val(str(divisor.value))
            return a.scale_down_val(val).floor() if expr.op == "//" else a.mod_val(val)
        raise self._error(expr, "true division '/' is not affine; use '//' on integers")

    def _why(self, expr: Expr) -> str:
        from ..te.expr import TensorRead

        if isinstance(expr, TensorRead):
            return f"it reads tensor '{expr.tensor.name}' (data-dependent indexing)"
        if isinstance(expr, Const):
            return f"the constant {expr.value!r} is not an integer"
        if isinstance(expr, IterVar):
            return f"axis '{expr.name}' does not belong to this computation"
        if isinstance(expr, Var):
            return f"var '{expr.name}' is unknown here"
        return f"{type(expr).__name__} is not an affine operation"

    def condition(self, expr: Expr) -> isl.Set:
        """The exact set of points where the condition ``expr`` holds."""
        if isinstance(expr, Compare):
            a, b = self.pw_aff(expr.a), self.pw_aff(expr.b)
            method = {"<": "lt_set", "<=": "le_set", ">": "gt_set", ">=": "ge_set",
                      "==": "eq_set", "!=": "ne_set"}[expr.op]
            return getattr(a, method)(b)
        if isinstance(expr, Logical):
            parts = [self.condition(arg) for arg in expr.args]
            if expr.op == "not":
                return parts[0].complement()
            result = parts[0]
            for part in parts[1:]:
                result = result.intersect(part) if expr.op == "and" else result.union(part)
            return result.coalesce()
        raise self._error(expr, "it is not a comparison of affine expressions")

    def split_condition(self, expr: Expr) -> tuple[isl.Set, Expr | None]:
        """Split a conjunction into its affine part (a set) and the rest (or None)."""
        conjuncts = _conjuncts(expr)
        affine, rest = self.universe(), []
        for conj in conjuncts:
            try:
                affine = affine.intersect(self.condition(conj))
            except NonAffineError:
                rest.append(conj)
        residual = None
        if rest:
            residual = rest[0] if len(rest) == 1 else Logical("and", tuple(rest))
        return affine, residual

    def _error(self, expr: Expr, why: str) -> NonAffineError:
        where = f" in {self.context}" if self.context else ""
        return NonAffineError(
            f"'{render(expr)}'{where} is not affine: {why}. Indices, bounds and loop "
            "conditions must be sums of axes and vars times integer constants (with // and % "
            "by positive constants)"
        )


def _conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Logical) and expr.op == "and":
        return [c for arg in expr.args for c in _conjuncts(arg)]
    return [expr]



def aff_expression(aff: isl.Aff, inputs, params) -> Expr | None:
    """An integer-valued isl affine function as a tensor expression: input dimension
    ``d`` is the expression ``inputs[d]``, parameter ``p`` is ``params[p]`` (vars),
    isl's floor divisions are ``//``; None when a coefficient is not an integer.

    >>> i = IterVar("i", Const(0, "int64", True), Var("n"))
    >>> str(aff_expression(isl.Aff("{ [i] -> [(8 * floor(i / 8) - 1)] }"), (i,), ()))
    '8 * (i // 8) - 1'
    >>> str(aff_expression(isl.Aff("{ [i] -> [(i mod 6)] }"), (i,), ()))
    'i - 6 * (i // 6)'
    """
    if aff.get_denominator_val().to_python() != 1:
        return None
    terms: list[tuple[int, Expr]] = []  # (coefficient, expression)
    for kind, values in ((isl.dim_type.in_, inputs), (isl.dim_type.param, params)):
        for pos, value in enumerate(values):
            terms.append((aff.get_coefficient_val(kind, pos).to_python(), value))
    for pos in range(aff.dim(isl.dim_type.div)):
        coefficient = aff.get_coefficient_val(isl.dim_type.div, pos).to_python()
        if not coefficient:
            continue
        div = aff.get_div(pos)
        denominator = div.get_denominator_val()
        inner = aff_expression(div.scale_val(denominator), inputs, params)
        if inner is None:
            return None
        terms.append((coefficient, BinOp.make("//", inner, denominator.to_python())))
    constant = aff.get_constant_val().to_python()
    result = None
    for coefficient, value in terms:
        if not coefficient:
            continue
        size = abs(coefficient)
        term = value if size == 1 else BinOp.make("*", size, value)
        if result is None:
            result = term if coefficient > 0 else BinOp.make("-", 0, term)
        else:
            result = BinOp.make("+" if coefficient > 0 else "-", result, term)
    if result is None:
        return Const(constant, "int64", True)
    if constant:
        result = BinOp.make("+" if constant > 0 else "-", result, abs(constant))
    return result


def output_affs(function: isl.Map, params: tuple[str, ...]) -> list[isl.Aff] | None:
    """Each output of the single-valued map ``function`` as one quasi-affine expression
    of its inputs (over the parameters ``params``), or None when one is piecewise.

    >>> [str(a) for a in output_affs(isl.Map("{ [a, b] -> [b, 6a + b] }"), ())]
    ['{ [a, b] -> [(b)] }', '{ [a, b] -> [(6a + b)] }']
    """
    space = isl.Space.create_from_names(isl.DEFAULT_CONTEXT, set=[], params=list(params))
    values = function.align_params(space).as_pw_multi_aff()
    affs = []
    for dim in range(values.dim(isl.dim_type.out)):
        pieces: list[isl.Aff] = []
        values.get_pw_aff(dim).foreach_piece(lambda _, aff: pieces.append(aff))
        if len(pieces) != 1:
            return None
        affs.append(pieces[0])
    return affs


def parts(union) -> list:
    """The maps of an ``isl.UnionMap`` (the sets of an ``isl.UnionSet``), as a list.

    >>> [str(m) for m in parts(isl.UnionMap("{ A[i] -> B[i] }"))]
    ['{ A[i] -> B[i] }']
    """
    found: list = []
    (union.foreach_map if isinstance(union, isl.UnionMap) else union.foreach_set)(found.append)
    return found

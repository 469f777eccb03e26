"""Walk a kernel's body: loops, ``if`` guards and assignments to array elements.

The result is one :class:`Assignment` per assignment in textual order, each with the
loops that enclose it (shared :class:`Loop` objects) and the guards on its path.
Anything outside the supported subset raises :class:`~polyopt.errors.FrontendError`
naming the line.

>>> import ast
>>> from .scope import Scopes
>>> from .source import Source
>>> from ..te.tensor import placeholder, var
>>> N, A = var("N"), placeholder((var("N"),), name="A")
>>> tree = ast.parse('''
... def k(A):
...     for i in range(1, N, 2):
...         if i < N - 1:
...             A[i] += A[i + 1]
... ''').body[0]
>>> parser = Parser(tree, Source("k", "k.py", 1), Scopes({"N": N}, {}, {"A": A}), ("N",))
>>> [(a.line, [l.var.name for l in a.loops], str(a.value)) for a in parser.parse()]
[(5, ['i'], 'A[i] + A[i + 1]')]
"""

from __future__ import annotations

import ast
import builtins
import types
from dataclasses import dataclass

import islpy as isl

from .. import dtypes
from ..domain.affine import AffineSpace
from ..errors import NonAffineError, TemporaryScalarError
from ..names import NameGenerator
from ..te.expr import Const, Expr, IterVar, TensorRead, Var
from ..te.tensor import if_then_else
from .exprs import Translator
from .scope import LoopName, Scopes
from .source import Source

_AUG_OPS = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__"}
_UNSUPPORTED = {
    ast.While: "'while' loops are not supported; write 'for x in range(lo, hi, step)'",
    ast.Break: "'break' is not supported: loop bounds must be known before the loop runs",
    ast.Continue: "'continue' is not supported; guard the rest of the body with 'if'",
    ast.Return: "'return' is not supported; a kernel writes its results into its array "
                "parameters",
    ast.Expr: "an expression statement (such as a call) has no effect here and is not "
              "supported; assign the value to an array element",
    ast.AnnAssign: "annotated assignments are not supported; write 'name = value'",
}


@dataclass(frozen=True, slots=True, eq=False)
class Loop:
    """``for var in range(var.lo, var.hi, step)``; compared by identity."""

    var: IterVar
    step: int
    line: int


@dataclass(frozen=True, slots=True)
class Guard:
    """An ``if`` condition on the path to a statement; ``holds`` is False in ``else``."""

    cond: Expr
    holds: bool


@dataclass(frozen=True, slots=True)
class Assignment:
    """``target = value`` at ``line``, inside ``loops`` (outermost first) where ``guards`` hold."""

    loops: tuple[Loop, ...]
    guards: tuple[Guard, ...]
    target: TensorRead
    value: Expr
    line: int


def iteration_domain(space: AffineSpace, loops, guards) -> isl.Set:
    """The points of ``space`` (one dimension per loop) that the loops and guards allow."""
    result = space.universe()
    for loop in loops:
        x, lo = loop.var, loop.var.lo
        result = result.intersect(space.condition(x >= lo)).intersect(
            space.condition(x < loop.var.hi))
        if loop.step != 1:
            result = result.intersect(space.condition((x - lo) % loop.step == 0))
    for guard in guards:
        where = space.condition(guard.cond)
        result = result.intersect(where) if guard.holds else result.subtract(where)
    return result.coalesce()


def local_names(tree: ast.FunctionDef) -> frozenset[str]:
    """Every name the function binds (Python makes them local to it)."""
    names = {a.arg for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return frozenset(names)


def outer_vars(tree: ast.FunctionDef, scopes: Scopes) -> list[Var]:
    """The po.var objects the body refers to by a name of the closure or globals."""
    local = local_names(tree)
    found = []
    for node in ast.walk(ast.Module(body=tree.body, type_ignores=[])):
        value = _outer_value(node, scopes, local)
        if isinstance(value, Var):
            found.append(value)
    return found


def _outer_value(node: ast.AST, scopes: Scopes, local: frozenset[str]):
    """What a global name or a module attribute (``sizes.N``) denotes, or None."""
    if isinstance(node, ast.Name) and node.id not in local:
        return scopes.resolve_outer(node.id)
    if isinstance(node, ast.Attribute):
        base = _outer_value(node.value, scopes, local)
        if isinstance(base, types.ModuleType):
            return getattr(base, node.attr, None)
    return None


class Parser:
    """Collects the assignments of a kernel body; ``params`` are the program's var names."""

    def __init__(self, tree: ast.FunctionDef, source: Source, scopes: Scopes,
                 params: tuple[str, ...]):
        self.tree = tree
        self.source = source
        self.scopes = scopes
        self.params = params
        self.translate = Translator(source, scopes, local_names(tree))
        self.reserved = set(params) | {t.name for t in scopes.params.values()}
        self.loops: list[Loop] = []
        self.guards: list[Guard] = []
        self.assignments: list[Assignment] = []

    def parse(self) -> list[Assignment]:
        self._block(self.tree.body)
        return self.assignments

    def _block(self, body: list[ast.stmt]) -> None:
        for node in body:
            self._statement(node)

    def _statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.For):
            self._for(node)
        elif isinstance(node, ast.If):
            self._if(node)
        elif isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.source.error(node, "chained assignment 'a = b = value' is not "
                                              "supported; assign one target at a time")
            self._check_target(node.targets[0], node)
            self._assign(node.targets[0], self.translate.expr(node.value), node)
        elif isinstance(node, ast.AugAssign):
            self._augassign(node)
        elif isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(
                node.value, ast.Constant) and isinstance(node.value.value, str)):
            return  # pass, docstrings and comments written as strings
        else:
            message = _UNSUPPORTED.get(type(node), f"'{type(node).__name__}' statements are "
                                                   "not supported in a kernel")
            raise self.source.error(node, message)

    # -- loops and guards -------------------------------------------------------------
    def _for(self, node: ast.For) -> None:
        if node.orelse:
            raise self.source.error(node, "'for ... else' is not supported")
        if not isinstance(node.target, ast.Name):
            raise self.source.error(node, "the loop variable must be a single name")
        name = node.target.id
        self._check_assignable(name, node, "a loop variable")
        lo, hi, step = self._range(node.iter)
        taken = self.reserved | {loop.var.name for loop in self.loops}
        var = IterVar(NameGenerator(reserved=taken).fresh(name), lo, hi)
        loop = Loop(var, step, self.source.line(node))
        self._check_affine(node, self.loops + [loop], self.guards,
                           f"the bounds of loop '{name}'")
        written = {self.scopes.params[n].name for n in _written_params(node.body)
                   if n in self.scopes.params}
        self.scopes.mark_written(written, loop.line)  # later iterations see these writes
        self.scopes.push()
        self.scopes.bind_loop(name, var, loop.line)
        self.loops.append(loop)
        self._block(node.body)
        self.loops.pop()
        self.scopes.pop()
        self.scopes.end_loop(name, loop.line)

    def _range(self, node: ast.expr) -> tuple[Expr, Expr, int]:
        if not (isinstance(node, ast.Call) and self._is_range(node.func)):
            raise self.source.error(node, f"loops must be 'for x in range(...)', not over "
                                          f"'{ast.unparse(node)}'")
        if node.keywords or not 1 <= len(node.args) <= 3 or any(
                isinstance(a, ast.Starred) for a in node.args):
            raise self.source.error(node, "range() takes 1 to 3 positional arguments")
        args = [self.translate.expr(a) for a in node.args]
        if len(args) == 1:
            args.insert(0, Const(0, "int64", True))
        if len(args) == 2:
            return args[0], args[1], 1
        step = args[2]
        if not (isinstance(step, Const) and isinstance(step.value, int) and step.value > 0):
            raise self.source.error(node, f"the step of range() must be a positive integer "
                                          f"constant, got '{ast.unparse(node.args[2])}'")
        return args[0], args[1], step.value

    def _is_range(self, func: ast.expr) -> bool:
        return (isinstance(func, ast.Name) and not self.translate.is_local(func.id)
                and self.scopes.resolve_outer(func.id) is builtins.range)

    def _if(self, node: ast.If) -> None:
        cond = self.translate.expr(node.test)
        if cond.dtype != dtypes.BOOL:
            raise self.source.error(node, f"the condition '{ast.unparse(node.test)}' must be a "
                                          "comparison such as i < N - 1")
        self._check_affine(node, self.loops, self.guards + [Guard(cond, True)],
                           "an 'if' condition", data_hint=True)
        before = self.scopes.snapshot()
        self._branch(node.body, Guard(cond, True))
        after_then = self.scopes.snapshot()
        self.scopes.restore(before)
        if node.orelse:
            self._branch(node.orelse, Guard(cond, False))
        self.scopes.merge(after_then)

    def _branch(self, body: list[ast.stmt], guard: Guard) -> None:
        self.guards.append(guard)
        self.scopes.push()
        self._block(body)
        self.scopes.pop()
        self.guards.pop()

    def _check_affine(self, node, loops, guards, what: str, data_hint: bool = False) -> None:
        space = AffineSpace("loop", tuple(lp.var for lp in loops),
                            tuple(lp.var.name for lp in loops), self.params)
        space.context = what
        try:
            iteration_domain(space, loops, guards)
        except NonAffineError as err:
            hint = (" (to choose a value by data, use po.if_then_else in the assigned value)"
                    if data_hint else "")
            raise self.source.error(node, f"{err}{hint}") from err

    # -- assignments ------------------------------------------------------------------
    def _check_target(self, target: ast.expr, node: ast.stmt) -> None:
        if not isinstance(target, (ast.Subscript, ast.Name)):
            raise self.source.error(node, f"assigning to '{ast.unparse(target)}' is not "
                                          "supported; assign to an array element or a name")

    def _assign(self, target: ast.expr, value: Expr, node: ast.stmt) -> None:
        if isinstance(target, ast.Subscript):
            self._write(self.translate.element(target), value, node)
        else:
            self._temp(target.id, value, node)

    def _augassign(self, node: ast.AugAssign) -> None:
        method = _AUG_OPS.get(type(node.op))
        if method is None:
            raise self.source.error(node, "only +=, -=, *= and /= are supported")
        self._check_target(node.target, node)
        if isinstance(node.target, ast.Subscript):
            current: Expr = self.translate.element(node.target)
        else:
            current = self.translate.expr(ast.Name(node.target.id, ast.Load(),
                                                   lineno=node.lineno))
        value = self.translate.expr(node.value)
        self._assign(node.target, getattr(current, method)(value), node)

    def _write(self, target: TensorRead, value: Expr, node: ast.stmt) -> None:
        if value.dtype == dtypes.BOOL:
            value = if_then_else(value, Const(1, "int8"), Const(0, "int8"))
        line = self.source.line(node)
        self.assignments.append(Assignment(tuple(self.loops), tuple(self.guards), target,
                                           value, line))
        self.scopes.mark_written([target.tensor.name], line)

    def _temp(self, name: str, value: Expr, node: ast.stmt) -> None:
        self._check_assignable(name, node, "a scalar temporary")
        binding = self.scopes.lookup(name)
        if binding is not None and not self.scopes.in_current_block(name):
            raise self.source.error(node, (
                f"the scalar temporary '{name}' was assigned outside this loop or branch "
                f"(line {binding.line}); re-assigning it here would carry its value across "
                "loop iterations or make it depend on the branch taken, and only plain "
                "forward substitution is supported"), TemporaryScalarError, name=name,
                problem="reassigned")
        self.scopes.bind_temp(name, value, self.source.line(node))

    def _check_assignable(self, name: str, node: ast.stmt, what: str) -> None:
        if name in self.scopes.params:
            raise self.source.error(node, f"assigning to the parameter '{name}' is not "
                                          f"supported; assign to its elements, {name}[...] = ...")
        if isinstance(self.scopes.lookup(name), LoopName) and what != "a loop variable":
            raise self.source.error(node, f"assigning to the loop variable '{name}' is not "
                                          "supported")


def _written_params(body: list[ast.stmt]) -> set[str]:
    """Names ``A`` of every ``A[...] = ...`` or ``A[...] op= ...`` in ``body``."""
    names = set()
    for stmt in body:
        for node in ast.walk(stmt):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AugAssign) else [])
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    names.add(target.value.id)
    return names

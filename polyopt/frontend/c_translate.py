"""Rewrite a C function's scop as the Python kernel ``po.kernel`` parses.

There is one path from a loop nest to a :class:`~polyopt.domain.program.Program`:
the C statements become the Python ``ast`` of an equivalent ``@po.kernel`` function
(line numbers kept), which :func:`~polyopt.frontend.kernel.kernel_from_tree` parses
like any other.  The correspondence:

- ``int`` and ``long`` parameters are sizes (``po.var``; unsigned ones are refused:
  C's modular arithmetic is not followed); array parameters ``double A[N][M + 1]``
  are array parameters; ``float``/``double`` scalar parameters are 0-d arrays
  (``alpha`` reads ``alpha[()]``);
- ``for (i = lo; i < hi; i += s)`` is ``for i in range(lo, hi, s)`` (``<=``, ``i++``,
  ``++i``, ``i = i + s`` too); a decreasing loop ``for (i = hi; i >= lo; i--)`` runs
  over ``-i`` (``for i in range(-hi, -lo + 1)``, and ``i`` reads ``-i``);
- ``if``/``else``, ``=``, ``+= -= *= /= %=``, ``?:`` (``a < b ? a : b`` is ``min``),
  ``&& || !``, ``sqrt exp log tanh fabs fmin fmax pow floor ceil trunc round sin cos
  exp2 log2 log10`` (and their ``f`` forms) with C's argument and result types; expressions keep C's types and conversions and
  ``/`` ``%`` truncate toward zero (:mod:`~polyopt.frontend.c_exprs`);
- local scalars are forward-substituted temporaries where that is exact, otherwise
  (a value carried across iterations, such as an accumulator) 0-d scratch arrays, as
  pet does; local arrays are scratch arrays; a scalar initialized where it is declared
  before the scop (``double eps = 0.1;``) is assigned first in the scop;
- ``a = b = v`` is ``b = v; a = b``; casts between the element types convert as C
  does (``(int)x`` truncates toward zero), and so does every assignment;
- file-level typedefs of plain types (``typedef char base;``) are resolved.

Anything else raises :class:`~polyopt.errors.FrontendError` with the file and line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..errors import FrontendError
from .c_exprs import CExpressions, Typed

_ELEMENT_TYPES = {
    ("double",): "f64", ("float",): "f32", ("int",): "i32", ("signed", "int"): "i32",
    ("long",): "i64", ("long", "int"): "i64", ("long", "long"): "i64",
    ("long", "long", "int"): "i64", ("char",): "i8", ("signed", "char"): "i8",
    ("unsigned", "char"): "u8",
}
_SIZE_TYPES = {("int",): "i32", ("signed", "int"): "i32", ("long",): "i64",
               ("long", "int"): "i64", ("long", "long"): "i64", ("long", "long", "int"): "i64"}
_UNSIGNED_SIZES = {("unsigned",), ("unsigned", "int"), ("size_t",), ("unsigned", "long")}
_AUG = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%"}
# Names the generated Python refers to: a C identifier equal to one is renamed.
HELPER_NAMES = frozenset({"range", "min", "max", "math", "libm", "f32", "f64", "i8", "u8",
                          "i32", "i64"})


@dataclass
class CParam:
    """A parameter of the C function: ``kind`` is "size", "scalar" or "array"."""

    name: str
    kind: str
    ctype: str          # C element type, e.g. "double"
    dims: tuple = ()    # C text of each extent, for arrays


@dataclass
class Translation:
    """The Python kernel of a C function and what the C side needs to call it again."""

    tree: ast.FunctionDef
    sizes: list[str]                    # int parameters (po.var names)
    params: list[CParam]                # every C parameter, in order
    temporaries: frozenset[str]         # scratch arrays (local scalars and arrays)
    scalar_types: dict[str, str] = field(default_factory=dict)  # local scalar -> short type


class CTranslator(CExpressions):
    """Builds the Python ``FunctionDef`` of one C function's scop."""

    element_types = _ELEMENT_TYPES

    def __init__(self, func, items: list, declarations: list, filename: str,
                 scalar_arrays: frozenset[str] = frozenset()):
        from pycparser import c_generator
        self.func = func
        self.items = items
        self.filename = filename
        self.name = func.decl.name
        self.show = c_generator.CGenerator().visit
        self.scalar_arrays = set(scalar_arrays)  # local scalars kept as 0-d arrays
        self.sizes: list[str] = []
        self.params: list[CParam] = []
        self.ended_loops: dict[str, int] = {}  # a loop variable -> the line of its loop
        self.types: dict[str, str] = {}      # C name -> short element type ("i32", "f64")
        self.arrays: dict[str, int] = {}     # array name -> rank (0 for scalar arrays)
        self.local_scalars: dict[str, str] = {}
        self.initialized: list = []          # scalars initialized before the scop
        self.local_arrays: dict[str, object] = {}  # name -> Decl
        self.loops: dict[str, bool] = {}     # active loop variables -> reversed
        self.loop_types: dict[str, str] = {}  # active loop variables -> C type
        self.loop_lows: dict[str, int | None] = {}  # active loop variables -> lower bound
        self.weak_scalars: dict[str, bool] = {}  # local int scalars holding index values
        self._declarations(declarations)

    # -- errors -----------------------------------------------------------------------
    def error(self, node, message: str) -> FrontendError:
        line = node.coord.line if node is not None and node.coord else self.func.coord.line
        filename = (node.coord.file if node is not None and node.coord and node.coord.file
                    else self.filename)
        return FrontendError(f'File "{filename}", line {line}, in function \'{self.name}\': '
                             f"{message}")

    def _line(self, node) -> int:
        return node.coord.line if node is not None and node.coord else self.func.coord.line

    # -- declarations -------------------------------------------------------------------
    def _declarations(self, declarations: list) -> None:
        from pycparser import c_ast
        args = self.func.decl.type.args
        for decl in (args.params if args is not None else []):
            if isinstance(decl, c_ast.Typename) and self._base_type(decl.type) == ("void",):
                continue
            if isinstance(decl, (c_ast.EllipsisParam, c_ast.Typename)) or decl.name is None:
                raise self.error(decl, "every parameter needs a name and a type")
            self._parameter(decl)
        for decl in declarations:
            self._local(decl, before_scop=True)

    def _parameter(self, decl) -> None:
        from pycparser import c_ast
        name = self.ident(decl.name, decl)
        kind = decl.type
        if isinstance(kind, c_ast.TypeDecl):
            names = tuple(n for n in self._base_type(kind) if n != "const")
            if names in _UNSIGNED_SIZES:
                raise self.error(decl, f"the size '{decl.name}' is unsigned; C computes with "
                                       "unsigned values modulo 2**32 or 2**64, which polyopt "
                                       "does not follow: declare it int or long")
            if names in _SIZE_TYPES:
                self.sizes.append(name)
                self.types[name] = _SIZE_TYPES[names]
                self.params.append(CParam(name, "size", " ".join(names)))
                return
            short = self._element_type(names, decl)
            self.types[name] = short
            self.arrays[name] = 0
            self.params.append(CParam(name, "scalar", " ".join(names)))
            return
        if isinstance(kind, c_ast.ArrayDecl):
            dims, base = self._array_dims(kind, decl)
            self.types[name] = self._element_type(base, decl)
            self.arrays[name] = len(dims)
            self.params.append(CParam(name, "array", " ".join(base), tuple(dims)))
            return
        raise self.error(decl, f"parameter '{decl.name}' is a pointer; declare arrays with "
                               f"their sizes, e.g. double {decl.name}[N][M] (C99)")

    def _local(self, decl, before_scop: bool) -> None:
        from pycparser import c_ast
        name = self.ident(decl.name, decl)
        if isinstance(decl.type, c_ast.TypeDecl):
            if before_scop and decl.init is not None:
                self.initialized.append(decl)  # assigned first in the scop (as C runs it)
            self.types[name] = self._element_type(self._base_type(decl.type), decl)
            self.local_scalars[name] = self.types[name]
            return
        if isinstance(decl.type, c_ast.ArrayDecl):
            if decl.init is not None:
                raise self.error(decl, f"array '{decl.name}' has an initializer; assign its "
                                       "elements in loops instead")
            dims, base = self._array_dims(decl.type, decl)
            self.types[name] = self._element_type(base, decl)
            self.arrays[name] = len(dims)
            self.local_arrays[name] = dims
            return
        raise self.error(decl, f"the declaration of '{decl.name}' is not supported (only "
                               "scalars and arrays with sizes)")

    def _array_dims(self, kind, decl):
        from pycparser import c_ast
        dims = []
        while isinstance(kind, c_ast.ArrayDecl):
            if kind.dim is None:
                raise self.error(decl, f"array '{decl.name}' needs the size of every "
                                       "dimension, e.g. double A[N][M]")
            dims.append(kind.dim)
            kind = kind.type
        if not isinstance(kind, c_ast.TypeDecl):
            raise self.error(decl, f"'{decl.name}' must be an array of numbers")
        return dims, self._base_type(kind)

    @staticmethod
    def _base_type(kind) -> tuple:
        from pycparser import c_ast
        inner = getattr(kind, "type", None)
        if isinstance(inner, c_ast.IdentifierType):
            return tuple(inner.names)
        return ("?",)

    def _element_type(self, names: tuple, decl) -> str:
        short = _ELEMENT_TYPES.get(tuple(n for n in names if n not in ("const",)))
        if short is None:
            raise self.error(decl, f"the type '{' '.join(names)}' of '{decl.name}' is not "
                                   "supported; use double, float, int, long, char or "
                                   "unsigned char")
        return short

    def ident(self, name: str, node) -> str:
        return name + "_" if name in HELPER_NAMES else name

    # -- the function ---------------------------------------------------------------------
    def translate(self) -> Translation:
        body = [s for decl in self.initialized for s in self._store_init(decl)]
        body += self._block(self.items)
        scratch = frozenset(self.scalar_arrays) | frozenset(self.local_arrays)
        args = []
        for p in self.params:
            if p.kind == "size":
                continue
            dims = [self.size_expr(d) for d in p.dims] if p.kind == "array" else []
            args.append(self._arg(p.name, self.types[p.name], dims, self.func))
        for name, dims in self.local_arrays.items():
            args.append(self._arg(name, self.types[name],
                                  [self.size_expr(d) for d in dims], self.func))
        for name in sorted(self.scalar_arrays):
            args.append(self._arg(name, self.types[name], [], self.func))
        line = self._line(self.func)
        tree = ast.FunctionDef(
            name=self.name, args=ast.arguments(posonlyargs=[], args=args, vararg=None,
                                               kwonlyargs=[], kw_defaults=[], kwarg=None,
                                               defaults=[]),
            body=body or [ast.Pass(lineno=line, col_offset=0)], decorator_list=[],
            returns=None, type_params=[], lineno=line, col_offset=0)
        ast.fix_missing_locations(tree)
        return Translation(tree, self.sizes, self.params, scratch,
                           {n: t for n, t in self.local_scalars.items()
                            if n in self.scalar_arrays})

    def _arg(self, name: str, short: str, dims: list, node) -> ast.arg:
        line = self._line(node)
        elts = ast.Tuple(elts=dims, ctx=ast.Load(), lineno=line, col_offset=0)
        annotation = ast.Subscript(value=ast.Name(short, ast.Load(), lineno=line, col_offset=0),
                                   slice=elts, ctx=ast.Load(), lineno=line, col_offset=0)
        return ast.arg(arg=name, annotation=annotation, lineno=line, col_offset=0)

    def size_expr(self, node) -> ast.expr:
        """An array extent: integer arithmetic on sizes and constants."""
        return self.affine(node)

    # -- statements -----------------------------------------------------------------------
    def _block(self, items) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for item in items or []:
            out.extend(self.statement(item))
        return out

    def statement(self, node) -> list[ast.stmt]:
        from pycparser import c_ast
        line = self._line(node)
        if isinstance(node, c_ast.Compound):
            return self._block(node.block_items)
        if isinstance(node, (c_ast.EmptyStatement, c_ast.Pragma)):
            return []
        if isinstance(node, c_ast.For):
            return [self._for(node)]
        if isinstance(node, c_ast.If):
            test = self.cond(node.cond)
            body = self.statement(node.iftrue) or [ast.Pass(lineno=line, col_offset=0)]
            orelse = self.statement(node.iffalse) if node.iffalse is not None else []
            return [ast.If(test=test, body=body, orelse=orelse, lineno=line, col_offset=0)]
        if isinstance(node, c_ast.Assignment):
            inner = node.rvalue
            if isinstance(inner, c_ast.Assignment) and node.op == "=":
                # a = b = v: b = v, then a = b
                return self.statement(inner) + [self._assignment(
                    c_ast.Assignment("=", node.lvalue, inner.lvalue, node.coord))]
            return [self._assignment(node)]
        if isinstance(node, c_ast.Decl):
            return self._declaration(node)
        if isinstance(node, c_ast.DeclList):
            return [s for decl in node.decls for s in self._declaration(decl)]
        if isinstance(node, c_ast.UnaryOp) and node.op in ("p++", "++", "p--", "--"):
            raise self.error(node, f"'{self.show(node)}' as a statement is not supported; "
                                   "write x += 1 (only in loop headers are ++/-- supported)")
        messages = {
            c_ast.While: "'while' loops are not supported; write a 'for' loop with affine "
                         "bounds",
            c_ast.DoWhile: "'do ... while' loops are not supported; write a 'for' loop",
            c_ast.Break: "'break' is not supported: loop bounds must be known before the "
                         "loop runs",
            c_ast.Continue: "'continue' is not supported; guard the rest of the body with if",
            c_ast.Return: "'return' is not supported inside the scop",
            c_ast.Goto: "'goto' is not supported",
            c_ast.Switch: "'switch' is not supported; use if/else",
            c_ast.FuncCall: "a function call as a statement is not supported; only values "
                            "of math functions inside expressions are",
        }
        message = messages.get(type(node), f"this {type(node).__name__} statement is not "
                                           "supported in a scop")
        raise self.error(node, message)

    def _declaration(self, decl) -> list[ast.stmt]:
        self._local(decl, before_scop=False)
        return self._store_init(decl)

    def _store_init(self, decl) -> list[ast.stmt]:
        if decl.init is None:
            return []
        name = self.ident(decl.name, decl)
        return [self._store_scalar(name, self.typed(decl.init), decl)]

    def _for(self, node):
        from pycparser import c_ast
        line = self._line(node)
        var, start, ctype = self._for_init(node)
        step = self._for_step(node, var)
        if var in self.loops:
            raise self.error(node, f"loop variable '{var}' is already the variable of an "
                                   "enclosing loop")
        cond = node.cond
        if not isinstance(cond, c_ast.BinaryOp) or cond.op not in ("<", "<=", ">", ">="):
            raise self.error(node, "the loop condition must compare the loop variable with a "
                                   "bound, e.g. i < N or i >= 0")
        op, bound = cond.op, cond.right
        if not self._is_var(cond.left, var):
            if not self._is_var(cond.right, var):
                raise self.error(node, f"the loop condition must test the loop variable "
                                       f"'{var}' itself, e.g. {var} < N")
            op, bound = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op], cond.left
        reverse = step < 0
        if reverse != (op in (">", ">=")):
            raise self.error(node, f"the loop on '{var}' steps {'down' if reverse else 'up'} "
                                   f"but its condition '{self.show(cond)}' does not bound it "
                                   "from that side")
        end = self._loop_value(bound)
        lo, hi = start.node, end.node
        low = start.low
        if reverse:
            lo, hi = self._neg(lo, line), self._neg(hi, line)
            low = None if end.low is None else end.low + (op == ">")
        if op in ("<=", ">="):
            hi = ast.BinOp(hi, ast.Add(), ast.Constant(1, lineno=line, col_offset=0),
                           lineno=line, col_offset=0)
        args = [lo, hi] + ([ast.Constant(abs(step), lineno=line, col_offset=0)]
                           if abs(step) != 1 else [])
        self.loops[var], self.loop_types[var], self.loop_lows[var] = reverse, ctype, low
        try:
            body = self.statement(node.stmt) or [ast.Pass(lineno=line, col_offset=0)]
        finally:
            del self.loops[var], self.loop_types[var], self.loop_lows[var]
            self.ended_loops.setdefault(var, line)
        call = ast.Call(func=ast.Name("range", ast.Load(), lineno=line, col_offset=0),
                        args=args, keywords=[], lineno=line, col_offset=0)
        return ast.For(target=ast.Name(var, ast.Store(), lineno=line, col_offset=0),
                       iter=call, body=body, orelse=[], lineno=line, col_offset=0)

    def _loop_value(self, node) -> Typed:
        """A loop's start or bound: an affine integer expression, with its lower bound."""
        self.affine_depth += 1
        try:
            typed = self.value(self.typed(node))
        finally:
            self.affine_depth -= 1
        return typed

    def _for_init(self, node):
        from pycparser import c_ast
        init = node.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 \
                and init.decls[0].init is not None:
            decl = init.decls[0]
            name = self.ident(decl.name, decl)
            ctype = _SIZE_TYPES.get(tuple(self._base_type(decl.type)))
            if ctype is None:
                raise self.error(node, f"the loop variable '{decl.name}' must be an int or a "
                                       "long")
            return name, self._loop_value(decl.init), ctype
        if isinstance(init, c_ast.Assignment) and init.op == "=" \
                and isinstance(init.lvalue, c_ast.ID):
            name = self.ident(init.lvalue.name, init)
            ctype = self.types.get(name, "i32")
            if name in self.local_scalars and ctype not in ("i32", "i64"):
                raise self.error(node, f"the loop variable '{init.lvalue.name}' must be an int "
                                       "or a long")
            return name, self._loop_value(init.rvalue), ctype
        raise self.error(node, "the loop must start by setting its variable, e.g. "
                               "for (i = 0; ...) or for (int i = 0; ...)")

    def _for_step(self, node, var: str) -> int:
        from pycparser import c_ast
        nxt = node.next
        if isinstance(nxt, c_ast.UnaryOp) and self._is_var(nxt.expr, var):
            if nxt.op in ("p++", "++"):
                return 1
            if nxt.op in ("p--", "--"):
                return -1
        if isinstance(nxt, c_ast.Assignment) and self._is_var(nxt.lvalue, var):
            if nxt.op in ("+=", "-=") and self._int_constant(nxt.rvalue) is not None:
                value = self._int_constant(nxt.rvalue)
                step = value if nxt.op == "+=" else -value
                if step != 0:
                    return step
            if nxt.op == "=" and isinstance(nxt.rvalue, c_ast.BinaryOp) \
                    and nxt.rvalue.op in ("+", "-") and self._is_var(nxt.rvalue.left, var):
                value = self._int_constant(nxt.rvalue.right)
                if value:
                    return value if nxt.rvalue.op == "+" else -value
        raise self.error(node, f"the loop on '{var}' must step by a non-zero integer "
                               f"constant ({var}++, {var}--, {var} += 2, ...)")

    def _is_var(self, node, name: str) -> bool:
        from pycparser import c_ast
        return isinstance(node, c_ast.ID) and self.ident(node.name, node) == name

    @staticmethod
    def _int_constant(node):
        from pycparser import c_ast
        if isinstance(node, c_ast.Constant) and node.type in ("int", "long int"):
            try:
                return int(node.value.rstrip("uUlL"), 0)
            except ValueError:
                return None
        return None

    def _assignment(self, node) -> ast.stmt:
        from pycparser import c_ast
        value = self.typed(node.rvalue)
        target = node.lvalue
        if isinstance(target, c_ast.ID):
            name = self.ident(target.name, target)
            if name in self.loops:
                raise self.error(node, f"assigning to the loop variable '{name}' is not "
                                       "supported")
            if name not in self.local_scalars and name not in self.arrays:
                raise self.error(node, f"'{target.name}' is assigned but not declared in the "
                                       "function; declare it (a local scalar) or make it an "
                                       "array parameter")
            if name in self.arrays and self.arrays[name] == 0 and name not in \
                    self.local_scalars:
                raise self.error(node, f"the scalar parameter '{target.name}' is passed by "
                                       "value, so assigning it has no effect outside; use an "
                                       "array")
            index = None
        elif isinstance(target, c_ast.ArrayRef):
            name, index = self._array_ref(target)
        else:
            raise self.error(node, f"assigning to '{self.show(target)}' is not supported; "
                                   "assign to an array element or a local scalar")
        if node.op != "=":
            op = _AUG.get(node.op)
            if op is None:
                raise self.error(node, f"the operator '{node.op}' is not supported; use =, "
                                       "+=, -=, *=, /= or %=")
            combined = c_ast.BinaryOp(op, target, node.rvalue, node.coord)
            value = self.typed(combined)
        if index is None:
            result = self._store_scalar(name, value, node)
            self.ended_loops.pop(name, None)  # a value of its own from here on
            return result
        return self._store(name, index, self.stored(value, self.types[name]).node, node)

    def _store_scalar(self, name: str, value: Typed, node) -> ast.stmt:
        """``name = value`` for a local scalar, converted to its declared type."""
        converted = self.stored(value, self.types[name])
        self.weak_scalars[name] = converted.weak
        return self._store(name, None, converted.node, node)

    def _store(self, name: str, index, value: ast.expr, node) -> ast.stmt:
        line = self._line(node)
        if index is None and name not in self.scalar_arrays:
            target = ast.Name(name, ast.Store(), lineno=line, col_offset=0)
        else:
            target = self._element(name, index, ast.Store(), line)
        return ast.Assign(targets=[target], value=value, lineno=line, col_offset=0)

    def _element(self, name: str, index, ctx, line: int) -> ast.Subscript:
        elts = index if index is not None else []
        return ast.Subscript(value=ast.Name(name, ast.Load(), lineno=line, col_offset=0),
                             slice=ast.Tuple(elts=elts, ctx=ast.Load(), lineno=line,
                                             col_offset=0),
                             ctx=ctx, lineno=line, col_offset=0)

    def _array_ref(self, node):
        from pycparser import c_ast
        indices = []
        while isinstance(node, c_ast.ArrayRef):
            indices.append(node.subscript)
            node = node.name
        if not isinstance(node, c_ast.ID):
            raise self.error(node, f"'{self.show(node)}' cannot be indexed; only arrays can")
        name = self.ident(node.name, node)
        rank = self.arrays.get(name)
        if rank is None or name in self.scalar_arrays:
            raise self.error(node, f"'{node.name}' is not an array of the function")
        if rank != len(indices):
            raise self.error(node, f"array '{node.name}' has {rank} dimension(s) but is "
                                   f"indexed with {len(indices)}; index every dimension")
        return name, [self.affine(i) for i in reversed(indices)]

    @staticmethod
    def _neg(expr: ast.expr, line: int) -> ast.expr:
        return ast.UnaryOp(ast.USub(), expr, lineno=line, col_offset=0)

"""Print a loop AST as readable pseudo-C with the statement bodies written out.

>>> print(index_text(Op("add", (Op("mul", (Int(2), Name("i"))), Int(-1)))))
2 * i - 1
"""

from __future__ import annotations

from ..domain.program import Program
from ..te.expr import IterVar
from ..te.printer import render
from .nodes import (Block, If, IndexExpr, Int, Intrinsic, Name, Node, Op, Outlined, Run,
                    Unrolled, Widened)

_INFIX = {"add": ("+", 5), "sub": ("-", 5), "mul": ("*", 6), "pdiv_q": ("/", 6),
          "div": ("/", 6), "pdiv_r": ("%", 6), "zdiv_r": ("%", 6), "eq": ("==", 4),
          "le": ("<=", 4), "lt": ("<", 4), "ge": (">=", 4), "gt": (">", 4),
          "and": ("&&", 2), "or": ("||", 1)}


def index_text(expr: IndexExpr, *, c: bool = False) -> str:
    """The text of an index expression; ``c=True`` gives valid C/OpenCL C for ``long``
    arithmetic (``min``/``max`` of two ``long`` operands, ``L`` on literals there)."""
    return _text(expr, c)[0]


def _text(expr: IndexExpr, c: bool = False) -> tuple[str, int]:
    if isinstance(expr, Int):
        suffix = "L" if c and abs(expr.value) >= 1 << 31 else ""
        return f"{expr.value}{suffix}", (10 if expr.value >= 0 else 7)
    if isinstance(expr, Name):
        return expr.name, 10
    if expr.op == "add" and isinstance(expr.args[1], Int) and expr.args[1].value < 0:
        return _text(Op("sub", (expr.args[0], Int(-expr.args[1].value))), c)
    if expr.op == "add" and _negated(expr.args[0]) is not None and _negated(expr.args[1]) is None:
        return _text(Op("sub", (expr.args[1], _negated(expr.args[0]))), c)
    if expr.op in _INFIX:
        symbol, prec = _INFIX[expr.op]
        left, right = (_text(a, c) for a in expr.args)
        return f"{paren(left, prec, False)} {symbol} {paren(right, prec, True)}", prec
    if expr.op == "neg":
        return "-" + paren(_text(expr.args[0], c), 7, True), 7
    if expr.op == "select":
        cond, a, b = (index_text(x, c=c) for x in expr.args)
        return f"({cond} ? {a} : {b})", 10
    name = {"fdiv_q": "floord"}.get(expr.op, expr.op)
    if c and expr.op in ("min", "max"):  # OpenCL C: two operands of one type (long)
        texts = [f"{a.value}L" if isinstance(a, Int) else index_text(a, c=True)
                 for a in expr.args]
        result = texts[0]
        for text in texts[1:]:
            result = f"{name}({result}, {text})"
        return result, 10
    return f"{name}({', '.join(index_text(a, c=c) for a in expr.args)})", 10


def _negated(expr: IndexExpr) -> IndexExpr | None:
    """``-expr`` when ``expr`` is a negative constant or a negative multiple (``-4 * i``)."""
    if isinstance(expr, Int) and expr.value < 0:
        return Int(-expr.value)
    if isinstance(expr, Op) and expr.op == "mul" and isinstance(expr.args[0], Int) \
            and expr.args[0].value < 0:
        return Op("mul", (Int(-expr.args[0].value), expr.args[1]))
    return None


def paren(rendered: tuple[str, int], prec: int, strict: bool) -> str:
    """``text`` of precedence ``own`` in parentheses where an operator of ``prec``
    needs them."""
    text, own = rendered
    return f"({text})" if own < prec or (strict and own == prec) else text


def statement_text(run: Run, program: Program) -> str:
    """``C[i, j] = C[i, j] + A[i, k] * B[k, j]`` for one statement instance."""
    stmt = program.statement(run.stmt)
    by_axis = {id(axis): arg for axis, arg in zip(stmt.index_vars, run.args)}

    def name_of(node):
        if isinstance(node, IterVar) and id(node) in by_axis:
            text, prec = _text(by_axis[id(node)])
            return text if prec >= 10 else f"({text})"
        return None

    def tensor_name(tensor):
        return program.array_of(tensor).name

    target = render(stmt.target, name_of, tensor_name)
    return f"{target} = {render(stmt.value, name_of, tensor_name)};"


def node_lines(node: Node, program: Program, indent: int = 1) -> list[str]:
    pad = "  " * indent
    if hasattr(node, "match"):  # an IntrinsicCall (polyopt.ast.intrinsic_calls)
        return [pad + node.text()]
    if isinstance(node, Run):
        note = "  // reassociated" if node.reassociate else ""
        return [pad + statement_text(node, program) + note]
    if isinstance(node, Block):
        return [line for item in node.items for line in node_lines(item, program, indent)]
    if isinstance(node, If):
        lines = _with_body(f"{pad}if ({index_text(node.cond)})", node.then, program, indent)
        if node.otherwise is not None:
            lines += _with_body(f"{pad}else", node.otherwise, program, indent)
        return lines
    if isinstance(node, Intrinsic):
        return [f"{pad}// {node.name}:"] + node_lines(node.body, program, indent)
    if isinstance(node, (Unrolled, Widened, Outlined)):
        return [f"{pad}#pragma {_decision(node)}{_hints(node.loop)}"] + \
            node_lines(node.loop, program, indent)[1:]
    pragma = [] if node.kind == "serial" and not node.hints else \
        [f"{pad}#pragma {node.kind}{_hints(node)}"]
    head = (f"{pad}for ({node.var} = {index_text(node.init)}; "
            f"{index_text(node.cond)}; {node.var} += {node.step})")
    return pragma + _with_body(head, node.body, program, indent)


def _hints(loop) -> str:
    """What target passes noted for a loop's code, e.g. ``(iterations independent)``."""
    return f" ({', '.join(loop.hints)})" if loop.hints else ""


def _decision(node: Unrolled | Widened | Outlined) -> str:
    """What a target pass decided for a loop, as the text of its pragma."""
    if isinstance(node, Unrolled):
        return f"unrolled: {node.trips} copies" + (", each guarded" if node.guarded else "")
    if isinstance(node, Widened):
        return f"vectorized: widened to {node.trips} iterations, stores kept in range"
    private = f", one buffer per thread: {', '.join(node.private)}" if node.private else ""
    return f"parallel: outlined to a thread team{private}"


def _with_body(head: str, body: Node, program: Program, indent: int) -> list[str]:
    inner = node_lines(body, program, indent + 1)
    if not isinstance(body, Block):
        return [head] + inner
    return [head + " {"] + inner + ["  " * indent + "}"]


def rendered(expr: IndexExpr, *, c: bool = False) -> tuple[str, int]:
    """An index expression's text and precedence (10 for an atom)."""
    return _text(expr, c)

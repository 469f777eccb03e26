"""Copy a square block transposed through registers.

A copy ``P[k, f] = W[f, k]`` (weights packed channels-last for a convolution) scheduled
as an unrolled loop over ``k`` around a vectorized loop over ``f``, both of ``n``
iterations, stores vectors along ``f`` whose elements are ``n`` loads far apart: LLVM
gathers them or moves them one by one, a store per element.  Here the block is read
as ``n`` contiguous vector loads along ``k`` (one per ``f``), transposed in registers by
``log2(n)`` rounds of ``n`` two-vector shuffles, and written as ``n`` vector stores.

It applies when the unrolled loop (a tile of ``n`` = 2, 4, 8 or 16 iterations) holds
only the vectorized loop (a tile of ``n``, or of fewer, such as the 7 pixels of a 7 x 32
int8 conv tile: then a partial tile; its bounds free of the unrolled variable),
which holds only a plain copy between two arrays of one element type, or a copy plus a
term free of the vectorized variable (``out[f, x] = sums[x, f] + bias[f]``: a
convolution's output row and its bias in one pass, the term added to each column
after the transpose): the source
contiguous along the unrolled variable, the target contiguous along the vectorized one
and as many elements apart along the unrolled one as the vectorized loop has iterations,
or more (so no two stores of the block meet).  In a partial tile (fewer iterations of
either loop) the loads and stores are masked to the block's elements.  Otherwise the loops are emitted as scheduled.  The
LLVM target's ``transposed_copies`` pass (:mod:`.passes`) finds these copies in the
loop AST; :func:`emit_transposed_copy` writes their code.

>>> import polyopt as po
>>> W = po.placeholder((16, 16), name="W")
>>> P = po.compute((16, 16), lambda k, f: W[f, k], name="P")
>>> s = po.create_schedule(P)
>>> k, f = s[P].axes
>>> _ = s[P].unroll(k), s[P].vectorize(f)
>>> ir_text = str(po.build(s, [W, P]).llvm_ir)
>>> ir_text.count("shufflevector"), ir_text.count("load <16 x float>")
(64, 16)
"""

from __future__ import annotations

from llvmlite import ir

from ...ast.flat_access import row_major_strides
from ...ast.nodes import Block, For, Run, linear_form, names_in, upper_bound
from ...ast.tiles import most_trips
from ...te.expr import BinOp, IterVar, TensorRead
from ...te.tensor import walk
from ...te.linear import linear_terms
from .values import I1, I64

SIZES = (2, 4, 8, 16)


def emit_transposed_copy(emitter, loop: For) -> None:
    """Emit the unrolled ``loop``, a transposed block copy (the ``transposed_copies``
    pass found it with :func:`square_copy`), as one."""
    inner, run, n, partial, (read, term) = square_copy(emitter.program, loop)
    b = emitter.builder
    outer_start = emitter.scalars[loop.var] = emitter._index(loop.init)
    inner_start = emitter._index(inner.init)
    outer_count, inner_count = (_count(emitter, x) if p else None
                                for x, p in zip((loop, inner), partial))
    load_lanes, store_lanes = _lanes_below(b, n, outer_count), _lanes_below(b, n, inner_count)
    rows = []
    for j in range(n):
        emitter.scalars[inner.var] = emitter._plus(inner_start, j)
        with emitter.bound(run) as stmt:
            rows.append(emitter.load_vector(read, n,
                                            _only_if(b, n, load_lanes, inner_count, j)))
    for i, column in enumerate(transpose(b, rows)):
        emitter.scalars[loop.var] = emitter._plus(outer_start, i)
        emitter.scalars[inner.var] = inner_start
        with emitter.bound(run) as stmt:
            if term is not None:
                column = _plus_splat(b, column, emitter.values.emit(term, read.dtype))
            emitter.store_vector(stmt.target, column,
                                 _only_if(b, n, store_lanes, outer_count, i))
    del emitter.scalars[loop.var], emitter.scalars[inner.var]


def copied(value) -> list[tuple]:
    """The ways ``[(read, term)]`` to see the value a transposed copy stores as
    ``read`` (``term`` None) or ``read + term``, all in one type."""
    if isinstance(value, TensorRead):
        return [(value, None)]
    if isinstance(value, BinOp) and value.op == "+":
        return [(read, term) for read, term in ((value.a, value.b), (value.b, value.a))
                if isinstance(read, TensorRead) and read.dtype == value.dtype == term.dtype]
    return []


def _plus_splat(b: ir.IRBuilder, vector: ir.Value, scalar: ir.Value) -> ir.Value:
    """``vector`` plus ``scalar`` in every lane."""
    lanes = vector.type.count
    splat = b.insert_element(ir.Constant(vector.type, None), scalar,
                             ir.Constant(ir.IntType(32), 0))
    splat = b.shuffle_vector(splat, splat,
                             ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))
    if isinstance(vector.type.element, ir.IntType):
        return b.add(vector, splat)
    return b.fadd(vector, splat)


def _free_of(program, forms: dict, term, var: str, target: str) -> bool:
    """Whether ``term`` is the same in every iteration of loop ``var`` (``forms``: the
    statement's index variables in the loops, :func:`_forms_in`) and reads nothing of
    the array ``target``."""
    for node in walk(term):
        if isinstance(node, TensorRead) and program.array_of(node.tensor).name == target:
            return False
        if isinstance(node, IterVar) and (forms.get(id(node)) is None or
                                          forms[id(node)].get(var, 0)):
            return False
    return True


def _count(emitter, loop: For) -> ir.Value:
    """How many iterations the partial tile ``loop`` has."""
    limit, exclusive = upper_bound(loop)
    count = emitter.builder.sub(emitter._index(limit), emitter._index(loop.init))
    return count if exclusive else emitter.builder.add(count, ir.Constant(I64, 1))


def _lanes_below(b: ir.IRBuilder, n: int, count: ir.Value | None) -> ir.Value | None:
    """The mask of the first ``count`` of ``n`` lanes (None: all of them)."""
    if count is None:
        return None
    splat = b.insert_element(ir.Constant(ir.VectorType(I64, n), None), count,
                             ir.Constant(ir.IntType(32), 0))
    splat = b.shuffle_vector(splat, splat,
                             ir.Constant(ir.VectorType(ir.IntType(32), n), [0] * n))
    return b.icmp_signed("<", ir.Constant(ir.VectorType(I64, n), list(range(n))), splat)


def _only_if(b: ir.IRBuilder, n: int, lanes: ir.Value | None, count: ir.Value | None,
             position: int) -> ir.Value | None:
    """The mask ``lanes`` (all ``n`` lanes when None) where ``position < count``, else
    no lane; None (no mask) when neither limits the access."""
    if count is None:
        return lanes
    mask_type = ir.VectorType(I1, n)
    if lanes is None:
        lanes = ir.Constant(mask_type, [1] * n)
    inside = b.icmp_signed(">", count, ir.Constant(I64, position))
    return b.select(inside, lanes, ir.Constant(mask_type, None))


def transpose(b: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The columns of the square matrix whose rows are the vectors ``rows`` (``n`` of
    ``n`` lanes, ``n`` a power of two).  Each round swaps one bit of the row number
    with the same bit of the lane number: rows ``r`` and ``r + h`` exchange the upper
    ``h`` lanes of each ``2h`` lanes of ``r`` for the lower ones of ``r + h``."""
    n = len(rows)
    rows = list(rows)
    half = n // 2
    while half:
        low, high = _masks(n, half)
        for r in range(n):
            if not r & half:
                a, c = rows[r], rows[r + half]
                rows[r] = b.shuffle_vector(a, c, low)
                rows[r + half] = b.shuffle_vector(a, c, high)
        half //= 2
    return rows


def _masks(n: int, half: int) -> tuple[ir.Constant, ir.Constant]:
    """The shuffle masks of one round (lanes ``n + i`` are the second vector's)."""
    low, high = [], []
    for lane in range(n):
        base, offset = lane - lane % (2 * half), lane % (2 * half)
        if offset < half:
            low.append(base + offset)
            high.append(base + half + offset)
        else:
            low.append(n + base + offset - half)
            high.append(n + base + offset)
    mask_type = ir.VectorType(ir.IntType(32), n)
    return ir.Constant(mask_type, low), ir.Constant(mask_type, high)


def square_copy(program, loop: For):
    """``(vectorized loop, copy, n, (partial, partial), (read, term))`` when ``loop`` is a
    transposed copy of an ``n`` by ``n`` block (see the module; whether each loop is a
    partial tile; the copy's source and the term added to it, or None), else None."""
    if loop.step != 1:
        return None
    found = most_trips(loop)
    if found is None or found[0] not in SIZES:
        return None
    n = found[0]
    inner = _only(loop.body)
    if not isinstance(inner, For) or inner.kind != "vectorized" or inner.step != 1 \
            or loop.var in names_in(inner.init) + names_in(inner.cond):
        return None
    inner_found = most_trips(inner)
    if inner_found is None or not 0 < inner_found[0] <= n:
        return None
    run = _only(inner.body)
    if not isinstance(run, Run):
        return None
    stmt = program.statement(run.stmt)
    target = stmt.target
    target_array = program.array_of(target.tensor).name
    forms = {var: _forms_in(stmt, run, var) for var in (loop.var, inner.var)}
    for source, term in copied(stmt.value):
        if source.tensor.dtype != target.tensor.dtype or \
                program.array_of(source.tensor).name == target_array or (
                term is not None and not _free_of(program, forms[inner.var], term,
                                                  inner.var, target_array)):
            continue
        source_outer, target_outer, target_inner = (
            _stride(program, forms[var], read, var)
            for read, var in ((source, loop.var), (target, loop.var), (target, inner.var)))
        if source_outer == 1 and target_inner == 1 and target_outer is not None \
                and abs(target_outer) >= inner_found[0]:  # stores hold at most that many
            return (inner, run, n, (found[1], inner_found[1] or inner_found[0] < n),
                    (source, term))
    return None


def _forms_in(stmt, run: Run, var: str) -> dict:
    """The statement's index variables (by id) as ``{var: coefficient}`` (None where
    the argument is not affine in ``var``): the other loops may enter through divisions
    (a fused loop's ``fused / 28``), which do not change the stride along ``var``."""
    return {id(axis): (None if (c := _coefficient(arg, var)) is None else {var: c})
            for axis, arg in zip(stmt.index_vars, run.args)}


def _coefficient(expr, var: str) -> int | None:
    """How much ``expr`` grows when ``var`` grows by one, when ``expr`` is affine in
    ``var`` (its other parts may be anything free of ``var``); None otherwise.

    >>> from polyopt.ast.nodes import Name, Op, Int
    >>> _coefficient(Op("add", (Op("div", (Name("f"), Int(28))), Op("mul", (Int(4), Name("x"))))), "x")
    4
    """
    if var not in names_in(expr):
        return 0
    form = linear_form(expr)
    if form is not None:
        return form.get(var, 0)
    if expr.op == "neg":
        inner = _coefficient(expr.args[0], var)
        return None if inner is None else -inner
    if expr.op in ("add", "sub") and len(expr.args) == 2:
        a, b = (_coefficient(arg, var) for arg in expr.args)
        if a is None or b is None:
            return None
        return a + b if expr.op == "add" else a - b
    if expr.op == "mul" and len(expr.args) == 2:
        for x, y in (expr.args, expr.args[::-1]):
            factor = linear_form(x)
            if factor is not None and set(factor) <= {""}:
                inner = _coefficient(y, var)
                return None if inner is None else inner * factor.get("", 0)
    return None


def _only(node):
    """The one item of a block, or the node itself."""
    while isinstance(node, Block) and len(node.items) == 1:
        node = node.items[0]
    return node


def _stride(program, forms: dict, read: TensorRead, var: str) -> int | None:
    """How many elements ``read``'s address moves when loop ``var`` grows by one (None
    when that is not a known constant); ``forms``: the linear forms of the statement's
    index variables in the loops (by id)."""
    array = program.array_of(read.tensor)
    strides = [1] if read.flat else row_major_strides(array.shape)
    total = 0
    for index, stride in zip(read.indices, strides):
        terms = linear_terms(index)
        if terms is None:
            return None
        coefficient = 0
        for key, factor in terms.items():
            if key is None:
                continue
            if key in forms:
                if forms[key] is None:
                    return None
                coefficient += factor * forms[key].get(var, 0)
        if coefficient:
            if stride is None:
                return None
            total += coefficient * stride
    return total

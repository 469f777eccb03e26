"""Random tensor-expression programs, as source text, with a plain-Python twin.

A program is 1-4 computes over inputs ``A``/``B`` of shape ``(n, m)`` or ``(n,)``
(fixed or symbolic sizes, int32 or float data).  Stages read earlier tensors through
guarded reads (``if_then_else`` keeping every index in bounds) at offset, reversed
(``n - 1 - i``), strided (``2 * i + o``) and transposed indices; reductions are window
sums and maxima, prefix sums (a guard on the reduce axis), ``where=`` sums (possibly
empty) and row sums that change the rank.  The twin evaluates the same expressions with
Python loops on NumPy scalars, summing in the order of the reduce axis, so it is
bit-identical to the default schedule.

>>> import random
>>> case = make_te_program(random.Random(3))
>>> "po.compute" in case.source and "def reference" in case.reference
True
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TeProgram:
    source: str      # defines inputs, outputs, args (po tensors) and SIZES (list of dicts)
    reference: str   # defines reference(arrays, sizes) -> list of output arrays
    dtype: str
    rank: int


_AXES = ("i", "j")


def _index(rng, var, extent):
    """One index expression of a read, as (po text, python text)."""
    kind = rng.choice(["plain", "plain", "offset", "reverse", "stride"])
    if kind == "plain":
        return var
    if kind == "offset":
        return f"{var} + {rng.randint(-2, 2)}"
    if kind == "reverse":
        return f"{extent} - 1 - {var}{rng.choice(['', ' + 1', ' - 1'])}"
    return f"2 * {var} + {rng.randint(-1, 1)}"


class _Builder:
    def __init__(self, rng):
        self.rng = rng
        self.po, self.py = [], []
        self.symbolic = rng.random() < 0.5
        self.rank = rng.choice([1, 2, 2])
        self.square = self.rank == 2 and rng.random() < 0.5
        self.dtype = rng.choice(["int32", "int32", "float32", "float64"])
        self.zero = "0" if self.dtype == "int32" else "0.0"
        self.tensors = []  # (name, rank)
        self.outputs = []
        self.reductions = False

    def extents(self, rank):
        return ("n", "m")[:rank] if not self.square else ("n", "n")[:rank]

    def read(self, source, idx, extra=None):
        """A guarded read of tensor ``source`` at ``idx`` (loop variable names)."""
        name, rank = source
        rng = self.rng
        ext = self.extents(rank)
        if rank == 2 and len(idx) == 2 and self.square and rng.random() < 0.25:
            idx = idx[::-1]  # transposed read
        if rank == 1 and len(idx) == 2:
            idx = (rng.choice(idx),)
        if rank == 2 and len(idx) == 1:
            idx = (idx[0], idx[0])
        exprs = [_index(rng, v, e) for v, e in zip(idx, ext)]
        if extra is not None:  # a reduce axis added to one dimension
            dim, r = extra
            exprs[dim % rank] = f"{exprs[dim % rank]} + {r}"
        conds = [(f"({e} >= 0) & ({e} < {x})", f"0 <= {e} < {x}") for e, x in zip(exprs, ext)]
        coef = rng.choice([1, 1, 2, -1, 3])
        po_read = (f"po.if_then_else({' & '.join(c[0] for c in conds)}, "
                   f"{name}[{', '.join(exprs)}], {self.zero})")
        py_read = (f"({name}[{', '.join(exprs)}] if {' and '.join(c[1] for c in conds)} "
                   f"else {self.zero})")
        if coef != 1:
            po_read, py_read = f"{po_read} * {coef}", f"{py_read} * {coef}"
        return po_read, py_read

    def stage(self, c):
        rng = self.rng
        name = f"C{c}"
        kind = rng.choice(["map", "map", "window", "window_max", "prefix", "where",
                           "rows"] if self.rank == 2 else
                          ["map", "map", "window", "window_max", "prefix", "where"])
        rank = 1 if kind == "rows" else self.rank
        idx = _AXES[:rank]
        ext = self.extents(rank)
        shape = ", ".join(ext) + ("," if rank == 1 else "")
        lam = f"lambda {', '.join(idx)}"
        pool = self.tensors
        if kind == "map":
            reads = [self.read(rng.choice(pool), idx) for _ in range(rng.randint(1, 2))]
            self.po.append(f"{name} = po.compute(({shape}), {lam}: "
                           f"{' + '.join(r[0] for r in reads)}, name={name!r})")
            self.py.append(f"def {name}_at({', '.join(idx)}):\n"
                           f"    return {' + '.join(r[1] for r in reads)}")
        else:
            self.reductions = True
            r = f"r{c}"
            if kind in ("window", "window_max"):
                width = rng.randint(1, 3)
                lo, hi, guard = "0", str(width), None
                term = self.read(rng.choice(pool), idx, extra=(rng.randint(0, 1), r))
            elif kind == "prefix":
                dim = rng.randint(0, rank - 1)
                lo, hi, guard = "0", ext[dim], (f"{r} <= {idx[dim]}", f"{r} <= {idx[dim]}")
                src = rng.choice(pool)
                ridx = list(idx)
                ridx[dim] = r
                term = self.read(src, tuple(ridx))
            elif kind == "where":
                lo, hi = "0", ext[0]
                guard = rng.choice([(f"{r} != {idx[0]}", f"{r} != {idx[0]}"),
                                    (f"{r} > 9", f"{r} > 9"),
                                    (f"{r} * 2 < {ext[0]}", f"{r} * 2 < {ext[0]}")])
                term = self.read(rng.choice(pool), (r,) + idx[1:])
            else:  # rows: a row sum of a rank-2 tensor
                lo, hi, guard = "0", ext[-1], None
                two = [t for t in pool if t[1] == 2] or pool
                term = self.read(rng.choice(two), ("i", r))
            op = "max" if kind == "window_max" else "sum"
            label = rng.choice([r, r, "k", "i"])  # a name the consumer's loops may share
            self.po.append(f"{r} = po.reduce_axis(({lo}, {hi}), name={label!r})")
            if kind == "prefix":
                po_body = f"po.{op}(po.if_then_else({guard[0]}, {term[0]}, {self.zero}), axis={r})"
            elif kind == "where":
                po_body = f"po.{op}({term[0]}, axis={r}, where={guard[0]})"
            else:
                po_body = f"po.{op}({term[0]}, axis={r})"
            self.po.append(f"{name} = po.compute(({shape}), {lam}: {po_body}, name={name!r})")
            init = ("np.iinfo(DTYPE).min" if self.dtype == "int32" else "-np.inf") \
                if op == "max" else "0"
            update = f"max(acc, {term[1]})" if op == "max" else f"acc + {term[1]}"
            if kind == "prefix":
                update = f"acc + ({term[1]} if {guard[1]} else {self.zero})"
            cond = f"if {guard[1]}:\n            " if kind == "where" else ""
            self.py.append(f"def {name}_at({', '.join(idx)}):\n"
                           f"    acc = DTYPE.type({init})\n"
                           f"    for {r} in range({lo}, {hi}):\n"
                           f"        {cond}acc = DTYPE.type({update})\n"
                           f"    return acc")
        self.py.append(f"{name} = np.empty(({shape}), DTYPE)\n"
                       f"for index in np.ndindex({name}.shape):\n"
                       f"    {name}[index] = {name}_at(*index)")
        self.tensors.append((name, rank))
        return name

    def build(self):
        rng = self.rng
        if self.symbolic:
            self.po.append('n = po.var("n")')
            self.po.append('m = n' if self.square else 'm = po.var("m")')
            sizes = []
            for _ in range(2):
                a = rng.choice([0, 1, 2, 3, 5, 6, 7])
                sizes.append({"n": a, "m": a if self.square else rng.choice([1, 2, 4, 6])})
        else:
            n = rng.randint(2, 7)
            m = n if self.square else rng.randint(2, 6)
            self.po.append(f"n, m = {n}, {m}")
            sizes = [{"n": n, "m": m}]
        shape = ", ".join(self.extents(self.rank)) + ("," if self.rank == 1 else "")
        inputs = ["A", "B"][:rng.randint(1, 2)]
        for name in inputs:
            self.po.append(f"{name} = po.placeholder(({shape}), name={name!r}, "
                           f"dtype={self.dtype!r})")
            self.tensors.append((name, self.rank))
        stages = [self.stage(c) for c in range(rng.randint(1, 4))]
        outputs = [c for c in stages[:-1] if rng.random() < 0.3] + [stages[-1]]
        self.po.append(f"outputs = [{', '.join(outputs)}]")
        self.po.append(f"inputs = [{', '.join(inputs)}]")
        self.po.append(f"SIZES = {sizes!r}")
        self.po.append(f"REDUCTIONS = {self.reductions}")
        reference = (f"DTYPE = np.dtype({self.dtype!r})\n\n"
                     "def reference(arrays, sizes):\n"
                     f"    {', '.join(inputs)}, = arrays\n"
                     "    n, m = sizes['n'], sizes['m']\n"
                     + "\n".join("    " + line for block in self.py for line in block.split("\n"))
                     + f"\n    return [{', '.join(outputs)}]\n")
        return TeProgram("\n".join(self.po) + "\n", reference, self.dtype, self.rank)


def make_te_program(rng) -> TeProgram:
    """A random program (see the module docstring) drawn from ``random.Random`` ``rng``."""
    return _Builder(rng).build()


TE_RUNNER = '''
def input_arrays(sizes, seed):
    """Small random values for the placeholders (exact in int32 and float sums)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-3, 4, size=(sizes["n"], sizes["m"])[:len(t.shape)]).astype(t.dtype)
            for t in inputs]


ARGS = [t for t in inputs if any(a.tensor is t for a in po.create_schedule(outputs).program.arrays)] + outputs
BUILT = {}


def fresh():
    return po.create_schedule(outputs)


def run(s, sizes):
    """Build ``s`` (once) and run it on small random inputs of ``sizes``; returns its
    outputs (starting as a sentinel) and the twin's."""
    arrays = input_arrays(sizes, sum(sizes.values()))
    expected = reference([a.copy() for a in arrays], sizes)
    if id(s) not in BUILT:
        BUILT[id(s)] = (s, po.build(s, ARGS))
    outs = [np.full(r.shape, -77, r.dtype) for r in expected]
    by_name = dict(zip([t.name for t in inputs], arrays))
    BUILT[id(s)][1](*[by_name[t.name] for t in ARGS[:len(ARGS) - len(outputs)]], *outs)
    return outs, expected
'''

"""Random in-place ``@po.kernel`` loop nests, as source text, with plain-Python twins.

A kernel updates ``A[N, N]``, ``B[N]`` (and sometimes ``y[M]``) in place: an optional
time loop around 1-3 nests of depth 1-3 with rectangular, triangular or strided bounds,
and 1-3 statements (``=`` or ``+=``) reading the arrays at offsets of the loop
variables.  Every index stays in bounds by construction (loop variables run in
``[2, N - 3]``, offsets in ``[-2, 2]``); values stay bounded (averages, quarter sums).

The same body is emitted three ways: the kernel, a plain Python function with the same
loops (the reference, run on NumPy float64 scalars: bit-identical to the default
schedule), and, for the instance oracle, one function per statement plus a walk that
lists the statement instances in program order.

>>> import random
>>> case = make_kernel_program(random.Random(1), fixed=True)
>>> "@po.kernel" in case.source and case.statements[0].name
'S0'
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Statement:
    name: str
    loops: tuple[str, ...]  # the enclosing loop variables, outer first
    target: str             # e.g. "A[i, j + 1]"
    op: str                 # "=" or "+="
    rhs: str


@dataclass(frozen=True)
class KernelProgram:
    source: str          # defines `kern` (the po.kernel), `reference(arrays, sizes)`,
                         # `ARRAYS` (names and shapes), `SIZES`, `KWARGS` (sizes to pass)
    statements: tuple[Statement, ...]
    walk: str            # defines `walk(sizes, visit)`: visit(name, vector) in program order
    fixed: bool
    lines: tuple         # (indent, loop header text or None, Statement or None), in order


class _Builder:
    def __init__(self, rng, fixed):
        self.rng = rng
        self.fixed = fixed
        self.has_time = rng.random() < 0.4
        self.has_y = rng.random() < 0.2
        self.statements: list[Statement] = []
        self.lines: list[tuple[int, str, object]] = []  # (indent, text, Statement or None)

    def access(self, array, loops):
        rng = self.rng
        if array == "y":
            return f"y[{loops[-1]}]"
        dims = 2 if array == "A" else 1
        space = [v for v in loops if v not in ("t", "q")]
        index = []
        for _ in range(dims):
            v = rng.choice(space)
            o = rng.choice([0, 0, 1, -1, 2, -2])
            index.append(v if o == 0 else f"{v} {'+' if o > 0 else '-'} {abs(o)}")
        return f"{array}[{', '.join(index)}]"

    def statement(self, loops, y_nest):
        rng = self.rng
        name = f"S{len(self.statements)}"
        arrays = ["y"] if y_nest else ["A", "A", "B"]
        target = self.access(rng.choice(arrays), loops)
        reads = [self.access(rng.choice(arrays), loops) for _ in range(rng.randint(1, 3))]
        op = "+=" if rng.random() < 0.3 else "="
        if op == "+=":
            rhs = f"{reads[0]} * 0.25"
        elif len(reads) == 1:
            rhs = f"{reads[0]} * 0.5 + {rng.choice(['1.0', '0.25', '-0.5'])}"
        else:
            rhs = f"({' + '.join(reads)}) * {1 / len(reads) if len(reads) != 3 else 0.25}"
        stmt = Statement(name, tuple(loops), target, op, rhs)
        self.statements.append(stmt)
        return stmt

    def size(self, name):
        return {"N": self.n, "M": self.m, "T": self.t}[name] if self.fixed else name

    def nest(self, indent, outer):
        rng = self.rng
        if self.has_y and rng.random() < 0.3:
            self.lines.append((indent, f"for q in range({self.size('M')}):", None))
            self.lines.append((indent + 1, None, self.statement(outer + ["q"], True)))
            return
        n = self.size("N")
        step = ", 2" if rng.random() < 0.15 else ""
        self.lines.append((indent, f"for i in range(2, {n} - 2{step}):", None))
        depth = rng.choice([1, 2, 2, 2, 3])
        loops = outer + ["i"]
        if depth >= 2:
            bounds = rng.choice([f"range(2, {n} - 2)", "range(2, i)", f"range(i + 1, {n} - 2)",
                                 "range(2, i + 1)"])
            if rng.random() < 0.25:  # a statement before the inner loop
                self.lines.append((indent + 1, None, self.statement(loops, False)))
            self.lines.append((indent + 1, f"for j in {bounds}:", None))
            loops = loops + ["j"]
            if depth == 3:
                self.lines.append((indent + 2, f"for k in {rng.choice(['range(2, j)', f'range(2, {n} - 2)'])}:", None))
                loops = loops + ["k"]
        for _ in range(rng.randint(1, 2)):
            self.lines.append((indent + len(loops) - len(outer), None, self.statement(loops, False)))
        if depth >= 2 and rng.random() < 0.2:  # a statement after the inner loop
            self.lines.append((indent + 1, None, self.statement(outer + ["i"], False)))

    def build(self):
        rng = self.rng
        self.n, self.m, self.t = rng.randint(5, 9), rng.randint(1, 4), rng.randint(1, 3)
        indent, outer = 1, []
        if self.has_time:
            self.lines.append((1, f"for t in range({self.size('T')}):", None))
            indent, outer = 2, ["t"]
        for _ in range(rng.randint(1, 3)):
            self.nest(indent, outer)
        arrays = [("A", ("N", "N")), ("B", ("N",))] + ([("y", ("M",))] if self.has_y else [])
        params = ", ".join(a for a, _ in arrays)
        annotated = ", ".join(f"{a}: po.f64[{', '.join(str(self.size(d)) for d in shape)}]"
                              for a, shape in arrays)
        body = self.render(lambda s: f"{s.target} {s.op} {s.rhs}")
        if self.fixed:
            sizes = [{"N": self.n, "M": self.m, "T": self.t}]
            header = ""
        else:
            sizes = [{"N": rng.choice([0, 3, 5, 6, 7, 8, 9]), "M": rng.randint(0, 4),
                      "T": rng.randint(0, 3)} for _ in range(2)]
            header = 'N, M, T = po.var("N"), po.var("M"), po.var("T")\n'
        kwargs = ["T"] if self.has_time and not self.fixed else []
        source = (f"{header}\n\n@po.kernel\ndef kern({annotated}):\n{body}\n\n"
                  f"def reference_body({params}, N, M, T):\n{body}\n\n"
                  "def reference(arrays, sizes):\n"
                  "    arrays = [a.copy() for a in arrays]\n"
                  "    reference_body(*arrays, sizes['N'], sizes['M'], sizes['T'])\n"
                  "    return arrays\n\n"
                  f"ARRAYS = {arrays!r}\nSIZES = {sizes!r}\nKWARGS = {kwargs!r}\n"
                  f"REDUCTIONS = {any(s.op == '+=' for s in self.statements)}\n")
        walk = self.render(lambda s: f"visit({s.name!r}, ({', '.join(s.loops)}{',' if len(s.loops) == 1 else ''}))")
        walk = "def walk(N, M, T, visit):\n" + walk + "\n"
        return KernelProgram(source, tuple(self.statements), walk, self.fixed,
                             tuple(self.lines))

    def render(self, statement_text):
        out = []
        for indent, text, stmt in self.lines:
            out.append("    " * indent + (text if stmt is None else statement_text(stmt)))
        return "\n".join(out)


def make_kernel_program(rng, *, fixed: bool | None = None) -> KernelProgram:
    """A random kernel (see the module docstring); ``fixed`` chooses constant sizes."""
    if fixed is None:
        fixed = rng.random() < 0.3
    return _Builder(rng, fixed).build()


KERNEL_RUNNER = '''
def input_arrays(sizes, seed):
    """Values in [-1, 1) with few mantissa bits: averages stay exact for a while."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-8, 8, size=tuple(sizes[d] for d in shape)).astype("float64") / 8
            for _, shape in ARRAYS]


ARGS = None
BUILT = {}


def fresh():
    return po.create_schedule(kern)


def run(s, sizes):
    """Build ``s`` (once) and run it in place on arrays of ``sizes``; returns the
    arrays and the plain-Python twin's."""
    arrays = input_arrays(sizes, sum(sizes.values()))
    expected = reference(arrays, sizes)
    if id(s) not in BUILT:
        BUILT[id(s)] = (s, po.build(s))
    BUILT[id(s)][1](*arrays, **{k: sizes[k] for k in KWARGS})
    return arrays, expected
'''

"""Random C loop nests with local scalars, for ``po.from_c`` and ``po.auto_schedule``.

A function ``kern(int N, int M, int T, double A[N][N], double B[N], double y[M])``
updates its arrays in place: an optional time loop around 1-3 nests of depth 1-3
(rectangular, triangular or strided bounds) whose statements read the arrays at
offsets of the loop variables, as :mod:`property.gen_kernel` builds them, plus the
local scalars C kernels use: a value computed and used in the same iteration
(``w = ...; A[i][j] = w * 0.25 + ...;``) and a scalar accumulated over an inner loop
and stored after it (``w = B[i]; for (j ...) w -= ...; A[i][i] = w;``, as in ludcmp).
Every index stays in bounds by construction (loop variables in ``[2, N - 3]``, offsets
in ``[-2, 2]``).  The twin is the same C compiled by gcc.

>>> import random
>>> case = make_c_program(random.Random(3))
>>> case.source.startswith("void kern(int N, int M, int T")
True
"""

from __future__ import annotations

from dataclasses import dataclass

SCALARS = ("w", "v")


@dataclass(frozen=True)
class CProgram:
    source: str        # the C function ``kern``
    sizes: tuple       # dicts of N, M, T to run it at
    reductions: bool   # an accumulation: compared within rounding (reassociation)


class _Builder:
    def __init__(self, rng):
        self.rng = rng
        self.lines: list[str] = []
        self.reductions = False

    def access(self, array, loops):
        if array == "y":
            return f"y[{loops[-1]}]"
        space = [v for v in loops if v not in ("t", "q")]
        index = []
        for _ in range(2 if array == "A" else 1):
            v = self.rng.choice(space)
            o = self.rng.choice([0, 0, 1, -1, 2, -2])
            index.append(v if o == 0 else f"{v} {'+' if o > 0 else '-'} {abs(o)}")
        return array + "".join(f"[{e}]" for e in index)

    def reads(self, loops, arrays=("A", "A", "B")):
        return [self.access(self.rng.choice(arrays), loops)
                for _ in range(self.rng.randint(1, 3))]

    def emit(self, indent, text):
        self.lines.append("  " * indent + text)

    def statement(self, indent, loops, arrays=("A", "A", "B")):
        rng = self.rng
        target = self.access(rng.choice(arrays), loops)
        reads = self.reads(loops, arrays)
        if rng.random() < 0.3:
            self.reductions = True
            self.emit(indent, f"{target} += {reads[0]} * 0.25;")
        elif rng.random() < 0.3:  # a scalar computed and used in the same iteration
            w = rng.choice(SCALARS)
            self.emit(indent, f"{w} = {reads[0]} * 0.5 + {rng.choice(['1.0', '-0.25'])};")
            self.emit(indent, f"{target} = {w} * 0.25 + {reads[-1]} * 0.5;")
        else:
            self.emit(indent, f"{target} = ({' + '.join(reads)}) * {1 / len(reads) if len(reads) != 3 else 0.25};")

    def nest(self, indent, outer):
        rng = self.rng
        if rng.random() < 0.15:
            self.emit(indent, "for (q = 0; q < M; q++) {")
            target, read = self.access("y", outer + ["q"]), self.access("y", outer + ["q"])
            self.emit(indent + 1, f"{target} = {read} * 0.5 + 0.25;")
            self.emit(indent, "}")
            return
        step = "i += 2" if rng.random() < 0.15 else "i++"
        self.emit(indent, f"for (i = 2; i < N - 2; {step}) {{")
        loops = outer + ["i"]
        depth = rng.choice([1, 2, 2, 2, 3])
        if depth == 1:
            for _ in range(rng.randint(1, 2)):
                self.statement(indent + 1, loops)
            self.emit(indent, "}")
            return
        bounds = rng.choice(["j = 2; j < N - 2", "j = 2; j < i", "j = i + 1; j < N - 2",
                             "j = 2; j <= i"])
        accumulate = rng.random() < 0.4 and depth == 2
        if accumulate:  # ludcmp's shape: w = ...; for j: w -= ...; store w
            w = rng.choice(SCALARS)
            self.reductions = True
            self.emit(indent + 1, f"{w} = {self.access('B', loops)};")
        elif rng.random() < 0.25:
            self.statement(indent + 1, loops)
        self.emit(indent + 1, f"for ({bounds}; j++) {{")
        inner = loops + ["j"]
        if accumulate:
            self.emit(indent + 2, f"{w} {rng.choice(['-=', '+='])} {self.access('A', inner)} * "
                                  f"{self.access('B', inner)} * 0.125;")
        elif depth == 3:
            k_bounds = rng.choice(["k = 2; k < j", "k = 2; k < N - 2"])
            self.emit(indent + 2, f"for ({k_bounds}; k++) {{")
            self.statement(indent + 3, inner + ["k"])
            self.emit(indent + 2, "}")
        else:
            for _ in range(rng.randint(1, 2)):
                self.statement(indent + 2, inner)
        self.emit(indent + 1, "}")
        if accumulate:
            self.emit(indent + 1, f"{self.access(rng.choice(['A', 'B']), loops)} = {w} * 0.5;")
        elif rng.random() < 0.2:
            self.statement(indent + 1, loops)
        self.emit(indent, "}")

    def build(self) -> CProgram:
        rng = self.rng
        indent, outer = 1, []
        if rng.random() < 0.4:
            self.emit(1, "for (t = 0; t < T; t++) {")
            indent, outer = 2, ["t"]
        for _ in range(rng.randint(1, 3)):
            self.nest(indent, outer)
        if outer:
            self.emit(1, "}")
        body = "\n".join(self.lines)
        source = ("void kern(int N, int M, int T, double A[N][N], double B[N], double y[M])\n"
                  "{\n  int t, q, i, j, k;\n  double w, v;\n#pragma scop\n"
                  f"{body}\n#pragma endscop\n}}\n")
        sizes = tuple({"N": rng.choice([0, 3, 5, 6, 7, 8, 9]), "M": rng.randint(0, 4),
                       "T": rng.randint(0, 3)} for _ in range(2))
        return CProgram(source, sizes, self.reductions)


def make_c_program(rng) -> CProgram:
    """A random C kernel (see the module docstring)."""
    return _Builder(rng).build()


C_RUNNER = '''
from polyopt.frontend.c_native import NativeFunction, arguments, call_polyopt, compile_c

kernel = po.from_c(SOURCE, "kern")
native = NativeFunction(compile_c(SOURCE, ("-O1",)), "kern", kernel.c_params)
ARGS = None
BUILT = {}


def fresh():
    return po.create_schedule(kernel)


def run(s, sizes):
    """Build ``s`` (once) and run it in place; returns its arrays and gcc's."""
    values = arguments(kernel, sizes, seed=sum(sizes.values()))
    expected = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}
    native(expected)
    if id(s) not in BUILT:
        BUILT[id(s)] = (s, po.build(s))
    call_polyopt(kernel, BUILT[id(s)][1], values)
    names = [t.name for t in kernel.args]
    return [values[n] for n in names], [expected[n] for n in names]
'''

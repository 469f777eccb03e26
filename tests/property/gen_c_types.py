"""Random C loop nests that exercise C's types, for ``po.from_c`` against gcc.

A function ``kern(int n, double D[n], float F[n], int I[n], long L[n], char C[n],
unsigned char U[n], <the same types> oD[n] ... oU[n], double M[n][n])`` reading the
first six arrays and writing the others, with local scalars of every type: 1-3 loop nests
(an inner loop forward, triangular or backward) of 1-3 statements, some guarded
(``if``/``else`` on loop variables or on data), storing values of random type into
arrays of random type (plain and compound assignments).  Values mix the types with
integer promotions and the usual arithmetic conversions, casts (``(int)`` of a double
truncates), double and float literals, math functions (``sqrt`` of a float is a double,
``sqrtf`` a float; exp and tanh, whose last bit libms round apart, are compared within
8 units in the last place and never truncated to integers), and integer ``/`` and ``%`` with negative operands, by constants
and by data (divisors are never zero: ``x % 5 + 6`` or ``x % 5 - 6``).  Values stay far
from overflow and from undefined conversions (a double stored into a char goes
through ``(int)`` first), so gcc's numbers are the only right ones.  Now and then an
index divides a value of unknown sign (``A[(i - 3) % 2 + 2]``): refused, or exact.

>>> import random
>>> program = make_c_types_program(random.Random(1))
>>> program.source.startswith("void kern(int n, double D[n], float F[n]")
True
"""

from __future__ import annotations

from dataclasses import dataclass

ARRAYS = {"D": "double", "F": "float", "I": "int", "L": "long", "C": "char",
          "U": "unsigned char"}
INTEGER = ("I", "L", "C", "U")
OUTPUTS = {"o" + name: ctype for name, ctype in ARRAYS.items()}
LOCALS = {"s": "int", "t": "float", "d": "double", "l": "long", "c": "char"}
SIGNATURE = ("void kern(int n, " + ", ".join(f"{t} {a}[n]" for a, t in ARRAYS.items()) + ", "
             + ", ".join(f"{t} {a}[n]" for a, t in OUTPUTS.items()) + ", double M[n][n])")


@dataclass(frozen=True)
class CTypesProgram:
    source: str
    sizes: tuple        # values of n to run at
    reductions: bool    # a floating accumulation (compared within rounding)


class _Builder:
    """Inputs (D F I L C U, values up to 40) are only read, outputs (oD ... oU, M) only
    written, and locals assigned values without locals: every value is bounded (an
    integer below 10**7), so no int overflows and every (int) of a double is defined."""

    def __init__(self, rng):
        self.rng = rng
        self.lines: list[str] = []
        self.reductions = False
        self.assigned: list[str] = []  # locals assigned earlier in the current body
        self.locals_ok = True          # whether values may read locals
        self.exact_only = False        # only correctly rounded math (sqrt, fabs): a value
        # that is truncated to an integer or compared must be the same in every libm

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("  " * indent + text)

    def _locals(self, floating: bool) -> list[str]:
        if not self.locals_ok:
            return []
        return [v for v in self.assigned if (LOCALS[v] in ("float", "double")) == floating]

    # -- values ---------------------------------------------------------------------------
    def integer(self, depth: int, loops) -> str:
        """An integer expression (either sign); products only of two leaves."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            kind = rng.random()
            if kind < 0.45:
                return f"{rng.choice(INTEGER)}[{self.index(loops)}]"
            if kind < 0.65:
                return rng.choice(loops)
            if kind < 0.72:
                return "n"
            if kind < 0.82 and (names := self._locals(False)):
                return rng.choice(names)
            return rng.choice(["3", "-4", "7", "-2", "5L", "('a' - 96)", "0"])
        kind = rng.random()
        if kind < 0.45:
            ops = ["+", "-", "*"] if depth == 1 else ["+", "-"]
            return f"({self.integer(depth - 1, loops)} {rng.choice(ops)} " \
                   f"{self.integer(depth - 1, loops)})"
        if kind < 0.75:
            op = rng.choice(["/", "%"])
            return f"({self.integer(depth - 1, loops)} {op} {self.divisor(loops)})"
        if kind < 0.9:
            cast = rng.choice(["(int)", "(long)", "(int)", "(char)(int)"])
            return f"{cast}({self.exact(min(depth - 1, 1), loops)})"
        return f"-({self.integer(depth - 1, loops)})"

    def divisor(self, loops) -> str:
        """A non-zero integer of either sign."""
        rng = self.rng
        if rng.random() < 0.5:
            return rng.choice(["3", "-3", "2", "-7", "4L"])
        return f"({self.integer(0, loops)} % 5 {rng.choice(['+', '-'])} 6)"

    def floating(self, depth: int, loops) -> str:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            kind = rng.random()
            if kind < 0.55:
                return f"{rng.choice(['D', 'F', 'F'])}[{self.index(loops)}]"
            if kind < 0.7 and (names := self._locals(True)):
                return rng.choice(names)
            return rng.choice(["0.1", "2.5f", "-1.25", "0.1f", "3.0", "1e-3"])
        kind = rng.random()
        if kind < 0.4:
            op = rng.choice(["+", "-", "*"])
            left = self.floating(depth - 1, loops)
            right = self.floating(depth - 1, loops) if rng.random() < 0.6 else \
                self.integer(depth - 1, loops)
            return f"({left} {op} {right})" if rng.random() < 0.5 else f"({right} {op} {left})"
        if kind < 0.55:
            divisor = rng.choice(["3.0", "3", "0.7f", "-6"])
            return f"({self.floating(depth - 1, loops)} / {divisor})"
        if kind < 0.75:
            func = rng.choice(["sqrt", "sqrtf", "fabs", "fabsf"] + (
                [] if self.exact_only else ["tanh", "tanhf", "expf", "exp"]))
            inner = self.floating(depth - 1, loops) if rng.random() < 0.7 else \
                self.integer(depth - 1, loops)
            if func.startswith("sqrt"):
                inner = f"fabs{'f' if func.endswith('f') else ''}({inner})"
            if func.startswith("exp"):
                inner = f"tanh({inner})"
            return f"{func}({inner})"
        if kind < 0.9:
            cast = rng.choice(["(float)", "(double)"])
            inner = self.floating(depth - 1, loops) if rng.random() < 0.5 else \
                self.integer(depth - 1, loops)
            return f"{cast}({inner})"
        return f"({self.condition(loops)} ? {self.floating(depth - 1, loops)} : " \
               f"{self.floating(depth - 1, loops)})"

    def exact(self, depth: int, loops) -> str:
        """A floating value without exp and tanh (whose last bit libms round apart)."""
        saved, self.exact_only = self.exact_only, True
        try:
            return self.floating(depth, loops)
        finally:
            self.exact_only = saved

    def index(self, loops) -> str:
        rng = self.rng
        v = rng.choice(loops)
        if rng.random() < 0.04:  # refused (C's % of a negative), or exact
            return f"({v} - 3) % 2 + 2" if rng.random() < 0.5 else f"({v} + 3) / 2"
        return v

    def condition(self, loops, data: bool = True) -> str:
        """A condition on the loop variables or (``data``) on values."""
        rng = self.rng
        kind = rng.random() * (1.0 if data else 0.5)
        if kind < 0.3:
            return f"{rng.choice(loops)} % 2 == {rng.choice(['0', '1'])}"
        if kind < 0.5:
            return f"{rng.choice(loops)} {rng.choice(['<', '>=', '<='])} n / 2"
        if kind < 0.75:
            return f"{self.integer(1, loops)} % 3 == {rng.choice(['-1', '1', '0', '-2'])}"
        return f"{self.exact(1, loops)} {rng.choice(['<', '>', '!='])} " \
               f"{self.integer(0, loops)}"

    # -- statements -----------------------------------------------------------------------
    def store(self, indent: int, loops, guarded: bool = False) -> None:
        rng = self.rng
        if rng.random() < 0.2:  # a local scalar, read by later statements of this body
            name = rng.choice(list(LOCALS))
            self.locals_ok = False
            floating = LOCALS[name] in ("float", "double")
            value = self.floating(1, loops) if floating else \
                self.exact(1, loops) if rng.random() < 0.3 else self.integer(1, loops)
            self.locals_ok = True
            self.emit(indent, f"{name} = {value};")
            if not guarded and name not in self.assigned:
                self.assigned.append(name)
            return
        target = rng.choice(list(OUTPUTS) + ["M"])
        index = f"{loops[0]}][{loops[-1]}" if target == "M" else loops[-1]
        integer_target = target in ("o" + a for a in INTEGER)
        if integer_target:
            value = self.integer(2, loops) if rng.random() < 0.7 else \
                f"(int)({self.exact(1, loops)})"
        else:
            value = self.floating(2, loops) if rng.random() < 0.7 else self.integer(2, loops)
        op = "="
        if rng.random() < 0.3:
            op = rng.choice(["+=", "-=", "/=", "%="] if integer_target else
                            ["+=", "-=", "*=", "/="])
            if op in ("/=", "%="):
                value = self.divisor(loops) if integer_target else "3.0"
            if op == "*=":
                value = rng.choice(["2", "-3", "0.5"])
            if not integer_target:
                self.reductions = True
        self.emit(indent, f"{target}[{index}] {op} {value};")

    def body(self, indent: int, loops) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.25:
                # data-dependent 'if' statements are refused (ternaries are not): rarely
                self.emit(indent, f"if ({self.condition(loops, rng.random() < 0.1)})")
                self.store(indent + 1, loops, guarded=True)
                if rng.random() < 0.5:
                    self.emit(indent, "else")
                    self.store(indent + 1, loops, guarded=True)
            else:
                self.store(indent, loops)

    def nest(self) -> None:
        rng = self.rng
        self.assigned = []
        self.emit(1, "for (i = 0; i < n; i++) {")
        if rng.random() < 0.5:
            self.body(2, ["i"])
        else:
            bounds = rng.choice(["j = 0; j < n; j++", "j = 0; j <= i; j++",
                                 "j = n - 1; j >= 0; j--", "j = i; j < n; j += 2"])
            if rng.random() < 0.3:
                self.store(2, ["i"])
            self.emit(2, f"for ({bounds}) {{")
            self.body(3, ["i", "j"])
            self.emit(2, "}")
        self.emit(1, "}")

    def build(self) -> CTypesProgram:
        for _ in range(self.rng.randint(1, 3)):
            self.nest()
        decls = " ".join(f"{t} {v};" for v, t in LOCALS.items())
        loop_type = self.rng.choice(["int", "long"])
        source = (f"{SIGNATURE}\n{{\n  {loop_type} i, j;\n  {decls}\n#pragma scop\n"
                  + "\n".join(self.lines) + "\n#pragma endscop\n}\n")
        sizes = tuple(sorted({self.rng.choice([1, 2, 5, 7, 10]) for _ in range(2)}))
        return CTypesProgram(source, sizes, self.reductions)


def make_c_types_program(rng) -> CTypesProgram:
    """A random C kernel (see the module docstring)."""
    return _Builder(rng).build()


C_TYPES_RUNNER = '''
import contextlib, io, os, shutil, tempfile
import polyopt.cli
from polyopt.frontend.c_native import NativeFunction, call_polyopt, compile_c

DTYPES = {"double": np.float64, "float": np.float32, "int": np.int32, "long": np.int64,
          "char": np.int8, "unsigned char": np.uint8}


def inputs(n, seed):
    """Arrays of small values of both signs (unsigned char: 0 to 40)."""
    rng = np.random.default_rng(seed)
    values = {"n": n}
    for p in kernel.c_params:
        if p.kind != "array":
            continue
        shape = (n, n) if len(p.dims) == 2 else (n,)
        dtype = DTYPES[p.ctype]
        if dtype in (np.float64, np.float32):
            data = rng.uniform(-4, 4, shape).round(3).astype(dtype)
        elif dtype == np.uint8:
            data = rng.integers(0, 40, shape).astype(dtype)
        else:
            data = rng.integers(-20, 21, shape).astype(dtype)
        values[p.name] = data
    return values


def compare(expected, got, what):
    """Integers exactly; floating values exactly, or within a few units in the last
    place where exp and tanh (which libms round apart) were called, or within rounding
    after an accumulation (reassociated)."""
    names = [p.name for p in kernel.c_params if p.kind == "array"]
    if REDUCTIONS:
        assert_numbers([expected[k] for k in names], [got[k] for k in names], what,
                       mode="close")
        return
    for name in names:
        e, a = expected[name], got[name]
        if e.dtype.kind == "f" and ("exp" in SOURCE or "tanh" in SOURCE):
            ulp = np.finfo(e.dtype).eps
            if not np.allclose(e, a, rtol=8 * ulp, atol=8 * ulp, equal_nan=True):
                raise Defect("wrong", f"{what}: {name} differs beyond 8 ulp: expected "
                                      f"{e.tolist()[:6]}, got {a.tolist()[:6]}")
        else:
            assert_numbers([e], [a], f"{what} ({name})", mode="values")


def emitted_c():
    """The file `polyopt opt --emit c` writes (the auto schedule as C with OpenMP)."""
    folder = tempfile.mkdtemp()
    try:
        path, out = os.path.join(folder, "k.c"), os.path.join(folder, "k.opt.c")
        with open(path, "w") as handle:
            handle.write(SOURCE)
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            status = polyopt.cli.main(["opt", path, "--emit", "c", "-o", out])
        if status != 0:
            raise Defect("crash", f"polyopt opt --emit c failed ({status}): "
                                  f"{printed.getvalue()[-300:]}")
        with open(out) as handle:
            return handle.read()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def check_c_types():
    native = NativeFunction(compile_c(SOURCE, ("-O1",)), "kern", kernel.c_params)
    try:  # from_c accepted the kernel: everything after must work
        schedules = {"default": po.create_schedule(kernel), "auto": po.auto_schedule(kernel)}
        built = {name: po.build(s) for name, s in schedules.items()}
        emitted = NativeFunction(compile_c(emitted_c(), openmp=True), "kern", kernel.c_params)
    except po.PolyoptError as error:
        raise Defect("crash", f"accepted by from_c, then {type(error).__name__}: "
                              f"{str(error)[:300]}") from error
    import islpy as isl
    valid = [n for n in SIZES if not kernel.program.context.fix_val(
        isl.dim_type.param, 0, isl.Val(n)).is_empty()] if kernel.program.params else SIZES
    if not valid:
        return "ok-refused no size in the valid range"
    for n in valid:
        expected = inputs(n, n)
        native(expected)
        for name, function in built.items():
            got = inputs(n, n)
            call_polyopt(kernel, function, got)
            compare(expected, got, f"polyopt ({name} schedule) vs gcc at n={n}")
        got = inputs(n, n)
        emitted(got)
        compare(expected, got, f"polyopt opt --emit c vs gcc at n={n}")
    return "ok-accepted"
'''

"""Source to source: a scheduled C kernel written back as C with OpenMP pragmas.

:func:`scop_c` prints the loop nest of a schedule of a :class:`~polyopt.frontend.c.CKernel`
as a C block (parallel loops get ``#pragma omp parallel for``, vectorized ones
``#pragma omp simd``); :func:`replace_scop` puts that block in place of the
``#pragma scop`` region of the original file, as Pluto's polycc does, so the function
keeps its signature and declarations.  Values are printed as the OpenCL back end prints
them (the same C subset), integer ``//``/``%`` through floor helpers.

>>> import polyopt as po
>>> k = po.from_c("void f(int n, double A[n]) { int i;\\n#pragma scop\\n"
...               "for (i = 1; i < n; i++) A[i] += A[i - 1];\\n#pragma endscop\\n}\\n")
>>> print(scop_c(po.create_schedule(k)))
{
  for (long i = 1; i < n; i += 1)
    A[i] = A[i] + A[i - 1L];
}
"""

from __future__ import annotations

import re

from .ast import printer
from .ast.nodes import Block, For, If, Run
from .errors import FrontendError
from .lower import lower
from .target.opencl.values import ValuePrinter
from .te.expr import TensorRead, Var

# Helpers the printed values may call (the OpenCL printer's names), defined for C.
PRELUDE = """\
/* helpers of polyopt's generated code */
#include <math.h>
#include <stdlib.h>
typedef unsigned char uchar;  /* the names of OpenCL's types that values use */
static inline long po_floordiv(long a, long b) {
  if (b == 0) return 0;
  if (b == -1) return -a;
  long q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
static inline long po_floormod(long a, long b) {
  if (b == 0 || b == -1) return 0;
  long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline long po_min(long a, long b) { return a < b ? a : b; }
static inline long po_max(long a, long b) { return a > b ? a : b; }
#define po_floord(n, d) po_floordiv((n), (d))
#define po_fmax(a, b) ((isnan(a) || isnan(b)) ? (a) + (b) : fmax((a), (b)))
#define po_fmin(a, b) ((isnan(a) || isnan(b)) ? (a) + (b) : fmin((a), (b)))
/* floating point to integer as polyopt converts: NaN is 0, beyond the range its end */
#define PO_CONVERT_SAT(type, name, lo, hi) \\
  static inline type name(double x) { \\
    return isnan(x) ? 0 : x <= (lo) ? (type)(lo) : x >= (hi) ? (type)(hi) : (type)x; }
PO_CONVERT_SAT(signed char, convert_char_sat, -128.0, 127.0)
PO_CONVERT_SAT(unsigned char, convert_uchar_sat, 0.0, 255.0)
PO_CONVERT_SAT(short, convert_short_sat, -32768.0, 32767.0)
PO_CONVERT_SAT(int, convert_int_sat, -2147483648.0, 2147483647.0)
static inline long convert_long_sat(double x) {
  return isnan(x) ? 0 : x <= -9223372036854775808.0 ? (-9223372036854775807L - 1)
       : x >= 9223372036854775808.0 ? 9223372036854775807L : (long)x;
}
"""
_RENAMES = [(re.compile(r"\b(min|max|floord)\("), r"po_\1(")]
C_TYPES = {"float32": "float", "float64": "double", "int8": "signed char",
           "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short",
           "int32": "int", "int64": "long",
           "uint32": "unsigned int", "uint64": "unsigned long"}
_PRAGMAS = {"parallel": "#pragma omp parallel for", "vectorized": "#pragma omp simd"}


class _CSource:
    """Lowering for C source: the loop nest as scheduled, on the arrays as the caller
    passes them (no contracted buffers, flat offsets or separated full tiles)."""

    name = "c"

    def passes(self, pipeline):
        return pipeline.without("contract_storage", "flatten_accesses", "separate_full_tiles")


def scop_c(schedule, *, indent: int = 0) -> str:
    """The C block computing ``schedule``'s kernel (its loop nest, statements written out)."""
    func = lower(schedule, target=_CSource())
    writer = _Writer(func.program)
    arrays = [a for a in func.temps if a.shape]  # copies, expanded scalars: on the heap
    lines = (["{"] + [writer.allocation(a) for a in arrays] + writer.node(func.body, 1)
             + [f"  free({a.name});" for a in arrays] + ["}"])
    text = "\n".join("  " * indent + line if line else line for line in lines)
    for pattern, replacement in _RENAMES:
        text = pattern.sub(replacement, text)
    return text


def replace_scop(original: str, block: str) -> str:
    """``original`` C text with its ``#pragma scop`` region replaced by ``block`` (and the
    helpers :data:`PRELUDE` at the top)."""
    lines = original.splitlines()
    starts = [k for k, line in enumerate(lines) if re.match(r"\s*#\s*pragma\s+scop\b", line)]
    ends = [k for k, line in enumerate(lines) if re.match(r"\s*#\s*pragma\s+endscop\b", line)]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise FrontendError("writing C back needs the kernel's region between one "
                            "'#pragma scop' and one '#pragma endscop' in the file")
    new = lines[:starts[0]] + ["/* optimized by polyopt */"] + block.splitlines() + \
        ["/* end of polyopt's code */"] + lines[ends[0] + 1:]
    return PRELUDE + "\n".join(new) + "\n"


class _Writer:
    def __init__(self, program):
        self.program = program
        self.scalars: dict[int, str] = {}
        self.values = _CValuePrinter(self._scalar, self._address)

    def node(self, node, depth: int) -> list[str]:
        pad = "  " * depth
        if isinstance(node, Block):
            return [line for item in node.items for line in self.node(item, depth)]
        if isinstance(node, If):
            lines = self._braced(f"{pad}if ({printer.index_text(node.cond, c=True)})",
                                 node.then, depth)
            if node.otherwise is not None:
                lines += self._braced(f"{pad}else", node.otherwise, depth)
            return lines
        if isinstance(node, Run):
            return [pad + self._run(node)]
        if not isinstance(node, For):  # pragma: no cover - every node kind is above
            raise FrontendError(f"cannot write {type(node).__name__} as C")
        var = _c_name(node.var)
        pragma = _PRAGMAS.get(node.kind)
        head = (f"{pad}for (long {var} = {printer.index_text(node.init, c=True)}; "
                f"{printer.index_text(node.cond, c=True)}; {var} += {node.step})")
        return ([pad + pragma] if pragma else []) + self._braced(head, node.body, depth)

    def _braced(self, head: str, body, depth: int) -> list[str]:
        inner = self.node(body, depth + 1)
        if len(inner) == 1:
            return [head] + inner
        return [head + " {"] + inner + ["  " * depth + "}"]

    def allocation(self, array) -> str:
        """``  double (*A_global)[10] = malloc(sizeof(double) * (8) * (10));``"""
        ctype = C_TYPES.get(array.dtype, "double")
        dims = [_strip(self.values.emit(d, "int64")) for d in array.shape]
        return (f"  {ctype} (*{array.name}){''.join(f'[{d}]' for d in dims[1:])} = "
                f"malloc(sizeof({ctype}){''.join(f' * ({d})' for d in dims)});")

    def _run(self, run: Run) -> str:
        stmt = self.program.statement(run.stmt)
        for axis, arg in zip(stmt.index_vars, run.args):
            text = printer.paren(printer.rendered(arg, c=True), 10, False)
            self.scalars[id(axis)] = _c_name(text) if re.fullmatch(r"[\w.]+", text) else text
        value = self.values.emit(stmt.value, stmt.target.dtype)
        return f"{self._address(stmt.target)} = {_strip(value)};"

    def _scalar(self, expr) -> str:
        if isinstance(expr, Var):
            return expr.name
        return self.scalars[id(expr)]

    def _address(self, read: TensorRead) -> str:
        array = self.program.array_of(read.tensor)
        if not read.indices:
            return array.name  # a scalar parameter or a local scalar of the C function
        return array.name + "".join(f"[{_strip(self.values.emit(i, 'int64'))}]"
                                    for i in read.indices)


class _CValuePrinter(ValuePrinter):
    """OpenCL's value printer with C's names: ``sqrtf`` for a float (C's ``sqrt`` would
    compute in double)."""

    def _call(self, expr) -> str:
        text = super()._call(expr)
        if expr.dtype == "float32":
            text = re.sub(r"^(sqrt|exp|log|tanh|fabs|pow|floor|ceil|trunc|round|sin|cos|exp2|"
                          r"log2|log10|tan|asin|acos|atan|sinh|cosh|cbrt|expm1|log1p|erf|"
                          r"atan2|fmod|hypot|fmax|fmin)\(", r"\1f(", text)
        return text


def _c_name(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _strip(text: str) -> str:
    """``(a + b)`` without its outer parentheses when they enclose the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1]


__all__ = ["PRELUDE", "replace_scop", "scop_c"]

"""A checkout in PolyBench/C 4.2.1's shape, written here from ``benchmarks/polybench``.

PolyBench's distribution is not copied: this writes its layout and conventions around
the project's own kernels (``benchmarks/polybench/<name>.c``): ``utilities/polybench.h``
(``POLYBENCH_1D..3D`` parameter macros, ``POLYBENCH_nD_ARRAY_DECL``, ``POLYBENCH_ARRAY``,
loop bounds ``POLYBENCH_LOOP_BOUND``, the dump and timer macros), ``utilities/polybench.c``
(allocation and timer), and per kernel ``<name>/<name>.h`` (datasets ``MINI_DATASET`` ..
``LARGE_DATASET``, ``DATA_TYPE``, ``SCALAR_VAL``, ``POW_FUN``/``SQRT_FUN``/``EXP_FUN``)
and ``<name>/<name>.c`` (``#include <polybench.h>`` with angle brackets, the kernel with
``DATA_TYPE POLYBENCH_2D(A,N,M,n,m)`` parameters and ``_PB_N`` bounds, ``main`` with
initialization and ``POLYBENCH_DUMP_ARRAYS`` output).

>>> kernel = parse_kernel((KERNELS / "gemm.c").read_text())
>>> kernel.function, [p.name for p in kernel.params][:4]
('kernel_gemm', ['ni', 'nj', 'nk', 'alpha'])
"""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "benchmarks" / "polybench"

POLYBENCH_H = r"""/* polybench.h: PolyBench/C's conventions, written for polyopt's tests */
#ifndef POLYBENCH_H
# define POLYBENCH_H
# include <stdlib.h>
# include <string.h>
# ifndef POLYBENCH_PADDING_FACTOR
#  define POLYBENCH_PADDING_FACTOR 0
# endif
# define POLYBENCH_PAD(d) (d) + POLYBENCH_PADDING_FACTOR
# define POLYBENCH_1D(v, d1, dd1) v[POLYBENCH_PAD(d1)]
# define POLYBENCH_2D(v, d1, d2, dd1, dd2) v[POLYBENCH_PAD(d1)][POLYBENCH_PAD(d2)]
# define POLYBENCH_3D(v, d1, d2, d3, dd1, dd2, dd3) \
   v[POLYBENCH_PAD(d1)][POLYBENCH_PAD(d2)][POLYBENCH_PAD(d3)]
# define POLYBENCH_LOOP_BOUND(x, y) y
# define POLYBENCH_ARRAY(x) *x
# define POLYBENCH_FREE_ARRAY(x) free((void *)x)
# define POLYBENCH_1D_ARRAY_DECL(v, type, d1, dd1) \
   type (*v)[POLYBENCH_PAD(d1)] = polybench_alloc_data(POLYBENCH_PAD(d1), sizeof(type))
# define POLYBENCH_2D_ARRAY_DECL(v, type, d1, d2, dd1, dd2) \
   type (*v)[POLYBENCH_PAD(d1)][POLYBENCH_PAD(d2)] = \
     polybench_alloc_data((POLYBENCH_PAD(d1)) * (POLYBENCH_PAD(d2)), sizeof(type))
# define POLYBENCH_3D_ARRAY_DECL(v, type, d1, d2, d3, dd1, dd2, dd3) \
   type (*v)[POLYBENCH_PAD(d1)][POLYBENCH_PAD(d2)][POLYBENCH_PAD(d3)] = \
     polybench_alloc_data((POLYBENCH_PAD(d1)) * (POLYBENCH_PAD(d2)) * (POLYBENCH_PAD(d3)), \
                          sizeof(type))
# define POLYBENCH_DUMP_TARGET stderr
# define POLYBENCH_DUMP_START fprintf(POLYBENCH_DUMP_TARGET, "==BEGIN DUMP_ARRAYS==\n")
# define POLYBENCH_DUMP_FINISH fprintf(POLYBENCH_DUMP_TARGET, "==END   DUMP_ARRAYS==\n")
# define POLYBENCH_DUMP_BEGIN(s) fprintf(POLYBENCH_DUMP_TARGET, "begin dump: %s", s)
# define POLYBENCH_DUMP_END(s) fprintf(POLYBENCH_DUMP_TARGET, "\nend   dump: %s\n", s)
# ifdef POLYBENCH_DUMP_ARRAYS
#  define polybench_prevent_dce(call) call
# else
#  define polybench_prevent_dce(call) \
    if (argc > 42 && !strcmp(argv[0], "")) call
# endif
# ifdef POLYBENCH_TIME
#  define polybench_start_instruments polybench_timer_start();
#  define polybench_stop_instruments polybench_timer_stop();
#  define polybench_print_instruments polybench_timer_print();
# else
#  define polybench_start_instruments
#  define polybench_stop_instruments
#  define polybench_print_instruments
# endif
extern void *polybench_alloc_data(unsigned long long n, int element_size);
extern void polybench_timer_start(void);
extern void polybench_timer_stop(void);
extern void polybench_timer_print(void);
#endif
"""

POLYBENCH_C = r"""/* polybench.c: allocation and timer of the PolyBench-shaped harness */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "polybench.h"

static double polybench_t_start, polybench_t_end;

static double polybench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

void polybench_timer_start(void) { polybench_t_start = polybench_now(); }
void polybench_timer_stop(void) { polybench_t_end = polybench_now(); }
void polybench_timer_print(void) { printf("%0.6f\n", polybench_t_end - polybench_t_start); }

void *polybench_alloc_data(unsigned long long n, int element_size) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n * element_size + 64) != 0 || p == NULL) {
    fprintf(stderr, "[PolyBench] posix_memalign: cannot allocate memory\n");
    exit(1);
  }
  return p;
}
"""

_TYPES = r"""
# if !defined(DATA_TYPE_IS_INT) && !defined(DATA_TYPE_IS_FLOAT)
#  define DATA_TYPE_IS_DOUBLE
# endif
# ifdef DATA_TYPE_IS_FLOAT
#  define DATA_TYPE float
#  define DATA_PRINTF_MODIFIER "%0.6e "
#  define SCALAR_VAL(x) x##f
#  define SQRT_FUN(x) sqrtf(x)
#  define EXP_FUN(x) expf(x)
#  define POW_FUN(x,y) powf(x,y)
# endif
# ifdef DATA_TYPE_IS_DOUBLE
#  define DATA_TYPE double
#  define DATA_PRINTF_MODIFIER "%0.12e "
#  define SCALAR_VAL(x) x
#  define SQRT_FUN(x) sqrt(x)
#  define EXP_FUN(x) exp(x)
#  define POW_FUN(x,y) pow(x,y)
# endif
"""

DATASETS = ("MINI_DATASET", "SMALL_DATASET", "MEDIUM_DATASET", "LARGE_DATASET",
            "EXTRALARGE_DATASET")
_STEPS = ("TSTEPS", "TMAX")


@dataclass
class Param:
    name: str
    kind: str          # size, scalar, array
    ctype: str = "double"
    dims: tuple = ()   # macro names


@dataclass
class ParsedKernel:
    function: str
    params: list
    body: str          # from the opening brace to the closing one
    macros: list       # the file's other #define lines


def parse_kernel(text: str) -> ParsedKernel:
    """The kernel function of one of ``benchmarks/polybench/*.c``."""
    match = re.search(r"^void\s+(kernel_\w+)\s*\(([^)]*)\)\s*", text, re.MULTILINE)
    params = []
    for item in match.group(2).split(","):
        words = item.split()
        ctype, rest = " ".join(words[:-1]), words[-1]
        name = rest.split("[")[0]
        dims = tuple(re.findall(r"\[(\w+)\]", rest))
        kind = "array" if dims else ("size" if ctype == "int" else "scalar")
        params.append(Param(name, kind, ctype, dims))
    start = match.end()
    depth = 0
    for k in range(start, len(text)):
        depth += text[k] == "{"
        depth -= text[k] == "}"
        if depth == 0 and text[k] == "}":
            break
    sizes = {p.name.upper() for p in params if p.kind == "size"}
    macros = [line for line in text[:match.start()].splitlines()
              if re.match(r"\s*#\s*define\s+(\w+)", line)
              and re.match(r"\s*#\s*define\s+(\w+)", line).group(1) not in sizes]
    return ParsedKernel(match.group(1), params, text[start:k + 1], macros)


def dataset_sizes(kernel: ParsedKernel, dataset: str) -> dict[str, int]:
    """Distinct small sizes for MINI and SMALL (time steps fewer), larger above."""
    base = {"MINI_DATASET": 8, "SMALL_DATASET": 20, "MEDIUM_DATASET": 60,
            "LARGE_DATASET": 200, "EXTRALARGE_DATASET": 400}[dataset]
    sizes, k = {}, 0
    for p in kernel.params:
        if p.kind != "size":
            continue
        macro = p.name.upper()
        sizes[macro] = max(2, int(math.sqrt(base))) if macro in _STEPS else base + 2 * k
        k += 1
    if kernel.function == "kernel_gramschmidt":  # full column rank: more rows
        sizes["M"], sizes["N"] = base + 4, base
    return sizes


def header(name: str, kernel: ParsedKernel) -> str:
    guard = "_" + re.sub(r"\W", "_", name).upper() + "_H"
    lines = [f"#ifndef {guard}", f"# define {guard}",
             "# if " + " && ".join(f"!defined({d})" for d in DATASETS),
             "#  define LARGE_DATASET", "# endif"]
    macros = [p.name.upper() for p in kernel.params if p.kind == "size"]
    lines.append("# if " + " && ".join(f"!defined({m})" for m in macros))
    for dataset in DATASETS:
        lines.append(f"#  ifdef {dataset}")
        lines += [f"#   define {m} {v}" for m, v in dataset_sizes(kernel, dataset).items()]
        lines.append("#  endif")
    lines.append("# endif")
    lines += [f"# define _PB_{m} POLYBENCH_LOOP_BOUND({m},{m.lower()})" for m in macros]
    return "\n".join(lines) + "\n" + _TYPES + "#endif\n"


def _declarator(p: Param, pb: bool) -> str:
    ctype = "DATA_TYPE" if p.ctype == "double" else p.ctype
    if p.kind != "array":
        return f"{'int' if p.kind == 'size' else ctype} {p.name}"
    args = ",".join([p.name, *p.dims, *[d.lower() for d in p.dims]])
    return f"{ctype} POLYBENCH_{len(p.dims)}D({args})" if pb else f"{ctype} {p.name}"


def _body(kernel: ParsedKernel) -> str:
    body = kernel.body.replace("double", "DATA_TYPE")
    for p in kernel.params:
        if p.kind == "size":  # loop bounds through PolyBench's _PB_ macros
            body = re.sub(rf"\b{p.name}\b", f"_PB_{p.name.upper()}", body)
    body = re.sub(r"(?<![\w.])(\d+\.\d*(?:e-?\d+)?)(?![\w.])", r"SCALAR_VAL(\1)", body)
    for func, macro in (("pow", "POW_FUN"), ("sqrt", "SQRT_FUN"), ("exp", "EXP_FUN")):
        body = re.sub(rf"\b{func}\(", f"{macro}(", body)
    return body


def source(name: str, kernel: ParsedKernel) -> str:
    """``<name>.c`` in PolyBench's shape: includes, init, dump, kernel, main."""
    arrays = [p for p in kernel.params if p.kind == "array"]
    scalars = [p for p in kernel.params if p.kind == "scalar"]
    sizes = [p for p in kernel.params if p.kind == "size"]
    out = ["#include <stdio.h>", "#include <unistd.h>", "#include <string.h>",
           "#include <math.h>", "", "#include <polybench.h>", "", f'#include "{name}.h"',
           ""] + kernel.macros + [""]
    # init_array: deterministic, symmetric and diagonally dominant square matrices
    params = ", ".join([_declarator(p, False) for p in sizes]
                       + [f"DATA_TYPE *{p.name}" for p in scalars]
                       + [_declarator(p, True) for p in arrays])
    out += ["static", f"void init_array({params})", "{", "  int i0, i1, i2;"]
    out += [f"  *{p.name} = SCALAR_VAL(1.5) - SCALAR_VAL(0.25) * {k};"
            for k, p in enumerate(scalars)]
    if any(p.name == "float_n" for p in scalars):
        first = sizes[-1].name
        out.append(f"  *float_n = (DATA_TYPE){first};")
    for p in arrays:
        index = "".join(f"[i{k}]" for k in range(len(p.dims)))
        for k, d in enumerate(p.dims):
            out.append("  " * (k + 1) + f"for (i{k} = 0; i{k} < {d.lower()}; i{k}++)")
        pad = "  " * (len(p.dims) + 1)
        if p.ctype == "int":
            value = f"(i0 * 7 + {len(p.dims)}) % 4" if p.name == "seq" else "0"
        elif name == "durbin":
            value = "SCALAR_VAL(1.0) / (i0 + 3)"
        else:
            total = " + ".join(f"i{k}" for k in range(len(p.dims)))
            value = f"(DATA_TYPE)(({total}) % 7 + 1) / SCALAR_VAL(8.0)"
            if len(p.dims) == 2 and p.dims[0] == p.dims[1]:
                value += f" + (i0 == i1 ? (DATA_TYPE){p.dims[0].lower()} : 0)"
        out.append(f"{pad}{p.name}{index} = {value};")
    out += ["}", ""]
    # print_array: every array, PolyBench's dump format
    params = ", ".join([_declarator(p, False) for p in sizes]
                       + [_declarator(p, True) for p in arrays])
    out += ["static", f"void print_array({params})", "{", "  int i0, i1, i2;",
            "  POLYBENCH_DUMP_START;"]
    for p in arrays:
        index = "".join(f"[i{k}]" for k in range(len(p.dims)))
        out.append(f'  POLYBENCH_DUMP_BEGIN("{p.name}");')
        for k, d in enumerate(p.dims):
            out.append("  " * (k + 1) + f"for (i{k} = 0; i{k} < {d.lower()}; i{k}++)")
        modifier = '"%d "' if p.ctype == "int" else "DATA_PRINTF_MODIFIER"
        out.append("  " * (len(p.dims) + 1) +
                   f"fprintf(POLYBENCH_DUMP_TARGET, {modifier}, {p.name}{index});")
        out.append(f'  POLYBENCH_DUMP_END("{p.name}");')
    out += ["  POLYBENCH_DUMP_FINISH;", "}", ""]
    # the kernel
    params = ",\n    ".join(_declarator(p, True) for p in kernel.params)
    out += ["static", f"void {kernel.function}({params})", _body(kernel), ""]
    # main
    out += ["int main(int argc, char **argv)", "{"]
    out += [f"  int {p.name} = {p.name.upper()};" for p in sizes]
    out += [f"  DATA_TYPE {p.name};" for p in scalars]
    for p in arrays:
        ctype = "DATA_TYPE" if p.ctype == "double" else p.ctype
        out.append(f"  POLYBENCH_{len(p.dims)}D_ARRAY_DECL({p.name}, {ctype}, "
                   f"{', '.join(p.dims)}, {', '.join(d.lower() for d in p.dims)});")
    call = ", ".join([p.name for p in sizes] + [f"&{p.name}" for p in scalars]
                     + [f"POLYBENCH_ARRAY({p.name})" for p in arrays])
    out += [f"  init_array({call});", "  polybench_start_instruments;"]
    call = ", ".join([p.name for p in sizes] + [p.name for p in scalars]
                     + [f"POLYBENCH_ARRAY({p.name})" for p in arrays])
    out += [f"  {kernel.function}({call});", "  polybench_stop_instruments;",
            "  polybench_print_instruments;"]
    call = ", ".join([p.name for p in sizes] + [f"POLYBENCH_ARRAY({p.name})" for p in arrays])
    out += [f"  polybench_prevent_dce(print_array({call}));"]
    out += [f"  POLYBENCH_FREE_ARRAY({p.name});" for p in arrays]
    out += ["  return 0;", "}", ""]
    return "\n".join(out)


def write_checkout(root: Path, names=None) -> dict[str, Path]:
    """Write the checkout under ``root``; ``{name: path of <name>.c}``."""
    (root / "utilities").mkdir(parents=True, exist_ok=True)
    (root / "utilities" / "polybench.h").write_text(POLYBENCH_H)
    (root / "utilities" / "polybench.c").write_text(POLYBENCH_C)
    files = {}
    for path in sorted(KERNELS.glob("*.c")):
        if names is not None and path.stem not in names:
            continue
        kernel = parse_kernel(path.read_text())
        folder = root / path.stem
        folder.mkdir(exist_ok=True)
        (folder / f"{path.stem}.h").write_text(header(path.stem, kernel))
        (folder / f"{path.stem}.c").write_text(source(path.stem, kernel))
        files[path.stem] = folder / f"{path.stem}.c"
    return files


def build_and_dump(root: Path, kernel_c: Path, dataset: str, exe: Path,
                   openmp: bool = False, headers: Path | None = None) -> str:
    """Compile ``kernel_c`` with the harness (timer, array dump; the kernel's header in
    ``headers``, by default beside it) and run it: the dump."""
    flags = ["-O2", "-I", str(root / "utilities"), "-I", str(headers or kernel_c.parent),
             "-DPOLYBENCH_TIME", "-DPOLYBENCH_DUMP_ARRAYS", f"-D{dataset}"]
    if openmp:
        flags.append("-fopenmp")
    built = subprocess.run(["gcc", *flags, str(root / "utilities" / "polybench.c"),
                            str(kernel_c), "-o", str(exe), "-lm"], capture_output=True,
                           text=True, timeout=300)
    if built.returncode != 0:
        raise AssertionError(f"gcc could not build {kernel_c}:\n{built.stderr[:3000]}")
    result = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300,
                            check=True)
    return result.stderr


def dumps_agree(expected: str, actual: str, rtol: float = 1e-9, atol: float = 1e-12):
    """Whether two dumps have the same words, numbers within ``rtol``/``atol`` (the
    reassociation of floating-point sums); ``(ok, first difference)``."""
    a, b = expected.split(), actual.split()
    if len(a) != len(b):
        return False, f"{len(a)} words against {len(b)}"
    for k, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False, f"word {k}: {x!r} against {y!r}"
        if math.isnan(fx) and math.isnan(fy):
            continue
        if not abs(fx - fy) <= atol + rtol * max(abs(fx), abs(fy)):
            return False, f"word {k}: {x} against {y}"
    return True, ""

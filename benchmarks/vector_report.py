"""Which loops marked vectorized came out as vector code, for a set of schedules.

Run: ``python benchmarks/vector_report.py`` (``--without-parallel-accesses``: as if
polyopt did not tell LLVM that the loops' iterations are independent, i.e. LLVM's own
dependence analysis alone, to compare).  Builds each schedule (nothing is timed) and
prints, per kernel, the loops marked vectorized, those LLVM left scalar
(``f.scalar_loops``), how many of the vectorized loops carry
``llvm.loop.parallel_accesses`` and the vector types of the optimized IR.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "tests"), HERE]

import polyopt as po  # noqa: E402
from bench_stencil import heat_diamond, heat_tiled, seidel_tiled  # noqa: E402
from bench_suite import (chain_case, conv_case, layer_norm_case,  # noqa: E402
                         softmax_case)
from polyopt.target.llvm.remarks import asks_for_vectors, loop_ids  # noqa: E402


def stencil(tiled, loop: str | None = None):
    def schedule():
        s = tiled()
        if loop is not None:
            s["S0"].vectorize(loop)
        return s, None
    return schedule


def template(case):
    def schedule():
        args = case.make()
        s = po.create_schedule(args[-1])
        case.template(s, args[-1])
        return s, args
    return schedule


def matmul(n: int):
    def schedule():
        A, B = po.placeholder((n, n), name="A"), po.placeholder((n, n), name="B")
        C = po.ops.matmul(A, B)
        s = po.create_schedule(C)
        po.templates.matmul_template(s, C)
        return s, [A, B, C]
    return schedule


SCHEDULES = {
    "seidel-2d time-tiled, t.inner vectorized": stencil(lambda: seidel_tiled(False, True)),
    "heat-2D time-tiled, j.inner vectorized": stencil(lambda: heat_tiled(False, True)),
    "heat-2D diamond-tiled, j.inner vectorized": stencil(heat_diamond, "j.inner"),
    "matmul 512 template": matmul(512),
    "conv2d 3x3 template": template(conv_case(64, 64, 56, 3, 1, 1)),
    "conv2d 3x3 7x7 template": template(conv_case(512, 512, 7, 3, 1, 1)),
    "conv2d 1x1 s2 template": template(conv_case(64, 128, 56, 1, 0, 2)),
    "softmax template": template(softmax_case(4096, 1024)),
    "layer norm template": template(layer_norm_case(4096, 1024)),
    "elementwise chain template": template(chain_case(10 ** 6)),
}


def report(name: str, schedule) -> str:
    s, args = schedule()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", po.PolyoptWarning)
        f = po.build(s, args)
    marked = [(loop, properties) for loop, properties in loop_ids(f.llvm_ir)
              if asks_for_vectors(properties)]
    loops = dict.fromkeys(loop for loop, _ in marked)
    parallel = sum(any("llvm.loop.parallel_accesses" in p for p in properties)
                   for _, properties in marked)
    types = sorted(set(re.findall(r"<[0-9]+ x (?:float|double)>", f.optimized_ir)))
    return (f"| {name} | {', '.join(loops) or '-'} | {', '.join(f.scalar_loops) or '-'} | "
            f"{parallel} of {len(marked)} | {' '.join(types) or 'none'} |")


def main() -> int:
    if "--without-parallel-accesses" in sys.argv:
        from polyopt.target.llvm import passes  # (the parallel_accesses pass asks it)
        passes.has_independent_iterations = lambda *args: False
    print("| schedule | loops marked vectorized | left scalar by LLVM | loop IDs with "
          "parallel accesses | vector types in the optimized IR |")
    print("|---|---|---|---:|---|")
    for name, schedule in SCHEDULES.items():
        print(report(name, schedule), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

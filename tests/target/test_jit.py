"""The LLVM optimizer's settings (polyopt.target.llvm.jit)."""

import re

import numpy as np

import polyopt as po
from polyopt.target.llvm.jit import DSE_WALK_LIMIT, optimize
from testlib.machine import builds_for, machine_for


def _overwritten_after(others: int) -> str:
    """A function storing 1.0 to p[0], then to ``others`` other elements (apart: no vector store), then 2.0 to
    p[0] again: the first store is dead."""
    lines = ["define void @f(ptr noalias %p) {", "entry:", "  store float 1.0, ptr %p"]
    for k in range(1, others + 1):
        lines += [f"  %q{k} = getelementptr inbounds float, ptr %p, i64 {17 * k}",
                  f"  store float 3.0, ptr %q{k}"]
    lines += ["  store float 2.0, ptr %p", "  ret void", "}"]
    return "\n".join(lines)


def _stores(ir_text: str) -> list[str]:
    return [line.strip() for line in str(optimize(ir_text)).splitlines()
            if line.strip().startswith("store ")]


def test_a_dead_store_within_the_walk_limit_is_removed():
    stores = _stores(_overwritten_after(10))
    assert "store float 1.000000e+00, ptr %p, align 4" not in stores
    assert stores[-1] == "store float 2.000000e+00, ptr %p, align 4"


def test_the_walk_stops_after_the_limit():
    """Beyond DSE_WALK_LIMIT writes the dead store stays (LLVM's default is 90): a
    store too many, the price of a faster O3 on large unrolled bodies."""
    assert DSE_WALK_LIMIT == 30
    stores = _stores(_overwritten_after(2 * DSE_WALK_LIMIT))
    assert stores[0] == "store float 1.000000e+00, ptr %p, align 4"
    assert stores[-1] == "store float 2.000000e+00, ptr %p, align 4"


def test_a_partial_register_tile_keeps_its_sums_in_registers():
    """A 40 x 100 matmul (6-row, 64-column tiles: both leave a remainder) has a partial
    column tile whose check for a real iteration sits in each unrolled row: hoisted out
    of the reduction (UNSWITCH_THRESHOLD), its masked FMAs accumulate in registers
    instead of storing the sums to the stack on every step; and the numbers are right.
    (AVX-512's masks: the code is built for a CPU with AVX-512, run on the host.)"""
    A = po.placeholder((40, 16), name="A")
    B = po.placeholder((16, 100), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C, target_info=machine_for("avx512f"))
    inspected, f = builds_for(s, [A, B, C], "avx512f", num_threads=1)
    lines = inspected.assembly.splitlines()
    masked = [i for i, line in enumerate(lines) if "vfmadd231ps" in line and "{%k" in line]
    assert masked  # the partial tile is vectorized with masks
    assert not [i for i in masked if re.search(r"vmovaps\s+%zmm\d+, -?\d*\(%rsp\)",
                                               lines[i + 1])]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 16), dtype=np.float32)
    b = rng.standard_normal((16, 100), dtype=np.float32)
    c = np.zeros((40, 100), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)

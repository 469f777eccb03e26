"""The LLVM optimizer's settings (polyopt.target.llvm.jit)."""

from polyopt.target.llvm.jit import DSE_WALK_LIMIT, optimize


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

"""``polyopt opt`` as a drop-in for Pluto's polycc on a checkout in PolyBench/C 4.2.1's
shape (tests/testlib/polybench_shaped.py: ``utilities/polybench.h``, ``<kernel>.c``
including ``<polybench.h>`` with angle brackets and its own ``"<kernel>.h"``): each kernel
goes through ``polyopt opt -I utilities <kernel>.c --emit c -o out.c``, the output is
compiled with the harness (``utilities/polybench.c``, ``-DPOLYBENCH_TIME``,
``-DPOLYBENCH_DUMP_ARRAYS``) and dumps the same arrays as the original built by gcc."""

import pytest

from polyopt.cli import main
from tests.testlib.polybench_shaped import KERNELS, build_and_dump, dumps_agree, write_checkout

ALL = sorted(p.stem for p in KERNELS.glob("*.c"))
# the default suite: a matrix product, pow with a non-integer exponent (deriche's
# POW_FUN(2.0, -alpha)), a stencil over time steps and integer arrays
FAST = ["gemm", "deriche", "jacobi-1d", "nussinov"]


def _opt_and_compare(tmp_path, capsys, name, dataset):
    root = tmp_path / "PolyBenchC"
    kernel_c = write_checkout(root, {name})[name]
    out = tmp_path / f"{name}.opt.c"
    status = main(["opt", "-I", str(root / "utilities"), str(kernel_c), "-D", dataset,
                   "--emit", "c", "-o", str(out)])
    capsys.readouterr()
    assert status == 0
    text = out.read_text()
    assert "optimized by polyopt" in text and "#include <polybench.h>" in text
    expected = build_and_dump(root, kernel_c, dataset, tmp_path / "original")
    actual = build_and_dump(root, out, dataset, tmp_path / "optimized", openmp=True,
                            headers=kernel_c.parent)
    assert "begin dump" in expected
    same, where = dumps_agree(expected, actual)
    assert same, f"{name} ({dataset}): {where}"


@pytest.mark.parametrize("name", FAST)
def test_polybench_shaped_kernel_through_opt_and_harness(tmp_path, capsys, name):
    _opt_and_compare(tmp_path, capsys, name, "MINI_DATASET")


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["MINI_DATASET", "SMALL_DATASET"])
@pytest.mark.parametrize("name", ALL)
def test_every_polybench_shaped_kernel_through_opt_and_harness(tmp_path, capsys, name,
                                                               dataset):
    _opt_and_compare(tmp_path, capsys, name, dataset)

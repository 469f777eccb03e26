"""``bench_polybench.py --polybench DIR`` with PolyBench's own harness in
``DIR/utilities`` (benchmarks/polybench_harness.py): the kernels found, the emitted C of
``polyopt opt`` checked against the original by the arrays both dump, and timed."""

import pathlib
import sys

import pytest

from tests.testlib.polybench_shaped import write_checkout

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
import polybench_harness as harness  # noqa: E402


def test_the_harness_is_used_only_where_the_checkout_has_it(tmp_path):
    files = write_checkout(tmp_path / "PolyBenchC", {"gemm", "atax"})
    assert harness.harness_dir(tmp_path / "PolyBenchC") == tmp_path / "PolyBenchC" / "utilities"
    assert harness.kernels(tmp_path / "PolyBenchC") == sorted(files.items())
    (tmp_path / "PolyBenchC" / "utilities" / "polybench.c").unlink()
    assert harness.harness_dir(tmp_path / "PolyBenchC") is None  # then: the stand-in


def test_dumps_agree_within_printed_precision_only():
    assert harness.dumps_agree("A 1.00 2.00", "A 1.00 2.01") == (True, "")
    assert harness.dumps_agree("A 1.00 2.00", "A 1.00 2.50") == (False, "word 2: 2.00 against 2.50")
    assert harness.dumps_agree("A 1.00", "B 1.00") == (False, "word 0: 'A' against 'B'")
    assert harness.dumps_agree("A 1.00", "A 1.00 2.00") == (False, "2 words against 3")


@pytest.mark.slow
def test_a_kernel_optimized_checked_and_timed_with_the_checkouts_harness(tmp_path):
    root = tmp_path / "PolyBenchC"
    source = write_checkout(root, {"gemm"})["gemm"]
    work = tmp_path / "work"
    work.mkdir()
    row = harness.run_kernel(root / "utilities", "gemm", source, "MINI_DATASET",
                             "SMALL_DATASET", 1, work)
    assert row["same"], row["difference"]
    assert "#pragma omp" in (work / "gemm.opt.c").read_text()
    assert set(row["medians"]) == {"original", "emitted 1 thread", "emitted 2 threads"}
    assert all(t > 0 for t in row["medians"].values()) and row["opt_cpu"] > 0
    text, data = harness.report([row], [], root, "MINI_DATASET", 1, (0.0, 0.0))
    assert "| gemm |" in text and data["targets"][0]["pass"]


def test_a_kernel_polyopt_refuses_is_reported(tmp_path):
    root = tmp_path / "PolyBenchC"
    source = write_checkout(root, {"gemm"})["gemm"]
    source.write_text(source.read_text().replace("#pragma scop", ""))
    with pytest.raises(harness.Refused, match="polyopt opt: polyopt: error:"):
        harness.run_kernel(root / "utilities", "gemm", source, "MINI_DATASET",
                           "MINI_DATASET", 1, tmp_path)

"""Run TVM v0.12's ported tensor-expression tests (tests/tvm_compat/ported) and write the
counts to benchmarks/results/tvm_tests.md: per file, how many pass, fail for a documented
difference, fail for a missing name (both xfail, listed in the ported conftest.py with the
reason), and are skipped because they need a GPU.

    python3 benchmarks/tvm_tests.py
"""

import collections
import os
import pathlib
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
PORTED = ROOT / "tests" / "tvm_compat" / "ported"
OUT = ROOT / "benchmarks" / "results" / "tvm_tests.md"
KINDS = ("pass", "difference", "missing", "fail", "gpu")


def outcome(case) -> str:
    skipped, failure = case.find("skipped"), case.find("failure")
    error = case.find("error")
    if skipped is not None:
        if skipped.get("type") == "pytest.xfail":
            return "missing" if "missing in polyopt" in skipped.get("message", "") \
                else "difference"
        return "gpu"
    return "fail" if failure is not None or error is not None else "pass"


def run() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", str(PORTED), "-p",
                        "no:cacheprovider", f"--junitxml={report}"], cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)},
                       capture_output=True, check=False)
        counts = collections.defaultdict(collections.Counter)
        for case in ET.parse(report).iter("testcase"):
            counts[case.get("classname").split(".")[-1] + ".py"][outcome(case)] += 1
    return counts


def write(counts: dict) -> str:
    lines = ["# TVM v0.12's tensor-expression tests on polyopt", "",
             "TVM's own tests (apache/tvm v0.12.0 `tests/python/unittest/test_te_*.py` without "
             "the IR-internal ones, `tests/python/integration/test_{reduce,ewise,scan,gemm,dot}"
             ".py`), ported with only their imports changed (`benchmarks/port_tvm_tests.py`) "
             "into `tests/tvm_compat/ported/`. Expected failures are listed with their reason "
             "in `tests/tvm_compat/ported/conftest.py` (xfail, strict): *difference* = a "
             "documented difference from TVM (or a test inspecting TVM's internal IR), "
             "*missing* = a TVM name polyopt still lacks. *gpu* = skipped as TVM skips "
             "them without a GPU. Made by `python3 benchmarks/tvm_tests.py`.", "",
             "| file | pass | difference | missing | fail | gpu |",
             "|---|---|---|---|---|---|"]
    total = collections.Counter()
    for name in sorted(counts):
        total.update(counts[name])
        lines.append(f"| {name} | " + " | ".join(str(counts[name][k]) for k in KINDS) + " |")
    lines.append("| **total** | " + " | ".join(f"**{total[k]}**" for k in KINDS) + " |")
    runnable = sum(total[k] for k in KINDS if k != "gpu")
    lines += ["", f"{total['pass']} of {runnable} CPU-runnable tests pass "
              f"({100 * total['pass'] / max(runnable, 1):.0f}%); {total['difference']} fail "
              f"for a documented difference, {total['missing']} for a missing name, "
              f"{total['fail']} unexpectedly."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = write(run())
    OUT.write_text(text)
    print(text)

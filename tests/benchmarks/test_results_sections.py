"""Benchmark results files keep one section per machine (``benchmarks/_env.py``): a run
replaces its own machine's section and JSON entry, the other machines' stay, and a file
written before sections existed becomes the earlier machine's section."""

import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
import _env  # noqa: E402

ZEN3 = ("znver3; has avx2; lacks avx512f", "AMD EPYC (LLVM znver3), 2 core(s); has avx2")
XEON = ("sapphirerapids; has avx2, amx_int8; lacks none", "Intel Xeon (LLVM sapphirerapids)")


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(_env, "RESULTS", tmp_path)
    return tmp_path


def _run_on(monkeypatch, machine, text, data):
    monkeypatch.setattr(_env, "this_machine", lambda: machine)
    _env.write_results("demo", text, data)


def test_a_run_replaces_only_its_own_machines_section(results, monkeypatch):
    (results / "demo.md").write_text("# Demo\n\nold figures\n\n## Targets\n\n| old |\n")
    (results / "demo.json").write_text(json.dumps([{"old": 1}]))
    _run_on(monkeypatch, ZEN3, "# Demo\n\nzen3 figures\n\n## Targets\n\n```\n# kept\n```\n",
            [{"zen3": 1}])
    _run_on(monkeypatch, XEON, "# Demo\n\nxeon figures\n", [{"xeon": 1}])
    _run_on(monkeypatch, ZEN3, "# Demo\n\nzen3 again\n", [{"zen3": 2}])
    text = (results / "demo.md").read_text()
    assert text.startswith("# Demo\n") and text.count("# Demo") == 1
    assert text.count("<!-- machine: ") == 3
    earlier = text.index(_env.EARLIER_MACHINE[1])
    assert earlier < text.index("old figures") < text.index("### Targets") < text.index(
        ZEN3[1]) < text.index("zen3 again") < text.index(XEON[1]) < text.index("xeon figures")
    assert "zen3 figures" not in text and "# kept" not in text
    machines = json.loads((results / "demo.json").read_text())["machines"]
    assert machines == {
        _env.EARLIER_MACHINE[0]: {"machine": _env.EARLIER_MACHINE[1], "results": [{"old": 1}]},
        ZEN3[0]: {"machine": ZEN3[1], "results": [{"zen3": 2}]},
        XEON[0]: {"machine": XEON[1], "results": [{"xeon": 1}]}}
    assert _env.previous_results("demo") == [{"zen3": 2}]


def test_headings_in_code_blocks_stay(results, monkeypatch):
    _run_on(monkeypatch, ZEN3, "# Demo\n\n## Part\n\n```c\n#pragma x\n```\n", {})
    text = (results / "demo.md").read_text()
    assert "### Part" in text and "\n#pragma x\n" in text


def test_the_host_is_named_by_its_machine_model():
    from polyopt.machine import TargetInfo

    family, heading = _env.this_machine()
    host = TargetInfo.host()
    assert heading == host.describe()
    assert family.startswith(f"{host.name}; has ") and "lacks" in family

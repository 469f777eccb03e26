"""What a fresh clone shows (issue 37): a license stated in pyproject.toml, build outputs
ignored by git, one-off A/B results apart from the results a user reads, example files
the documentation names."""

import fnmatch
import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_license_is_stated():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text().split("\n", 3)[1]


def test_build_outputs_are_ignored():
    patterns = [line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()
                if line.strip() and not line.startswith(("#", "!"))]
    for output in ("x.so", "x.so.json", "kernel.o", "libops.a", "site/", "tiny.onnx"):
        assert any(fnmatch.fnmatch(output, p) or output == p for p in patterns), output


def test_experiments_are_apart_from_the_results():
    results = ROOT / "benchmarks" / "results"
    one_off = [p.name for p in results.iterdir()
               if re.match(r"(.*_ab_|ab_)|polybench_h17b|polybench_weak", p.name)]
    assert not one_off, f"move these to benchmarks/results/experiments/: {one_off}"
    assert (results / "experiments" / "README.md").exists()


def test_the_examples_the_docs_name_exist():
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    named = set(re.findall(r"examples/[\w.]+\.\w+", text))
    assert named, "the docs name no example file"
    missing = sorted(name for name in named if not (ROOT / name).exists())
    assert not missing, missing


def test_the_readme_stays_short():
    """The README is first contact (issue 37): under 12 KB; details go to docs/."""
    assert len((ROOT / "README.md").read_bytes()) < 12_000

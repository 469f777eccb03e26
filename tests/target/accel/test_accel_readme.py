"""The docs' accelerator example (docs/targets.md) runs as written and checks its own
numbers (the device counters it prints, beyond what the docs test compares)."""

import pathlib
import re


def test_readme_accelerator_example_runs(capsys):
    readme = (pathlib.Path(__file__).parents[3] / "docs" / "targets.md").read_text()
    section = readme.split("## The accelerator target", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "docs/targets.md", "exec"), {})  # noqa: S102 (the example asserts its result)
    out = capsys.readouterr().out
    assert "64 GEMM ops" in out and "wgt 16384" in out
    assert "GEMM uops" in out and "push next" in out

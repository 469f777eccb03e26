"""Every ```python block of README.md and docs/*.md runs, and prints what it shows.

The conventions (docs/contributing.md):

- A block runs on its own, as a script (a file), in a fresh namespace, in an empty folder that holds a link
  ``examples`` to the repository's ``examples/`` (so ``po.from_c("examples/gemm.c")``
  reads as it does from a clone's root).
- A block whose first line is ``# (continued)`` runs in the namespace of the block
  before it on the same page; a block and its continuations are one test.
- ``# (slow)`` on the first line (``# (continued, slow)``) marks the test slow.
- A fenced block of language ``output`` right after a python block (blank lines only
  between) is what that block prints; ``...`` stands for any text, as in doctest.
- Each line of an ``sh`` block that runs ``polyopt`` runs too (``polyopt.cli.main``, in
  such a folder), its exit status the one its comment states (``# 1: illegal``) or 0;
  ``polyopt demo`` lines are slow tests.  ``json`` blocks must parse.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import pathlib
import re
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"^#\s*\(([a-z, ]+)\)")


def blocks(page: pathlib.Path):
    """``(line, language, code)`` of each fenced block of ``page``, in order, with the
    text between it and the previous block."""
    text = page.read_text()
    end = 0
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        yield line, match.group(1), match.group(2), text[end:match.start()]
        end = match.end()


def markers(code: str) -> set[str]:
    first = code.split("\n", 1)[0]
    found = MARKER.match(first)
    return {word.strip() for word in found.group(1).split(",")} if found else set()


def chains():
    """One test per python block and its continuations: ``(id, [(code, output)], slow)``."""
    for page in PAGES:
        current = None
        previous_python = None
        for line, language, code, between in blocks(page):
            if language == "output" and previous_python is not None and not between.strip():
                previous_python[1] = code
                continue
            previous_python = None
            if language != "python":
                continue
            tags = markers(code)
            unknown = tags - {"continued", "slow"}
            assert not unknown, f"{page.name}:{line}: unknown marker {unknown}"
            step = [code, None]
            if "continued" in tags:
                assert current is not None, f"{page.name}:{line}: nothing to continue"
                current[1].append(step)
                current[2] |= "slow" in tags
            else:
                if current is not None:
                    yield current
                current = [f"{page.relative_to(ROOT)}:{line}", [step], "slow" in tags]
            previous_python = step
        if current is not None:
            yield current


def _params():
    for name, steps, slow in chains():
        marks = [pytest.mark.slow] if slow else []
        yield pytest.param(name, steps, id=name, marks=marks)


@pytest.mark.parametrize("name, steps", _params())
def test_code_block_runs(name, steps, tmp_path, monkeypatch):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__doc_example__"}
    checker = doctest.OutputChecker()
    for number, (code, shown) in enumerate(steps):
        script = tmp_path / f"block_{number}.py"  # a file, as a reader's script would be
        script.write_text(code)                   # (po.kernel reads its function's source)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, str(script), "exec"), namespace)
        if shown is not None:
            got = printed.getvalue()
            assert checker.check_output(shown, got, doctest.ELLIPSIS), \
                f"{name} printed:\n{got}\nbut the page shows:\n{shown}"


def test_the_conventions_find_blocks():
    """The extraction sees every python block: a page's count by a plain search."""
    found = sum(len(steps) for _, steps, _ in chains())
    plain = sum(page.read_text().count("```python\n") for page in PAGES)
    assert found == plain and found > 20


def command_lines():
    """``(id, argv, status)`` of each ``polyopt ...`` line of the pages' sh blocks."""
    for page in PAGES:
        for line, language, code, _ in blocks(page):
            if language != "sh":
                continue
            for offset, text in enumerate(code.splitlines(), start=1):
                command, _, comment = text.partition("#")
                argv = shlex.split(command)
                if not argv or argv[0] != "polyopt":
                    continue
                stated = re.match(r"\s*(\d+):", comment)
                yield (f"{page.relative_to(ROOT)}:{line + offset}", argv[1:],
                       int(stated.group(1)) if stated else 0)


def _command_params():
    for name, argv, status in command_lines():
        marks = [pytest.mark.slow] if argv[:1] == ["demo"] else []
        yield pytest.param(argv, status, id=name, marks=marks)


@pytest.mark.parametrize("argv, status", _command_params())
def test_command_line_runs(argv, status, tmp_path, monkeypatch, capsys):
    from polyopt.cli import main

    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYOPT_CACHE", str(tmp_path / "cache"))
    assert main(argv) == status, capsys.readouterr()


def test_json_blocks_parse():
    found = 0
    for page in PAGES:
        for line, language, code, _ in blocks(page):
            if language == "json":
                json.loads(code)
                found += 1
    assert found

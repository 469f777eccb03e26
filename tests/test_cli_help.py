"""The command line's help, version and exit codes read like a well-kept Unix tool's
(issue 37): --version; every command's help is plain text (no reST markup), complete,
and ends with an example; the exit codes are in the top-level help."""

import argparse
import re

import pytest

import polyopt as po
from polyopt.cli import help_text, main, parser, plain


def _commands(p=None, path=()):
    p = p or parser()
    yield path, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


ALL = [" ".join(path) for path, _ in _commands()]


def _help(capsys, *argv):
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"polyopt {po.__version__}")


def test_every_command_is_reached():
    assert {"", "demo", "check", "opt", "run", "lib", "lib build", "cache", "cache info",
            "cache clear"} <= set(ALL)


@pytest.mark.parametrize("command", ALL)
def test_help_is_plain_text_with_an_example(capsys, command):
    text = _help(capsys, *command.split())
    assert "``" not in text and not re.search(r":(mod|func|class):`", text), text
    assert re.search(r"^Examples?:$", text, re.M), f"no example in `polyopt {command} --help`"
    example = text.split("Example", 1)[1]
    assert f"polyopt {command}".strip() in example or command == "", example


@pytest.mark.parametrize("command", ALL)
def test_help_has_its_own_description(capsys, command):
    """Not the parent's help (cache info printed cache's), and not cut mid-sentence
    (run's description stopped at 'compile an ONNX')."""
    text = _help(capsys, *command.split())
    usage = text.split("\n\n", 1)[0]
    assert f"usage: polyopt {command}".rstrip() in " ".join(usage.split())
    description = text.split("\n\n", 2)[1].strip()
    assert description.endswith((".", ":", "?")), description


def test_top_level_help_documents_exit_codes(capsys):
    text = _help(capsys)
    assert "Exit status:" in text
    for code in ("0", "1", "2", "130"):
        assert re.search(rf"\b{code}\b", text.split("Exit status:", 1)[1]), code


def test_help_text_and_plain():
    assert plain(":func:`polyopt.check` runs ``x``") == "polyopt.check runs x"
    keywords = help_text("Does x.\n\nExamples:\n\n    polyopt x\n\n>>> 1 + 1\n2\n")
    assert keywords["description"] == "Does x."
    assert keywords["epilog"] == "Examples:\n\n    polyopt x"
    assert help_text("Only words.")["epilog"] is None


def test_cache_subcommands_run(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("POLYOPT_CACHE", str(tmp_path / "cache"))
    assert main(["cache", "info"]) == 0
    assert "0 kernel(s)" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 0 kernel(s)" in capsys.readouterr().out


def test_unknown_command_is_exit_2(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["cache", "wipe"])
    assert stop.value.code == 2
    assert "invalid choice: 'wipe'" in capsys.readouterr().err

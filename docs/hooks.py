"""MkDocs hook: ``<!-- argparse: polyopt -->`` in a page becomes the help of the
``polyopt`` command and of each of its subcommands, from the parser itself."""

from __future__ import annotations

import argparse
import re

MARKER = re.compile(r"<!-- argparse: polyopt -->")


def _subcommands(parser: argparse.ArgumentParser, path: list[str]):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subcommands(sub, [*path, name])


def reference() -> str:
    from polyopt.cli import parser

    sections = []
    for path, sub in _subcommands(parser(), ["polyopt"]):
        title = " ".join(path)
        sections.append(f"## `{title}`\n\n```text\n{sub.format_help().rstrip()}\n```\n")
    return "\n".join(sections)


def on_page_markdown(markdown: str, **kwargs) -> str:
    if MARKER.search(markdown):
        markdown = MARKER.sub(lambda _: reference(), markdown)
    return markdown

"""The help of the command line: plain text from docstrings, examples as epilogs.

A subcommand's module docstring is its help: the text before ``Example:`` or
``Examples:`` is the description, the examples are the epilog, doctests are left out and
reST markup is taken away, since a terminal shows it as it is.

>>> help_text("Does x.\\n\\nExample:\\n\\n    polyopt x\\n")["epilog"]
'Example:\\n\\n    polyopt x'
"""

from __future__ import annotations

import argparse
import re

_ROLES = re.compile(r":(?:mod|func|class|meth|data):`~?([^`]+)`")


def plain(text: str) -> str:
    """``text`` without reST markup, for a terminal.

    >>> plain("``polyopt check`` (see :mod:`polyopt.cli.check`)")
    'polyopt check (see polyopt.cli.check)'
    """
    return _ROLES.sub(r"\1", text).replace("``", "")


def help_text(doc: str) -> dict:
    """``add_parser`` keywords from a module's docstring: the text before ``Example:``
    or ``Examples:`` is the description, the examples are the epilog (doctests left out),
    both without reST markup, printed as written.

    >>> sorted(help_text("Does x.\\n\\nExample:\\n\\n    polyopt x\\n"))
    ['description', 'epilog', 'formatter_class']
    """
    doc = plain(doc.split("\n>>>", 1)[0])
    parts = re.split(r"(?m)^(?=Examples?:\s*$)", doc, maxsplit=1)
    return {"description": parts[0].strip(),
            "epilog": parts[1].strip() if len(parts) > 1 else None,
            "formatter_class": argparse.RawDescriptionHelpFormatter}

"""A case as a growing Python script: executed piece by piece, printable as a reproducer.

Every piece of a case (the harness, the program, each primitive call, the last checks)
is Python text.  :class:`Script` executes each piece in one namespace as it is added,
after writing the script so far to ``inflight`` (so that when the process dies or hangs
the parent still has the reproducer), and :meth:`Script.reproducer` returns the whole
of it as a standalone script that ends by printing ``OUTCOME: ...``.

>>> script = Script()
>>> script.run("x = 6 * 7")
>>> script.namespace["x"]
42
>>> "OUTCOME" in script.reproducer("demo")
True
"""

from __future__ import annotations

import textwrap
from pathlib import Path

HARNESS = (Path(__file__).parent / "harness.py").read_text()


class Script:
    def __init__(self, inflight: Path | None = None, filename: str = "<case>"):
        self.pieces: list[str] = []
        self.inflight = inflight
        self.filename = str(inflight) if inflight else filename
        self.namespace: dict = {"__name__": "__polyopt_case__"}
        self.lines = 0

    def run(self, text: str, *, top: bool = False) -> None:
        """Add ``text`` and execute it (``top``: a piece that stays outside the
        reproducer's ``try``, such as the harness)."""
        self.pieces.append(("top" if top else "body", text))
        if self.inflight is not None:
            self.inflight.write_text(self.reproducer("in flight when the worker stopped"))
        # the kernel frontend reads a function's source through linecache: give each
        # piece a file of its own that holds exactly that piece
        self.lines += 1
        code_file = (self.inflight.with_suffix(f".{self.lines}.py") if self.inflight
                     else None)
        if code_file is not None:
            code_file.write_text(text)
        exec(compile(text, str(code_file) if code_file else self.filename, "exec"),
             self.namespace)

    def reproducer(self, title: str) -> str:
        """The standalone script of the case so far (``title`` becomes its comment)."""
        head = [f"# {line}" for line in title.splitlines()]
        top = [text for kind, text in self.pieces if kind == "top"]
        body = [text for kind, text in self.pieces if kind == "body"]
        inner = textwrap.indent("\n".join(body) or "pass", "    ")
        return ("\n".join(head) + "\n" + "\n".join(top) + "\n\ntry:\n" + inner +
                "\n    OUTCOME = OUTCOME if 'OUTCOME' in globals() else 'ok-accepted'\n"
                "except BaseException as error:  # every outcome is reported\n"
                "    OUTCOME = outcome_line(error)\n"
                "print(f'OUTCOME: {OUTCOME}')\n")

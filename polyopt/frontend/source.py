"""The source of a kernel function, parsed with :mod:`ast`, and errors that point into it.

Every :class:`~polyopt.errors.FrontendError` names the file and the line of the user's
function, like a Python traceback does.

>>> def scale(A):
...     A[0] = 1.0
>>> tree, source = parse_function(scale)
>>> tree.name, source.kernel, len(tree.body)
('scale', 'scale', 1)
>>> print(source.error(tree.body[0], "example"))  # doctest: +ELLIPSIS
File "...", line ..., in kernel 'scale': example
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass

from ..errors import FrontendError, PolyoptError


@dataclass(frozen=True, slots=True)
class Source:
    """Where a kernel's source comes from: ``first_line`` is line 1 of the parsed text."""

    kernel: str
    filename: str
    first_line: int

    def line(self, node: ast.AST) -> int:
        """The line of ``node`` in the user's file."""
        return self.first_line + getattr(node, "lineno", 1) - 1

    def at_line(self, line: int) -> str:
        """``kernel 'k' at line 12 of file.py``, for messages of other error classes."""
        return f"kernel '{self.kernel}' at line {line} of {self.filename}"

    def where(self, node: ast.AST) -> str:
        return f'File "{self.filename}", line {self.line(node)}, in kernel \'{self.kernel}\''

    def error(self, node: ast.AST, message: str, cls: type = FrontendError,
              **attributes) -> PolyoptError:
        """An error of class ``cls`` (built with ``attributes``) whose message starts
        with the location of ``node``."""
        return cls(f"{self.where(node)}: {message}", **attributes)


def parse_function(fn) -> tuple[ast.FunctionDef, Source]:
    """The ``def`` of ``fn`` (decorators ignored) and its :class:`Source`."""
    name = getattr(fn, "__name__", repr(fn))
    if not inspect.isfunction(fn):
        raise FrontendError(f"po.kernel decorates a Python function, got {fn!r}")
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as err:
        raise FrontendError(
            f"cannot read the source of kernel '{name}' ({err}); define kernels in a file, "
            "not in an interactive session or with exec()"
        ) from err
    source = Source(name, filename, max(first_line, 1))
    try:
        module = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError as err:
        raise FrontendError(f'File "{filename}", kernel \'{name}\': cannot parse its source '
                            f"on its own ({err.msg})") from err
    tree = module.body[0] if module.body else None
    if not isinstance(tree, ast.FunctionDef) or tree.name != name:
        what = "a lambda" if name == "<lambda>" else f"{type(tree).__name__}"
        raise FrontendError(f"{source.where(tree or module)}: po.kernel needs a function "
                            f"defined with 'def', got {what}")
    return tree, source

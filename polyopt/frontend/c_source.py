"""C source for :func:`~polyopt.frontend.c.from_c`: preprocessing, parsing, and the scop.

The system preprocessor (``cc -E``) runs first, with system ``#include <...>`` lines
left out (the kernel only needs its own macros; math functions need no declaration to
be recognized).  pycparser parses the result; its line markers keep the user's file and
line numbers.  :func:`find_function` picks the function and :func:`scop_items` the
statements between ``#pragma scop`` and ``#pragma endscop`` (the whole body without
them).

>>> unit = parse_source(read_c("#define N 8\\nvoid f(double A[N]) {\\n#pragma scop\\n"
...                               " A[0] = 1;\\n#pragma endscop\\n}\\n"))
>>> func = find_function(unit, None, "<string>")
>>> func.decl.name, [type(s).__name__ for s in scop_items(func, "<string>")]
('f', ['Assignment'])
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import FrontendError, MissingBackendError

_SYSTEM_INCLUDE = re.compile(r"^\s*#\s*include\s*<[^>]*>.*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class CText:
    """C text and the file name its lines refer to (``<string>`` for text)."""

    text: str
    filename: str
    directory: str


def read_c(path_or_text: str) -> CText:
    """A path to an existing file, or C text (anything containing a newline or a brace)."""
    if not isinstance(path_or_text, str):
        raise FrontendError(f"from_c takes a path or C text, got {type(path_or_text).__name__}")
    looks_like_text = "\n" in path_or_text or "{" in path_or_text
    if not looks_like_text:
        if not os.path.isfile(path_or_text):
            raise FrontendError(f"no C file '{path_or_text}'; pass a path to a .c file or C "
                                "text")
        with open(path_or_text, encoding="utf-8", errors="replace") as handle:
            return CText(handle.read(), path_or_text, os.path.dirname(path_or_text) or ".")
    return CText(path_or_text, "<string>", ".")


def preprocess(source: CText, defines: dict | None = None) -> str:
    """``cc -E`` on the text, system includes dropped (their lines kept blank)."""
    text = _SYSTEM_INCLUDE.sub("", source.text)
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise MissingBackendError("from_c runs the C preprocessor, and no 'cc' or 'gcc' is "
                                  "installed: apt-get install gcc (or set CC)")
    flags = [f"-D{name}={value}" for name, value in _defines(defines).items()]
    filename = source.filename
    command = [compiler, "-E", "-x", "c", *flags, "-I", source.directory, "-"]
    try:
        result = subprocess.run(command, input=f'# 1 "{filename}"\n{text}'.encode(),
                                capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise FrontendError(f"running the C preprocessor ({compiler} -E) failed: {err}") from err
    stderr = result.stderr.decode("utf-8", errors="replace").strip()
    if result.returncode != 0:
        raise FrontendError(f"the C preprocessor rejected {filename}:\n{stderr[:4000]}")
    return result.stdout.decode("utf-8", errors="replace")


_MACRO_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _defines(defines) -> dict:
    """``defines`` checked: a mapping from macro names to values without line breaks."""
    if defines is None:
        return {}
    if not isinstance(defines, dict):
        raise FrontendError(f"defines= takes a dict of macros, e.g. {{'N': 20}}, got "
                            f"{type(defines).__name__}")
    checked = {}
    for name, value in defines.items():
        if not isinstance(name, str) or not _MACRO_NAME.fullmatch(name):
            raise FrontendError(f"defines= has the key {name!r}, which is not a C macro "
                                "name")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) \
                or "\n" in str(value) or "\0" in str(value):
            raise FrontendError(f"the macro {name} has the value {value!r}; give a number "
                                "or a one-line C text")
        checked[name] = value
    return checked


def parse_source(source: CText, defines: dict | None = None):
    """The pycparser ``FileAST`` of the preprocessed :class:`CText`."""
    try:
        from pycparser import c_parser
    except ImportError as err:
        raise MissingBackendError("the C front end needs pycparser: python3 -m pip install "
                                  "'polyopt[c]' (or pip install pycparser)") from err
    expanded = preprocess(source, defines)
    try:
        return c_parser.CParser().parse(expanded, source.filename)
    except Exception as err:  # pycparser raises ParseError and, on odd input, others
        raise FrontendError(f"cannot parse the C code: {err} (only C99 without compiler "
                            "extensions is understood; include system headers with "
                            "#include <...>, which is left out)") from err


def find_function(unit, function: str | None, filename: str):
    """The function named ``function``; else the one with ``#pragma scop``, else the only one."""
    from pycparser import c_ast
    funcs = [node for node in unit.ext if isinstance(node, c_ast.FuncDef)]
    if function is not None:
        for func in funcs:
            if func.decl.name == function:
                return func
        raise FrontendError(f"{filename} defines no function '{function}'; it defines "
                            f"{', '.join(f.decl.name for f in funcs) or 'none'}")
    with_scop = [f for f in funcs if any(_is_pragma(s, "scop") for s in _items(f.body))]
    if len(with_scop) == 1:
        return with_scop[0]
    candidates = with_scop or funcs
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise FrontendError(f"{filename} defines no function")
    raise FrontendError(f"{filename} defines several functions "
                        f"({', '.join(f.decl.name for f in candidates)}); pick one with "
                        "function=NAME (--function on the command line)")


def scop_items(func, filename: str) -> list:
    """The statements of ``func``'s body between the scop pragmas (the body without them)."""
    items = _items(func.body)
    starts = [k for k, s in enumerate(items) if _is_pragma(s, "scop")]
    ends = [k for k, s in enumerate(items) if _is_pragma(s, "endscop")]
    if not starts and not ends:
        return items
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        line = func.coord.line if func.coord else 0
        raise FrontendError(f'File "{filename}", line {line}, in function '
                            f"'{func.decl.name}': one '#pragma scop' followed by one "
                            "'#pragma endscop' is needed, in the function's body itself")
    return items[starts[0] + 1:ends[0]]


def declarations_before(func, items: list) -> list:
    """Declarations of the body that come before the scop's first statement."""
    from pycparser import c_ast
    body = _items(func.body)
    first = next((k for k, s in enumerate(body) if any(s is i for i in items)), len(body))
    return [s for s in body[:first] if isinstance(s, c_ast.Decl)]


def _items(compound) -> list:
    return list(compound.block_items or []) if compound is not None else []


def _is_pragma(node, word: str) -> bool:
    from pycparser import c_ast
    return isinstance(node, c_ast.Pragma) and node.string.split()[:1] == [word]


def resolve_typedefs(unit, func) -> None:
    """In ``func``, replace the names of file-level typedefs of plain types
    (``typedef char base;``) by those types, in place."""
    from pycparser import c_ast
    names = {}
    for node in unit.ext:
        if isinstance(node, c_ast.Typedef) and isinstance(node.type, c_ast.TypeDecl) and \
                isinstance(node.type.type, c_ast.IdentifierType):
            names[node.name] = list(node.type.type.names)
    if not names:
        return

    class Resolver(c_ast.NodeVisitor):
        def visit_IdentifierType(self, node):
            for _ in range(len(names)):  # typedefs of typedefs, without looping forever
                if len(node.names) != 1 or node.names[0] not in names:
                    break
                node.names = list(names[node.names[0]])

    Resolver().visit(func)

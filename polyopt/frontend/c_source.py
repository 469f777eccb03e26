"""C source for :func:`~polyopt.frontend.c.from_c`: preprocessing, parsing, and the scop.

The system preprocessor (``cc -E``) runs first, with a C compiler's options (``-I``,
``-D``, ``-U``, ``-include``: :mod:`~polyopt.frontend.c_preprocess`, which also leaves
the system headers out but for their typedef names).  pycparser parses the result; its
line markers keep the user's file and line numbers.  :func:`find_function` picks the function and :func:`scop_items` the
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
from .c_preprocess import CPPOptions, parse_tolerant, split_system, system_typedefs



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


def preprocess(source: CText, options: CPPOptions | None = None) -> str:
    """``cc -E`` on the text with the compiler options ``options`` (its line markers
    kept)."""
    options = options or CPPOptions()
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise MissingBackendError("from_c runs the C preprocessor, and no 'cc' or 'gcc' is "
                                  "installed: apt-get install gcc (or set CC)")
    filename = source.filename
    if filename == "<string>":  # text: quoted includes from the working folder
        command = [compiler, "-E", "-x", "c", *options.flags(), "-iquote", ".", "-"]
        stdin = f'# 1 "{filename}"\n{source.text}'.encode()
    else:  # a file: the compiler finds its quoted includes beside it
        command = [compiler, "-E", "-x", "c", *options.flags(), filename]
        stdin = b""
    try:
        result = subprocess.run(command, input=stdin, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise FrontendError(f"running the C preprocessor ({compiler} -E) failed: {err}") from err
    stderr = result.stderr.decode("utf-8", errors="replace").strip()
    if result.returncode != 0:
        hint = ""
        if "No such file" in stderr:
            hint = ("\n(a header not found: give the folders of your headers with -I DIR, "
                    "include_dirs= in po.from_c)")
        raise FrontendError(f"the C preprocessor rejected {filename}:\n{stderr[:4000]}{hint}")
    return result.stdout.decode("utf-8", errors="replace")


def parse_source(source: CText, defines=None, options: CPPOptions | None = None):
    """The pycparser ``FileAST`` of the preprocessed :class:`CText` (system headers left
    out but their typedef names; top-level pieces the parser cannot read left out)."""
    return parse_file(source, defines, options)[0]


def parse_file(source: CText, defines=None, options: CPPOptions | None = None):
    """:func:`parse_source`, and the :class:`~polyopt.frontend.c_preprocess.Skipped`
    pieces."""
    try:
        from pycparser import c_parser
    except ImportError as err:
        raise MissingBackendError("the C front end needs pycparser: python3 -m pip install "
                                  "'polyopt[c]' (or pip install pycparser)") from err
    if options is None:
        options = CPPOptions.make(defines=defines)
    user, system = split_system(preprocess(source, options))
    typedefs = system_typedefs(system)
    prelude = '# 1 "<system headers>"\n' + "\n".join(typedefs.values()) + "\n"
    try:
        unit, skipped = parse_tolerant(c_parser.CParser, prelude, user, source.filename)
    except FrontendError:
        raise
    except Exception as err:  # pycparser raises ParseError and, on odd input, others
        raise FrontendError(f"cannot parse the C code: {err} (only C99 without compiler "
                            "extensions is understood in the kernel's function)") from err
    return unit, skipped


def find_function(unit, function: str | None, filename: str, skipped=()):
    """The function named ``function``; else the one with ``#pragma scop``, else the only one."""
    from pycparser import c_ast
    funcs = [node for node in unit.ext if isinstance(node, c_ast.FuncDef)]
    if function is not None:
        for func in funcs:
            if func.decl.name == function:
                return func
        raise FrontendError(f"{filename} defines no function '{function}'; it defines "
                            f"{', '.join(f.decl.name for f in funcs) or 'none'}"
                            f"{_skipped_text(skipped)}")
    with_scop = [f for f in funcs if any(_is_pragma(s, "scop") for s in _items(f.body))]
    if len(with_scop) == 1:
        return with_scop[0]
    candidates = with_scop or funcs
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise FrontendError(f"{filename} defines no function{_skipped_text(skipped)}")
    raise FrontendError(f"{filename} defines several functions "
                        f"({', '.join(f.decl.name for f in candidates)}); pick one with "
                        "function=NAME (--function on the command line)")


def _skipped_text(skipped) -> str:
    if not skipped:
        return ""
    shown = "; ".join(f"at {s.where}: {s.error}" for s in skipped[:3])
    return (f" that polyopt could read (it cannot parse the C code {shown}; only C99 "
            "without compiler extensions is understood in the kernel's function)")


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

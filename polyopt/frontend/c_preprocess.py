"""Preprocess and parse a C file as a C compiler's front end reads it.

The system compiler's preprocessor (``cc -E``) runs on the file with the options a C
compiler takes (:class:`CPPOptions`: ``-I``, ``-D NAME[=VALUE]``, ``-U``, ``-include``),
so local headers are found through the include paths whatever the bracket style, and
system headers are the real ones (their macros, such as ``M_PI`` or ``INFINITY``, have
their real values).  The text the line markers place in system headers is then left
out of what pycparser reads, except the names of its ``typedef``\\ s, which a C parser
must know to parse the rest (``size_t n;``): a typedef of plain C types is kept as
written, any other one (a structure, a function pointer, a compiler's own type) becomes
an incomplete structure of that name.  Only the declarations and functions the parser
cannot read are dropped (:func:`parse_tolerant`): the kernel's function must be
readable, the rest of the file (``main``, the I/O) need not be.

>>> options = CPPOptions.make(defines={"N": 8, "FAST": None}, include_dirs=["."])
>>> options.flags()
['-DN=8', '-DFAST', '-I', '.']
>>> sorted(system_typedefs('typedef unsigned long size_t; '
...                        'typedef struct { int a; } div_t, *pdiv;').items())
[('div_t', 'typedef struct __polyopt_system_div_t div_t;'), \
('pdiv', 'typedef struct __polyopt_system_pdiv pdiv;'), \
('size_t', 'typedef unsigned long size_t;')]
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import FrontendError

_MACRO_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"((?:\s+\d+)*)\s*$')
_BASIC_WORDS = frozenset({"void", "char", "short", "int", "long", "float", "double",
                          "signed", "unsigned", "_Bool", "const", "volatile"})


@dataclass(frozen=True)
class CPPOptions:
    """What a C compiler's preprocessor is told: macros (``None``: defined as 1),
    macros removed, include folders and files included first."""

    defines: tuple = ()          # (name, value or None)
    undefines: tuple = ()
    include_dirs: tuple = ()
    includes: tuple = ()

    @staticmethod
    def make(defines=None, undefines=None, include_dirs=None, includes=None) -> "CPPOptions":
        """Checked options: ``defines`` a dict (``{"N": 20, "FAST": None}``) or a list of
        ``"NAME"``/``"NAME=VALUE"`` texts; the others lists of names or paths."""
        return CPPOptions(_checked_defines(defines), tuple(_names(undefines, "undefines")),
                          tuple(_paths(include_dirs, "include_dirs", folder=True)),
                          tuple(_paths(includes, "includes", folder=False)))

    def flags(self) -> list[str]:
        flags = [f"-D{n}" if v is None else f"-D{n}={v}" for n, v in self.defines]
        flags += [f"-U{n}" for n in self.undefines]
        for folder in self.include_dirs:
            flags += ["-I", folder]
        for path in self.includes:
            flags += ["-include", path]
        return flags

    def macro_lines(self) -> str:
        """The options as lines at the top of a C file (for compiling the file again)."""
        lines = [f"#undef {n}" for n in self.undefines]
        lines += [f"#define {n} {1 if v is None else v}" for n, v in self.defines]
        lines += [f'#include "{os.path.abspath(p)}"' for p in self.includes]
        return "".join(line + "\n" for line in lines)


def _checked_defines(defines) -> tuple:
    if defines is None:
        return ()
    if isinstance(defines, dict):
        items = list(defines.items())
    elif isinstance(defines, (list, tuple)) and all(isinstance(d, str) for d in defines):
        items = [(d.partition("=")[0].strip(), d.partition("=")[2] if "=" in d else None)
                 for d in defines]
    else:
        raise FrontendError(f"defines= takes a dict of macros, e.g. {{'N': 20}}, or a list "
                            f"of 'NAME' / 'NAME=VALUE' texts, got {defines!r:.80}")
    checked = []
    for name, value in items:
        if not isinstance(name, str) or not _MACRO_NAME.fullmatch(name):
            raise FrontendError(f"defines= has the key {name!r}, which is not a C macro "
                                "name")
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, (str, int, float))
                                  or "\n" in str(value) or "\0" in str(value)):
            raise FrontendError(f"the macro {name} has the value {value!r}; give a number, "
                                "a one-line C text or None (defined as 1)")
        checked.append((name, value))
    return tuple(checked)


def _names(values, what: str) -> list[str]:
    values = _sequence(values, what)
    for name in values:
        if not _MACRO_NAME.fullmatch(name):
            raise FrontendError(f"{what}= has {name!r}, which is not a C macro name")
    return values


def _paths(values, what: str, folder: bool) -> list[str]:
    values = _sequence(values, what)
    for path in values:
        if folder and not os.path.isdir(path):
            raise FrontendError(f"{what}= has {path!r}, which is not a folder")
        if not folder and not os.path.isfile(path):
            raise FrontendError(f"{what}= has {path!r}, which is not a file")
    return values


def _sequence(values, what: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, (str, os.PathLike)):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise FrontendError(f"{what}= takes a list, got {type(values).__name__}")
    out = []
    for value in values:
        if not isinstance(value, (str, os.PathLike)) or "\0" in str(value) or \
                "\n" in str(value):
            raise FrontendError(f"{what}= has {value!r}; give texts (names or paths)")
        out.append(os.fspath(value))
    return out


# -- the preprocessed text: the user's part and the system headers' typedef names --------
def split_system(expanded: str) -> tuple[str, str]:
    """``(user text, system text)`` of ``cc -E`` output: lines the markers place in a
    system header (flag 3) go to the second, blank lines in their place in the first."""
    user, system = [], []
    stack = [False]  # whether each file of the include stack is a system header
    for line in expanded.splitlines():
        marker = _MARKER.match(line)
        if marker is not None:
            flags = marker.group(3).split()
            if "1" in flags:
                stack.append("3" in flags)
            elif "2" in flags and len(stack) > 1:
                stack.pop()
            elif len(stack) == 1:  # the main file (a macro of a system header expanded)
                stack[0] = False
            (system if stack[-1] else user).append(line if not stack[-1] else "")
            continue
        if stack[-1]:
            system.append(line)
        else:
            user.append(line)
    return "\n".join(user) + "\n", "\n".join(system)


def system_typedefs(text: str) -> dict[str, str]:
    """The file-scope typedefs of system-header text, as declarations pycparser reads."""
    found: dict[str, str] = {}
    for declaration in _typedef_declarations(text):
        body = _strip_attributes(declaration[len("typedef"):])
        declarators = _split_top(_strip_braces(body), ",")
        first = declarators[0].strip()
        words = re.findall(r"[A-Za-z_]\w*|\S", first)
        plain = all(re.fullmatch(r"[A-Za-z_]\w*", w) for w in words) and len(words) >= 2
        for k, part in enumerate(declarators):
            name = _declarator_name(part)
            if name is None or name in found:
                continue
            specifiers = words[:-1]
            if k == 0 and plain and "{" not in body and _known(specifiers, found):
                found[name] = "typedef " + " ".join(specifiers) + f" {name};"
            else:
                found[name] = f"typedef struct __polyopt_system_{name} {name};"
    return found


def _known(words: list[str], found: dict) -> bool:
    if words[:1] and words[0] in ("struct", "union", "enum"):
        return len(words) == 2
    return all(w in _BASIC_WORDS or w in found for w in words)


def _typedef_declarations(text: str) -> list[str]:
    """Each ``typedef ...;`` at file scope (brace and parenthesis depth 0)."""
    out = []
    depth, start = 0, None
    for match in re.finditer(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|[{}()\[\];]|'
                             r"\btypedef\b", text):
        token = match.group()
        if token in "{([":
            depth += 1
        elif token in "})]":
            depth = max(depth - 1, 0)
        elif token == "typedef" and depth == 0 and start is None:
            start = match.start()
        elif token == ";" and depth == 0 and start is not None:
            out.append(text[start:match.start()])
            start = None
    return out


def _strip_attributes(text: str) -> str:
    for keyword in ("__attribute__", "__asm__", "__asm", "asm", "__declspec"):
        while True:
            match = re.search(rf"\b{keyword}\s*\(", text)
            if match is None:
                break
            end = _closing(text, match.end() - 1)
            text = text[:match.start()] + " " + text[end + 1:]
    return re.sub(r"\b(__extension__|__restrict|__restrict__|__inline|__const)\b", " ",
                  text)


def _strip_braces(text: str) -> str:
    while "{" in text:
        start = text.index("{")
        text = text[:start] + " " + text[_closing(text, start) + 1:]
    return text


def _closing(text: str, start: int) -> int:
    opening = text[start]
    closing = {"(": ")", "{": "}", "[": "]"}[opening]
    depth = 0
    for k in range(start, len(text)):
        if text[k] == opening:
            depth += 1
        elif text[k] == closing:
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, last = [], 0, 0
    for k, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == sep and depth == 0:
            parts.append(text[last:k])
            last = k + 1
    return parts + [text[last:]]


def _declarator_name(part: str) -> str | None:
    """The declared name of one declarator (``(*handler)(int)``, ``name[4]``, ``name``)."""
    part = re.sub(r"\[[^\]]*\]", " ", part)
    pointer = re.search(r"\(\s*[*^]\s*(?:(?:const|volatile|restrict)\s+)*([A-Za-z_]\w*)", part)
    if pointer is not None:
        return pointer.group(1)
    head = part.split("(", 1)[0]
    names = re.findall(r"[A-Za-z_]\w*", head)
    return names[-1] if names else None


# -- parsing what can be parsed ---------------------------------------------------------
@dataclass
class Skipped:
    """A top-level declaration or function the parser could not read."""

    where: str
    error: str


def parse_tolerant(parser_factory, prelude: str, text: str, filename: str):
    """The ``FileAST`` of ``prelude + text``; when the whole does not parse, the
    top-level pieces of ``text`` that parse (each with the typedefs before it), and the
    list of :class:`Skipped` pieces.  A piece with ``#pragma scop`` that does not parse
    raises its error."""
    try:
        return parser_factory().parse(prelude + text, filename), []
    except Exception:  # pycparser's ParseError and, on odd input, others
        pass
    kept_typedefs, kept, skipped = [], [], []
    for where, piece in _pieces(text, filename):
        try:
            parser_factory().parse(prelude + "".join(kept_typedefs) + piece, filename)
        except Exception as err:  # noqa: BLE001 - reported below or in Skipped
            if re.search(r"^\s*#\s*pragma\s+scop\b", piece, re.MULTILINE):
                raise FrontendError(f"cannot parse the C code: {err} (the function with "
                                    "'#pragma scop' must be C99 without compiler "
                                    "extensions)") from None
            skipped.append(Skipped(where, str(err)))
            continue
        kept.append(piece)
        if re.match(r"\s*(#[^\n]*\n\s*)*(typedef|struct|union|enum)\b", piece):
            kept_typedefs.append(piece)
    unit = parser_factory().parse(prelude + "".join(kept), filename)
    return unit, skipped


def _pieces(text: str, filename: str):
    """``(where, text)`` of each top-level declaration or function definition, each
    starting with a line marker for its place in the file."""
    position = [filename, 1]
    pieces, current, depth, body, start, previous = [], [], 0, False, None, ""
    line_start = 0
    for raw in text.splitlines(keepends=True):
        marker = _MARKER.match(raw.rstrip("\n"))
        if marker is not None and depth == 0 and not current:
            position = [marker.group(2), int(marker.group(1))]
            continue
        if depth == 0 and not current and not raw.strip():
            position[1] += 1
            continue
        if not current:
            start = list(position)
        if marker is None and raw.lstrip().startswith("#") and depth == 0 and not current:
            pieces.append((f"{start[0]}:{start[1]}", f'# {start[1]} "{start[0]}"\n{raw}'))
            position[1] += 1
            continue
        current.append(raw)
        position[1] += 1
        if marker is not None:
            position = [marker.group(2), int(marker.group(1))]
            continue
        ended, depth, body, previous = _scan_line(raw, depth, body, previous)
        if ended:
            pieces.append((f"{start[0]}:{start[1]}",
                           f'# {start[1]} "{start[0]}"\n' + "".join(current)))
            current = []
        line_start += 1
    if current:
        pieces.append((f"{start[0]}:{start[1]}", f'# {start[1]} "{start[0]}"\n' +
                       "".join(current)))
    return pieces


def _scan_line(line: str, depth: int, body: bool, previous: str):
    """Whether a top-level piece ends on this line; the depth, whether the open braces
    are a function's body and the last token.  (A piece ends at the end of its line.)"""
    ended = False
    for match in re.finditer(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|[{}()\[\];]|\S',
                             line):
        token = match.group()
        if token in "([":
            depth += 1
        elif token in ")]":
            depth -= 1
        elif token == "{":
            if depth == 0:
                body = previous == ")"
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0 and body:
                ended, body = True, False
        elif token == ";" and depth == 0:
            ended = True
        previous = token
    return ended, depth, body, previous

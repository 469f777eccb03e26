"""Names a kernel may take as a C function of a saved kernel or an operator library.

A kernel's name becomes an exported symbol (``lib.so``, ``lib.a``) and a declaration in a
C header, so it must be a C identifier that is neither a C or C++ keyword (the header
would not compile), nor a name reserved to the C implementation (``__x``, ``_X``), nor
polyopt's own runtime's (``polyopt_*``: a kernel named ``polyopt_parallel`` would call
itself), nor a function of the C library, libm or libpthread that a program linking the
library would get instead of its own (``free``, ``exp``, ``system``).

>>> check_symbol_name("scale_n4")
>>> check_symbol_name("free")
Traceback (most recent call last):
polyopt.errors.InvalidArgumentError: the kernel name 'free' is a function of the C library (libc, libm, libpthread); a library exporting it would replace it in every program linking it: choose another name, e.g. 'free_kernel'
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re

from ..errors import InvalidArgumentError

MAX_SYMBOL_LENGTH = 200  # file names <name>.o stay below every file system's 255 bytes
RUNTIME_PREFIX = "polyopt_"

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while alignas alignof bool constexpr false nullptr
static_assert thread_local true typeof typeof_unqual asm fortran main
and and_eq bitand bitor catch char8_t char16_t char32_t class compl concept consteval
constinit const_cast co_await co_return co_yield decltype delete dynamic_cast explicit
export friend mutable namespace new noexcept not not_eq operator or or_eq private
protected public reinterpret_cast requires static_cast template this throw try typeid
typename using virtual wchar_t xor xor_eq
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t
intptr_t uintptr_t NULL errno assert
""".split())

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_symbol_name(name, what: str = "kernel name") -> None:
    """Raise :class:`InvalidArgumentError` unless ``name`` may be exported as a kernel."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise InvalidArgumentError(f"the {what} must be a C identifier (letters, digits, _; "
                                   f"not starting with a digit), got {name!r}")
    if len(name) > MAX_SYMBOL_LENGTH:
        raise InvalidArgumentError(f"the {what} {name[:40]}... has {len(name)} characters; "
                                   f"at most {MAX_SYMBOL_LENGTH} are allowed: shorten it")
    why = reserved_because(name)
    if why:
        raise InvalidArgumentError(f"the {what} {name!r} {why}: choose another name, e.g. "
                                   f"'{name.strip('_') or 'k'}_kernel'")


def reserved_because(name: str) -> str | None:
    """Why ``name`` may not name a kernel, or None."""
    if name in C_KEYWORDS:
        return "is a C or C++ keyword or standard type name; the header would not compile"
    if name.startswith("__") or re.match(r"_[A-Z]", name):
        return "is reserved to the C implementation (it starts with __ or _ and a capital)"
    if name.startswith(RUNTIME_PREFIX):
        return f"starts with '{RUNTIME_PREFIX}', reserved to polyopt's runtime"
    if name in system_symbols():
        return ("is a function of the C library (libc, libm, libpthread); a library "
                "exporting it would replace it in every program linking it")
    return None


@functools.cache
def _system_libraries() -> tuple:
    found = []
    for library in ("c", "m", "pthread", "dl", "rt", "mvec"):
        path = ctypes.util.find_library(library)
        if path:
            try:
                found.append(ctypes.CDLL(path))
            except OSError:
                continue
    return tuple(found)


@functools.lru_cache(maxsize=4096)
def _is_system_symbol(name: str) -> bool:
    for library in _system_libraries():
        try:
            getattr(library, name)
        except AttributeError:
            continue
        return True
    return False


class _SystemSymbols:
    def __contains__(self, name: str) -> bool:
        return _is_system_symbol(name)


def system_symbols() -> _SystemSymbols:
    """A container answering ``name in system_symbols()`` from libc, libm, libpthread,
    libdl, librt and libmvec as this machine has them."""
    return _SystemSymbols()

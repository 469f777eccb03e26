"""``po.from_c``: the ``#pragma scop`` region of a C function as a :class:`Kernel`.

The C statements are rewritten as the Python kernel ``@po.kernel`` parses
(:mod:`~polyopt.frontend.c_translate`), so a C kernel gets exactly the program,
primitives, checks and back ends of a Python one.  ``int`` parameters are sizes
(``po.var``), ``double``/``float`` scalar parameters 0-d arrays, array parameters arrays;
the sizes' valid range is narrowed to where every access is inside its array (C makes
an access outside undefined, as pet assumes): a kernel writing ``A[0][j]`` needs that
dimension to be at least 1.

>>> import polyopt as po
>>> k = po.from_c('''
... #define N 100
... void scale(int n, double alpha, double A[n][n]) {
...   int i, j;
... #pragma scop
...   for (i = 0; i < n; i++)
...     for (j = 0; j <= i; j++)
...       A[i][j] *= alpha;
... #pragma endscop
... }''')
>>> print(k.program.statement("S0").domain)
[n] -> { S0[i, j] : 0 <= i < n and 0 <= j <= i }
>>> print(po.lower(po.create_schedule(k)))
void scale(float64 alpha, float64 A[n][n]) {
  for (i = 0; i < n; i += 1)
    for (j = 0; j <= i; j += 1)
      A[i, j] = A[i, j] * alpha[];
}
"""

from __future__ import annotations

import math

from ..errors import FrontendError, TemporaryScalarError, public
from ..te.tensor import var
from . import types as element_types
from .c_preprocess import CPPOptions
from .c_source import (declarations_before, find_function, parse_file, read_c,
                       resolve_typedefs, scop_items)
from .c_translate import CParam, CTranslator, Translation
from .exprs import libm
from .kernel import Kernel, kernel_from_tree
from .source import Source

class CKernel(Kernel):
    """A :class:`Kernel` from C; ``c_params`` are the C function's parameters in order
    (sizes, scalars, arrays), ``c_name`` its name, ``translation`` the Python kernel."""

    def __init__(self, base: Kernel, translation: Translation, source_text: str):
        # C's math functions are libm's scalar ones, as gcc calls them (no vector variants)
        super().__init__(base.name, base.program.replace(scalar_math=True), base.args)
        self.translation = translation
        self.c_params: list[CParam] = translation.params
        self.source_text = source_text

    def __repr__(self) -> str:
        return "<po.from_c " + super().__repr__()[len("<po.kernel "):]


@public
def from_c(path_or_text: str, function: str | None = None, *, defines=None,
           include_dirs=None, undefines=None, includes=None) -> CKernel:
    """The scop of a C function (a path or C text) as a kernel: ``po.create_schedule`` it.

    ``function`` picks the function (default: the one with ``#pragma scop``, or the only
    one).  The preprocessor options are a C compiler's: ``defines`` macros
    (``{"N": 20, "FAST": None}`` or ``["N=20", "FAST"]``, as ``-D``), ``include_dirs``
    folders searched for headers (``-I``, for ``<...>`` and ``"..."``), ``undefines``
    (``-U``) and ``includes`` files included first (``-include``).  Only the function's
    scop must be in the supported subset; system headers are read as gcc finds them.
    """
    source = read_c(path_or_text)
    options = CPPOptions.make(defines=defines, include_dirs=include_dirs,
                              undefines=undefines, includes=includes)
    unit, skipped = parse_file(source, options=options)
    func = find_function(unit, function, source.filename, skipped)
    resolve_typedefs(unit, func)
    items = scop_items(func, source.filename)
    declarations = declarations_before(func, items)
    scalar_arrays: frozenset[str] = frozenset()
    for _ in range(64):
        translator = CTranslator(func, items, declarations, source.filename, scalar_arrays)
        translation = translator.translate()
        try:
            base = _kernel(translation, source.filename)
        except TemporaryScalarError as err:  # not a plain forward substitution: the
            if err.name not in translator.local_scalars or err.name in scalar_arrays:
                raise
            scalar_arrays = scalar_arrays | {err.name}  # scalar lives in a 0-d array
            continue
        return CKernel(base, translation, source.text)
    raise FrontendError(f"too many local scalars in '{func.decl.name}'")  # pragma: no cover


def _kernel(translation: Translation, filename: str) -> Kernel:
    sizes = {name: var(name) for name in translation.sizes}
    namespace = {"math": math, "libm": libm, **{short: getattr(element_types, short)
                                  for short in ("f32", "f64", "i8", "u8", "i32", "i64")}}
    namespace.update(sizes)
    source = Source(translation.tree.name, filename, 1)
    return kernel_from_tree(translation.tree, source, namespace, {},
                            temporaries=translation.temporaries, infer_sizes=True)

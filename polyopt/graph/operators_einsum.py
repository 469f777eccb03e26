"""ONNX's Einsum, for equations without a diagonal: matrix and batched products,
transposes, reductions, outer products (``"ij,jk->ik"``, ``"bij,bjk->bik"``,
``"ij->ji"``, ``"ij->i"``, ``"i,j->ij"``, ``"...ij,...jk"``).  Each output element is
the sum, over the letters missing from the output, of the product of the operands
read at their letters; ``...`` stands for broadcast leading dimensions.  A letter
repeated inside one operand (a diagonal or a trace, ``"ii->i"``) is refused with
:class:`EinsumEquationError`.

>>> parse_equation("ij,jk", 2)
(['ij', 'jk'], 'ik')
>>> parse_equation("bij , bjk -> bik", 2)
(['bij', 'bjk'], 'bik')
"""

from __future__ import annotations

import numpy as np

from ..te.tensor import compute, reduce_axis, reduce_sum
from .graph_errors import EinsumEquationError
from .registry import VARIADIC, register

ELLIPSIS = "."  # one character standing for "...": the broadcast dimensions


def parse_equation(equation: str, operands: int, node_name: str = "einsum"):
    """``(input terms, output term)`` of an equation, ``...`` written as one ``.``; the
    implicit output (no ``->``) is the letters used once, in alphabetical order."""
    text = "".join(str(equation).split()).replace("...", ELLIPSIS)
    left, arrow, right = text.partition("->")
    terms = left.split(",")
    problems = []
    if len(terms) != operands:
        problems.append(("operands", (len(terms), operands)))
    for term in terms + ([right] if arrow else []):
        shown = term.replace(ELLIPSIS, "...")
        if any(not (c.isalpha() or c == ELLIPSIS) for c in term) or term.count(ELLIPSIS) > 1:
            problems.append(("characters", shown))
        letters = term.replace(ELLIPSIS, "")
        if len(set(letters)) != len(letters):
            problems.append(("diagonal", shown))
    if problems:
        raise EinsumEquationError(node_name, "malformed", equation, faults=tuple(problems))
    if not arrow:
        counts = {c: left.count(c) for c in set(left.replace(",", "").replace(ELLIPSIS, ""))}
        right = (ELLIPSIS if ELLIPSIS in left else "") + "".join(
            sorted(c for c, n in counts.items() if n == 1))
    unknown = set(right) - set(left.replace(",", ""))
    if unknown:
        raise EinsumEquationError(node_name, "unknown_letters", equation,
                                  letters=", ".join(sorted(unknown)))
    return terms, right


def _letter_sizes(node, terms, infos):
    """{letter: size} and the broadcast shape of ``...``, checked across operands."""
    sizes, ellipses = {}, []
    for term, info in zip(terms, infos):
        letters = term.replace(ELLIPSIS, "")
        if len(info.shape) < len(letters) or (ELLIPSIS not in term and
                                              len(info.shape) != len(letters)):
            raise EinsumEquationError(node.name, "term_shape", attr_equation(node),
                                      term=term.replace(ELLIPSIS, "..."), input=info.name,
                                      shape=list(info.shape))
        at = term.find(ELLIPSIS)
        extra = len(info.shape) - len(letters)
        ellipses.append(tuple(info.shape[at:at + extra]) if at >= 0 else ())
        dims = list(info.shape[:at]) + list(info.shape[at + extra:]) if at >= 0 \
            else list(info.shape)
        for letter, size in zip(letters, dims):
            if sizes.setdefault(letter, size) != size:
                raise EinsumEquationError(node.name, "letter_sizes", attr_equation(node),
                                          letter=letter, sizes=(sizes[letter], size))
    try:
        broadcast = tuple(np.broadcast_shapes(*ellipses)) if ellipses else ()
    except ValueError as err:
        raise EinsumEquationError(node.name, "no_broadcast", attr_equation(node),
                                  shapes=ellipses) from err
    return sizes, broadcast


def attr_equation(node) -> str:
    return node.attrs.get("equation", "")


def _infer(node, infos, constants):
    kinds = sorted({i.dtype for i in infos})
    if len(kinds) != 1:
        raise EinsumEquationError(node.name, "mixed_dtypes", attr_equation(node),
                                  dtypes=kinds)
    if not isinstance(attr_equation(node), str):
        raise EinsumEquationError(node.name, "missing")
    terms, right = parse_equation(attr_equation(node), len(infos), node.name)
    sizes, broadcast = _letter_sizes(node, terms, infos)
    if broadcast and ELLIPSIS not in right:
        raise EinsumEquationError(node.name, "sums_ellipsis", attr_equation(node))
    shape = []
    for c in right:
        shape.extend(broadcast if c == ELLIPSIS else (sizes[c],))
    return [(tuple(shape), kinds[0])]


def _lower(node, args, values, out, name):
    from .ir import TensorInfo

    terms, right = parse_equation(attr_equation(node), len(args), node.name)
    infos = [TensorInfo(f"in{k}", tuple(d.value for d in A.shape) if term else (), A.dtype)
             for k, (A, term) in enumerate(zip(args, terms))]  # (a scalar is kept as [1])
    sizes, broadcast = _letter_sizes(node, terms, infos)
    reduced = sorted(set("".join(terms).replace(ELLIPSIS, "")) - set(right))
    axes = {c: reduce_axis((0, sizes[c]), name=f"r{c}") for c in reduced}

    def read(A, term, index: dict, dots: list):
        """``A`` at the letters' indices; its ``...`` dims broadcast against ``dots``."""
        extra = len(A.shape) - len(term.replace(ELLIPSIS, ""))
        subscript = []
        for c in term:
            if c != ELLIPSIS:
                subscript.append(index[c])
                continue
            own = A.shape[term.find(ELLIPSIS):term.find(ELLIPSIS) + extra]
            for d, extent in enumerate(own):
                position = len(dots) - extra + d
                subscript.append(0 if extent.value == 1 and broadcast[position] != 1
                                 else dots[position])
        return A[tuple(subscript)] if subscript else A[0]

    def body(*i):
        index, dots, k = dict(axes), [], 0
        for c in right:
            if c == ELLIPSIS:
                dots, k = list(i[k:k + len(broadcast)]), k + len(broadcast)
            else:
                index[c], k = i[k], k + 1
        product = None
        for A, term in zip(args, terms):
            value = read(A, term, index, dots)
            product = value if product is None else product * value
        return reduce_sum(product, axis=[axes[c] for c in reduced]) if reduced else product

    return compute(out.shape, body, name=name)


register("Einsum", "reduction", {"equation": None}, max_inputs=VARIADIC)((_infer, _lower))

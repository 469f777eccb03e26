"""Readable text for isl relations: ``C_update[i, j, k] -> C_update[i, j, k + 1]``.

>>> import islpy as isl
>>> print(describe_map(isl.Map("[N] -> { S[i, j] -> S[i + 1, j - 2] : 0 <= i < N }")))
S[i, j] -> S[i + 1, j - 2] for 0 <= i < N
"""

from __future__ import annotations

import re

import islpy as isl


def aff_text(aff: isl.Aff, names: list[str]) -> str:
    """``aff`` as ``2*i + k - 1`` in terms of the input dimension ``names``."""
    if aff.dim(isl.dim_type.div) > 0 or not aff.get_denominator_val().is_one():
        body = str(aff).split("-> [", 1)[-1].rsplit("]", 1)[0]
        return _unwrap(body)
    params = aff.get_space().get_var_names(isl.dim_type.param)
    terms: list[tuple[int, str]] = []
    for kind, labels in ((isl.dim_type.in_, names), (isl.dim_type.param, params)):
        for pos, label in enumerate(labels):
            coef = aff.get_coefficient_val(kind, pos).to_python()
            if coef:
                terms.append((coef, label))
    constant = aff.get_constant_val().to_python()
    text = ""
    for coef, label in terms:
        magnitude = "" if abs(coef) == 1 else f"{abs(coef)}*"
        if not text:
            text = ("-" if coef < 0 else "") + magnitude + label
        else:
            text += (" - " if coef < 0 else " + ") + magnitude + label
    if constant or not text:
        text = str(constant) if not text else text + (" - " if constant < 0 else " + ") + str(abs(constant))
    return text


def _unwrap(text: str) -> str:
    """``(e)`` without its outer parentheses when they enclose all of it."""
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for pos, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and pos < len(text) - 1:
                return text
        text = text[1:-1]
    return text


def _in_names(space: isl.Space) -> list[str]:
    names = space.get_var_names(isl.dim_type.in_)
    return [n if n else f"i{k}" for k, n in enumerate(names)]


def constraints_text(domain: isl.Set) -> str:
    """The constraints of a set without its tuple: ``0 <= i < N and k = -1 + K``."""
    text = str(domain.remove_redundancies().coalesce())
    inner = text.split("{", 1)[-1].rsplit("}", 1)[0].strip()
    disjuncts = []
    for piece in inner.split(";"):
        tuple_part, _, condition = piece.partition(":")
        fixed = [e.strip() for e in tuple_part.split("[", 1)[-1].rsplit("]", 1)[0].split(",")
                 if "=" in e]
        conjuncts = fixed + ([condition.strip()] if condition.strip() else [])
        if conjuncts:
            disjuncts.append(" and ".join(conjuncts))
    if len(disjuncts) > 1:
        return " or ".join(f"({d})" for d in disjuncts)
    return disjuncts[0] if disjuncts else ""


def function_text(relation: isl.Map) -> str | None:
    """``S[i, j] -> T[i + 1, j]`` when ``relation`` is a single affine function, else None."""
    if not relation.is_single_valued():
        return None
    pma = relation.as_pw_multi_aff()
    if pma.n_piece() != 1:
        return None
    pieces: list[isl.MultiAff] = []
    pma.foreach_piece(lambda _set, ma: pieces.append(ma))
    names = _in_names(relation.get_space())
    multi = pieces[0]
    outputs = [aff_text(multi.get_at(k), names) for k in range(multi.dim(isl.dim_type.out))]
    source = f"{relation.get_tuple_name(isl.dim_type.in_)}[{', '.join(names)}]"
    return f"{source} -> {relation.get_tuple_name(isl.dim_type.out)}[{', '.join(outputs)}]"


def describe_map(relation: isl.Map) -> str:
    """A relation as readable text: the function form with its domain, or isl's text."""
    text = function_text(relation)
    if text is None:
        raw = str(relation.coalesce())
        return re.sub(r"^\[[^\]]*\] -> ", "", raw).strip("{} ")
    where = constraints_text(relation.domain())
    return f"{text} for {where}" if where else text

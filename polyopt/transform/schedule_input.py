"""Reading a hand-written schedule: isl text or objects, JSON, a dict or a file.

:func:`read_schedule` turns what ``po.check(..., schedule=...)`` accepts (see
:mod:`.handwritten`) into union maps, read through the program's isl context, every
refusal a :class:`ScheduleFormatError` saying what to write instead.  isl never sees
text it should not: brackets nested deeper than :data:`MAX_NESTING` (its recursive
parser would overflow the stack), numbers longer than :data:`MAX_DIGITS`, maps of more
than :data:`MAX_PIECES` pieces (:func:`merge_pieces` merges them first); a union of
many maps is read map by map (isl's own reading is quadratic in them).

>>> entries, origin = read_schedule("[N] -> { S[i] -> [i] : i < N; T[i] -> [i, 1] }")
>>> origin, len(entries), entries[0][0]
('schedule', 1, None)
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import islpy as isl

from ..deps.effort import bounded_effort
from ..domain.affine import parts
from ..errors import CheckEffortError, ScheduleFormatError


def read_schedule(spec) -> tuple[list[tuple[str | None, isl.UnionMap]], str]:
    """``([(statement named by the input or None, map)], where it comes from)``."""
    # isl objects are read again from their text: it puts them in the program's isl
    # context (one made in another context cannot meet the program's sets) and through
    # the same checks as any schedule text
    if isinstance(spec, isl.Schedule):
        return [(None, _parse_map(str(spec.get_map()), "the schedule tree"))], "schedule tree"
    if isinstance(spec, (isl.UnionMap, isl.Map)):
        return [(None, _parse_map(str(spec), "the schedule"))], "schedule"
    if isinstance(spec, dict):
        return _from_json(spec, "the schedule JSON")
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and "{" not in spec):
        path = Path(spec)
        if not path.is_file():
            raise ScheduleFormatError(f"schedule file '{path}' does not exist (schedule text "
                                      "needs isl braces: { S0[i] -> [i] })")
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise ScheduleFormatError(f"cannot read schedule file '{path}': {err}") from None
        return _from_text(text, f"'{path}'", json_file=path.suffix.lower() == ".json")
    if isinstance(spec, str):
        return _from_text(spec, "the schedule text", json_file=False)
    raise ScheduleFormatError(f"a schedule is an isl map or schedule text, a dict or a file "
                              f"path, got {type(spec).__name__}")


def _from_text(text: str, where: str, *, json_file: bool):
    if json_file or re.match(r'\s*\{\s*"', text):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ScheduleFormatError(f"malformed JSON in {where}: {err.msg} at line "
                                      f"{err.lineno}, column {err.colno}") from None
        except RecursionError:  # Python's JSON parser recurses once per nesting level
            raise ScheduleFormatError(
                f"the JSON in {where} is nested too deeply; a schedule is an object whose "
                '"statements" maps statement names to isl maps') from None
        except ValueError as err:  # e.g. an integer longer than Python converts
            raise ScheduleFormatError(f"unreadable JSON in {where} ({err}); a schedule is "
                                      'an object whose "statements" maps statement names '
                                      "to isl maps") from None
        return _from_json(data, where)
    if re.match(r"\s*\{?\s*domain\s*:", text):
        _check_isl_text(text, where)
        try:
            return [(None, isl.Schedule(text).get_map())], "schedule tree"
        except isl.Error as err:
            raise ScheduleFormatError(f"malformed isl schedule tree in {where} "
                                      f"({isl_reason(err)}): {_short(text)}") from None
    return [(None, _parse_map(text, where))], "schedule"


def _from_json(data, where: str):
    if not isinstance(data, dict) or not isinstance(data.get("statements"), list):
        raise ScheduleFormatError(f'{where}: expected an object {{"statements": [{{"name": '
                                  f'..., "schedule": ...}}, ...]}}')
    entries = []
    for position, entry in enumerate(data["statements"]):
        if (not isinstance(entry, dict) or not isinstance(entry.get("name"), str)
                or not isinstance(entry.get("schedule"), str)):
            raise ScheduleFormatError(f'{where}: statement entry {position} needs a "name" '
                                      f'and a "schedule" string, got {json.dumps(entry)}')
        if any(name == entry["name"] for name, _ in entries):
            raise ScheduleFormatError(f"{where}: statement {entry['name']} is listed twice")
        entries.append((entry["name"], _parse_map(entry["schedule"], where, entry["name"])))
    return entries, "JSON schedule"


def _parse_map(text: str, where: str, statement: str | None = None) -> isl.UnionMap:
    """The union map of isl ``text``, its maps read one by one: isl reads a union by
    adding each map to the union so far, which takes time quadratic in the maps of
    one statement (20,000 maps of one statement: minutes); read apart and united in
    pairs, they take time linear in the text."""
    _check_isl_text(text, where, statement)
    pieces = _pieces(text)
    with _reading_effort(where):
        if pieces is None:
            try:
                return isl.UnionMap(text)
            except isl.Error as err:
                fail(_malformed(where, statement, err, text))
        maps = []
        for piece in pieces:
            try:
                maps.append(isl.UnionMap(piece))
            except isl.Error as err:
                named = re.match(r"(?:\[[^\]]*\]\s*->\s*)?\{\s*([A-Za-z_][\w.]*)\s*\[", piece)
                which = statement or (named.group(1) if named else None)
                body = piece.partition("{")[2].rpartition("}")[0]
                fail(_malformed(where, which, err, body))
        if not maps:
            return isl.UnionMap(text)  # "{ }": empty
        while len(maps) > 1:
            maps = [maps[k].union(maps[k + 1]) if k + 1 < len(maps) else maps[k]
                    for k in range(0, len(maps), 2)]
        return maps[0]


def _malformed(where: str, statement: str | None, err: isl.Error, text: str) -> str:
    which = f", in the map of statement {statement}" if statement else ""
    return (f"malformed isl text in {where}{which} ({isl_reason(err)}): {_short(text)}; "
            "write e.g. [N] -> { S0[i, j] -> [i, j] }")


_UNION_TEXT = re.compile(r"\s*((?:\[[^\]{};]*\]\s*->\s*)?)\{")


_SEPARATORS = re.compile(r"[{}()\[\];]")


def _pieces(text: str) -> list[str] | None:
    """``"[N] -> { A; B }"`` as ``["[N] -> { A }", "[N] -> { B }"]``; None when the
    text is not one pair of braces around maps separated by ``;``.

    >>> _pieces("[N] -> { S[i] -> [i] : i < N; T[i] -> [i, 1] }")
    ['[N] -> { S[i] -> [i] : i < N }', '[N] -> { T[i] -> [i, 1] }']
    """
    head = _UNION_TEXT.match(text)
    if head is None:
        return None
    depth, start, pieces = 1, head.end(), []
    for mark in _SEPARATORS.finditer(text, head.end()):
        char = mark.group()
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                if text[mark.end():].strip():
                    return None
                pieces.append(text[start:mark.start()])
                break
        elif depth == 1:  # ";" between two maps
            pieces.append(text[start:mark.start()])
            start = mark.end()
    if depth != 0:
        return None
    prefix = head.group(1)
    return [f"{prefix}{{ {piece.strip()} }}" for piece in pieces if piece.strip()]


class _reading_effort(bounded_effort):  # noqa: N801
    """isl's effort bounded while it reads a schedule (a formula of many ``or``s inside
    ``and``s multiplies out into exponentially many pieces)."""

    def __init__(self, where: str):
        super().__init__(f"reading the schedule in {where}")


MAX_NESTING = 1_000  # brackets inside brackets: isl's parser recurses once per level


MAX_DIGITS = 100     # in one number: isl computes with them at any size, slowly


MAX_PIECES = 256     # pieces of one statement's map: isl's checks of them are quadratic


_BRACKETS = re.compile(r"[^()\[\]{}]+")


_OR = re.compile(r"\bor\b")


_LONG_NUMBER = re.compile(r"\d{%d,}" % (MAX_DIGITS + 1))


def _check_isl_text(text: str, where: str, statement: str | None = None) -> None:
    """Refuse isl text that isl should not see: brackets nested deeper than
    :data:`MAX_NESTING` (isl's recursive parser would overflow the stack: a segfault)
    and numbers of more than :data:`MAX_DIGITS` digits (isl's arithmetic on them runs
    for minutes).  Both are far beyond any real schedule.

    >>> _check_isl_text("{ S[i] -> [" + "(" * 2000 + "i" + ")" * 2000 + "] }", "x")
    Traceback (most recent call last):
    polyopt.errors.ScheduleFormatError: the isl text in x nests brackets 2002 deep; polyopt reads at most 1000 levels: write the expression without redundant parentheses
    """
    which = f", in the map of statement {statement}," if statement else ""
    depth = deepest = 0
    for bracket in _BRACKETS.sub("", text):
        depth += 1 if bracket in "([{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_NESTING:
        fail(f"the isl text in {where}{which} nests brackets {deepest} deep; polyopt reads "
              f"at most {MAX_NESTING} levels: write the expression without redundant "
              "parentheses")
    disjunctions = max((len(_OR.findall(piece)) for piece in text.split(";")), default=0)
    if disjunctions > MAX_PIECES:
        fail(f"the isl text in {where}{which} has a map with {disjunctions} 'or's; polyopt "
              f"reads at most {MAX_PIECES} in one map: write it with fewer pieces (one "
              "affine expression, with floor or mod where needed)")
    long = _LONG_NUMBER.search(text)
    if long is not None:
        fail(f"the isl text in {where}{which} has a number of {len(long.group())} digits; "
              f"polyopt reads numbers of at most {MAX_DIGITS} digits in a schedule")


def isl_reason(err: isl.Error) -> str:
    return str(err).split("failed: ", 1)[-1].split(" in /", 1)[0]


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def fail(message: str):
    raise ScheduleFormatError(message)


MERGE_OPERATIONS = 5_000_000  # isl operations to merge many pieces (about 2 s of CPU)


def merge_pieces(umap: isl.UnionMap, origin: str) -> isl.UnionMap:
    """``umap`` with every statement's map in at most :data:`MAX_PIECES` pieces:
    merged by isl's coalesce when it has more (20,000 pieces ``k = t`` merge into
    one ``0 <= k < 20000``); a map that does not merge that far is refused (the
    checks on it would take time quadratic in its pieces)."""
    maps = parts(umap)
    if all(m.n_basic_map() <= MAX_PIECES for m in maps):
        return umap
    result = isl.UnionMap.empty(umap.get_space())
    for relation in maps:
        count = relation.n_basic_map()
        if count > MAX_PIECES:
            try:
                with bounded_effort("merging the pieces", MERGE_OPERATIONS):
                    relation = relation.coalesce()
            except CheckEffortError:
                pass
            if relation.n_basic_map() > MAX_PIECES:
                name = relation.get_tuple_name(isl.dim_type.in_) if relation.has_tuple_name(
                    isl.dim_type.in_) else "(unnamed)"
                fail(f"the {origin} gives statement {name} a map of {count} pieces that do "
                      f"not merge into {MAX_PIECES} or fewer; polyopt checks at most "
                      f"{MAX_PIECES} per statement: write it with fewer pieces (one affine "
                      "expression, with floor or mod where needed)")
        result = result.union(isl.UnionMap.from_map(relation))
    return result

"""A tuning space: a product of named knobs, with TVM's method names.

``define_split`` (the factors of a loop's extent), ``define_knob`` (a list of values),
``define_reorder`` (orders of some axes) and ``define_annotate`` (unroll/vectorize per
axis) each add one knob; a point of the space (:class:`ConfigEntity`) picks one value per
knob, numbered in mixed radix (the first knob varies fastest).  ``cfg[name]`` is that
knob's value: ``.size`` (a split), ``.val`` (a knob), ``.perm`` (a reorder), ``.anns``
(an annotation), and ``.apply(s, stage, axes)`` calls polyopt's checked primitives.

>>> space = ConfigSpace()
>>> space.define_split("tile_i", 64, num_outputs=2)
>>> space.define_knob("unroll", [0, 1])
>>> len(space)
14
>>> cfg = space.get(9)
>>> cfg["tile_i"].size, cfg["unroll"].val
([16, 4], 1)
>>> space.from_json(cfg.to_json()) == cfg
True
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np

from ..errors import InvalidArgumentError, public, public_methods

__all__ = ["AnnotateEntity", "ConfigEntity", "ConfigSpace", "OtherOptionEntity",
           "ReorderEntity", "SplitEntity", "knob_features"]

_ANNOTATIONS = {"none": 0, "unroll": 1, "vec": 2}
MAX_REORDERED_AXES = 6  # 720 orders


def _extent(axis_or_extent) -> int:
    """An axis's constant extent (an int, a ``po.reduce_axis``/``op.axis`` IterVar)."""
    if isinstance(axis_or_extent, bool):
        raise InvalidArgumentError("define_split takes an axis or a positive extent, "
                                   "got a bool")
    if isinstance(axis_or_extent, (int, np.integer)):
        value = int(axis_or_extent)
    else:
        lo, hi = getattr(axis_or_extent, "lo", None), getattr(axis_or_extent, "hi", None)
        value = getattr(hi, "value", None)
        if getattr(lo, "value", 0) != 0 or not isinstance(value, int):
            raise InvalidArgumentError(
                f"define_split needs an axis of constant extent starting at 0 (or the "
                f"extent as an int), got {axis_or_extent!r}; give the extent: "
                f"cfg.define_split(name, 64)")
    if value < 1:
        raise InvalidArgumentError(f"define_split: the extent must be >= 1, got {value}")
    return value


def _factorizations(extent: int, parts: int, policy: str, max_factor: int | None):
    """Every list of ``parts`` sizes whose product is ``extent`` (policy "factors"), or
    whose inner sizes are powers of two (policy "power2": the outer one is the rest,
    rounded up), inner sizes at most ``max_factor``."""
    if policy == "factors":
        options = [d for d in range(1, extent + 1) if extent % d == 0]
    else:
        options = [1 << k for k in range(extent.bit_length()) if (1 << k) <= extent]
    if max_factor is not None:
        options = [d for d in options if d <= max_factor]
    found = []
    for inner in itertools.product(options, repeat=parts - 1):
        product = math.prod(inner)
        if policy == "factors" and extent % product:
            continue
        if product > extent:
            continue
        found.append([-(-extent // product)] + list(inner))
    return found


@public_methods
class SplitEntity:
    """One split: ``size`` lists the loops' extents, outermost first."""

    def __init__(self, size):
        self.size = list(size)

    def apply(self, sched, stage, axis):
        """Split ``axis`` of ``stage`` into ``len(size)`` loops (checked); their axes."""
        axes, rest = [], axis
        for factor in reversed(self.size[1:]):
            rest, inner = sched[stage].split(rest, factor=int(factor))
            axes.append(inner)
        return [rest] + axes[::-1]

    def features(self) -> list[float]:
        return [math.log2(max(v, 1)) for v in self.size]

    def to_json(self):
        return list(self.size)

    def __eq__(self, other):
        return isinstance(other, SplitEntity) and other.size == self.size

    def __hash__(self):
        return hash(tuple(self.size))

    def __repr__(self):
        return f"sp{self.size}"


@public_methods
class OtherOptionEntity:
    """One value of a ``define_knob`` (``val``)."""

    def __init__(self, val, position: int = 0):
        self.val, self.position = val, position

    def features(self) -> list[float]:
        value = self.val
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [float(self.position), float(value) if numeric else float(bool(value))]

    def to_json(self):
        return self.val

    def __eq__(self, other):
        return isinstance(other, OtherOptionEntity) and other.val == self.val

    def __hash__(self):
        return hash(repr(self.val))

    def __repr__(self):
        return f"ot({self.val!r})"


@public_methods
class ReorderEntity:
    """One order of the axes of a ``define_reorder`` (``perm``: positions)."""

    def __init__(self, perm):
        self.perm = list(perm)

    def apply(self, sched, stage, axes):
        """Reorder ``axes`` of ``stage`` into this order (checked)."""
        ordered = [axes[k] for k in self.perm]
        sched[stage].reorder(*ordered)
        return ordered

    def features(self) -> list[float]:
        return [float(k) for k in self.perm]

    def to_json(self):
        return list(self.perm)

    def __eq__(self, other):
        return isinstance(other, ReorderEntity) and other.perm == self.perm

    def __hash__(self):
        return hash(tuple(self.perm))

    def __repr__(self):
        return f"re{self.perm}"


@public_methods
class AnnotateEntity:
    """One choice per axis of a ``define_annotate``: "none", "unroll" or "vec"."""

    def __init__(self, anns):
        self.anns = list(anns)

    def apply(self, sched, stage, axes, **_ignored):
        """Unroll or vectorize ``axes`` of ``stage`` as chosen (checked); TVM's other
        arguments (``axis_lens``, ``max_unroll``, ...) are accepted and unused."""
        for axis, ann in zip(axes, self.anns):
            if ann == "unroll":
                sched[stage].unroll(axis)
            elif ann == "vec":
                sched[stage].vectorize(axis)
        return list(axes)

    def features(self) -> list[float]:
        return [float(_ANNOTATIONS[a]) for a in self.anns]

    def to_json(self):
        return list(self.anns)

    def __eq__(self, other):
        return isinstance(other, AnnotateEntity) and other.anns == self.anns

    def __hash__(self):
        return hash(tuple(self.anns))

    def __repr__(self):
        return f"an{self.anns}"


class _Knob:
    """A knob's candidates, in order."""

    def __init__(self, kind: str, entities: list, definition: dict):
        self.kind, self.entities, self.definition = kind, entities, definition

    def __len__(self):
        return len(self.entities)


@public_methods
class ConfigSpace:
    """A product space of named knobs (TVM's ``ConfigSpace``); see the module docstring.
    While a template defines its knobs, ``cfg[name]`` is the knob's first value (so the
    template runs through once, as TVM's does)."""

    def __init__(self):
        self.knobs: dict[str, _Knob] = {}

    # -- defining ----------------------------------------------------------------
    def define_split(self, name: str, axis_or_extent, num_outputs: int = 2,
                     policy: str = "factors", max_factor: int | None = None, **_tvm) -> None:
        """A knob splitting a loop of that extent into ``num_outputs`` loops."""
        extent = _extent(axis_or_extent)
        if policy not in ("factors", "power2"):
            raise InvalidArgumentError(f"define_split: policy is 'factors' or 'power2', "
                                       f"got {policy!r}")
        if not isinstance(num_outputs, int) or isinstance(num_outputs, bool) or \
                not 2 <= num_outputs <= 4:
            raise InvalidArgumentError(f"define_split: num_outputs is 2, 3 or 4, got "
                                       f"{num_outputs!r}")
        if max_factor is not None and (not isinstance(max_factor, int) or max_factor < 1):
            raise InvalidArgumentError(f"define_split: max_factor must be a positive int, "
                                       f"got {max_factor!r}")
        sizes = _factorizations(extent, num_outputs, policy, max_factor)
        self._add(name, "split", [SplitEntity(s) for s in sizes],
                  {"extent": extent, "num_outputs": num_outputs, "policy": policy,
                   "max_factor": max_factor})

    def define_knob(self, name: str, candidates) -> None:
        """A knob taking one of ``candidates`` (JSON values: numbers, strings, None,
        booleans, lists)."""
        if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
            raise InvalidArgumentError(f"define_knob: candidates must be a list, got "
                                       f"{candidates!r}")
        values = list(candidates)
        for value in values:
            try:
                json.dumps(value)
            except TypeError:
                raise InvalidArgumentError(
                    f"define_knob {name!r}: candidate {value!r} is not a JSON value "
                    f"(numbers, strings, booleans, None, lists)") from None
        self._add(name, "knob", [OtherOptionEntity(v, k) for k, v in enumerate(values)],
                  {"candidates": values})

    def define_reorder(self, name: str, axes, policy: str = "all", candidate=None,
                       **_tvm) -> None:
        """A knob ordering ``axes``: every order (``"all"``), or the orders of
        ``candidate`` (lists of the same axes, policy ``"candidate"``)."""
        axes = list(axes)
        if policy == "all":
            if not 1 <= len(axes) <= MAX_REORDERED_AXES:
                raise InvalidArgumentError(f"define_reorder: 1 to {MAX_REORDERED_AXES} axes "
                                           f"for policy 'all', got {len(axes)}")
            perms = list(itertools.permutations(range(len(axes))))
        elif policy == "candidate":
            if not candidate:
                raise InvalidArgumentError("define_reorder: policy 'candidate' needs "
                                           "candidate=[[axes in one order], ...]")
            perms = []
            for order in candidate:
                try:
                    perms.append([_position(axes, a) for a in order])
                except ValueError:
                    raise InvalidArgumentError(f"define_reorder: a candidate order names an "
                                               f"axis not in {axes}") from None
                if sorted(perms[-1]) != list(range(len(axes))):
                    raise InvalidArgumentError("define_reorder: each candidate lists every "
                                               "axis once")
        else:
            raise InvalidArgumentError(f"define_reorder: policy is 'all' or 'candidate', "
                                       f"got {policy!r}")
        self._add(name, "reorder", [ReorderEntity(p) for p in perms],
                  {"axes": len(axes), "policy": policy})

    def define_annotate(self, name: str, axes, policy: str = "try_unroll", **_tvm) -> None:
        """A knob annotating ``axes``: ``"try_unroll"`` (each axis unrolled or not),
        ``"try_vec"`` (the last one vectorized or not), ``"try_unroll_vec"`` (both)."""
        count = len(list(axes))
        if count < 1:
            raise InvalidArgumentError("define_annotate: give at least one axis")
        if policy == "try_unroll":
            choices = [("none", "unroll")] * count
        elif policy == "try_vec":
            choices = [("none",)] * (count - 1) + [("none", "vec")]
        elif policy == "try_unroll_vec":
            choices = [("none", "unroll")] * (count - 1) + [("none", "unroll", "vec")]
        else:
            raise InvalidArgumentError(f"define_annotate: policy is 'try_unroll', 'try_vec' "
                                       f"or 'try_unroll_vec', got {policy!r}")
        self._add(name, "annotate", [AnnotateEntity(a) for a in itertools.product(*choices)],
                  {"axes": count, "policy": policy})

    def _add(self, name: str, kind: str, entities: list, definition: dict) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"a knob's name must be a non-empty string, got "
                                       f"{name!r}")
        if name in self.knobs:
            if self.knobs[name].definition == definition and self.knobs[name].kind == kind:
                return  # (a template run twice defines its knobs again)
            raise InvalidArgumentError(f"knob {name!r} is defined twice, differently")
        if not entities:
            raise InvalidArgumentError(f"knob {name!r} has no candidate value (a max_factor "
                                       f"below every factor?)")
        self.knobs[name] = _Knob(kind, entities, definition)

    # -- the points ------------------------------------------------------------------
    def __len__(self) -> int:
        return math.prod(len(k) for k in self.knobs.values())

    @property
    def dims(self) -> list[int]:
        """The number of values of each knob, in definition order."""
        return [len(k) for k in self.knobs.values()]

    def digits(self, index: int) -> list[int]:
        """The value number of each knob at point ``index``."""
        self._check_index(index)
        found = []
        for size in self.dims:
            found.append(index % size)
            index //= size
        return found

    def index_of(self, digits) -> int:
        """The point whose knobs take these value numbers."""
        index, scale = 0, 1
        for digit, size in zip(digits, self.dims):
            index += int(digit) * scale
            scale *= size
        return index

    def get(self, index: int) -> "ConfigEntity":
        """The point number ``index`` (0 <= index < len(space))."""
        digits = self.digits(index)
        return ConfigEntity(index, {name: knob.entities[d] for (name, knob), d in
                                    zip(self.knobs.items(), digits)}, self)

    def neighbors(self, index: int, rng) -> list[int]:
        """Points that differ from ``index`` in one knob: for each knob with more than
        one value, one other value drawn with ``rng`` (a ``numpy.random.Generator``), the
        adjacent values more likely (half the draws)."""
        digits = self.digits(index)
        if not isinstance(rng, np.random.Generator):
            raise InvalidArgumentError(f"neighbors takes a numpy.random.Generator "
                                       f"(numpy.random.default_rng(seed)), got {rng!r}")
        found = []
        for position, size in enumerate(self.dims):
            if size < 2:
                continue
            if rng.random() < 0.5:
                value = digits[position] + (1 if rng.random() < 0.5 else -1)
                value = min(max(value, 0), size - 1)
                if value == digits[position]:
                    value = (value + 1) % size if value == 0 else value - 1
            else:
                value = (digits[position] + int(rng.integers(1, size))) % size
            changed = list(digits)
            changed[position] = value
            found.append(self.index_of(changed))
        return found

    def __getitem__(self, name: str):
        if name not in self.knobs:
            raise InvalidArgumentError(f"no knob named {name!r}; defined: "
                                       f"{', '.join(self.knobs) or 'none'}")
        return self.knobs[name].entities[0]

    def from_json(self, data) -> "ConfigEntity":
        """The point that :meth:`ConfigEntity.to_json` wrote, checked against this space."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError as err:
                raise InvalidArgumentError(f"a config is a JSON object: {err}") from None
        if not isinstance(data, dict) or not isinstance(data.get("index"), int) or \
                not isinstance(data.get("knobs"), dict):
            raise InvalidArgumentError("a config is {'index': int, 'knobs': {...}}, got "
                                       f"{str(data)[:80]}")
        if not 0 <= data["index"] < len(self):
            raise InvalidArgumentError(f"config index {data['index']} is outside this space "
                                       f"(size {len(self)})")
        entity = self.get(data["index"])
        if entity.to_json()["knobs"] != data["knobs"]:
            raise InvalidArgumentError(f"config {data['index']} does not match this space's "
                                       f"knobs (recorded for another template?): "
                                       f"{data['knobs']} != {entity.to_json()['knobs']}")
        return entity

    def to_json(self) -> dict:
        """The knobs' definitions (what records name as the space)."""
        return {name: {"kind": k.kind, **k.definition, "size": len(k)}
                for name, k in self.knobs.items()}

    def _check_index(self, index) -> None:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or \
                not 0 <= index < len(self):
            raise InvalidArgumentError(f"a point of this space is an int in [0, {len(self)}), "
                                       f"got {index!r}")

    def __repr__(self):
        knobs = ", ".join(f"{n}:{k.kind}[{len(k)}]" for n, k in self.knobs.items())
        return f"ConfigSpace(len={len(self)}, {knobs})"


def _position(axes, axis) -> int:
    for k, candidate in enumerate(axes):
        if candidate is axis or (isinstance(axis, str) and getattr(candidate, "name", None)
                                 == axis) or candidate == axis:
            return k
    raise ValueError(axis)


@public_methods
class ConfigEntity:
    """One point of a :class:`ConfigSpace`: ``cfg[name]`` is a knob's value.  Defining
    knobs on it does nothing (a template runs the same code for the space and a point)."""

    def __init__(self, index: int, knobs: dict, space: ConfigSpace | None = None):
        self.index, self.knobs, self.space = int(index), dict(knobs), space

    def __getitem__(self, name: str):
        if name not in self.knobs:
            raise InvalidArgumentError(f"no knob named {name!r} in this config; defined: "
                                       f"{', '.join(self.knobs) or 'none'}")
        return self.knobs[name]

    def define_split(self, *args, **kwargs) -> None:
        """Nothing: the knob is defined already."""

    def define_knob(self, *args, **kwargs) -> None:
        """Nothing: the knob is defined already."""

    def define_reorder(self, *args, **kwargs) -> None:
        """Nothing: the knob is defined already."""

    def define_annotate(self, *args, **kwargs) -> None:
        """Nothing: the knob is defined already."""

    def to_json(self) -> dict:
        """``{"index": i, "knobs": {name: value}}`` (JSON values)."""
        return {"index": self.index, "knobs": {n: e.to_json() for n, e in self.knobs.items()}}

    def __eq__(self, other):
        return isinstance(other, ConfigEntity) and other.index == self.index and \
            other.knobs == self.knobs

    def __hash__(self):
        return hash(self.index)

    def __repr__(self):
        return f"ConfigEntity({self.index}, {self.knobs})"


@public
def knob_features(entity: ConfigEntity) -> np.ndarray:
    """A numeric vector describing a point's knob values (log2 split sizes, a knob's
    position and value, orders, annotation codes), for cost models.

    >>> space = ConfigSpace(); space.define_split("t", 16); space.define_knob("u", [0, 4])
    >>> knob_features(space.get(len(space) - 1)).tolist()
    [0.0, 4.0, 1.0, 4.0]
    """
    if not isinstance(entity, ConfigEntity):
        raise InvalidArgumentError(f"knob_features takes a ConfigEntity, got "
                                   f"{type(entity).__name__}")
    values = [v for e in entity.knobs.values() for v in e.features()]
    return np.asarray(values, dtype=np.float64)

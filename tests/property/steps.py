"""Random schedule primitives, chosen from the current schedule and written as Python.

:func:`next_step` looks at the schedule ``s`` (its stages, their loops, the program's
arrays) and returns the text of one primitive call on it, e.g.
``s['C1'].split('i', factor=3)`` or ``s.cache_write('S0', 'local', layout=...)``, or
None when the drawn primitive does not apply.  The text is what the worker executes and
what a reproducer replays.

>>> import random, polyopt as po
>>> A = po.placeholder((8,), name="A")
>>> B = po.compute((8,), lambda i: A[i] * 2.0, name="B")
>>> text = next_step(po.create_schedule(B), random.Random(0), "split")
>>> text.startswith("s['B'].split('i'")
True
"""

from __future__ import annotations

LOOP_PRIMITIVES = ["split", "split", "tile", "reorder", "fuse", "skew", "shift", "reverse",
                   "transform", "diamond_tile", "wavefront"]
KIND_PRIMITIVES = ["parallel", "vectorize", "unroll"]
PLACE_PRIMITIVES = ["compute_at", "compute_at", "compute_with", "compute_inline",
                    "compute_root", "cache_read", "cache_read", "cache_write", "cache_write",
                    "rfactor", "rfactor"]
PRIMITIVES = LOOP_PRIMITIVES + KIND_PRIMITIVES + PLACE_PRIMITIVES


def _layouts(rank):
    """Element orders of a ``rank``-dimensional cache, as isl text."""
    if rank == 1:
        return ["{ [d0] -> [floor(d0 / 4), d0 mod 4] }", "{ [d0] -> [-d0] }",
                "{ [d0] -> [floor(d0 / 3), d0 mod 3] }"]
    if rank == 2:
        return ["{ [d0, d1] -> [d1, d0] }", "{ [d0, d1] -> [floor(d1 / 2), d0, d1 mod 2] }",
                "{ [d0, d1] -> [floor(d0 / 3), d1, d0 mod 3] }",
                "{ [d0, d1] -> [d0 + d1, d1] }"]
    return [None]


def _stage_ref(name):
    return f"s[{name!r}]"


def next_step(s, rng, primitive=None):
    """The text of one random primitive call on ``s`` (None if it does not apply)."""
    primitive = primitive or rng.choice(PRIMITIVES)
    stages = s.stages
    if not stages:
        return None
    stage = rng.choice(stages)
    ref = _stage_ref(stage.name)
    axes = [a.name for a in stage.axes]
    if not axes and primitive not in ("compute_inline", "compute_root", "cache_write",
                                      "cache_read", "rfactor"):
        return None
    pick = (lambda: rng.choice(axes)) if axes else (lambda: None)
    pair = None
    if len(axes) >= 2:
        p = rng.randrange(len(axes) - 1)
        pair = (axes[p], axes[p + 1])
    if primitive == "split":
        kind = rng.choice(["factor", "factor", "nparts"])
        return f"{ref}.split({pick()!r}, {kind}={rng.randint(1, 5)})"
    if primitive == "tile" and pair:
        return f"{ref}.tile({pair[0]!r}, {pair[1]!r}, {rng.randint(1, 4)}, {rng.randint(1, 4)})"
    if primitive == "reorder" and len(axes) >= 2:
        chosen = rng.sample(axes, rng.randint(2, len(axes)))
        return f"{ref}.reorder({', '.join(map(repr, chosen))})"
    if primitive == "fuse" and pair:
        return f"{ref}.fuse({pair[0]!r}, {pair[1]!r})"
    if primitive == "skew" and len(axes) >= 2:
        outer, inner = sorted(rng.sample(range(len(axes)), 2))
        return f"{ref}.skew({axes[outer]!r}, {axes[inner]!r}, {rng.choice([-1, 1, 1, 2])})"
    if primitive == "shift":
        return f"{ref}.shift({pick()!r}, {rng.choice([-2, -1, 1, 3])})"
    if primitive == "reverse":
        return f"{ref}.reverse({pick()!r})"
    if primitive == "transform":
        names = [f"a{k}" for k in range(len(axes))]
        out = names[:]
        rng.shuffle(out)
        if len(out) >= 2 and rng.random() < 0.5:
            out[-1] = f"{out[-1]} + {rng.choice([1, 2, -1])} * {out[0]}"
        if rng.random() < 0.2:
            out[0] = f"-{out[0]}"
        return f"{ref}.transform({'{ [' + ', '.join(names) + '] -> [' + ', '.join(out) + '] }'!r})"
    if primitive == "diamond_tile" and len(axes) >= 2:
        outer, inner = sorted(rng.sample(range(len(axes)), 2))
        return f"{ref}.diamond_tile({axes[outer]!r}, {axes[inner]!r}, {rng.choice([2, 4, 8])})"
    if primitive == "wavefront" and len(axes) >= 2:
        start = rng.randrange(len(axes) - 1)
        chosen = axes[start:start + rng.randint(2, 3)]
        return f"{ref}.wavefront({', '.join(map(repr, chosen))})"
    if primitive in KIND_PRIMITIVES:
        return f"{ref}.{primitive}({pick()!r})"
    if primitive in ("compute_at", "compute_with"):
        others = [t for t in stages if t.name != stage.name and t.axes]
        if not others:
            return None
        other = rng.choice(others)
        axis = rng.choice([a.name for a in other.axes])
        return f"{ref}.{primitive}({_stage_ref(other.name)}, {axis!r})"
    if primitive in ("compute_inline", "compute_root"):
        return f"{ref}.{primitive}()"
    if primitive == "cache_read":
        return _cache_read(s, rng)
    if primitive == "cache_write":
        layout = rng.choice([None, None] + _layouts(_rank(s, stage.name)))
        extra = f", layout={layout!r}" if layout else ""
        return f"s.cache_write({stage.name!r}, {rng.choice(['local', 'global'])!r}{extra})"
    if primitive == "rfactor":
        return _rfactor(s, rng, stage, axes)
    return None


def _rank(s, stage_name):
    """The rank of the array that ``stage_name`` writes (0 if unknown)."""
    try:
        stage = s.program.stage(stage_name)
        return len(s.program.statement(stage.main).target.tensor.shape)
    except Exception:  # a stage without a plain target: no layout then
        return 0


def _cache_read(s, rng):
    program = s.program
    roles = ("placeholder", "inout") if s.kernel is not None else ("placeholder",)
    arrays = [a for a in program.arrays if a.role in roles]
    if not arrays:
        return None
    array = rng.choice(arrays)
    readers = sorted({st.name for st in program.stages for n in (st.init, st.main) if n
                      for acc in program.statement(n).reads if acc.array == array.name})
    if not readers:
        return None
    chosen = readers if rng.random() < 0.5 else [rng.choice(readers)]
    layout = rng.choice([None, None] + _layouts(len(array.shape)))
    extra = f", layout={layout!r}" if layout else ""
    scope = rng.choice(["global", "shared", "local"])
    return f"s.cache_read({array.name!r}, {scope!r}, {chosen!r}{extra})"


def _rfactor(s, rng, stage, axes):
    if s.kernel is not None:
        return f"s.rfactor({stage.name!r}, {rng.choice(axes)!r})" if axes else None
    candidates = [(st.name, a.name) for st in s.program.stages if st.init is not None
                  for a in st.axes if st.involves_reduce(a)]
    if not candidates:
        return None
    return "s.rfactor({!r}, {!r})".format(*rng.choice(candidates))

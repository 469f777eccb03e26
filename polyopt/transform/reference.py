"""The primitives reference, ``docs/primitives.md``, written from the registry.

Every registered primitive (:mod:`.registry`) gets an entry: its method's signature
and docstring, the arguments that are loops or stages, what it returns and how it is
checked.  ``python3 scripts/primitives.py`` rewrites the file (after ``import polyopt``,
so that later layers' primitives, e.g. ``tensorize``, are registered too);
``tests/transform/test_registry.py`` checks that it is up to date.

>>> from polyopt.transform.registry import PRIMITIVES
>>> print(primitive_entry(PRIMITIVES["reverse"]))
### `s[C].reverse(axis, *, check=True)`
<BLANKLINE>
``s[C].reverse(i)``: run the loop backwards.
<BLANKLINE>
Loops: `axis` (of this stage). Returns: nothing. Checked unless `check=False`; \
`s[C].can_reverse(...)` answers without raising. Registered in \
`polyopt.transform.primitives`.
<BLANKLINE>
"""

from __future__ import annotations

import inspect
import pathlib

from .registry import PRIMITIVES, Primitive

RETURNED = {"loop": "the loop (a `LoopAxis`)", "loops": "the new loops (`LoopAxis`es)",
            "axes": "the stage's loops after the step",
            "value": "the step's result (on the schedule: the new tensor)", None: "nothing"}
HEADER = """# Schedule primitives

<!-- Generated from the registry of primitives (polyopt/transform/registry.py) by
`python3 scripts/primitives.py`; tests/transform/test_registry.py checks it is up to date.
Edit the registrations and their docstrings, then run the script. -->

Every primitive is one registration (`@register(...)` on a pure `apply(state, ...)`),
which gives its method, `can_<name>`, its line in `s.script()`, its replay and this
entry. Loops may be given as a `LoopAxis`, an `IterVar` or a loop's name; stages as a
tensor, a stage or a stage's name.
"""


def primitive_entry(primitive: Primitive) -> str:
    """The reference entry of one primitive (Markdown)."""
    name = primitive.name
    call = "s[C]" if primitive.scope == "stage" else "s"
    signature, doc = primitive.method_signature(), primitive.docstring
    shown = inspect.Signature([p.replace(annotation=p.empty)
                               for p in list(signature.parameters.values())[1:]])
    facts = []
    loops = [f"`{p}`" + (" (of this stage)" if spec.of is None else f" (of `{spec.of}`)")
             for p, spec in primitive.params.items() if spec.kind == "loop"]
    stages = [f"`{p}`" for p, spec in primitive.params.items() if spec.kind == "stage"]
    tensors = [f"`{p}`" + (" (its stage)" if spec.kind == "writer" else "")
               for p, spec in primitive.params.items() if spec.kind in ("tensor", "writer")]
    if loops:
        facts.append(f"Loops: {', '.join(loops)}.")
    if stages:
        facts.append(f"Stages: {', '.join(stages)}.")
    if tensors:
        facts.append(f"Tensors: {', '.join(tensors)}.")
    facts.append(f"Returns: {RETURNED[primitive.returns]}.")
    checked = {None: "Checked unless `check=False`", True: "Always checked",
               False: "Never checked (no `check=`)"}[primitive.checked]
    facts.append(f"{checked}; `{call}.can_{name}(...)` answers without raising.")
    if primitive.defer_on:
        waits = " or ".join(f"`{e.__name__}`" for e in primitive.defer_on)
        facts.append(f"Refused with {waits}, it waits and is retried after later steps.")
    facts.append(f"Registered in `{primitive.apply.__module__}`.")
    return f"### `{call}.{name}{shown}`\n\n{doc}\n\n{' '.join(facts)}\n"


def primitives_reference() -> str:
    """``docs/primitives.md``: every registered primitive, those of a stage first."""
    parts = [HEADER]
    for scope, title in (("stage", "On a stage: `s[C].<name>(...)`"),
                         ("schedule", "On the schedule: `s.<name>(...)`")):
        parts.append(f"## {title}\n")
        parts += [primitive_entry(p) for p in PRIMITIVES.values() if p.scope == scope]
    return "\n".join(parts)


def write_primitives_reference(path: str | pathlib.Path) -> pathlib.Path:
    """Write :func:`primitives_reference` to ``path`` (replaced atomically)."""
    path = pathlib.Path(path)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(primitives_reference())
    partial.replace(path)
    return path

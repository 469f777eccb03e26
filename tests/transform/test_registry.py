"""One registration per primitive (polyopt/transform/registry.py): the Stage method, its
signature and docstring, ``can_<name>``, ``s.script()``, replay and the docs entry all
come from it, also for a primitive registered outside the package (here, in this file),
and docs/primitives.md is the registry's reference, up to date."""

import inspect
import pathlib
import pydoc

import numpy as np
import pytest

import polyopt as po
from polyopt.transform import loops
from polyopt.transform.reference import primitive_entry, primitives_reference
from polyopt.transform.registry import KEYWORD, LOOP, PRIMITIVES, register, unregister
from testlib.schedules import run

ROOT = pathlib.Path(__file__).resolve().parents[2]


def halve(state, stage, axis, *, reverse_inner=False):
    """``low, high = s[C].halve(i)``: loop ``i`` in two halves, the second half's loop
    inside the first's (``reverse_inner=True``: that inner loop runs backwards)."""
    program, names = loops.split(state.program, stage, axis, nparts=2)
    if reverse_inner:
        program = loops.reverse(program, stage, names[1])
    return state.advanced(program), names


@pytest.fixture
def halve_registered():
    register("halve", params={"axis": LOOP, "reverse_inner": KEYWORD}, returns="loops")(halve)
    yield PRIMITIVES["halve"]
    unregister("halve")


def doubled(n=8):
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    return A, B


def row_sum(n=6, k=8):
    A = po.placeholder((n, k), name="A")
    r = po.reduce_axis((0, k), name="k")
    C = po.compute((n,), lambda i: po.sum(A[i, r], axis=r), name="C")
    return A, C


def test_an_outside_primitive_is_a_stage_method_with_its_signature_and_doc(halve_registered):
    assert str(inspect.signature(po.Stage.halve)) == "(self, axis, *, reverse_inner=False, " \
                                                     "check=True)"
    assert str(inspect.signature(po.Stage.can_halve)) == \
        "(self, axis, *, reverse_inner=False, check=True) -> bool"
    assert "loop ``i`` in two halves" in pydoc.render_doc(po.Stage.halve)
    A, B = doubled()
    s = po.create_schedule(B)
    low, high = s[B].halve(B.op.axis[0], reverse_inner=True)
    assert [(low.stage, low.name), (high.stage, high.name)] == [("B", "i.outer"),
                                                                 ("B", "i.inner")]
    assert [a.name for a in s[B].axes] == ["i.outer", "i.inner"]
    a = np.arange(8, dtype="float32")
    np.testing.assert_array_equal(run(s, [A, B], [a]), a * 2.0)
    with pytest.raises(po.InvalidArgumentError, match="halve"):
        s[B].halve("i.inner", 3)  # not its signature


def test_an_outside_primitive_has_can_and_is_checked(halve_registered):
    A, C = row_sum()
    s = po.create_schedule(C, strict_fp=True)  # the sum keeps its order: k may not reverse
    assert s[C].can_halve("k") and not s[C].can_halve("k", reverse_inner=True)
    assert not s[C].can_halve("nope") and s.steps == []
    with pytest.raises(po.IllegalScheduleError):
        s[C].halve("k", reverse_inner=True)
    assert s.steps == []
    s[C].halve("k", reverse_inner=True, check=False)
    assert not s.is_legal()


def test_an_outside_primitive_is_scripted_and_replayed(halve_registered):
    A, B = doubled()
    s = po.create_schedule(B)
    _, inner = s[B].halve(B.op.axis[0], reverse_inner=True)
    s[B].vectorize(inner)
    assert s.script() == 's["B"].halve("i", reverse_inner=True)\ns["B"].vectorize("i.inner")'
    again = po.create_schedule(B).replay(s.script())
    assert again.script() == s.script()
    assert str(po.lower(again, [A, B])) == str(po.lower(s, [A, B]))
    steps = po.create_schedule(B).replay(s.steps, check=False)
    assert steps.steps == s.steps
    a = np.arange(8, dtype="float32")
    np.testing.assert_array_equal(run(again, [A, B], [a]), a * 2.0)


def test_an_outside_primitive_gets_its_docs_entry(halve_registered):
    entry = primitive_entry(halve_registered)
    assert entry.startswith("### `s[C].halve(axis, *, reverse_inner=False, check=True)`\n")
    assert "loop ``i`` in two halves" in entry and f"Registered in `{__name__}`" in entry
    assert "Loops: `axis` (of this stage). Returns: the new loops" in entry
    assert entry in primitives_reference()


def test_unregistering_removes_the_method_and_replay_refuses_its_steps():
    register("halve", params={"axis": LOOP}, returns="loops")(halve)
    A, B = doubled()
    s = po.create_schedule(B)
    try:
        s[B].halve("i")
    finally:
        unregister("halve")
    assert not hasattr(po.Stage, "halve") and not hasattr(po.Stage, "can_halve")
    assert "halve" not in primitives_reference()
    with pytest.raises(po.InvalidArgumentError, match="unknown primitive 'halve'"):
        po.create_schedule(B).replay(s.script())


@pytest.mark.parametrize("name, options, match", [
    ("axes", {}, "would replace Stage.axes"),
    ("split", {}, "registered already"),
    ("_hidden", {}, "leading underscore"),
    ("halve", {"params": {"loop": LOOP}}, "params name 'loop'"),
    ("halve", {"returns": "tensor"}, "returns must be one of"),
])
def test_a_registration_that_cannot_work_is_refused(name, options, match):
    before = dict(PRIMITIVES)
    with pytest.raises(po.InvalidArgumentError, match=match):
        register(name, **options)(halve)
    assert PRIMITIVES == before and not hasattr(po.Stage, "halve")


def test_every_stage_primitive_has_its_generated_method():
    stage_primitives = [p for p in PRIMITIVES.values() if p.scope == "stage"]
    assert {"split", "compute_at", "tensorize", "pragma"} <= {p.name for p in stage_primitives}
    for primitive in stage_primitives:
        method = getattr(po.Stage, primitive.name)
        assert inspect.signature(method) == primitive.method_signature()
        assert inspect.getdoc(method) == primitive.docstring
        assert hasattr(method, "__wrapped__") and hasattr(po.Stage, f"can_{primitive.name}")
    assert PRIMITIVES["tensorize"].apply.__module__ == "polyopt.tensorize.apply"
    assert str(inspect.signature(po.Stage.pragma)) == \
        "(self, axis, pragma_type, pragma_value=None)"  # never checked: no check=


def test_the_primitives_reference_is_up_to_date():
    written = (ROOT / "docs" / "primitives.md").read_text()
    assert written == primitives_reference(), "run python3 scripts/primitives.py"


def test_primitives_on_the_schedule_are_registered_like_the_others():
    A, B = doubled()
    s = po.create_schedule(B)
    assert s.can_cache_write(B, "local") and s.steps == []
    assert not s.can_rfactor(B, "i")  # no reduction loop to factor
    for name in ("cache_read", "cache_write", "rfactor", "expand_scalar"):
        primitive = PRIMITIVES[name]
        assert primitive.scope == "schedule"
        method = getattr(po.Schedule, name)
        assert inspect.signature(method) == primitive.method_signature()
        assert inspect.getdoc(method) == primitive.docstring
        assert method.__module__ == "polyopt.transform.schedule_primitives"
    assert str(inspect.signature(po.Schedule.can_cache_read)) == \
        "(self, tensor, scope, readers, *, layout=None, check=True) -> bool"


def copied(state, tensor, scope, *, twice=False):
    """``BC = s.copied(B, "global")``: a cache_write of B (``twice=True``: two)."""
    state, cached = PRIMITIVES["cache_write"].apply(state, tensor, scope)
    if twice:
        state, cached = PRIMITIVES["cache_write"].apply(state, tensor, scope)
    return state, cached


@pytest.fixture
def copied_registered():
    from polyopt.transform.registry import WRITER
    register("copied", scope="schedule", params={"tensor": WRITER, "twice": KEYWORD},
             returns="value")(copied)
    yield PRIMITIVES["copied"]
    unregister("copied")


def test_an_outside_primitive_on_the_schedule_gets_everything(copied_registered):
    assert str(inspect.signature(po.Schedule.copied)) == \
        "(self, tensor, scope, *, twice=False, check=True)"
    A, B = doubled()
    s = po.create_schedule(B)
    assert s.can_copied(B, "global", twice=True) and s.steps == []
    cached = s.copied(B, "global", twice=True)
    assert cached.name == "B.global" and s.script() == 's.copied("B", "global", twice=True)'
    again = po.create_schedule(B).replay(s.script())
    assert [st.name for st in again.program.stages] == [st.name for st in s.program.stages]
    a = np.arange(8, dtype="float32")
    assert np.array_equal(run(again, [A, B], [a]), a * 2)
    assert "### `s.copied(tensor, scope, *, twice=False, check=True)`" in \
        primitive_entry(copied_registered)
    unregister("copied")
    assert not hasattr(po.Schedule, "copied") and not hasattr(po.Schedule, "can_copied")


def test_a_schedule_primitive_that_would_replace_a_method_is_refused():
    with pytest.raises(po.InvalidArgumentError, match="would replace Schedule.replay"):
        register("replay", scope="schedule")(lambda state: (state, None))
    assert "replay" not in PRIMITIVES and callable(po.Schedule.replay)

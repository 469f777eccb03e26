"""Recorded schedules: ``s.script()`` is Python text of the accepted primitive calls and
``replay`` (of that text or of ``s.steps``) rebuilds the same program on a fresh schedule."""

import numpy as np
import pytest

import polyopt as po
from polyopt.transform.steps import Step, parse_script
from testlib.errors import pair, refused
from testlib.schedules import irand, lowered, run

N, T = po.var("N"), po.var("T")


def matmul():
    M, Nn, K = po.var("M"), po.var("N"), po.var("K")
    A = po.placeholder((M, K), name="A")
    B = po.placeholder((K, Nn), name="B")
    k = po.reduce_axis((0, K), name="k")
    C = po.compute((M, Nn), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = po.compute((M, Nn), lambda i, j: C[i, j] * 2.0, name="D")
    return A, B, C, D


def schedule_everything(s, A, B, C, D):
    CL = s.cache_write(C, "local")
    AS = s.cache_read(A, "shared", [CL])
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 3)
    s[CL].compute_at(s[C], jo)
    s[AS].compute_at(s[CL], "k")
    do, di = s[D].split(D.op.axis[1], factor=2)
    s[D].parallel(D.op.axis[0])
    s[D].unroll(di)
    s[C].parallel(io)
    return CL, AS


EXPECTED_SCRIPT = """\
s.cache_write("C", "local")
s.cache_read("A", "shared", ["C_local"])
s["C"].tile("i", "j", 4, 3)
s["C_local"].compute_at("C", "j.outer")
s["A_shared"].compute_at("C_local", "k")
s["D"].split("j", factor=2)
s["D"].parallel("i")
s["D"].unroll("j.inner")
s["C"].parallel("i.outer")"""


def test_script_text():
    A, B, C, D = matmul()
    s = po.create_schedule(D)
    schedule_everything(s, A, B, C, D)
    assert s.script() == EXPECTED_SCRIPT
    assert [step.primitive for step in s.steps] == [
        "cache_write", "cache_read", "tile", "compute_at", "compute_at", "split", "parallel",
        "unroll", "parallel"]


def test_replay_of_the_script_gives_the_same_program():
    A, B, C, D = matmul()
    s = po.create_schedule(D)
    schedule_everything(s, A, B, C, D)
    fresh = po.create_schedule(D).replay(s.script())
    assert fresh.script() == s.script()
    assert lowered(fresh, [A, B, D]) == lowered(s, [A, B, D])
    assert fresh.program.schedule_map().is_equal(s.program.schedule_map())
    a, b = irand(7, 5), irand(5, 8)
    np.testing.assert_array_equal(run(fresh, [A, B, D], [a, b], M=7, N=8, K=5), (a @ b) * 2)


def test_replay_on_a_rebuilt_program():
    """Steps name stages and loops, so they apply to an equal program built again."""
    A, B, C, D = matmul()
    s = po.create_schedule(D)
    schedule_everything(s, A, B, C, D)
    A2, B2, C2, D2 = matmul()
    fresh = po.create_schedule(D2).replay(s.script())
    assert lowered(fresh, [A2, B2, D2]) == lowered(s, [A, B, D])


def test_replay_of_steps():
    A, B, C, D = matmul()
    s = po.create_schedule(D)
    schedule_everything(s, A, B, C, D)
    fresh = po.create_schedule(D).replay(s.steps)
    assert lowered(fresh, [A, B, D]) == lowered(s, [A, B, D])
    assert parse_script(s.script()) == s.steps


def _recurrence():
    @po.kernel
    def recurrence(A: po.f64[N]):
        for t in range(T):
            for i in range(1, N - 1):
                A[i] = A[i - 1] + A[i + 1]
    return recurrence


def test_replay_of_a_kernel_schedule():
    recurrence = _recurrence()
    s = po.create_schedule(recurrence)
    s["S0"].skew("t", "i", 1)
    s["S0"].reorder("i", "t")
    io, ii = s["S0"].split("i", factor=4)
    s["S0"].transform("{ [a, b, c] -> [a, b, c] }")
    assert s.script() == ('s["S0"].skew("t", "i", 1)\n'
                          's["S0"].reorder("i", "t")\n'
                          's["S0"].split("i", factor=4)\n'
                          's["S0"].transform("{ [a, b, c] -> [a, b, c] }")')
    fresh = po.create_schedule(recurrence).replay(s.script())
    assert lowered(fresh) == lowered(s)
    a = np.random.default_rng(3).random(11)
    b = a.copy()
    po.build(s)(a, T=4)
    po.build(fresh)(b, T=4)
    np.testing.assert_array_equal(a, b)


def test_refused_calls_are_not_recorded():
    A, B, C, D = matmul()
    s = po.create_schedule(D)
    with pytest.raises(po.IllegalScheduleError):
        s[C].parallel(C.op.reduce_axis[0])
    with pytest.raises(po.ScheduleError):
        s[C].fuse(C.op.axis[1], C.op.axis[0])  # inner first
    with pytest.raises(po.InvalidArgumentError):
        s[C].split(C.op.axis[0], factor=0)
    assert s.script() == "" and s.steps == []
    s[C].reorder(C.op.axis[1], C.op.axis[0])
    assert s.script() == 's["C"].reorder("j", "i")'


def test_replay_checks_the_schedule_the_steps_make():
    """A step applied with check=False is recorded without that flag: replaying it checks
    the schedule it makes and refuses it."""
    recurrence = _recurrence()
    s = po.create_schedule(recurrence)
    s["S0"].reorder("i", "t", check=False)
    assert s.script() == 's["S0"].reorder("i", "t")'
    err = refused(po.DependenceViolationError,
                  lambda: po.create_schedule(recurrence).replay(s.script()))
    assert err.transform == "the replayed script"
    assert pair(err)[0::2] == ("S0[t=0, i=2]", "A[2]")


def test_script_parsing():
    text = '# a comment\n\ns["C"].split("i", factor=4)\ns.rfactor("C", "k.inner")\n'
    assert parse_script(text) == [Step("C", "split", ("i",), (("factor", 4),)),
                                  Step(None, "rfactor", ("C", "k.inner"), ())]


@pytest.mark.parametrize("text, message", [
    ('s["C"].split("i", factor=4)\ns["C"].split(', r"line 2 of the schedule script: "),
    ("import os", r"line 1 of the schedule script: invalid syntax"),
    ('t["C"].split("i", factor=2)', r"calls must be on s or s\[\.\.\.\]"),
    ('s["C"].split(i, factor=2)', r"line 1 of the schedule script: "),
    ("os.system('true')", r"calls must be on s or s\[\.\.\.\]"),
])
def test_script_syntax_errors(text, message):
    with pytest.raises(po.InvalidArgumentError, match=message):
        parse_script(text)


@pytest.mark.parametrize("text, error, message", [
    ('s["C"].bogus(1)', po.InvalidArgumentError, r"unknown primitive 'bogus' in "
                                                 r's\["C"\].bogus\(1\)'),
    ('s["C"]._run()', po.InvalidArgumentError, "unknown primitive '_run'"),
    ('s["Q"].split("i", factor=2)', po.InvalidArgumentError, "no stage named 'Q'; the stages "
                                                              "are: C, D"),
    ('s["C"].split("q", factor=2)', po.ScheduleError, "stage 'C' has no loop 'q'; its loops "
                                                      "are: i, j, k"),
])
def test_replay_errors(text, error, message):
    A, B, C, D = matmul()
    s = po.create_schedule(D)
    with pytest.raises(error, match=message):
        s.replay(text)
    assert s.steps == []


def test_replay_of_a_two_level_cache():
    A = po.placeholder((8, 8), name="A")
    B = po.placeholder((8, 8), name="B")
    k = po.reduce_axis((0, 8), name="k")
    C = po.compute((8, 8), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = po.create_schedule(C)
    AS = s.cache_read(A, "shared", [C])
    s.cache_read(AS, "local", [C])
    fresh = po.create_schedule(C).replay(s.script())
    assert lowered(fresh, [A, B, C]) == lowered(s, [A, B, C])


def test_replay_of_caches_of_a_cache_records_unique_names():
    """Two caches of one tensor share its tensor name (``C.local``); the script names
    them by their arrays, so a cache of the second one replays onto the second one."""
    A = po.placeholder((6,), name="A")
    C = po.compute((6,), lambda i: A[i] * 2.0, name="C")
    s = po.create_schedule(C)
    s.cache_write(C, "local")
    second = s.cache_write(C, "local")
    s.cache_write(second, "local")
    assert s.script().splitlines()[-1] == 's.cache_write("C_local_1", "local")'
    fresh = po.create_schedule(C).replay(s.script())
    assert [st.name for st in fresh.program.stages] == [st.name for st in s.program.stages]
    assert lowered(fresh, [A, C]) == lowered(s, [A, C])



def test_replay_checks_the_steps_together_not_one_by_one():
    # reversing time breaks the recurrence; reversing it again restores it
    kernel = _recurrence()
    s = po.create_schedule(kernel)
    with pytest.raises(po.IllegalScheduleError):
        s["S0"].reverse("t")
    s["S0"].reverse("t", check=False)
    s["S0"].reverse("t", check=False)
    s.check()  # legal together
    fresh = po.create_schedule(kernel).replay(s.script())  # the first step alone: refused
    assert fresh.script() == s.script() == 's["S0"].reverse("t")\ns["S0"].reverse("t")'
    a = np.arange(9, dtype=np.float64) / 8
    expected = a.copy()
    for _ in range(3):
        for i in range(1, 8):
            expected[i] = expected[i - 1] + expected[i + 1]
    po.build(fresh)(a, T=3)
    np.testing.assert_array_equal(a, expected)


def test_replay_of_an_illegal_script_is_refused_and_applies_nothing():
    kernel = _recurrence()
    s = po.create_schedule(kernel)
    err = refused(po.DependenceViolationError, lambda: s.replay('s["S0"].reorder("i", "t")'))
    assert err.transform == "the replayed script"
    assert pair(err)[0::2] == ("S0[t=0, i=2]", "A[2]")
    assert s.script() == "" and not s.steps
    assert s.replay('s["S0"].reorder("i", "t")', check=False).steps  # unchecked, as asked
    assert not s.is_legal()

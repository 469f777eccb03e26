"""Memoized schedule rows and checks: a changed schedule never reuses a stale result."""

import islpy as isl
import pytest

import polyopt as po
from polyopt.domain.memo import IdentityMemo
from polyopt.domain import schedule as schedule_module
from polyopt.domain.schedule import build_schedule
from polyopt.errors import IllegalScheduleError


def test_memo_keys_on_identity_not_equality():
    memo = IdentityMemo()
    a, b = isl.Set("{ [i] : 0 <= i < 4 }"), isl.Set("{ [i] : 0 <= i < 4 }")
    first = memo.get((a, 1), lambda: "a")
    assert memo.get((a, 1), lambda: "again") == first == "a"
    assert memo.get((b, 1), lambda: "b") == "b"  # an equal but distinct object
    assert memo.get((a, 2), lambda: "a2") == "a2"  # another plain argument


def test_memo_evicts_the_oldest_entry():
    memo = IdentityMemo(size=2)
    keys = [object() for _ in range(3)]
    for n, key in enumerate(keys):
        memo.get((key,), lambda n=n: n)
    assert memo.get((keys[0],), lambda: "recomputed") == "recomputed"
    assert memo.get((keys[2],), lambda: "recomputed") == 2


def _reduction():
    n = 8
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    S = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="S")
    return A, S


def test_rows_follow_each_primitive():
    _, S = _reduction()
    s = po.create_schedule(S)
    before = {name: s.program.schedule_of(name) for name in ("S_init", "S_update")}
    s[S].split(S.op.axis[0], factor=4)
    after = {name: s.program.schedule_of(name) for name in ("S_init", "S_update")}
    assert after["S_init"].is_equal(isl.Map(
        "{ S_init[i] -> [0, 0, o2, 0, o4, 0, 0, 0] : (i - o4) mod 4 = 0 and 0 <= i <= 7 and "
        "-3 + i <= 4o2 <= i and 0 <= o4 <= 3 }"))
    for name in before:  # the old program keeps its rows; the new one has its own
        assert not after[name].is_equal(before[name])
        fresh = po.create_schedule(S)
        fresh[S].split(S.op.axis[0], factor=4)
        assert after[name].is_equal(fresh.program.schedule_of(name))


def test_rebuilt_schedule_matches_an_uncached_build():
    _, S = _reduction()
    s = po.create_schedule(S)
    s[S].reorder(S.op.reduce_axis[0], S.op.axis[0], check=False)
    program = s.program
    schedule_module._ROW_MAPS.clear()  # rebuild every row from scratch
    schedule_module._INIT_VALUES.clear()
    rebuilt, axes, _ = build_schedule(program.statements, program.stages, program.context)
    assert rebuilt.get_map().is_equal(program.schedule.get_map())
    assert axes == program.loop_axes
    # the init runs before the reduction loop, now outermost, over i on its own
    assert str(program.schedule_of("S_init")) == "{ S_init[i] -> [0, 0, i, 0, 0, 0] : 0 <= i <= 7 }"
    assert str(program.schedule_of("S_update")) == \
        "{ S_update[i, k] -> [0, 1, k, 0, i, 0] : 0 <= i <= 7 and 0 <= k <= 7 }"


def test_checks_see_the_current_schedule():
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2.0, name="B")
    C = po.compute((8,), lambda i: B[i] + B[7 - i], name="C")
    s = po.create_schedule(C)
    s[C].parallel(C.op.axis[0])  # legal: B is computed before C
    assert s.is_legal()
    s[B].compute_with(s[C], C.op.axis[0], check=False)  # C[i] reads B[7 - i], not yet made
    with pytest.raises(IllegalScheduleError) as info:
        s.check()
    dependence = info.value.violation.dependence
    assert (dependence.kind, dependence.source, dependence.sink) == ("flow", "B", "C")


def test_schedule_is_built_when_first_read(monkeypatch):
    from polyopt.domain import program as program_module
    calls = []

    def counted(*args):
        calls.append(args[1])
        return build_schedule(*args)

    monkeypatch.setattr(program_module, "build_schedule", counted)
    _, S = _reduction()
    s = po.create_schedule(S)
    io, ii = s[S].split(S.op.axis[0], factor=4, check=False)
    s[S].reorder(io, S.op.reduce_axis[0], ii, check=False)
    s[S].unroll(ii, check=False)
    assert calls == []  # three unchecked primitives: no schedule built yet
    program = s.program
    assert program.schedule_of("S_update").is_equal(isl.Map(
        "{ S_update[i, k] -> [0, 0, o2, 1, k, 0, o6, 0] : (i - o6) mod 4 = 0 and 0 <= i <= 7 "
        "and 0 <= k <= 7 and -3 + i <= 4o2 <= i and 0 <= o6 <= 3 }"))
    assert [axis.name for axis in program.loop_axes[1][1] if axis] == ["i.outer", "k", "i.inner"]
    assert calls == [program.stages]  # once, for the program read, with both fields
    rebuilt, axes, _ = build_schedule(program.statements, program.stages, program.context)
    assert rebuilt.get_map().is_equal(program.schedule.get_map()) and axes == program.loop_axes
    assert program.replace(params=program.params) == program
    assert len(calls) == 1  # built once: replace and == read the built fields

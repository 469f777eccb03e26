"""A split recorded as order-equivalent (domain.schedule.SplitOrder, issue 32's hang_m2):
the dataflow analysis orders by the whole loop, and must find exactly the dependences
and value sources that the split schedule itself gives."""

import dataclasses

import polyopt as po
from polyopt.deps.dataflow import compute_dependences
from polyopt.deps.equivalence import value_sources

N, T = po.var("N"), po.var("T")


@po.kernel
def sweep(A: po.f64[N, N]):
    for t in range(T):
        for i in range(1, N):
            for j in range(1, N - 1):
                A[i, j] = 0.5 * A[i - 1, j] + 0.25 * A[j, i]
            for j in range(1, N):
                A[j, i] = A[i, j - 1] * 0.5


def _unrecorded(program):
    """The same program with no split recorded: ordered by its own schedule rows."""
    stages = tuple(dataclasses.replace(st, axes=tuple(dataclasses.replace(a, order=None)
                                                      for a in st.axes))
                   for st in program.stages)
    return program.with_stages(stages)


def _relations(deps):
    return {(d.kind, d.source, d.sink, d.array): d.relation for d in deps}


def _assert_same_dataflow(program):
    plain = _unrecorded(program)
    assert all(plain.order_rows()[k] is plain.schedule_rows()[k] for k in plain.schedule_rows())
    got, expected = _relations(compute_dependences(program)), _relations(compute_dependences(plain))
    assert got.keys() == expected.keys()
    for key, relation in expected.items():
        assert got[key].is_equal(relation), key
    assert value_sources(program).is_equal(value_sources(plain))


def _collapsed(program) -> set:
    rows, order = program.schedule_rows(), program.order_rows()
    return {name for name in rows if order[name] is not rows[name]}


def test_nparts_split_orders_by_the_whole_loop_with_the_same_dataflow():
    s = po.create_schedule(sweep)
    s["S0"].split("t", nparts=3)
    program = s.program
    assert _collapsed(program) == {"S0", "S1"}  # both stages share the split time loop
    assert str(program.order_rows()["S0"]).count("floor") == 0
    _assert_same_dataflow(program)


def test_stage_computed_between_the_split_loops_keeps_them():
    s = po.create_schedule(sweep)
    s["S0"].split("t", nparts=2)
    s.cache_write(s["S1"], "global", check=False)
    program = s.program
    assert _collapsed(program)  # the copies share the split: recorded for them too
    _assert_same_dataflow(program)
    s["A_global_out"].compute_at(s["S1"], "t.outer", check=False)
    program = s.program  # a stage between t.outer and t.inner: no longer the same order
    assert not _collapsed(program) & {"A_global_out", "S0", "S1"}
    _assert_same_dataflow(program)


def test_split_inside_a_reduction_init_keeps_the_loops():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    B = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="B")
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], nparts=2)
    program = s.program  # the init runs in the split loops too: it ties with the update
    assert _collapsed(program) == set()
    _assert_same_dataflow(program)

"""po.check on adversarial schedules (refused before isl sees them, or read in linear
time) and one verdict for one schedule, whichever entry point is asked."""

import islpy as isl
import pytest

import polyopt as po


def _matmul():
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A = po.placeholder((M, K), name="A")
    B = po.placeholder((K, N), name="B")
    k = po.reduce_axis((0, K), name="k")
    return po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")


def _pieces(count, expression="k"):
    return ("{ C_init[i, j] -> [i, j, 0, 0]; " + "; ".join(
        f"C_update[i, j, k] -> [i, j, 1, {expression.format(t=t)}] : k = {t}"
        for t in range(count)))


def test_deeply_nested_parentheses_are_refused_before_isl_parses_them():
    s = po.create_schedule(_matmul())
    deep = "(" * 300_000 + "k" + ")" * 300_000
    with pytest.raises(po.ScheduleFormatError, match="nests brackets 300002 deep"):
        po.check(s, schedule="{ C_init[i, j] -> [i, j, 0, 0]; C_update[i, j, k] -> "
                             f"[i, j, 1, {deep}] }}")
    shallow = "(" * 50 + "k" + ")" * 50  # redundant but harmless: read as usual
    assert po.check(s, schedule="{ C_init[i, j] -> [i, j, 0, 0]; C_update[i, j, k] -> "
                                f"[i, j, 1, {shallow}] }}").legal


def test_huge_numbers_are_refused_and_maps_of_other_contexts_are_read():
    s = po.create_schedule(_matmul())
    with pytest.raises(po.ScheduleFormatError, match="a number of 4400 digits"):
        po.check(s, schedule="{ C_init[i, j] -> [i, j, 0, 0]; C_update[i, j, k] -> "
                             f"[i, j, 1, {'7' * 4400} * k] }}")
    with pytest.raises(po.ScheduleFormatError, match="unreadable JSON"):
        po.check(s, schedule='{"statements": [], "x": ' + "9" * 50_000 + "}")
    other = isl.UnionMap("{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k] }",
                         isl.Context())
    report = po.check(s, schedule=other)
    assert report.legal and [loop.kind for loop in report.loops_of("C_update")] == \
        ["parallel", "parallel", "static", "sequential"]


def test_many_pieces_are_read_in_one_pass_and_merged():
    s = po.create_schedule(_matmul())
    missing = _pieces(3000) + " }"  # k >= 3000 has no time
    with pytest.raises(po.ScheduleFormatError, match=r"gives no time to C_update\[i=0, j=0, "
                                                     r"k=3000\]"):
        po.check(s, schedule=missing)
    assert po.check(s, schedule=_pieces(3000) + "; C_update[i, j, k] -> [i, j, 1, k] : "
                                                 "k >= 3000 }").legal


def test_pieces_that_do_not_merge_are_refused_with_the_bound():
    s = po.create_schedule(_matmul())
    text = _pieces(300, "{t} * k + k") + "; C_update[i, j, k] -> [i, j, 1, k] : k >= 300 }"
    with pytest.raises(po.ScheduleFormatError, match="statement C_update a map of 301 pieces that do not merge "
                                                     "into 256 or fewer"):
        po.check(s, schedule=text)


def test_reversed_sum_gets_one_verdict_from_every_entry_point():
    C = _matmul()
    s = po.create_schedule(C)
    s[C].reverse(C.op.reduce_axis[0])  # accepted: a sum may be reassociated
    assert s.is_legal() and po.check(s).legal
    strict = po.create_schedule(C, strict_fp=True)
    with pytest.raises(po.IllegalScheduleError):
        strict[C].reverse(C.op.reduce_axis[0])
    strict[C].reverse(C.op.reduce_axis[0], check=False)
    report = po.check(strict)
    assert strict.is_legal() is False and report.legal is False
    assert {v.dependence.kind for v in report.violations} == {"flow", "anti", "output"}
    assert po.check(s, strict_fp=True).legal is False
    with pytest.raises(po.InvalidArgumentError, match="strict_fp"):
        po.check(s, strict_fp="yes")

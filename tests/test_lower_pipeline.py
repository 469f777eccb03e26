"""Lowering is one list of named passes (``polyopt.lower.PIPELINE``) that a target extends
(``Target.passes``); ``POLYOPT_PRINT_PASSES=1`` prints the function after each of them."""

import dataclasses
import re

import numpy as np
import pytest

import polyopt as po
from polyopt.ast.nodes import Block, If, Run
from polyopt.ast.pipeline import Pass, Pipeline
from polyopt.lower import PIPELINE, pipeline_of
from polyopt.target import base
from polyopt.target.llvm.target import LLVMTarget


def _doubling(n=6, m=4):
    A = po.placeholder((n, m), name="A")
    B = po.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    s = po.create_schedule(B)
    s[B].parallel(B.op.axis[0])
    s[B].unroll(B.op.axis[1])
    return s, A, B


def _printed_passes(text: str) -> list[tuple[str, float]]:
    return [(name, float(ms)) for name, ms in re.findall(r"// after (\S+) \(([\d.]+) ms\)", text)]


def test_print_passes_prints_every_pass_of_the_target_with_its_time(monkeypatch, capsys):
    monkeypatch.setenv("POLYOPT_PRINT_PASSES", "1")
    s, A, B = _doubling()
    f = po.build(s, [A, B], target="llvm")
    err = capsys.readouterr().err
    printed = _printed_passes(err)
    expected = LLVMTarget().passes(PIPELINE).names
    assert [name for name, _ in printed] == list(expected)
    assert expected[-9:] == ("outline_parallel", "transposed_copies", "unroll",
                             "widen_partial_tiles", "parallel_accesses", "row_streams",
                             "reassociate", "vector_math", "choose_optimization")
    assert all(ms >= 0 for _, ms in printed)
    # each printout is the function after that pass: the target's decisions show up
    after = dict(zip(expected, err.split("// after ")[1:]))
    assert "#pragma parallel\n" in after["separate_full_tiles"]
    assert "#pragma parallel: outlined to a thread team" in after["outline_parallel"]
    assert "#pragma unrolled: 4 copies" in after["unroll"]
    assert "unrolled: 4 copies" not in after["transposed_copies"]  # unroll comes after
    # the optimization level is a decision printed with the function, from its AST
    assert "// optimization: O3 (0 register-tiled nests < 3), LLVM's own unrolling" in \
        after["choose_optimization"]
    assert "// optimization:" not in after["vector_math"]
    b = np.zeros((6, 4), "float32")
    a = np.arange(24, dtype="float32").reshape(6, 4)
    f(a, b)
    np.testing.assert_array_equal(b, 2 * a)


@pytest.mark.parametrize("value", ["", "0"])
def test_print_passes_off(monkeypatch, capsys, value):
    monkeypatch.setenv("POLYOPT_PRINT_PASSES", value)
    s, A, B = _doubling()
    po.lower(s, [A, B], target="llvm")
    assert "// after" not in capsys.readouterr().err


def test_lower_without_target_runs_the_common_passes():
    s, A, B = _doubling()
    func = po.lower(s, [A, B])
    assert func.passes == PIPELINE.names
    assert "unrolled: 4 copies" not in str(func)
    assert po.lower(s, [A, B], target="llvm").passes == LLVMTarget().passes(PIPELINE).names


def test_pipeline_edits_are_values_at_named_points():
    def same(func):
        return func

    mine = PIPELINE.insert_after("contract_storage", Pass("dma", same))
    assert mine.names[mine.names.index("contract_storage") + 1] == "dma"
    assert "dma" not in PIPELINE.names  # the common pipeline is unchanged
    before = PIPELINE.insert_before("scan_schedule", Pass("early", same))
    assert before.names[before.names.index("scan_schedule") - 1] == "early"
    assert PIPELINE.without("tensorize").names == PIPELINE.names[:-1]
    assert PIPELINE.append(Pass("last", same)).names[-1] == "last"
    for edit in (lambda: PIPELINE.insert_after("storage", Pass("x", same)),
                 lambda: PIPELINE.insert_before("nope", Pass("x", same)),
                 lambda: PIPELINE.without("unroll")):
        with pytest.raises(po.InvalidArgumentError, match="no lowering pass named .*the passes are: "
                                                          "check_arguments"):
            edit()


def _skip_first_rows(func):
    """A target pass: every instance of the function's statements runs only where
    ``i >= 2`` (a visible change in results, to show the pass ran)."""
    from polyopt.ast.nodes import Int, Name, Op

    def guard(node):
        if isinstance(node, Run):
            return If(Op("ge", (Name("i"), Int(2))), node)
        if isinstance(node, Block):
            return Block(tuple(guard(n) for n in node.items))
        if isinstance(node, If):
            return If(node.cond, guard(node.then),
                      None if node.otherwise is None else guard(node.otherwise))
        return dataclasses.replace(node, body=guard(node.body))

    return dataclasses.replace(func, body=guard(func.body))


class _GuardingTarget(LLVMTarget):
    name = "llvm_guarding"

    def passes(self, pipeline):
        return super().passes(pipeline).insert_after(
            "separate_full_tiles", Pass("guard_rows", _skip_first_rows))


def test_a_target_inserts_its_own_pass_and_it_is_printed(monkeypatch, capsys):
    monkeypatch.setitem(base._REGISTRY, "llvm_guarding", _GuardingTarget)  # undone after
    base.register_target("llvm_guarding", _GuardingTarget)
    monkeypatch.setenv("POLYOPT_PRINT_PASSES", "1")
    A = po.placeholder((5, 3), name="A")
    B = po.compute((5, 3), lambda i, j: A[i, j] + 1.0, name="B")
    s = po.create_schedule(B)
    f = po.build(s, [A, B], target="llvm_guarding")
    names = [name for name, _ in _printed_passes(capsys.readouterr().err)]
    assert names.index("guard_rows") == names.index("separate_full_tiles") + 1
    assert names[-1] == "choose_optimization"
    a = np.arange(15, dtype="float32").reshape(5, 3)
    b = np.zeros((5, 3), "float32")
    f(a, b)
    expected = a + 1
    expected[:2] = 0  # the inserted pass made rows 0 and 1 skip the statement
    np.testing.assert_array_equal(b, expected)


def test_lower_rejects_a_target_without_passes():
    s, A, B = _doubling()
    with pytest.raises(po.InvalidArgumentError, match="target name such as 'llvm'"):
        po.lower(s, [A, B], target=object())
    with pytest.raises(po.InvalidArgumentError, match="unknown target"):
        po.lower(s, [A, B], target="nope")


def test_pipeline_holds_passes():
    assert isinstance(PIPELINE, Pipeline)
    assert PIPELINE.names == ("check_arguments", "plan_buffers", "contract_storage",
                              "flatten_accesses", "scan_schedule", "separate_full_tiles",
                              "tensorize")


def test_a_user_inserts_a_pass_through_build_and_it_runs_and_is_printed(monkeypatch, capsys):
    """``po.build(..., passes=edit)``: the pass runs where inserted (its effect shows in
    the results), is printed with the others, and the kernel is cached apart from the
    one built without it."""
    monkeypatch.setenv("POLYOPT_PRINT_PASSES", "1")
    A = po.placeholder((5, 3), name="A")
    B = po.compute((5, 3), lambda i, j: A[i, j] + 1.0, name="B")
    s = po.create_schedule(B)
    seen = []

    def guard_rows(func):
        seen.append(func.passes[-1])
        return _skip_first_rows(func)

    f = po.build(s, [A, B], passes=lambda p: p.insert(Pass("guard_rows", guard_rows),
                                                      after="unroll"))
    assert seen == ["unroll"]
    names = [name for name, _ in _printed_passes(capsys.readouterr().err)]
    assert names.index("guard_rows") == names.index("unroll") + 1
    assert f.func.passes == tuple(names)
    a = np.arange(15, dtype="float32").reshape(5, 3)
    b = np.zeros((5, 3), "float32")
    f(a, b)
    expected = a + 1
    expected[:2] = 0
    np.testing.assert_array_equal(b, expected)
    plain = po.build(s, [A, B])
    assert plain is not f and "guard_rows" not in plain.func.passes
    b = np.zeros((5, 3), "float32")
    plain(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_lower_takes_the_users_pipeline_edit():
    s, A, B = _doubling()
    mine = Pass("noop", lambda func: func)
    func = po.lower(s, [A, B], passes=lambda p: p.insert(mine, before="scan_schedule"))
    assert func.passes[func.passes.index("scan_schedule") - 1] == "noop"
    assert str(pipeline_of("llvm", lambda p: p.without("row_streams"))).endswith(
        "parallel_accesses -> reassociate -> vector_math -> choose_optimization")


@pytest.mark.parametrize("edit, message", [
    (lambda p: p.insert(Pass("unroll", lambda f: f), after="scan_schedule"),
     "already has a pass named 'unroll'"),
    (lambda p: p.insert(Pass("x", lambda f: f)), "exactly one of after= or before="),
    (lambda p: p.insert(Pass("x", lambda f: f), after="scan", before="unroll"),
     "exactly one of"),
    (lambda p: p.insert(lambda f: f, after="unroll"), "takes a Pass"),
    (lambda p: None, "passes must be a Pipeline or a function"),
    ("unroll", "passes must be a Pipeline or a function"),
])
def test_bad_pipeline_edits_are_refused(edit, message):
    s, A, B = _doubling()
    with pytest.raises(po.InvalidArgumentError, match=message):
        po.lower(s, [A, B], target="llvm", passes=edit)


def test_a_failing_or_wrong_user_pass_is_reported_by_name():
    s, A, B = _doubling()

    def broken(func):
        raise KeyError("oops")

    with pytest.raises(po.InvalidArgumentError, match="inserted pass 'broken' failed: KeyError"):
        po.lower(s, [A, B], passes=lambda p: p.append(Pass("broken", broken)))
    with pytest.raises(po.InvalidArgumentError, match="inserted pass 'wrong' returned NoneType"):
        po.lower(s, [A, B], passes=lambda p: p.append(Pass("wrong", lambda f: None)))
    with pytest.raises(po.InvalidArgumentError, match="a Pass is a name"):
        Pass("", lambda f: f)

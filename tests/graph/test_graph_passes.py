"""The graph passes before fusion are a named pipeline (``graph_passes``) like lowering's:
printed with ``POLYOPT_PRINT_PASSES=1``, and a user inserts a pass of their own through
``po.graph.compile(g, passes=edit)``; the model still computes what NumPy does."""

import numpy as np
import pytest

import polyopt as po
from polyopt.ast.pipeline import Pass
from polyopt.graph.ir import OpNode
from polyopt.graph.passes import graph_passes, optimize

RNG = np.random.default_rng(3)


def _gemm_identity_relu():
    """relu(identity(x @ W.T + b)), W a constant read transposed (transB=1)."""
    w = RNG.standard_normal((16, 8)).astype("float32")
    bias = RNG.standard_normal(16).astype("float32")
    b = po.graph.GraphBuilder()
    x = b.input("x", (4, 8))
    y = b.op("Gemm", [x, b.constant("W", w), b.constant("b", bias)], transB=1)
    z = b.op("Relu", [b.op("Identity", [y])])
    return b.build([z]), w, bias


def _drop_identities(seen):
    def drop_identities(g):
        seen.append([(n.op_type, dict(n.attrs)) for n in g.nodes])
        renamed = {n.outputs[0]: n.inputs[0] for n in g.nodes if n.op_type == "Identity"}
        nodes = [OpNode(n.name, n.op_type, tuple(renamed.get(i, i) for i in n.inputs),
                        n.outputs, dict(n.attrs))
                 for n in g.nodes if n.op_type != "Identity"]
        return g.replace(nodes=nodes)
    return drop_identities


def test_a_users_graph_pass_runs_where_inserted_is_printed_and_keeps_results(
        monkeypatch, capsys):
    g, w, bias = _gemm_identity_relu()
    seen = []
    edit = lambda p: p.insert(Pass("drop_identities", _drop_identities(seen)),  # noqa: E731
                              after="transpose_constant_weights")
    monkeypatch.setenv("POLYOPT_PRINT_PASSES", "1")
    model = po.graph.compile(g, num_threads=1, cache=False, passes=edit)
    err = capsys.readouterr().err
    # it ran once, after the constant weight was transposed (transB is 0 by then)
    (nodes,) = seen
    assert [op for op, _ in nodes] == ["Gemm", "Identity", "Relu"]
    assert nodes[0][1]["transB"] == 0
    printed = [line.split(" (")[0] for line in err.splitlines()
               if line.startswith("// after graph pass ")]
    names = [line.removeprefix("// after graph pass ") for line in printed]
    assert names[names.index("transpose_constant_weights") + 1] == "drop_identities"
    assert "Identity" not in err.split("// after graph pass drop_identities")[1].split(
        "// after")[0]
    assert "Identity" not in [n.op_type for n in model.graph.nodes]
    x = RNG.standard_normal((4, 8)).astype("float32")
    (out,) = model.run({"x": x}).values()
    np.testing.assert_allclose(out, np.maximum(x @ w.T + bias, 0), rtol=1e-5, atol=1e-5)


def test_graph_passes_are_named_and_follow_the_options():
    info = po.TargetInfo.for_cpu("znver3")
    names = graph_passes(target_info=info).names
    assert names[:4] == ("fold_constants", "fold_batch_norm", "transpose_constant_weights",
                         "fold_constants_again")
    assert "pack_conv_weights" in names and "vnni_rewrite" not in names  # Zen 3: no VNNI
    assert "vnni_rewrite" in graph_passes(target_info=info, vnni=True).names
    assert graph_passes(target_info=info, layouts=False).names == names[:4]


def test_optimize_without_an_edit_is_the_pipeline_and_bad_edits_are_refused():
    g, w, bias = _gemm_identity_relu()
    before = str(optimize(g))
    assert str(optimize(g, passes=lambda p: p)) == before
    with pytest.raises(po.InvalidArgumentError, match="no graph pass named 'fusion'"):
        optimize(g, passes=lambda p: p.insert(Pass("x", lambda h: h), after="fusion"))
    with pytest.raises(po.InvalidArgumentError, match="inserted pass 'bad' returned int"):
        optimize(g, passes=lambda p: p.append(Pass("bad", lambda h: 1)))
    with pytest.raises(po.InvalidArgumentError, match="passes must be a Pipeline"):
        optimize(g, passes="fold_constants")

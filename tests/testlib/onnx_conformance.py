"""onnx's conformance runner (``onnx.backend.test.BackendTest``) against polyopt.graph:
which shipped tests run, and, for those that cannot, why (the exclude patterns).

``backend_test(kinds)`` is a BackendTest limited to the categories ``kinds`` ("simple",
"pytorch-operator", "pytorch-converted", "real", "node") with the tests polyopt cannot run
excluded; the test modules ``test_onnx_backend*.py`` put its test cases in their globals.

Measured (onnx 1.23, this branch): shipped model tests 124 of 140 run and pass (simple
7/23, pytorch-operator 35/35, pytorch-converted 82/82), the 16 others (sequences,
strings, training) excluded in NOT_POLYOPT; node tests of the supported operators 767 of
1,008 pass, the rest excluded with the refusal's reason in ``onnx_node_exclusions``.
"""

from __future__ import annotations

import re

# Why a shipped test cannot run, per test-name pattern: an operator polyopt.graph does
# not support yet (issue 33), or a graph outside what polyopt.graph is (sequences,
# strings, training, symbolic shapes).
NOT_POLYOPT = {
    r"test_sequence_model\d": "sequence operators (SequenceConstruct, SplitToSequence ...): "
                              "polyopt.graph computes tensors only",
    r"test_strnorm_model_": "StringNormalizer of string tensors: polyopt.graph computes "
                            "numbers only",
    r"test_gradient_of_add": "the training domain's Gradient operator",
}
MISSING_OPERATOR: dict[str, str] = {  # operators (or forms of them) to add: issue 33, item 2
    # every shipped model test of the simple, pytorch-operator and pytorch-converted
    # categories outside NOT_POLYOPT runs (none is missing an operator)
}


CATEGORIES = {"simple": "OnnxBackendSimpleModelTest",
              "pytorch-operator": "OnnxBackendPyTorchOperatorModelTest",
              "pytorch-converted": "OnnxBackendPyTorchConvertedModelTest",
              "real": "OnnxBackendRealModelTest", "node": "OnnxBackendNodeModelTest"}


def backend_test_cases(kinds, module_name: str, *, include=None, excluded=None) -> dict:
    """onnx's BackendTest of polyopt's backend: its test classes of the categories
    ``kinds``, with the tests polyopt cannot run excluded (``excluded``: more
    {pattern: reason}); ``include``: only the tests matching these patterns."""
    import onnx.backend.test

    from polyopt.graph.backend import PolyoptBackend

    test = onnx.backend.test.BackendTest(PolyoptBackend, module_name)
    for pattern in {**NOT_POLYOPT, **MISSING_OPERATOR, **(excluded or {})}:
        test.exclude(pattern)
    if "node" in kinds:
        from testlib.onnx_node_exclusions import NODE_EXCLUDED

        for names in NODE_EXCLUDED.values():
            test.exclude("^(?:" + "|".join(names) + ")$")
    cases = {CATEGORIES[kind]: test.test_cases[CATEGORIES[kind]] for kind in kinds}
    for case in cases.values():  # only the included tests are collected (not skipped)
        for name in [n for n in vars(case) if n.startswith("test_")]:
            if include is not None and not any(re.search(p, name) for p in include):
                delattr(case, name)
    return cases


def node_test_pattern() -> str:
    """The node tests (on the CPU) of the ONNX operators polyopt.graph supports:
    ``test_<op>_..._cpu`` (onnx names them by the operator in lower case)."""
    from polyopt.graph.registry import onnx_operators

    special = {"BatchNormalization": "batchnorm", "LayerNormalization": "layer_normalization",
               "Pad": "(?:constant|edge|reflect|wrap)_pad",
               "InstanceNormalization": "instancenorm",
               "RNN": "(?:simple_)?rnn",
               **{op: op.lower() + "(?:[2-4]d)?" for op in ("And", "Or", "Xor")}}

    def test_name(op: str) -> str:  # ReduceLogSumExp: reduce_log_sum_exp
        if op.startswith("Reduce"):
            return "reduce" + re.sub(r"([A-Z])", r"_\1", op[len("Reduce"):]).lower()
        return special.get(op, op.lower())
    names = sorted((test_name(op) for op in onnx_operators()), key=len, reverse=True)
    return r"^test_(?:" + "|".join(names) + r")_(?:.*_)?cpu$"


def reasons_text() -> str:
    """The exclusions as a table: pattern, reason."""
    rows = [f"{pattern}: {reason}" for pattern, reason in {**NOT_POLYOPT,
                                                            **MISSING_OPERATOR}.items()]
    return "\n".join(rows)


assert all(re.compile(p) for p in {**NOT_POLYOPT, **MISSING_OPERATOR})

"""onnx's conformance runner (``onnx.backend.test.BackendTest``) against polyopt.graph:
which shipped tests run, and, for those that cannot, why (the exclude patterns).

``backend_test(kinds)`` is a BackendTest limited to the categories ``kinds`` ("simple",
"pytorch-operator", "pytorch-converted", "real", "node") with the tests polyopt cannot run
excluded; the test modules ``test_onnx_backend*.py`` put its test cases in their globals.
"""

from __future__ import annotations

import re

# Why a shipped test cannot run, per test-name pattern: an operator polyopt.graph does
# not support yet (issue 33), or a graph outside what polyopt.graph is (sequences,
# strings, training, symbolic shapes).
NOT_POLYOPT = {
    r"test_sequence_model\d": "sequence operators (SequenceConstruct, SplitToSequence ...): "
                              "polyopt.graph computes tensors only",
    r"test_strnorm_model_": "string tensors: polyopt.graph computes numbers only",
    r"test_gradient_of_add": "the training domain's Gradient operator",
}
MISSING_OPERATOR = {  # operators to add (issue 33, item 2)
    r"test_expand_shape_model\d": "Expand",
    r"test_shrink": "Shrink",
    r"test_sign_model": "Sign",
    r"test_operator_pad|test_ReflectionPad2d|test_ReplicationPad2d|test_ZeroPad2d|"
    r"test_ConstantPad2d": "Pad",
    r"test_PReLU": "PRelu",
    r"test_operator_repeat": "Tile",
    r"test_operator_chunk|test_operator_index": "Split / Gather",
    r"test_operator_max_|test_operator_min_|test_operator_max$|test_operator_min$": "Max / Min",
    r"test_operator_pow": "Pow",
    r"test_operator_selu|test_SELU": "Selu",
    r"test_operator_reduced_": "ReduceMean / ReduceSum",
    r"test_operator_convtranspose|test_ConvTranspose2d": "ConvTranspose",
    r"test_LeakyReLU": "LeakyRelu",
    r"test_ELU": "Elu",
    r"test_Softplus": "Softplus",
    r"test_LogSoftmax|test_log_softmax": "LogSoftmax",
    r"test_Softmin": "Softmin's Neg+Softmax runs; Softmin itself",
    r"test_Conv1d|test_Conv3d|test_MaxPool1d|test_MaxPool3d|test_AvgPool1d|test_AvgPool3d|"
    r"test_BatchNorm1d|test_BatchNorm3d": "1-D and 3-D convolution and pooling",
    r"test_AvgPool2d": "AveragePool with count_include_pad / ceil_mode",
    r"test_PixelShuffle": "Reshape/Transpose of rank 6",
    r"test_Embedding": "Gather",
    r"test_GLU": "Split",
    r"test_operator_symbolic_override": "InstanceNormalization",
    r"test_operator_non_float_params": "Abs",
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
    for pattern in include or ():
        test.include(pattern)
    for pattern in {**NOT_POLYOPT, **MISSING_OPERATOR, **(excluded or {})}:
        test.exclude(pattern)
    cases = test.test_cases
    return {CATEGORIES[kind]: cases[CATEGORIES[kind]] for kind in kinds}


def reasons_text() -> str:
    """The exclusions as a table: pattern, reason."""
    rows = [f"{pattern}: {reason}" for pattern, reason in {**NOT_POLYOPT,
                                                            **MISSING_OPERATOR}.items()]
    return "\n".join(rows)


assert all(re.compile(p) for p in {**NOT_POLYOPT, **MISSING_OPERATOR})

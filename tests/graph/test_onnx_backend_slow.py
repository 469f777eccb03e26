"""onnx's own conformance runner against polyopt.graph, the slow part: the shipped
PyTorch-exported operator and layer tests (each compiles a model)."""

import pytest

pytest.importorskip("onnx")

from testlib.onnx_conformance import backend_test_cases  # noqa: E402

pytestmark = pytest.mark.slow

globals().update(backend_test_cases(["pytorch-operator", "pytorch-converted"], __name__))

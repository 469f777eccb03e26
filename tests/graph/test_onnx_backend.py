"""onnx's own conformance runner against polyopt.graph, the fast part: the shipped
``simple`` model tests (the PyTorch-exported and node tests: test_onnx_backend_slow.py).
A test polyopt cannot run is skipped by an exclude pattern whose reason
``testlib.onnx_conformance`` gives."""

import pytest

pytest.importorskip("onnx")

from testlib.onnx_conformance import backend_test_cases  # noqa: E402

globals().update(backend_test_cases(["simple"], __name__))

"""The LSTM's input projection reads ``W^T`` packed at compile time in the matmul
template's panels (no copy per call) and computes what onnxruntime computes."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph.lstm import panel_width  # noqa: E402
from testlib.onnx_models import lstm, ort_run, random_inputs  # noqa: E402


# 4 x 16 gates: a multiple of the panel (16 or 64 columns); 4 x 42: of neither
@pytest.mark.parametrize("hidden, packed", [(16, True), (42, None)])
def test_lstm_with_packed_projection_equals_onnxruntime(hidden, packed):
    model = lstm(layers=2, seq=6, width=20, hidden=hidden)
    feeds = random_inputs(model)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=2, cache=False)
    runners = [s.kernel for s in compiled.steps if s.template == "lstm"]
    panel = panel_width(4 * hidden)
    assert (panel is not None) == bool(packed)
    for runner, width in zip(runners, (20, hidden)):  # [4 hidden / panel, width, panel]
        assert runner.w_t.shape == ((4 * hidden // panel, width, panel) if panel else
                                    (width, 4 * hidden))
    got, expected = compiled.run(feeds), ort_run(model, feeds)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-5)

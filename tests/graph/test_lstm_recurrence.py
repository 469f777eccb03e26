"""The LSTM recurrence kernel reads R^T packed in panels (``pack_recurrent``): the same
numbers as the unpacked layout, bit for bit, and as NumPy's LSTM step; so does the
recurrence in pairs of steps (``recurrence_in_pairs``), which reads the panels in a
zigzag."""

import numpy as np
import pytest

import polyopt as po
from polyopt.graph.lstm import pack_recurrent, pairs_apply, recurrence, recurrence_in_pairs
from polyopt.graph import UnsupportedCombinationError
from testlib.errors import refused
from polyopt.target.args import data_pointer


def _run(seq, batch, hidden, block, packed, p, r_t, h0, c0):
    s, args = recurrence(seq, batch, hidden, block=block, packed=packed)
    f = po.build(s, args, target="llvm", num_threads=1)
    weights = pack_recurrent(r_t, min(block, 4 * hidden)) if packed else r_t
    assert weights.shape == tuple(d.value for d in args[1].shape)
    H = np.full((seq + 1, batch, hidden), np.nan, np.float32)
    C = np.full_like(H, np.nan)
    f(p, weights, h0, c0, H, C)
    return H, C


def _numpy(p, r_t, h0, c0):
    def sigmoid(x):
        return 1 / (1 + np.exp(-x))
    h, c, hs = h0.astype(np.float64), c0.astype(np.float64), [h0]
    hidden = h0.shape[1]
    for t in range(p.shape[0]):
        g = h @ r_t + p[t]
        i, o, f, z = (g[:, q * hidden:(q + 1) * hidden] for q in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(z)
        h = sigmoid(o) * np.tanh(c)
        hs.append(h)
    return np.stack(hs)


@pytest.mark.parametrize("batch", [1, 2])
def test_packed_and_unpacked_recurrences_agree_bit_for_bit(batch):
    seq, hidden = 5, 24
    rng = np.random.default_rng(batch)
    p = rng.standard_normal((seq, batch, 4 * hidden)).astype(np.float32)
    r_t = (rng.standard_normal((hidden, 4 * hidden)) / 4).astype(np.float32)
    h0 = rng.standard_normal((batch, hidden)).astype(np.float32)
    c0 = rng.standard_normal((batch, hidden)).astype(np.float32)
    packed = _run(seq, batch, hidden, 32, True, p, r_t, h0, c0)  # 96 gate columns: 3 panels
    unpacked = _run(seq, batch, hidden, 32, False, p, r_t, h0, c0)
    for a, b in zip(packed, unpacked):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(packed[0], _numpy(p, r_t, h0, c0), rtol=1e-4, atol=1e-5)


def test_a_block_that_does_not_divide_the_gates_reads_them_unpacked():
    seq, batch, hidden = 4, 1, 24
    rng = np.random.default_rng(7)
    p = rng.standard_normal((seq, batch, 4 * hidden)).astype(np.float32)
    r_t = (rng.standard_normal((hidden, 4 * hidden)) / 4).astype(np.float32)
    h0 = np.zeros((batch, hidden), np.float32)
    assert pack_recurrent(r_t, 40) is r_t  # 40 does not divide 96
    H, _ = _run(seq, batch, hidden, 40, True, p, r_t, h0, h0)
    np.testing.assert_allclose(H, _numpy(p, r_t, h0, h0), rtol=1e-4, atol=1e-5)


def _run_in_pairs(seq, batch, hidden, block, p, r_t, h0, c0):
    s, args = recurrence_in_pairs(seq, batch, hidden, block=block)
    f = po.build(s, args, target="llvm", num_threads=1)
    states = [np.full((seq // 2 + 1, batch, hidden), np.nan, np.float32) for _ in range(4)]
    f(p, pack_recurrent(r_t, block), h0, c0, *states)
    H, C = (np.empty((seq + 1, batch, hidden), np.float32) for _ in range(2))
    H[0], C[0] = h0, c0
    H[1::2], C[1::2], H[2::2], C[2::2] = (s[1:] for s in states)
    return H, C


@pytest.mark.parametrize("batch, hidden, block", [(1, 24, 32), (2, 24, 96), (3, 8, 16)])
def test_the_recurrence_in_pairs_computes_the_same_bits(batch, hidden, block):
    """Two steps per iteration, the second reading the panels backwards (3 panels, 1, 2):
    the same numbers as one step per iteration, bit for bit."""
    seq = 6
    rng = np.random.default_rng(hidden + batch)
    p = rng.standard_normal((seq, batch, 4 * hidden)).astype(np.float32)
    r_t = (rng.standard_normal((hidden, 4 * hidden)) / 4).astype(np.float32)
    h0 = rng.standard_normal((batch, hidden)).astype(np.float32)
    c0 = rng.standard_normal((batch, hidden)).astype(np.float32)
    paired = _run_in_pairs(seq, batch, hidden, block, p, r_t, h0, c0)
    single = _run(seq, batch, hidden, block, True, p, r_t, h0, c0)
    for a, b in zip(paired, single):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(paired[0], _numpy(p, r_t, h0, c0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seq, block", [(5, 32), (4, 40), (0, 32)])
def test_the_recurrence_in_pairs_refuses_what_it_cannot_run(seq, block):
    assert not pairs_apply(seq, 24, block)
    err = refused(UnsupportedCombinationError,
                  lambda: recurrence_in_pairs(seq, 1, 24, block=block))
    assert (err.problem, err.attributes) == ("paired_recurrence",
                                             {"seq": seq, "block": block, "gates": 96})


def test_the_runner_streams_aligned_arrays_and_runs_in_pairs_on_even_sequences():
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from testlib.onnx_models import lstm, ort_run, random_inputs
    for seq in (4, 3):
        model = lstm(layers=2, seq=seq, width=12, hidden=16)
        compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
        runners = [s.kernel for s in compiled.steps if s.template == "lstm"]
        for runner in runners:
            assert runner.in_pairs == (seq % 2 == 0)
            for array in (runner.r_t, runner.w_t, runner.bias, runner.projected,
                          *runner.states):
                assert data_pointer(array) % 64 == 0
        feeds = random_inputs(model)
        got, expected = compiled.run(feeds), ort_run(model, feeds)
        for name in expected:
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-5)


def test_the_runner_refuses_arrays_of_other_shapes():
    pytest.importorskip("onnx")
    from testlib.onnx_models import lstm
    compiled = po.graph.compile(po.graph.from_onnx(lstm(layers=1, seq=4, width=5, hidden=16)),
                                num_threads=1, cache=False)
    (runner,) = [s.kernel for s in compiled.steps if s.template == "lstm"]
    arrays = [np.zeros(shape, np.float32) for shape in runner.kernel_shapes]
    runner(*arrays)  # the right shapes run
    assert np.isfinite(arrays[-1]).all()
    for position, bad in ((-1, (1, 1, 1, 16)), (0, (1, 1, 5))):
        wrong = list(arrays)
        wrong[position] = np.zeros(bad, np.float32)
        with pytest.raises(po.InvalidArgumentError, match="must have shape"):
            runner(*wrong)
    with pytest.raises(po.InvalidArgumentError, match="takes"):
        runner(*arrays[:-1])

"""The LSTM recurrence kernel reads R^T packed in panels (``pack_recurrent``): the same
numbers as the unpacked layout, bit for bit, and as NumPy's LSTM step."""

import numpy as np
import pytest

import polyopt as po
from polyopt.graph.lstm import pack_recurrent, recurrence


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

"""``tvm.testing``: NumPy's assertions (on NDArrays too)."""

import numpy as np


def assert_allclose(actual, desired, rtol=1e-7, atol=1e-7):
    """``numpy.testing.assert_allclose`` with TVM's defaults."""
    np.testing.assert_allclose(np.asarray(actual), np.asarray(desired), rtol=rtol, atol=atol,
                               verbose=True)

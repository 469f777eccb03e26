"""Float-to-integer conversions saturate (NaN -> 0, beyond the range -> its nearest end)
in scalar and vectorized loops alike, without LLVM's scalarized ``.sat`` intrinsics."""

import numpy as np
import pytest

import polyopt as po

VALUES = [np.nan, np.inf, -np.inf, 1e20, -1e20, 2.5, -2.5, 255.9, 256, -129, 127.5, 3e9,
          -3e9, 2147483520, 2147483647, -2147483648, 0.4, -0.9, 9.3e18, -9.3e18]


def saturated(values, dtype):
    info = np.iinfo(dtype)
    result = []
    for value in values.astype(np.float64):
        if np.isnan(value):
            result.append(0)
        else:
            result.append(int(min(max(np.trunc(value), info.min), info.max)))
    return np.array(result, dtype)


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", ["int32", "uint8", "int8", "int64"])
def test_conversion_saturates_when_vectorized(src, dst):
    n = 48
    A = po.placeholder((n,), name="A", dtype=src)
    B = po.compute((n,), lambda i: A[i].astype(dst), name="B")
    s = po.create_schedule(B)
    s[B].vectorize(B.op.axis[0])
    f = po.build(s, [A, B])
    a = np.array((VALUES * 3)[:n], src)
    b = np.zeros(n, dst)
    f(a, b)
    np.testing.assert_array_equal(b, saturated(a, dst))
    assert ".sat." not in f.llvm_ir

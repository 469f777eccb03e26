"""What the AMX tests share (issue 31): whether Linux lets this process use the tile
state, and the quantized ``MatMulInteger`` model whose matmul the graph layer puts on AMX
tiles when it is built for a CPU with them.

>>> refusal_errno() == 0 or refusal_errno() > 0
True
"""

import numpy as np

import polyopt as po
from polyopt.target.amx_state import request_amx


def refusal_errno() -> int:
    """0 where this process may use AMX tiles, else the errno Linux refused it with."""
    try:
        request_amx()
    except po.AMXPermissionError as err:
        return err.errno
    return 0


def matmul_integer_model(m: int = 20, k: int = 128, n: int = 64, seed: int = 5):
    """``(model, output name, feeds, NumPy's result)`` of a quantized ``MatMulInteger``
    (``a``: float32 ``m x k``, quantized with scale 0.05 and zero point 7, times int8
    weights ``k x n``); K a multiple of 64 fills whole AMX tiles.  Needs onnx."""
    from testlib.onnx_models import ModelBuilder

    rng = np.random.default_rng(seed)
    b = ModelBuilder(3)
    x = b.input("a", (m, k))
    a = b.add("QuantizeLinear", [x, b.const(np.float32(0.05)), b.const(np.uint8(7))])
    # weights within +-64: onnxruntime's AVX2 kernel (vpmaddubsw) saturates pairs of
    # products at int16 beyond that, and would not be the exact reference on such hosts
    w = rng.integers(-64, 64, (k, n)).astype(np.int8)
    y = b.add("MatMulInteger", [a, b.const(w), b.const(np.uint8(7))])
    model = b.model([y], dtypes={y: "int32"})
    feeds = {"a": (rng.standard_normal((m, k)) * 3).astype(np.float32)}
    quantized = np.clip(np.round(feeds["a"] / np.float32(0.05)) + 7, 0, 255).astype(np.int64)
    return model, y, feeds, (quantized - 7) @ w.astype(np.int64)

"""``tvm.topi.testing``'s NumPy references that TVM's tests compare with.

>>> import numpy as np
>>> a = np.ones((1, 1, 3, 3), "float32"); w = np.ones((1, 1, 2, 2), "float32")
>>> conv2d_nchw_python(a, w, 1, 0)[0, 0].tolist()
[[4.0, 4.0], [4.0, 4.0]]
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, public


def _pads(padding) -> tuple[int, int, int, int]:
    if isinstance(padding, (list, tuple)):
        if len(padding) == 4:
            return tuple(int(p) for p in padding)
        if len(padding) == 2:
            return int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])
        raise InvalidArgumentError(f"padding takes 1, 2 or 4 ints, got {padding!r}")
    return (int(padding),) * 4


@public
def conv2d_nchw_python(a_np, w_np, stride, padding, groups: int = 1) -> np.ndarray:
    """TVM's reference NCHW convolution: ``a_np`` ``(N, C, H, W)``, ``w_np``
    ``(F, C // groups, KH, KW)``, zero padding (an int, ``(h, w)`` or
    ``(top, left, bottom, right)``), in the dtype of ``a_np``."""
    a_np, w_np = np.asarray(a_np), np.asarray(w_np)
    sh, sw = (stride, stride) if isinstance(stride, int) else tuple(stride)
    top, left, bottom, right = _pads(padding)
    n, c, h, w = a_np.shape
    f, cg, kh, kw = w_np.shape
    if c != cg * groups or f % groups:
        raise InvalidArgumentError(f"conv2d_nchw_python: {c} channels, filters of {cg} "
                                   f"channels in {groups} groups do not fit")
    padded = np.pad(a_np, ((0, 0), (0, 0), (top, bottom), (left, right)))
    out_h = (h + top + bottom - kh) // sh + 1
    out_w = (w + left + right - kw) // sw + 1
    out = np.zeros((n, f, out_h, out_w), dtype=np.result_type(a_np, w_np))
    per_group = f // groups
    for g in range(groups):
        data = padded[:, g * cg:(g + 1) * cg]
        for y in range(kh):
            for x in range(kw):
                window = data[:, :, y:y + sh * out_h:sh, x:x + sw * out_w:sw]
                out[:, g * per_group:(g + 1) * per_group] += np.einsum(
                    "nchw,fc->nfhw", window, w_np[g * per_group:(g + 1) * per_group, :, y, x])
    return out.astype(a_np.dtype)


@public
def softmax_python(a_np) -> np.ndarray:
    """TVM's reference softmax over the last axis."""
    a_np = np.asarray(a_np)
    e = np.exp(a_np - a_np.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(a_np.dtype)

"""Devices and arrays as TVM code spells them: ``tvm.cpu()``, ``tvm.device("opencl")``,
``tvm.nd.array(x, dev)`` and ``.numpy()``.

polyopt's compiled functions take NumPy arrays; :class:`NDArray` is a NumPy array (a
subclass) with TVM's methods, so it passes straight in and out.

>>> import numpy as np
>>> a = array(np.arange(3, dtype="float32"), cpu(0))
>>> a.numpy(), a.device
(array([0., 1., 2.], dtype=float32), cpu(0))
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, public, public_methods
from .spec import GPU_THROUGH_OPENCL

_KINDS = {"cpu": "cpu", "llvm": "cpu", "c": "cpu", "opencl": "opencl", "cl": "opencl"}
_KINDS |= {gpu: "opencl" for gpu in GPU_THROUGH_OPENCL + ("gpu",)}  # as their targets


@public_methods
class Device:
    """A device: ``tvm.cpu(0)``, ``tvm.opencl(0)``; arrays stay NumPy arrays on the host
    (an OpenCL function copies them to its device and back)."""

    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type: str, device_id: int = 0):
        kind = _KINDS.get(str(device_type).split()[0])
        if kind is None:
            raise InvalidArgumentError(
                f"unknown device {device_type!r}; use 'cpu' (llvm) or 'opencl'")
        self.device_type, self.device_id = kind, int(device_id)

    @property
    def exist(self) -> bool:
        return self.device_type in ("cpu", "opencl")

    def sync(self) -> None:
        """Nothing to wait for: polyopt's functions return when their results are in."""

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and (self.device_type, self.device_id) == (
            other.device_type, other.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"


@public
def device(dev_type, dev_id: int = 0) -> Device:
    """``tvm.device("llvm", 0)``, ``tvm.device("opencl")``."""
    return dev_type if isinstance(dev_type, Device) else Device(dev_type, dev_id)


@public
def cpu(dev_id: int = 0) -> Device:
    return Device("cpu", dev_id)


@public
def opencl(dev_id: int = 0) -> Device:
    return Device("opencl", dev_id)


@public
def cuda(dev_id: int = 0) -> Device:
    """``tvm.cuda(0)``: the OpenCL device, which runs polyopt's builds for "cuda"."""
    return Device("cuda", dev_id)


gpu = cuda


class NDArray(np.ndarray):
    """A NumPy array with TVM's ``numpy()``, ``asnumpy()``, ``copyfrom``, ``device``."""

    def __array_finalize__(self, obj) -> None:
        self._device = getattr(obj, "_device", None)

    @property
    def device(self) -> Device:
        return self._device if self._device is not None else cpu(0)

    dev = ctx = device

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the contents."""
        return np.array(self, copy=True).view(np.ndarray)

    asnumpy = numpy

    def copyfrom(self, source) -> "NDArray":
        self[...] = np.asarray(source, dtype=self.dtype).reshape(self.shape)
        return self

    def copyto(self, target):
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        return array(self, device(target))


def array(source, dev=None, dtype=None) -> NDArray:
    """``tvm.nd.array(x, dev)``: a C-contiguous copy of ``x`` as an :class:`NDArray`."""
    result = np.array(source, dtype=dtype, copy=True, order="C").view(NDArray)
    result._device = None if dev is None else device(dev)
    return result


def empty(shape, dtype="float32", dev=None) -> NDArray:
    """``tvm.nd.empty(shape, dtype, dev)`` (zero-filled, so results are deterministic)."""
    result = np.zeros(shape, dtype=dtype).view(NDArray)
    result._device = None if dev is None else device(dev)
    return result

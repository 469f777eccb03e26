"""``tvm.testing``: NumPy's assertions (on NDArrays too) and TVM's test decorators.

polyopt runs TVM's tests on the CPU (LLVM): ``device_enabled("llvm")`` is true, GPU
targets are not enabled, and tests that ``requires_gpu`` are skipped as TVM skips them on a
machine without a GPU.

>>> device_enabled("llvm -mcpu=znver3"), device_enabled("cuda")
(True, False)
>>> enabled_targets()[0][0]
'llvm'
"""

import numpy as np

_CPU_TARGETS = ("llvm", "c")


def assert_allclose(actual, desired, rtol=1e-7, atol=1e-7):
    """``numpy.testing.assert_allclose`` with TVM's defaults."""
    np.testing.assert_allclose(np.asarray(actual), np.asarray(desired), rtol=rtol, atol=atol,
                               verbose=True)


def device_enabled(target) -> bool:
    """Whether tests run on ``target`` here: the CPU targets (LLVM, C)."""
    kind = str(target).split()[0] if str(target).strip() else ""
    return kind in _CPU_TARGETS


def enabled_targets():
    """The ``(target, device)`` pairs tests run on: the CPU, through LLVM."""
    from ..target.devices import cpu
    return [("llvm", cpu(0))]


def _mark(name):
    import pytest
    return getattr(pytest.mark, name)


def uses_gpu(func):
    """Marks a test that runs on GPUs when there are some (and on the CPU here)."""
    return _mark("gpu")(func)


def _requires(what):
    def decorate(func):
        import pytest
        return pytest.mark.skip(reason=f"requires {what}: polyopt's tvm.testing runs "
                                       "TVM's tests on the CPU")(func)
    return decorate


requires_gpu = _requires("a GPU")
requires_cuda = _requires("CUDA")


def requires_llvm(func):
    """polyopt always has LLVM: the test runs."""
    return func


def skip_if_wheel_test(func):
    """polyopt is not a TVM wheel: the test runs."""
    return func


def main():
    """``if __name__ == "__main__": tvm.testing.main()``: run the calling file's tests."""
    import sys

    import pytest
    sys.exit(pytest.main([sys.argv[0]]))

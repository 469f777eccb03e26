"""Helpers of the ported TVM tutorials (tests/tvm_compat)."""

import pytest


@pytest.fixture
def opencl():
    """Skip when pyopencl or an OpenCL device is missing (scripts/test.sh installs PoCL)."""
    cl = pytest.importorskip("pyopencl")
    try:
        if not any(p.get_devices() for p in cl.get_platforms()):
            pytest.skip("no OpenCL device (apt-get install pocl-opencl-icd)")
    except cl.Error:
        pytest.skip("no OpenCL platform (apt-get install pocl-opencl-icd)")

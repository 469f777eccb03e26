"""Fixtures of the OpenCL backend tests: the PoCL device, and Oclgrind as an ICD in a
folder of its own (Debian's oclgrind ships none; see ENVIRONMENT.md)."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

OCLGRIND_ICD = pathlib.Path("/usr/lib/oclgrind/liboclgrind-rt-icd.so")
TESTS = pathlib.Path(__file__).resolve().parents[2]


def _opencl_devices() -> str | None:
    """Why OpenCL cannot run here, or None when a device is available."""
    try:
        import pyopencl
    except ImportError:
        return "pyopencl is not installed (pip install pyopencl)"
    try:
        if not any(p.get_devices() for p in pyopencl.get_platforms()):
            return "no OpenCL device (apt-get install pocl-opencl-icd)"
    except pyopencl.Error as err:
        return f"no OpenCL platform ({err}); apt-get install pocl-opencl-icd"
    return None


_MISSING = _opencl_devices()


def pytest_collection_modifyitems(items):
    if _MISSING is None:
        return
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(item.fspath).parents and "no_runtime" not in item.keywords:
            item.add_marker(pytest.mark.skip(reason=_MISSING))


@pytest.fixture(scope="session")
def oclgrind_vendors(tmp_path_factory) -> pathlib.Path:
    """A folder for OCL_ICD_VENDORS listing Oclgrind (and PoCL)."""
    if not OCLGRIND_ICD.exists():
        pytest.skip("Oclgrind is not installed (apt-get install oclgrind, as root; "
                    "scripts/test.sh does it)")
    folder = tmp_path_factory.mktemp("icd")
    (folder / "oclgrind.icd").write_text(f"{OCLGRIND_ICD}\n")
    (folder / "pocl.icd").write_text("libpocl.so.2\n")
    return folder


@pytest.fixture
def oclgrind(oclgrind_vendors, tmp_path):
    """``oclgrind(code) -> (stdout, log)``: run Python ``code`` in a subprocess whose
    OpenCL devices include Oclgrind with data-race checks on; ``log`` is what Oclgrind
    reported (empty when the kernels were clean).  The code selects the device with
    ``device="oclgrind"``."""
    def run(code: str):
        log = tmp_path / "oclgrind.log"
        env = dict(os.environ, OCL_ICD_VENDORS=str(oclgrind_vendors), OCLGRIND_DATA_RACES="1",
                   OCLGRIND_LOG=str(log), PYTHONPATH=os.pathsep.join(
                       [str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]))
        env.pop("PYOPENCL_CTX", None)
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout, log.read_text() if log.exists() else ""
    return run

"""pyopencl, imported lazily: the device, its context and queue, program builds.

The device is ``device=`` of ``po.build(..., target="opencl")``: a ``pyopencl``
``Device``, ``Context`` or ``CommandQueue``, or a string matched (case-insensitively)
against the platform's name and vendor and the device's name (``"pocl"``,
``"oclgrind"``, ``"intel"``).
Without it, ``PYOPENCL_CTX`` chooses as in pyopencl (``PYOPENCL_CTX=0``), else the
first device of the first platform.  Contexts are created once per device.

>>> describe(queue_for("pocl")).startswith("Portable Computing Language")
True
"""

from __future__ import annotations

import functools
import os

from ...errors import BackendError, InvalidArgumentError, MissingBackendError

INSTALL = ("install an OpenCL runtime: `apt-get install pocl-opencl-icd` (Debian/Ubuntu's "
           "PoCL, for the CPU; not the pocl-binary-distribution wheel) or your GPU vendor's")


def cl():
    """The ``pyopencl`` module (MissingBackendError naming what to install)."""
    try:
        import pyopencl
    except ImportError as err:
        raise MissingBackendError(
            "target 'opencl' needs the Python package 'pyopencl', which is not installed; "
            f"install it with `pip install pyopencl` (and {INSTALL})") from err
    return pyopencl


def devices() -> list:
    """Every OpenCL device of every platform."""
    pyopencl = cl()
    try:
        platforms = pyopencl.get_platforms()
    except pyopencl.Error as err:
        raise MissingBackendError(f"no OpenCL platform was found ({err}); {INSTALL}") \
            from None
    found = [d for p in platforms for d in p.get_devices()]
    if not found:
        raise MissingBackendError(f"the OpenCL platforms have no device; {INSTALL}")
    return found


def describe(queue) -> str:
    device = queue.device
    return f"{device.platform.name} {device.name}".strip()


def queue_for(device=None):
    """A command queue on the chosen device (see the module docstring)."""
    pyopencl = cl()
    if isinstance(device, pyopencl.CommandQueue):
        return device
    if isinstance(device, pyopencl.Context):
        return _queue(device)
    if isinstance(device, pyopencl.Device):
        return _queue(_context(device))
    if device is None:
        if os.environ.get("PYOPENCL_CTX"):
            try:
                return _queue(_some_context())
            except pyopencl.Error as err:
                raise MissingBackendError(
                    f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']!r} selects no usable OpenCL "
                    f"device ({err}); unset it or {INSTALL}") from None
        return _queue(_context(devices()[0]))
    if isinstance(device, str):
        choices = devices()
        for candidate in choices:
            text = " ".join((candidate.platform.name, candidate.platform.vendor,
                             candidate.name))
            if device.lower() in text.lower():
                return _queue(_context(candidate))
        names = "; ".join(f"{d.platform.name} {d.name}" for d in choices)
        raise InvalidArgumentError(f"no OpenCL device matches {device!r}; the devices are: "
                                   f"{names}")
    raise InvalidArgumentError(
        f"device must be a pyopencl Device, Context or CommandQueue, or a name, got "
        f"{device!r}")


@functools.cache
def _context(device):
    return cl().Context([device])


@functools.cache
def _some_context():
    return cl().create_some_context(interactive=False)


@functools.cache
def _queue(context):
    return cl().CommandQueue(context)


def compile_program(context, source: str):
    """Build OpenCL C ``source``; a compiler error is a BackendError with the log."""
    pyopencl = cl()
    try:
        return pyopencl.Program(context, source).build()
    except pyopencl.Error as err:
        raise BackendError(
            f"the OpenCL compiler rejected the generated kernel (a bug in polyopt, please "
            f"report it with the schedule): {err}") from None

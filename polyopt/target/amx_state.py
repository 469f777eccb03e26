"""The AMX tile state a Linux process must ask for before its first tile instruction.

Linux (5.16 and later) gives a process AMX's 8 KB of tile data only after it asks with
``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``; without it the first tile
instruction kills the process (SIGILL).  :func:`request_amx` asks once per process (the
permission then holds for every thread of it) and raises :class:`AMXPermissionError`
where the kernel refuses (a CPU without AMX, an older kernel, a sandbox forbidding the
call) or the system is not Linux on x86-64.  Kernels tensorized with AMX tiles call it
before their first run.

>>> import polyopt as po
>>> try:
...     request_amx()
... except po.AMXPermissionError as err:
...     print("refused")  # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import errno as errnos
import os
import platform
import threading

from ..errors import AMXPermissionError, public

SYS_ARCH_PRCTL = 158  # x86-64
ARCH_GET_XCOMP_PERM = 0x1022
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18

_LOCK = threading.Lock()
_GRANTED: list[bool] = []  # [True] once the kernel granted it in this process
_REFUSED: list[AMXPermissionError] = []  # the refusal, raised again on every later ask


@public
def request_amx() -> None:
    """Ask Linux, once per process, for the AMX tile state; raise
    :class:`AMXPermissionError` (the same one on every later call) where it is refused."""
    if _GRANTED:
        return
    with _LOCK:
        if _GRANTED:
            return
        if _REFUSED:
            raise _REFUSED[0]
        try:
            _ask()
        except AMXPermissionError as err:
            _REFUSED.append(err)
            raise
        _GRANTED.append(True)


def request_symbol(kernel: str) -> str:
    """The function a kernel computing on AMX tiles defines, in its exported library or
    object and in its cached object, to ask for the tile state: its presence binds the
    recorded "amx_tiles" to the machine code.  (Named like ``polyopt_signature_<kernel>``;
    an operator library's own request is ``polyopt_<library>_request_amx``, so the two
    never clash when cached objects are linked into a library.)

    >>> request_symbol("matmul")
    'polyopt_request_amx_matmul'
    """
    return f"polyopt_request_amx_{kernel}"


def request_function_ir(symbol: str) -> str:
    """LLVM IR of ``int32_t symbol(void)``: the same request, for C programs linking an
    operator library (``polyopt lib build``) whose variants use AMX tiles; it returns 0
    once granted, else the ``errno`` of the refusal (``EOPNOTSUPP`` on a CPU without AMX).

    >>> "@syscall(i64 158, i64 4131, i64 18)" in request_function_ir("polyopt_ops_request_amx")
    True
    """
    return (f"declare i64 @syscall(i64, ...)\ndeclare ptr @__errno_location()\n"
            f"define i32 @{symbol}() {{\nentry:\n"
            f"  %status = call i64 (i64, ...) @syscall(i64 {SYS_ARCH_PRCTL}, "
            f"i64 {ARCH_REQ_XCOMP_PERM}, i64 {XFEATURE_XTILEDATA})\n"
            "  %granted = icmp eq i64 %status, 0\n"
            "  br i1 %granted, label %done, label %refused\n"
            "done:\n  ret i32 0\n"
            "refused:\n  %where = call ptr @__errno_location()\n"
            "  %code = load i32, ptr %where\n  ret i32 %code\n}\n")


def _ask() -> None:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise AMXPermissionError(
            f"AMX tiles need Linux on x86-64 (arch_prctl(ARCH_REQ_XCOMP_PERM)); this is "
            f"{platform.system()} on {platform.machine()}: build without AMX "
            "(tensor_unit='avx512') for this machine")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    status = libc.syscall(ctypes.c_long(SYS_ARCH_PRCTL), ctypes.c_long(ARCH_REQ_XCOMP_PERM),
                          ctypes.c_ulong(XFEATURE_XTILEDATA))
    if status == 0:
        return
    code = ctypes.get_errno()
    why = {errnos.EINVAL: "the kernel or the CPU does not support AMX tile data (Linux "
                          "5.16 or later on a CPU with AMX is needed)",
           errnos.EOPNOTSUPP: "this CPU has no AMX tiles (or the kernel has disabled them)",
           errnos.ENOSYS: "the kernel has no arch_prctl permission requests",
           errnos.EPERM: "the process is not allowed to enable it (a seccomp sandbox?)",
           errnos.ENOSPC: "the signal stack is too small for the tile state (raise "
                          "the sigaltstack size)"}.get(code, os.strerror(code))
    raise AMXPermissionError(
        f"Linux refused this process the AMX tile state (arch_prctl(ARCH_REQ_XCOMP_PERM, "
        f"XFEATURE_XTILEDATA) failed: {errnos.errorcode.get(code, code)}: {why}); run the "
        "kernel built without AMX (tensor_unit='avx512', or a target without amx-tile)",
        errno=code)

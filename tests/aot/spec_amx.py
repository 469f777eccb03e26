"""A library spec with one variant on AMX tiles (built for sapphirerapids) and one
without, for tests/aot/test_amx_library.py."""

import polyopt as po
from polyopt.aot import Kernel
from polyopt.schedules.tensorized import int8_matmul_template

SPR = po.TargetInfo.for_cpu("sapphirerapids")


def matmul_u8s8(m, k, n):
    A = po.placeholder((m, k), name="A", dtype="uint8")
    W = po.placeholder((n // 32, k // 4, 32, 4), name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    s = po.create_schedule(C)
    int8_matmul_template(s, C, parallel=False, target_info=SPR)
    return s, [A, W, C]


def scale(n):
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    return po.create_schedule(B), [A, B]


def kernels():
    yield Kernel("matmul_u8s8", matmul_u8s8, [{"m": 32, "k": 128, "n": 32}])
    yield Kernel("scale", scale, [{"n": 8}])

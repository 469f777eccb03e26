"""The accelerator's GEMM core as a tensor intrinsic, for ``tensorize``.

``gemm_intrin(config)`` declares what one GEMM step computes: a ``batch x block_in``
int8 input tile times a ``block_out x block_in`` int8 weight tile, accumulated into a
``batch x block_out`` int32 tile (``c[b, o] += sum_i a[b, i] * w[o, i]``).  Tensorizing
a stage's innermost three loops with it (exact matching, :mod:`polyopt.tensorize`) makes
each tile one micro-op of a GEMM instruction on target ``"accel"``; other targets refuse
it (it has no CPU implementation).

>>> from polyopt.target.accel.config import VTA
>>> intrin = gemm_intrin(VTA)
>>> intrin.name, intrin.output.shape, [b.shape for b in intrin.inputs]
('accel_gemm', (1, 16), [(1, 16), (16, 16)])
"""

from __future__ import annotations

import functools

from ...te.expr import Var
from ...te.tensor import compute, placeholder, reduce_axis, reduce_sum
from ...tensorize.intrin import call_extern, decl_buffer, decl_tensor_intrin
from .config import AccelConfig


@functools.cache
def gemm_intrin(config: AccelConfig):
    """The GEMM core of ``config`` as a tensor intrinsic (see the module)."""
    c = config
    a = placeholder((c.batch, c.block_in), name="a", dtype="int8")
    w = placeholder((c.block_out, c.block_in), name="w", dtype="int8")
    k = reduce_axis((0, c.block_in), name="k")
    out = compute((c.batch, c.block_out), lambda b, o: reduce_sum(
        a[b, k].astype("int32") * w[o, k].astype("int32"), axis=k), name="accel_gemm")
    binds = {t: decl_buffer(t.shape, t.dtype, t.name, strides=[Var(f"{t.name}_stride"), 1])
             for t in (a, w, out)}

    def implementation(ins, outs):
        # run by the accelerator's GEMM instruction; no CPU code exists for it
        reset = call_extern("void", "accel_gemm_reset", outs[0].access_ptr("w"))
        update = call_extern("void", "accel_gemm_update", outs[0].access_ptr("rw"),
                             ins[0].access_ptr("r"), ins[1].access_ptr("r"))
        return None, reset, update

    return decl_tensor_intrin(out.op, implementation, binds=binds, name="accel_gemm")

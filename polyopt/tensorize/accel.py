"""The accelerator's GEMM core as a tensor intrinsic, for ``tensorize``.

``gemm_intrin(config)`` declares what one GEMM step computes: a ``batch x block_in``
int8 input tile times a ``block_out x block_in`` int8 weight tile, accumulated into a
``batch x block_out`` int32 tile (``c[b, o] += sum_i a[b, i] * w[o, i]``).  Tensorizing
a stage's innermost three loops with it (exact matching, :mod:`polyopt.tensorize`) makes
each tile one micro-op of a GEMM instruction on target ``"accel"``; on the CPU the same
schedule runs the tiles with a small C routine (so a device schedule can be checked
there too).

>>> from polyopt.machine.accel import VTA
>>> intrin = gemm_intrin(VTA)
>>> intrin.name, intrin.output.shape, [b.shape for b in intrin.inputs]
('accel_gemm', (1, 16), [(1, 16), (16, 16)])
"""

from __future__ import annotations

import functools

from ..te.expr import Var
from ..te.tensor import compute, placeholder, reduce_axis, reduce_sum
from .intrin import call_extern, decl_buffer, decl_tensor_intrin, import_c

_C = r"""
#include <stdint.h>
void accel_gemm_reset_{b}x{o}(int32_t *c, int64_t sc) {{
    for (int b = 0; b < {b}; ++b) for (int o = 0; o < {o}; ++o) c[b * sc + o] = 0;
}}
void accel_gemm_update_{b}x{o}x{i}(int32_t *c, const int8_t *a, const int8_t *w,
                                  int64_t sc, int64_t sa, int64_t sw) {{
    for (int b = 0; b < {b}; ++b)
        for (int o = 0; o < {o}; ++o) {{
            int32_t sum = 0;
            for (int i = 0; i < {i}; ++i) sum += (int32_t)a[b * sa + i] * (int32_t)w[o * sw + i];
            c[b * sc + o] += sum;
        }}
}}
"""
from ..machine.accel import AccelConfig


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

    shape = dict(b=c.batch, o=c.block_out, i=c.block_in)

    def implementation(ins, outs):
        # the accelerator runs a GEMM micro-op; the CPU the C routine above
        (a_buf, w_buf), (c_buf,) = ins, outs
        reset = call_extern("void", "accel_gemm_reset_{b}x{o}".format(**shape),
                            c_buf.access_ptr("w"), c_buf.stride(0))
        update = call_extern("void", "accel_gemm_update_{b}x{o}x{i}".format(**shape),
                             c_buf.access_ptr("rw"), a_buf.access_ptr("r"),
                             w_buf.access_ptr("r"), c_buf.stride(0), a_buf.stride(0),
                             w_buf.stride(0))
        return None, reset, update

    return decl_tensor_intrin(out.op, implementation, binds=binds, name="accel_gemm",
                              imports=[import_c(_C.format(**shape))])

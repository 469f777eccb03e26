"""Statement values on OpenCL match the LLVM backend bit for bit on the tricky cases:
integer wrap-around, floor division and modulo (negative operands, zero and -1
divisors), saturating float-to-integer conversions (NaN, infinities), NaN-propagating
maximum/minimum, guarded reads; math functions within an ulp or so.  (All of tests/te also passes on the
OpenCL target; it is too slow to run that way every time.)"""

import numpy as np

import polyopt as po

N = po.var("N")


def test_values_match_the_llvm_backend():
    a8 = po.placeholder((N,), dtype="int8", name="a8")
    b8 = po.placeholder((N,), dtype="int8", name="b8")
    u8 = po.placeholder((N,), dtype="uint8", name="u8")
    i64 = po.placeholder((N,), dtype="int64", name="i64")
    j64 = po.placeholder((N,), dtype="int64", name="j64")
    f = po.placeholder((N,), name="f")
    d = po.placeholder((N,), dtype="float64", name="d")
    outputs = [
        po.compute((N,), lambda i: a8[i] * b8[i] + a8[i], name="wrap8"),
        po.compute((N,), lambda i: u8[i] + u8[i] * 3, name="wrap_u8"),
        po.compute((N,), lambda i: i64[i] // j64[i] + i64[i] % j64[i] * 1000, name="floor"),
        po.compute((N,), lambda i: (f[i] * 1e10).astype("int32"), name="saturate"),
        po.compute((N,), lambda i: (d[i] * 300).astype("uint8"), name="saturate_u8"),
        po.compute((N,), lambda i: po.maximum(f[i], 0.5) + po.minimum(d[i], -0.5), name="mm"),
        po.compute((N,), lambda i: po.if_then_else(i > 0, f[i - 1], f[i]) * 2, name="guard"),
        po.compute((N,), lambda i: po.exp(f[i]) + po.tanh(d[i]) + po.abs(f[i]), name="math"),
        po.compute((N,), lambda i: abs(a8[i]) + po.if_then_else(i64[i] > -1, a8[i], -a8[i]),
                   name="ints"),
        po.compute((N,), lambda i: i64[i] / j64[i], name="true_div"),
    ]
    ins = [a8, b8, u8, i64, j64, f, d]
    s = po.create_schedule(outputs)
    for out in outputs:
        po.templates.opencl_injective_template(s, out, threads=8)
    args = ins + outputs
    rng = np.random.default_rng(3)
    n = 21
    values = [rng.integers(-128, 128, n).astype("int8"), rng.integers(-128, 128, n).astype("int8"),
              rng.integers(0, 256, n).astype("uint8"), rng.integers(-50, 50, n),
              np.array([0, -1, 1, -3, 3, 7, -7] * 3), rng.standard_normal(n).astype("float32"),
              rng.standard_normal(n) * 3]
    values[0][0] = -128
    values[5][:3] = [np.nan, np.inf, -np.inf]
    values[6][3:5] = [np.nan, np.inf]
    results = {}
    for target in ("llvm", "opencl"):
        kernel = po.build(s, args, target=target)
        outs = [np.zeros(n, o.dtype) for o in outputs]
        kernel(*values, *outs)
        results[target] = outs
    for out, ours, theirs in zip(outputs, results["opencl"], results["llvm"]):
        if out.name == "math":  # OpenCL's exp and tanh may differ from libm by an ulp
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, err_msg=out.name)
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=out.name)

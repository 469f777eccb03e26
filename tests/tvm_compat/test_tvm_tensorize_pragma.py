"""TVM's tensorize tutorial as it is written: the micro-kernel is C++ compiled to LLVM IR by
``tvm.contrib.clang.create_llvm`` and linked with ``s[C].pragma(x, "import_llvm", ...)``;
the body-only intrinsic, then reset + update with the reduction split.  Also
``pragma import_c``, the pragma as a recorded step, and the refusals."""

import numpy as np
import pytest

import polyopt.tvm as tvm
from polyopt.errors import MissingBackendError
from polyopt.tvm import te
from polyopt.tvm.contrib import clang, utils

from testlib.numeric import assert_numbers

N, M, L = 8, 32, 64
FACTOR = 16

# our own micro-kernels, in the tutorial's C++ shape (int sizes, extern "C")
GEMV_CC = r"""
extern "C" int gemv_assign(float *cc, float *aa, float *bb, int m, int l, int stride) {
  for (int i = 0; i < m; ++i) {
    float total = 0.0f;
    for (int j = 0; j < l; ++j) total += aa[j] * bb[i * stride + j];
    cc[i] = total;
  }
  return 0;
}
extern "C" int gemv_reset(float *cc, int m) {
  for (int i = 0; i < m; ++i) cc[i] = 0.0f;
  return 0;
}
extern "C" int gemv_update(float *cc, float *aa, float *bb, int m, int l, int stride) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < l; ++j) cc[i] += aa[j] * bb[i * stride + j];
  return 0;
}
"""

GEMV_C = r"""
int gemv_c_assign(float *cc, const float *aa, const float *bb, long m, long l, long stride) {
  for (long i = 0; i < m; ++i) {
    float total = 0.0f;
    for (long j = 0; j < l; ++j) total += aa[j] * bb[i * stride + j];
    cc[i] = total;
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def ll_code():
    temp = utils.tempdir()
    ll_path = temp.relpath("temp.ll")
    code = clang.create_llvm(GEMV_CC, output=ll_path)
    with open(ll_path) as handle:
        assert handle.read() == code
    return code


def matmul_bt(n=N, m=M, l=L):
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((m, l), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return A, B, C


def intrin_gemv(m, l, parts="body", name="gemv_assign"):
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Ab = tvm.tir.decl_buffer(a.shape, a.dtype, name="A", offset_factor=1, strides=[1])
    Bb = tvm.tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1,
                             strides=[te.var("s1"), 1])
    Cb = tvm.tir.decl_buffer(c.shape, c.dtype, name="C", offset_factor=1, strides=[1])

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]

        def call(function):
            ib = tvm.tir.ir_builder.create()
            ib.emit(tvm.tir.call_extern("int32", function, cc.access_ptr("w"),
                                        aa.access_ptr("r"), bb.access_ptr("r"), m, l,
                                        bb.strides[0]))
            return ib.get()

        if parts == "body":
            return call(name)
        ib = tvm.tir.ir_builder.create()
        ib.emit(tvm.tir.call_extern("int32", "gemv_reset", cc.access_ptr("w"), m))
        return call("gemv_update"), ib.get(), call("gemv_update")

    return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, b: Bb, c: Cb})


def run(func, n=N, m=M, l=L, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(size=(n, l)).astype("float32")
    b = rng.uniform(size=(m, l)).astype("float32")
    c = tvm.nd.array(np.full((n, m), 7.0, dtype="float32"))  # the kernel must overwrite it
    func(tvm.nd.array(a), tvm.nd.array(b), c)
    assert_numbers(c.numpy(), np.dot(a, b.T), rtol=1e-5, atol=1e-7)  # (TVM's atol)


def test_create_llvm_gives_ir_that_llvm_22_links(ll_code):
    assert "define" in ll_code and "@gemv_update(" in ll_code and "@gemv_reset(" in ll_code


def test_the_tutorials_gemv_with_import_llvm(ll_code):
    A, B, C = matmul_bt()
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=FACTOR)
    s[C].reorder(x, yo, yi, z)
    s[C].tensorize(yi, intrin_gemv(FACTOR, L))
    s[C].pragma(x, "import_llvm", ll_code)
    func = tvm.build(s, [A, B, C], target="llvm", name="gemv")
    run(func)
    # called with C's int (i32) sizes, as the linked definition takes them
    assert "@gemv_assign(ptr" in func.llvm_ir and "i32 16, i32 64" in func.llvm_ir


def test_the_tutorials_reset_and_update_with_the_reduction_split(ll_code):
    A, B, C = matmul_bt()
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=FACTOR)
    zo, zi = s[C].split(z, factor=FACTOR)
    s[C].reorder(x, yo, zo, yi, zi)
    s[C].tensorize(yi, intrin_gemv(FACTOR, FACTOR, parts="reset_update"))
    s[C].pragma(yo, "import_llvm", ll_code)
    func = tvm.build(s, [A, B, C], target="llvm", name="gemv")
    run(func)
    assert "gemv_reset" in func.llvm_ir and "gemv_update" in func.llvm_ir


def test_import_c_pragma_and_the_recorded_step():
    A, B, C = matmul_bt()
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=FACTOR)
    s[C].tensorize(yi, intrin_gemv(FACTOR, L, name="gemv_c_assign"))
    s[C].pragma(x, "import_c", GEMV_C)
    s[C].pragma(x, "import_c", GEMV_C)  # the same code is imported once
    assert len(s.program.imports) == 1
    run(tvm.build(s, [A, B, C], target="llvm"))
    # the step survives s.script() (the code's quotes and newlines included) and fork
    assert 'pragma("i", "import_c", "\\nint gemv_c_assign' in s.script()
    fresh = te.create_schedule(C.op)
    fresh.replay(s.script())
    assert fresh.program.imports == s.program.imports
    run(tvm.build(fresh, [A, B, C], target="llvm"), seed=1)
    assert s.fork().program.imports == s.program.imports


def test_the_pragma_changes_no_loop_and_checks_its_loop():
    A, B, C = matmul_bt()
    s = te.create_schedule(C.op)
    before = str(s.program.schedule)
    s[C].pragma(C.op.axis[0], "import_llvm", "define i32 @one() { ret i32 1 }")
    assert str(s.program.schedule) == before
    with pytest.raises(te.PolyoptError, match="no loop|loops"):
        s[C].pragma("nope", "import_llvm", "define i32 @one() { ret i32 1 }")
    with pytest.raises(te.UnknownPragmaError) as err:
        s[C].pragma(C.op.axis[0], "unroll_explicit", 4)
    assert (err.value.pragma, err.value.pragmas) == (
        "unroll_explicit", ("import_llvm", "import_c", "unroll", "vectorize"))
    with pytest.raises(te.PolyoptError, match="import_llvm takes LLVM IR"):
        s[C].pragma(C.op.axis[0], "import_llvm", 42)


def test_code_that_does_not_compile_is_refused_with_the_compilers_message():
    with pytest.raises(te.PolyoptError, match="(?s)clang could not compile.*error: expected"):
        clang.create_llvm('extern "C" int broken( { return; }')
    with pytest.raises(te.PolyoptError, match="install it"):
        clang.create_llvm("int f() { return 0; }", cc="/nonexistent/clang++")
    A, B, C = matmul_bt()
    s = te.create_schedule(C.op)
    s[C].pragma(C.op.axis[0], "import_c", "int broken( { return; }")
    with pytest.raises(te.PolyoptError, match="(?s)does not compile.*error"):
        tvm.build(s, [A, B, C], target="llvm")
    s = te.create_schedule(C.op)
    s[C].pragma(C.op.axis[0], "import_llvm", "define i32 @bad() { ret i64 1 }")
    with pytest.raises(te.PolyoptError, match="does not parse"):
        tvm.build(s, [A, B, C], target="llvm")
    with pytest.raises(te.PolyoptError, match="for target='llvm' only"):
        tvm.build(s, [A, B, C], target="opencl")


def test_a_call_that_does_not_fit_the_imported_definition_is_refused(ll_code):
    A, B, C = matmul_bt()
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=FACTOR)
    a = te.placeholder((L,), name="a")
    b = te.placeholder((FACTOR, L), name="b")
    k = te.reduce_axis((0, L), name="k")
    c = te.compute((FACTOR,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    wrong = te.decl_tensor_intrin(c.op, lambda ins, outs: tvm.tir.call_extern(
        "int32", "gemv_assign", outs[0].access_ptr("w"), ins[0].access_ptr("r")))
    s[C].tensorize(yi, wrong)
    s[C].pragma(x, "import_llvm", ll_code)
    with pytest.raises(te.PolyoptError, match="passes 2 arguments.*defines it with 6"):
        tvm.build(s, [A, B, C], target="llvm")


def test_a_call_of_a_function_nothing_defines_is_refused():
    """Not a jump to address 0: C++ without extern "C" (a mangled name), or no code."""
    mangled = clang.create_llvm(GEMV_CC.replace('extern "C" ', ""))
    for name, code, match in (("gemv_assign", mangled, 'defines _Z11gemv_assign.*extern "C"'),
                              ("gemv_nowhere", None, "nothing in the process defines it")):
        A, B, C = matmul_bt()
        s = te.create_schedule(C.op)
        x, y = C.op.axis
        yo, yi = s[C].split(y, factor=FACTOR)
        s[C].tensorize(yi, intrin_gemv(FACTOR, L, name=name))
        if code is not None:
            s[C].pragma(x, "import_llvm", code)
        with pytest.raises(te.PolyoptError, match=match):
            tvm.build(s, [A, B, C], target="llvm")


def test_without_clang_on_the_path_the_error_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no clang in it
    with pytest.raises(MissingBackendError, match="apt-get install clang"):
        clang.create_llvm("int f() { return 0; }")


def test_pragmas_tvm_gives_no_meaning_are_recorded_and_unroll_vectorize_are_the_primitives():
    # TVM's Stage.pragma: "unroll"/"vectorize" call the primitive, any other name becomes an
    # attribute no pass reads; the pragmas TVM's passes do read stay refused
    n = 64
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    before = str(s.program.schedule)
    s[B].pragma(xo, "pragma1")
    s[B].pragma(xo, "my_hint", 3)
    assert str(s.program.schedule) == before
    IterVar = tvm.te.schedule.IterVar
    assert [k.value for k in s[B].iter_var_attrs[xo].pragma_keys] == ["pragma1", "my_hint"]
    assert s[B].iter_var_attrs[xo].iter_type == IterVar.DataPar
    s[B].pragma(xi, "vectorize")
    assert s[B].iter_var_attrs[xi].iter_type == IterVar.Vectorized
    assert s[B].iter_var_attrs[xi].pragma_keys == ()
    assert 's["B"].pragma("i.outer", "pragma1", None)' in s.script()
    replayed = te.create_schedule(B.op).replay(s.script())
    assert replayed[B].iter_var_attrs[xi].iter_type == IterVar.Vectorized
    a = np.random.default_rng(3).random(n, dtype=np.float32)
    for schedule in (s, replayed):
        f = tvm.build(schedule, [A, B], "llvm")
        b = tvm.nd.array(np.zeros(n, np.float32), tvm.cpu(0))
        f(tvm.nd.array(a, tvm.cpu(0)), b)
        assert_numbers(b.numpy(), a * 3.0, rtol=1e-6)
    u = te.create_schedule(B.op)
    uo, ui = u[B].split(B.op.axis[0], factor=4)
    u[B].pragma(ui, "unroll")
    assert u[B].iter_var_attrs[ui].iter_type == IterVar.Unrolled
    for refused in ("auto_unroll_max_step", "debug_skip_region", "parallel_launch_point"):
        with pytest.raises(te.UnknownPragmaError, match="TVM's passes read it") as err:
            u[B].pragma(uo, refused, 1)
        assert err.value.pragma == refused
    with pytest.raises(te.UnknownPragmaError):
        u[B].pragma(uo, 42)

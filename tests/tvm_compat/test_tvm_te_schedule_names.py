"""TVM schedule names that TVM's own tests use (issue 35): ``leaf_iter_vars``,
``relations``, ``fuse()`` of no loops, schedule pickling, stage groups, ``double_buffer``,
symbolic-extent ``fuse``; each written as TVM code and checked against NumPy."""

import json
import pickle

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from tests.testlib.errors import refused
from tests.testlib.numeric import assert_numbers


def _run(s, args, *arrays):
    f = tvm.build(s, args, "llvm")
    nd = [tvm.nd.array(a, tvm.cpu(0)) for a in arrays]
    f(*nd)
    return nd[-1].numpy()


def test_leaf_iter_vars_and_relations_follow_split_tile_fuse():
    A = te.placeholder((20, 12), name="A")
    T = te.compute((20, 12), lambda i, j: A[i, j] * 3, name="T")
    s = te.create_schedule(T.op)
    xo, yo, xi, yi = s[T].tile(T.op.axis[0], T.op.axis[1], x_factor=10, y_factor=4)
    fused = s[T].fuse(xo, yo)
    assert s[T].leaf_iter_vars == (fused, xi, yi)
    split_x, split_y, fuse = s[T].relations
    assert (split_x.parent.name, split_x.outer, split_x.inner, split_x.factor) == \
        ("i", xo, xi, 10)
    assert (split_y.outer, split_y.inner, split_y.factor) == (yo, yi, 4)
    assert isinstance(fuse, te.schedule.Fuse) and (fuse.outer, fuse.inner, fuse.fused) == \
        (xo, yo, fused)
    a = np.arange(240, dtype="float32").reshape(20, 12)
    assert_numbers(_run(s, [A, T], a, np.zeros_like(a)), 3 * a)


def test_fuse_of_no_loops_is_a_singleton_loop():
    A = te.placeholder((), name="A")
    T = te.compute((), lambda: A() + 1, name="T")
    s = te.create_schedule(T.op)
    unit = s[T].fuse()
    assert s[T].leaf_iter_vars == (unit,)
    assert s[T].relations == (te.schedule.Singleton(unit),)
    assert s[T].fuse(unit) == unit  # fuse of one loop is that loop
    assert_numbers(_run(s, [A, T], np.float32(2.5), np.float32(0)), np.float32(3.5))


def test_singleton_goes_inside_the_loops_a_stage_shares():
    A = te.placeholder((6, 5), name="A")
    B = te.compute((6, 5), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((6, 5), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    shared = s[B].axes[0]
    unit = s[B].fuse()
    assert s[B].axes[:2] == (shared, unit)
    a = np.random.default_rng(0).random((6, 5), dtype=np.float32)
    assert_numbers(_run(s, [A, C], a, np.zeros_like(a)), a * 2 + 1)


def test_a_schedule_pickles_as_its_tensors_and_script():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] - 1, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    loaded = pickle.loads(pickle.dumps(s))
    assert isinstance(loaded, te.schedule.Schedule)
    assert loaded.script() == s.script()
    a = np.arange(16, dtype="float32")
    (A2,), B2 = loaded.output_tensors[0].op.input_tensors, loaded.output_tensors[0]
    assert_numbers(_run(loaded, [A2, B2], a, np.zeros_like(a)), a - 1)


@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_wide_unsigned_integers_and_popcount(dtype):
    n, top = 9, np.iinfo(dtype).max
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute((n,), lambda i: te.if_then_else(
        A[i] > top - 100, A[i] // B[i], (A[i] * B[i] + 3) % B[i]) + tvm.tir.popcount(A[i]),
        name="C")
    D = te.compute((n,), lambda i: A[i].astype("float64") + B[i], name="D")
    k = te.reduce_axis((0, n), name="k")
    E = te.compute((1,), lambda _: te.max(A[k], axis=k), name="E")
    assert (C.dtype, D.dtype, E.dtype) == (dtype, "float64", dtype)
    f = tvm.build(te.create_schedule([C.op, D.op, E.op]), [A, B, C, D, E], "llvm")
    rng = np.random.default_rng(1)
    a = rng.integers(0, top, n, dtype=dtype, endpoint=True)
    a[0], a[1] = top - 7, top
    b = rng.integers(1, 1000, n, dtype=dtype)
    c, d, e = np.zeros(n, dtype), np.zeros(n), np.zeros(1, dtype)
    f(a, b, c, d, e)
    bits = np.array([bin(int(x)).count("1") for x in a], dtype=dtype)
    with np.errstate(over="ignore"):
        expected = np.where(a > top - 100, a // b, (a * b + np.array(3, dtype)) % b) + bits
    assert_numbers(c, expected)
    assert_numbers(d, a.astype("float64") + b)
    assert_numbers(e, a.max(keepdims=True))


def test_unsigned_promotion_follows_numpy():
    for a, b in [("uint32", "int32"), ("uint32", "uint8"), ("uint64", "int64"),
                 ("uint64", "uint32"), ("uint8", "int8"), ("uint32", "float32"),
                 ("int16", "uint8"), ("uint16", "int8"), ("int16", "float32")]:
        A = te.placeholder((2,), name="A", dtype=a)
        B = te.placeholder((2,), name="B", dtype=b)
        expected = np.promote_types(a, b).name
        assert (A[0] + B[0]).dtype == ("int32" if {a, b} == {"int8", "uint8"} else expected)
    with pytest.raises(te.DTypeError, match="popcount counts the bits of an integer"):
        tvm.tir.popcount(te.placeholder((2,), name="F")[0])
    with pytest.raises(te.DTypeError, match="does not fit uint32"):
        te.placeholder((2,), name="U", dtype="uint32")[0] + (-1)


VADD_C = """
void tvm_names_vadd(float *z, const float *x, const float *y) {
  for (int i = 0; i < 8; ++i) z[i] = x[i] + y[i];
}
"""


def _vadd_intrin(params):
    x = te.placeholder((8,), name="x")
    y = te.placeholder((8,), name="y")
    z = te.compute((8,), lambda i: x[i] + y[i], name="z")

    def intrin_func(ins, outs):
        return tvm.tir.call_extern("int32", "tvm_names_vadd", outs[0].access_ptr("w"),
                                   ins[0].access_ptr("r"), ins[1].access_ptr("r"))
    return te.decl_tensor_intrin(z.op, intrin_func, default_buffer_params=params,
                                 imports=[te.tensorize.import_c(VADD_C)])


def test_default_buffer_params_declare_the_default_buffers():
    intrin = _vadd_intrin({"offset_factor": 8})
    assert [b.offset_factor for b in intrin.buffers] == [8, 8, 8]
    X = te.placeholder((32,), name="X")
    Y = te.placeholder((32,), name="Y")
    Z = te.compute((32,), lambda i: X[i] + Y[i], name="Z")
    s = te.create_schedule(Z.op)
    _, xi = s[Z].split(Z.op.axis[0], factor=8)
    s[Z].tensorize(xi, intrin)
    x, y = np.arange(32, dtype="float32"), np.linspace(0, 1, 32, dtype="float32")
    assert_numbers(_run(s, [X, Y, Z], x, y, np.zeros(32, "float32")), x + y)
    # a region that starts off the declared alignment is refused
    W = te.compute((24,), lambda i: X[i + 4] + Y[i], name="W")
    s = te.create_schedule(W.op)
    _, wi = s[W].split(W.op.axis[0], factor=8)
    err = refused(te.BufferAlignmentError, lambda: s[W].tensorize(wi, intrin))
    assert (err.buffer, err.factor, err.array, err.start) == ("x", 8, "X", (4,))
    with pytest.raises(te.InvalidArgumentError, match="default_buffer_params takes a dict"):
        _vadd_intrin({"alignment": 8})


def _chain3():
    A = te.placeholder((6, 7), name="A")
    x = te.compute(A.shape, lambda i, j: A[i, j] * 2, name="x")
    x1 = te.compute(A.shape, lambda *i: x(*i) + 1, name="x1")
    x2 = te.compute(A.shape, lambda *i: x1(*i) * 3, name="x2")
    return A, x, x1, x2


def test_a_group_moves_its_stages_together():
    A, x, x1, x2 = _chain3()
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x].group == g and s[x1].group == g and s[x2].group is None
    g.compute_at(s[x2], x2.op.axis[1])
    assert g.attach_stage == s[x2] and g.num_child_stages == 2
    assert [st.attach.stage for st in s.program.stages[:2]] == ["x2", "x2"]
    assert "compute_at" in s.script()  # recorded as the steps it is made of
    a = np.random.default_rng(2).random((6, 7), dtype=np.float32)
    assert_numbers(_run(s, [A, x2], a, np.zeros_like(a)), (a * 2 + 1) * 3)
    replayed = te.create_schedule(x2.op).replay(s.script())
    assert [st.attach for st in replayed.program.stages] == \
        [st.attach for st in s.program.stages]


def test_groups_nest_and_keep_attachments_inside():
    A, x, x1, x2 = _chain3()
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x1, inputs=x)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert set(s.groups) == {g1, g2} and g1.group == g2 and g2.group is None
    assert (g1.num_child_stages, g2.num_child_stages) == (1, 2)
    assert (s[x].group, s[x1].group) == (g2, g1)
    s[x].compute_at(s[x1], x1.op.axis[0])  # attached inside the group: stays there
    g2.compute_at(s[x2], x2.op.axis[0])
    assert [(st.name, st.attach.stage) for st in s.program.stages[:2]] == \
        [("x", "x1"), ("x1", "x2")]
    a = np.random.default_rng(3).random((6, 7), dtype=np.float32)
    assert_numbers(_run(s, [A, x2], a, np.zeros_like(a)), (a * 2 + 1) * 3)
    with pytest.raises(te.InvalidArgumentError, match="no computed stage"):
        s.create_group(outputs=A, inputs=A)


def test_float16_storage_rounds_and_widens_exactly_like_numpy():
    special = np.array([0, -0.0, 1, -2.5, 65504, 65519.99, 65520, 7e4, 1e-8, 2**-24, 2**-25,
                        3 * 2**-25, 2**-14, 6.1e-5, np.inf, -np.inf, np.nan, 0.1, 1 / 3],
                       np.float32)
    rng = np.random.default_rng(16)
    spread = rng.standard_normal(3000).astype(np.float32) * np.float32(10.0) ** \
        rng.integers(-9, 6, 3000).astype(np.float32)
    x = np.concatenate([special, spread])
    n = len(x)
    A = te.placeholder((n,), name="A")
    H = te.compute((n,), lambda i: A[i].astype("float16"), name="H")
    B = te.compute((n,), lambda i: H[i].astype("float64") * 2, name="B")
    assert (H.dtype, B.dtype) == ("float16", "float64")
    f = tvm.build(te.create_schedule([H.op, B.op]), [A, H, B], "llvm")
    h, b = np.zeros(n, np.float16), np.zeros(n)
    f(x, h, b)
    with np.errstate(over="ignore"):
        expected = x.astype(np.float16)
    assert_numbers(h, expected, exact=True)
    assert_numbers(b, expected.astype(np.float64) * 2, exact=True)
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    E = te.placeholder((1 << 16,), name="E", dtype="float16")
    W = te.compute(E.shape, lambda i: E[i].astype("float32"), name="W")
    w = np.zeros(1 << 16, np.float32)
    tvm.build(te.create_schedule(W.op), [E, W], "llvm")(every, w)
    assert_numbers(w, every.astype(np.float32), exact=True)
    with pytest.raises(te.DTypeError, match="float16 is a storage type: convert it first"):
        E[0] + E[1]
    with pytest.raises(te.DTypeError, match="float16 is a storage type"):
        te.exp(E[0])


def test_fuse_of_a_constant_outer_and_a_symbolic_inner_loop_is_exact():
    m, n = te.size_var("m"), te.size_var("n")
    A = te.placeholder((m, n), name="A")
    T = te.compute((m, n), lambda i, j: A[i, j] * 2 + 1, name="T")
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=4)
    fused = s[T].fuse(xi, T.op.axis[1])
    assert s[T].leaf_iter_vars == (xo, fused)
    s[T].parallel(xo)
    _, lanes = s[T].split(fused, factor=8)
    s[T].vectorize(lanes)
    f = tvm.build(s, [A, T], "llvm")
    for rows, cols in [(9, 7), (4, 1), (1, 5), (13, 13)]:
        a = np.random.default_rng(rows).random((rows, cols), dtype=np.float32)
        t = np.zeros_like(a)
        f(a, t)
        assert_numbers(t, a * 2 + 1)
    s = te.create_schedule(T.op)  # both symbolic: the two loops run as one
    both = s[T].fuse(*T.op.axis)
    err = refused(te.FusedPartsError, lambda: s[T].split(both, factor=8))
    assert (err.stage, err.loop) == ("T", both.name)


def test_iter_var_attrs_give_tvm_iteration_types():
    IterVar = tvm.te.schedule.IterVar
    A = te.placeholder((32, 24), name="A")
    k = te.reduce_axis((0, 24), name="k")
    S = te.compute((32,), lambda i: te.sum(A[i, k], axis=k), name="S")
    s = te.create_schedule(S.op)
    io, ii = s[S].split(S.op.axis[0], factor=8)
    s[S].parallel(io)
    s[S].unroll(ii)
    attrs = s[S].iter_var_attrs
    assert (attrs[io].iter_type, attrs[ii].iter_type, attrs[k].iter_type) == \
        (IterVar.Parallelized, IterVar.Unrolled, IterVar.CommReduce)
    assert attrs["k"].pragma_keys == () and attrs[ii].tensor_intrin is None
    a = np.random.default_rng(5).random((32, 24), dtype=np.float32)
    assert_numbers(_run(s, [A, S], a, np.zeros(32, "float32")), a.sum(1))
    X, Y = te.placeholder((32,), name="X"), te.placeholder((32,), name="Y")
    Z = te.compute((32,), lambda i: X[i] + Y[i], name="Z")
    s = te.create_schedule(Z.op)
    zo, zi = s[Z].split(Z.op.axis[0], factor=8)
    intrin = _vadd_intrin(None)
    s[Z].tensorize(zi, intrin)
    assert s[Z].iter_var_attrs[zi].iter_type == IterVar.Tensorized
    assert s[Z].iter_var_attrs[zi].tensor_intrin == intrin.key
    assert s[Z].iter_var_attrs[zo].iter_type == IterVar.DataPar


def test_save_json_and_load_json_rebuild_what_computes_the_same():
    n = te.size_var("n")
    A = te.placeholder((n, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k] * A[i, k], axis=k, where=k > 0), name="B")
    C = te.compute((n,), lambda i: te.if_then_else(B[i] > 1, B[i], -B[i]).astype("float64"),
                   name="C")
    loaded = tvm.ir.load_json(tvm.ir.save_json(C))
    assert isinstance(loaded, te.tensor.Tensor) and str(loaded.op.body) == str(C.op.body)
    (B2,) = loaded.op.input_tensors
    (A2,) = B2.op.input_tensors
    a = np.random.default_rng(7).random((6, 5), dtype=np.float32)
    squares = (a[:, 1:] ** 2).sum(1)
    got = _run(te.create_schedule(loaded.op), [A2, loaded], a, np.zeros(6))
    assert_numbers(got, np.where(squares > 1, squares, -squares).astype(np.float64), rtol=1e-6)
    m = te.size_var("m")
    X = te.placeholder((m, 3), name="X")
    state = te.placeholder((m, 3), name="state")
    init = te.compute((1, 3), lambda _, i: X[0, i], name="init")
    update = te.compute((m, 3), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    scan = tvm.te.scan(init, update, state, inputs=[X])
    scan2 = tvm.ir.load_json(tvm.ir.save_json(scan))
    assert isinstance(scan2.op, tvm.te.ScanOp)
    (X2,) = scan2.op.input_tensors
    x = np.random.default_rng(8).random((4, 3), dtype=np.float32)
    assert_numbers(_run(te.create_schedule(scan2.op), [X2, scan2], x, np.zeros_like(x)),
                   np.cumsum(x, axis=0))
    argmax = te.comm_reducer(lambda x, y: te.max(x, y), lambda t: te.min_value(t))
    r = te.reduce_axis((0, 5), name="r")
    M = te.compute((n,), lambda i: argmax(A[i, r], axis=r), name="M")
    with pytest.raises(te.InvalidArgumentError, match="has no JSON form"):
        tvm.ir.save_json(M)
    with pytest.raises(te.InvalidArgumentError, match="load_json takes"):
        tvm.ir.load_json('{"format": "pickle", "root": 0, "nodes": []}')
    with pytest.raises(te.InvalidArgumentError, match="not a tensor-expression node"):
        tvm.ir.load_json('{"format": "polyopt-te-json-1", "root": {"ref": 0}, '
                         '"nodes": [{"type": "os.system", "fields": {}}]}')


def test_load_json_reads_a_reduction_saved_before_init_existed():
    n = te.size_var("n")
    A = te.placeholder((n, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    document = json.loads(tvm.ir.save_json(B))
    reduces = [node for node in document["nodes"] if node.get("type") == "Reduce"]
    assert len(reduces) == 1 and reduces[0]["fields"]["init"] is None
    del reduces[0]["fields"]["init"]  # as save_json wrote it before Reduce.init existed
    loaded = tvm.ir.load_json(json.dumps(document))
    assert loaded.op.body.init is None
    (A2,) = loaded.op.input_tensors
    a = np.random.default_rng(9).random((3, 4), dtype=np.float32)
    assert_numbers(_run(te.create_schedule(loaded.op), [A2, loaded], a, np.zeros(3, np.float32)),
                   a.sum(1), rtol=1e-6)
    reduces[0]["fields"]["cost"] = 1  # a field Reduce does not have
    with pytest.raises(te.InvalidArgumentError, match="not a tensor-expression node"):
        tvm.ir.load_json(json.dumps(document))
    del reduces[0]["fields"]["cost"], reduces[0]["fields"]["source"]  # a required field
    with pytest.raises(te.InvalidArgumentError, match="not a tensor-expression node"):
        tvm.ir.load_json(json.dumps(document))


def test_compute_attrs_are_converted_as_tvm_converts_them():
    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i] + 1, name="B",
                   attrs={"hello": 1, "arr": [10, 12], "name": "x", "scale": 0.5})
    attrs = B.op.attrs
    assert (attrs["hello"].value, attrs["arr"][1].value, attrs["name"], attrs["scale"].value) \
        == (1, 12, "x", 0.5)
    assert json.loads(str(attrs)) == {"hello": 1, "arr": [10, 12], "name": "x", "scale": 0.5}
    loaded = tvm.ir.load_json(tvm.ir.save_json(B))
    assert json.loads(str(loaded.op.attrs)) == json.loads(str(attrs))
    a = np.arange(3, dtype="float32")
    assert_numbers(_run(te.create_schedule(B.op), [A, B], a, np.zeros(3, "float32")), a + 1)
    with pytest.raises(te.InvalidArgumentError, match="attrs keys are strings"):
        te.compute((3,), lambda i: A[i], name="C", attrs={1: 2})


def test_float16_arrays_on_opencl_are_refused_naming_the_way():
    A = te.placeholder((8,), name="A", dtype="float16")
    B = te.compute((8,), lambda i: A[i].astype("float32") * 2, name="B")
    with pytest.raises(te.DTypeError, match="OpenCL target has no float16 arrays"):
        te.build(te.create_schedule(B.op), [A, B], "opencl")


def test_save_json_of_a_schedule_is_its_tensors_and_script():
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((n,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    assert s.outputs == (C.op,) and s.output_tensors == (C,)  # TVM's: the ops
    text = tvm.ir.save_json(s)
    loaded = tvm.ir.load_json(text)
    assert isinstance(loaded, tvm.te.schedule.Schedule) and loaded.script() == s.script()
    assert str(loaded.outputs[0].body) == str(C.op.body)
    C2 = loaded.output_tensors[0]
    (B2,) = C2.op.input_tensors
    (A2,) = B2.op.input_tensors
    a = np.random.default_rng(11).random(10, dtype=np.float32)
    assert_numbers(_run(loaded, [A2, C2], a, np.zeros_like(a)), a * 2 + 1)
    document = json.loads(text)
    document["schedule"]["script"] = 7
    with pytest.raises(te.InvalidArgumentError, match="saved schedule needs"):
        tvm.ir.load_json(json.dumps(document))
    document["schedule"]["script"] = 'import os'
    with pytest.raises(te.InvalidArgumentError, match="schedule script"):
        tvm.ir.load_json(json.dumps(document))

"""The graph layer's promises, one class of defect each: integer dtypes computed or
refused, kernel signatures checked, sizes checked before allocation, concurrent runs,
linear fusion of long chains, QuantizeLinear's NaN, invalid attributes and inputs
refused with what was wrong."""

import threading

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from polyopt.graph.contracts import (KernelSignatureError, TensorTooLargeError,  # noqa: E402
                                     UnsupportedDTypeError, check_kernel)
from polyopt.graph.passes import MAX_FUSED_NODES  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.numeric import mismatch  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402

vi = helper.make_tensor_value_info


def model(nodes, inputs, outputs, inits=()):
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outputs,
                                               initializer=list(inits)),
                             opset_imports=[helper.make_opsetid("", 17)])


def elem(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def compiled(m, **options):
    return po.graph.compile(po.graph.from_onnx(m), num_threads=1, cache=False, **options)


# -- integer dtypes: the result in the graph's dtype, equal to onnxruntime's, or refused ------

INTEGER_CASES = [
    ("Relu", ("int8", "int32"), {}),  # (onnxruntime has no int64 Relu: see below)
    ("Neg", ("int8", "int32", "int64"), {}),
    ("Add", ("int8", "uint8", "int32", "int64"), {}),
    ("Sub", ("int8", "uint8", "int32", "int64"), {}),
    ("Mul", ("int8", "uint8", "int32", "int64"), {}),
    ("Div", ("int8", "uint8", "int32", "int64"), {}),
    ("MaxPool", ("int8", "uint8"), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
]


@pytest.mark.parametrize("op,dtypes,attrs", INTEGER_CASES)
def test_integer_operators_equal_onnxruntime(op, dtypes, attrs):
    rng = np.random.default_rng(3)
    for dtype in dtypes:
        shape = [1, 2, 5, 5] if op == "MaxPool" else [3, 7]
        binary = op in ("Add", "Sub", "Mul", "Div")
        names = ["a", "b"] if binary else ["a"]
        m = model([helper.make_node(op, names, ["y"], **attrs)],
                  [vi(n, elem(dtype), shape) for n in names], [vi("y", elem(dtype), None)])
        low = 0 if dtype == "uint8" else -100
        feeds = {n: rng.integers(low, 101, shape).astype(dtype) for n in names}
        if binary:  # negative quotients, and no division by 0 (SIGFPE in onnxruntime)
            feeds["b"][feeds["b"] == 0] = 7
        expected = ort_run(m, feeds)["y"]
        got = compiled(m).run(feeds)["y"]
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, expected)


def test_int64_relu_keeps_its_dtype():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.INT64, [4])],
              [vi("y", TensorProto.INT64, [4])])
    got = compiled(m).run({"x": np.array([-2**40, -1, 0, 2**40], np.int64)})["y"]
    assert got.dtype == np.int64 and got.tolist() == [0, 0, 0, 2**40]


def test_integer_division_truncates_and_wraps_like_c():
    a = np.array([7, -7, 7, -7, -128, 5, 0], np.int8)
    b = np.array([2, 2, -2, -2, -1, 0, 3], np.int8)
    m = model([helper.make_node("Div", ["a", "b"], ["y"])],
              [vi("a", TensorProto.INT8, [7]), vi("b", TensorProto.INT8, [7])],
              [vi("y", TensorProto.INT8, [7])])
    got = compiled(m).run({"a": a, "b": b})["y"]
    assert got.tolist() == [3, -3, -3, 3, -128, 0, 0]  # -128 / -1 wraps; x / 0 gives 0


def test_integer_clip_keeps_its_dtype():
    inits = [numpy_helper.from_array(np.array(-3, np.int32), "lo"),
             numpy_helper.from_array(np.array(4, np.int32), "hi")]
    m = model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
              [vi("x", TensorProto.INT32, [6])], [vi("y", TensorProto.INT32, [6])], inits)
    x = np.array([-100, -3, -2, 0, 4, 2**30], np.int32)
    got = compiled(m).run({"x": x})["y"]
    np.testing.assert_array_equal(got, ort_run(m, {"x": x})["y"])
    assert got.dtype == np.int32


@pytest.mark.parametrize("op", ["Sigmoid", "Tanh", "Sqrt", "Exp", "Erf", "Softmax"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_float_operators_refuse_integers_naming_the_node(op, dtype):
    m = model([helper.make_node(op, ["x"], ["y"], name="the_node")],
              [vi("x", elem(dtype), [4])], [vi("y", elem(dtype), [4])])
    err = refused(UnsupportedDTypeError, lambda: po.graph.from_onnx(m))
    assert (err.node, err.op_type, err.input, err.dtype) == ("the_node", op, "x", dtype)
    assert dtype not in err.supported and "float32" in err.supported


def test_a_kernel_whose_signature_differs_from_the_graph_is_refused():
    """The check the executor makes before calling a kernel with raw addresses."""
    b = po.graph.GraphBuilder()
    y = b.op("Relu", [b.input("x", (4,), "int32")])
    g = b.build([y])
    A = po.placeholder((4,), name="in0", dtype="int32")
    wrong = po.build(po.create_schedule(B := po.compute((4,), lambda i: A[i] * 0.5,
                                                        name="out")), [A, B])
    group = po.graph.fuse(g)[0]
    err = refused(KernelSignatureError, lambda: check_kernel(g, group, wrong, ["x"],
                                                             [(4,), (4,)]))
    assert (err.problem, err.tensor, err.expected, err.got) == \
        ("dtype", "Relu_0", "int32", "float64")
    A8 = po.placeholder((8,), name="in0", dtype="int32")
    longer = po.build(po.create_schedule(C := po.compute((8,), lambda i: A8[i],
                                                         name="out")), [A8, C])
    err = refused(KernelSignatureError, lambda: check_kernel(g, group, longer, ["x"],
                                                             [(4,), (4,)]))
    assert (err.problem, err.tensor, err.expected, err.got) == ("shape", "x", [4], [8])


# -- sizes: checked before anything is allocated -------------------------------------------------

def test_a_tensor_larger_than_memory_is_refused_by_name_at_compile():
    m = model([helper.make_node("Add", ["x", "z"], ["sum"])],
              [vi("x", TensorProto.FLOAT, [1_000_000, 1]), vi("z", TensorProto.FLOAT,
                                                            [1, 1_000_000])],
              [vi("sum", TensorProto.FLOAT, None)])
    err = refused(TensorTooLargeError, lambda: compiled(m))
    assert (err.tensor, err.nbytes) == ("sum", 4 * 10**12) and err.limit < err.nbytes


def test_sizes_beyond_int64_are_refused_not_overflowed():
    m = model([helper.make_node("Add", ["x", "z"], ["a"]),
               helper.make_node("Softmax", ["a"], ["y"])],
              [vi("x", TensorProto.FLOAT, [2**31, 1]), vi("z", TensorProto.FLOAT, [1, 2**31])],
              [vi("y", TensorProto.FLOAT, None)])
    g = po.graph.from_onnx(m)
    assert g.tensors["a"].nbytes == 4 * 2**62
    err = refused(TensorTooLargeError, lambda: po.graph.compile(g, num_threads=1, cache=False))
    assert (err.tensor, err.nbytes) == ("a", 4 * 2**62)


def test_the_arena_is_checked_against_the_memory_limit(monkeypatch):
    m = model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Softmax", ["a"], ["b"]),
               helper.make_node("Neg", ["b"], ["y"])],
              [vi("x", TensorProto.FLOAT, [64, 64])], [vi("y", TensorProto.FLOAT, None)])
    monkeypatch.setenv("POLYOPT_MEMORY_LIMIT", str(64 * 64 * 4 + 64))  # each tensor fits
    err = refused(TensorTooLargeError, lambda: compiled(m, fuse_ops=False))
    assert (err.tensor, err.nbytes, err.limit) == (None, 32 * 1024, 64 * 64 * 4 + 64)
    monkeypatch.setenv("POLYOPT_MEMORY_LIMIT", "a lot")
    with pytest.raises(po.InvalidArgumentError, match="POLYOPT_MEMORY_LIMIT"):
        compiled(m)


# -- threads ---------------------------------------------------------------------------------------

def test_concurrent_runs_give_each_input_its_own_output():
    rng = np.random.default_rng(0)
    w1, w2 = (rng.standard_normal((32, 32)).astype(np.float32) for _ in range(2))
    m = model([helper.make_node("MatMul", ["x", "w1"], ["a"]),
               helper.make_node("Softmax", ["a"], ["b"]),
               helper.make_node("MatMul", ["b", "w2"], ["y"])],
              [vi("x", TensorProto.FLOAT, [16, 32])], [vi("y", TensorProto.FLOAT, [16, 32])],
              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    cm = compiled(m)
    xs = [rng.standard_normal((16, 32)).astype(np.float32) for _ in range(4)]
    refs = [cm.run({"x": x})["y"].copy() for x in xs]
    wrong = []

    def work(k):
        for _ in range(100):
            if mismatch(cm.run({"x": xs[k]})["y"], refs[k], exact=True) is not None:
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    np.testing.assert_allclose(refs[0], ort_run(m, {"x": xs[0]})["y"], rtol=1e-4, atol=1e-5)


# -- compile time: long elementwise chains are fused in bounded groups -------------------------------

def _chain(ops, n, shape=(4,)):
    nodes = [helper.make_node(ops[k % len(ops)], [f"t{k}" if k else "x"],
                              [f"t{k + 1}" if k < n - 1 else "y"]) for k in range(n)]
    return model(nodes, [vi("x", TensorProto.FLOAT, list(shape))],
                 [vi("y", TensorProto.FLOAT, list(shape))])


def test_a_long_chain_is_fused_in_groups_of_bounded_size():
    g = po.graph.from_onnx(_chain(["Neg", "Relu", "Sigmoid", "Tanh"], 1000))
    groups = po.graph.fuse(g)
    assert sum(len(grp.nodes) for grp in groups) == 1000
    assert max(len(grp.nodes) for grp in groups) == MAX_FUSED_NODES
    assert len(groups) == -(-1000 // MAX_FUSED_NODES)


def test_operators_reading_their_input_several_times_fuse_less():
    """Erf reads its input four times: inlined whole, a chain of n is 4^n terms."""
    nodes = [helper.make_node("Erf", [f"t{k}" if k else "x"], [f"t{k + 1}" if k < 19 else "y"])
             for k in range(20)]
    g = po.graph.from_onnx(model(nodes, [vi("x", TensorProto.FLOAT, [4])],
                                 [vi("y", TensorProto.FLOAT, [4])]))
    sizes = [len(grp.nodes) for grp in po.graph.fuse(g)]
    assert sum(sizes) == 20 and max(sizes) == 4  # weights 1, 5, 21, 85; 341 > 256


def test_a_long_mixed_chain_computes_what_onnxruntime_does():
    m = _chain(["Neg", "Sigmoid", "Relu", "Tanh", "Exp", "Erf"], 150, shape=(3, 5))
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(compiled(m).run({"x": x})["y"], ort_run(m, {"x": x})["y"],
                               rtol=1e-5, atol=1e-5)


# -- QuantizeLinear: NaN and infinities as onnxruntime --------------------------------------------

@pytest.mark.parametrize("dtype,point", [("uint8", 3), ("int8", 3), ("int8", -5)])
@pytest.mark.parametrize("scale", [0.1, 0.0])
def test_quantize_linear_maps_nan_and_infinities_as_onnxruntime(dtype, point, scale):
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s"),
             numpy_helper.from_array(np.array(point, dtype), "z")]
    m = model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
              [vi("x", TensorProto.FLOAT, [6])], [vi("y", elem(dtype), [6])], inits)
    x = np.array([1.0, np.nan, -np.inf, np.inf, -1e30, 0.0], np.float32)
    if scale == 0.0:
        x[0] = 0.25
    got = compiled(m).run({"x": x})["y"]
    np.testing.assert_array_equal(got, ort_run(m, {"x": x})["y"])


# -- invalid attributes and inputs: refused with what was wrong --------------------------------------

F = TensorProto.FLOAT
W = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
INVALID = [
    ("Concat", {"axis": 5}, [vi("x", F, [2, 3])], [], "axis=5 is out of range for rank 2"),
    ("Concat", {"axis": -7}, [vi("x", F, [2, 3])], [], "axis=-7 is out of range"),
    ("Conv", {"dilations": [0, 0]}, [vi("x", F, [1, 3, 8, 8])], [W], "dilations must be"),
    ("Conv", {"pads": [-1, -1, -1, -1]}, [vi("x", F, [1, 3, 8, 8])], [W], "pads must be"),
    ("Conv", {"strides": [0, 0]}, [vi("x", F, [1, 3, 8, 8])], [W], "strides must be"),
    ("Conv", {"strides": [1, 1, 1]}, [vi("x", F, [1, 3, 8, 8])], [W], "strides must be 2"),
    ("Conv", {"kernel_shape": [2, 2]}, [vi("x", F, [1, 3, 8, 8])], [W], "kernel_shape"),
    ("Conv", {"group": 0}, [vi("x", F, [1, 3, 8, 8])], [W], "group must be"),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [0, 1]}, [vi("x", F, [1, 3, 8, 8])], [],
     "strides must be"),
    ("Softmax", {"axis": 2}, [vi("x", F, [2, 3])], [], "axis=2 is out of range"),
    ("Flatten", {"axis": 4}, [vi("x", F, [2, 3])], [], "axis=4 is out of range"),
]


@pytest.mark.parametrize("op,attrs,inputs,inits,message", INVALID,
                         ids=[f"{c[0]}-{sorted(c[1])[0]}-{k}" for k, c in enumerate(INVALID)])
def test_invalid_attributes_are_refused_naming_node_and_attribute(op, attrs, inputs, inits,
                                                                  message):
    names = [i.name for i in inputs] + [t.name for t in inits]
    if op == "Concat":
        names = names * 2
    m = model([helper.make_node(op, names, ["y"], name="bad", **attrs)], inputs,
              [vi("y", F, None)], inits)
    with pytest.raises(po.InvalidArgumentError, match=f"node 'bad' \\({op}\\).*{message}"):
        po.graph.from_onnx(m)


@pytest.mark.parametrize("axis", [-2, -1, 0, 1, 2])
def test_flatten_counts_a_negative_axis_from_the_end(axis):
    """Found by the property test: Flatten(axis=-1) of a [4] tensor is [1, 4]."""
    m = model([helper.make_node("Flatten", ["x"], ["y"], axis=axis)], [vi("x", F, [3, 4])],
              [vi("y", F, None)])
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got, expected = compiled(m).run({"x": x})["y"], ort_run(m, {"x": x})["y"]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_squeeze_and_slice_axes_out_of_range_are_refused():
    axes = numpy_helper.from_array(np.array([3], np.int64), "axes")
    m = model([helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="u")],
              [vi("x", F, [2, 3])], [vi("y", F, None)], [axes])
    with pytest.raises(po.InvalidArgumentError, match="node 'u' \\(Unsqueeze\\): axes=3"):
        po.graph.from_onnx(m)
    inits = [numpy_helper.from_array(np.array([v], np.int64), n)
             for n, v in (("s", 0), ("e", 1), ("a", 2))]
    m = model([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"], name="sl")],
              [vi("x", F, [2, 3])], [vi("y", F, None)], inits)
    with pytest.raises(po.InvalidArgumentError, match="node 'sl' \\(Slice\\): axes=2"):
        po.graph.from_onnx(m)


@pytest.mark.parametrize("shapes,message", [
    ({"x": (2, 3, 4)}, "has rank 3; the model declares the input 'x' with rank 2"),
    ({"x": ("a", 3)}, "must be a tuple of sizes"),
    ({"x": (2, 4)}, "dimension 1 is 4, the model declares 3"),
    ({"x": (-1, 3)}, "must be a tuple of sizes"),
    ({"z": (2, 3)}, "not inputs of the model"),
])
def test_from_onnx_checks_the_shapes_it_is_given(shapes, message):
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, ["N", 3])],
              [vi("y", F, ["N", 3])])
    with pytest.raises(po.InvalidArgumentError, match=message):
        po.graph.from_onnx(m, shapes=shapes)
    assert po.graph.from_onnx(m, shapes={"x": (2, 3)}).tensors["y"].shape == (2, 3)


def _initializer(kind):
    t = numpy_helper.from_array(np.zeros(4, np.float32), "c")
    if kind == "raw_data":
        t.raw_data = b"\0" * 7
    elif kind == "no_data":
        t = TensorProto(name="c", data_type=F, dims=[4])
    else:
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        entry = t.external_data.add()
        entry.key, entry.value = "location", "../x.bin"
    return t


@pytest.mark.parametrize("kind,message", [("raw_data", "cannot be read"),
                                          ("no_data", "cannot be read"),
                                          ("external", "external file")])
def test_unreadable_initializers_are_refused_by_name(kind, message):
    m = model([helper.make_node("Add", ["x", "c"], ["y"])], [vi("x", F, [4])], [vi("y", F, [4])],
              [_initializer(kind)])
    with pytest.raises(po.InvalidArgumentError, match=f"initializer 'c'.*{message}"):
        po.graph.from_onnx(m)


def test_lstm_with_hidden_size_zero_is_refused():
    W = numpy_helper.from_array(np.ones((1, 0, 2), np.float32), "W")
    R = numpy_helper.from_array(np.ones((1, 0, 0), np.float32), "R")
    m = model([helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=0, name="l")],
              [vi("x", F, [3, 1, 2])], [vi("y", F, None)], [W, R])
    with pytest.raises(po.InvalidArgumentError, match="node 'l' \\(LSTM\\): hidden_size=0"):
        po.graph.from_onnx(m)


def test_polyopt_run_refuses_an_unwritable_output_before_compiling(tmp_path):
    import subprocess
    import sys

    import onnx

    onnx.save(model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])],
                    [vi("y", F, [2])]), str(tmp_path / "m.onnx"))
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    done = subprocess.run([sys.executable, "-m", "polyopt.cli", "run", "m.onnx", "--input",
                           "x.npy", "--output", "/nonexistent/dir/out.npz"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "cannot write the outputs to '/nonexistent/dir/out.npz'" in done.stderr
    assert "compiled" not in done.stdout and "this is a bug" not in done.stderr


def test_accepted_dtypes_are_within_onnx_schemas():
    """Every dtype the graph layer accepts for an operator's data input is one ONNX's
    schema allows (the ``onnx`` property family found integer Sum, Dropout and
    GlobalMaxPool models, which onnxruntime refuses as invalid, compiled and run)."""
    import onnx.defs

    from polyopt.graph.contracts import INPUT_DTYPES

    names = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(int8)": "int8",
             "tensor(uint8)": "uint8", "tensor(int32)": "int32", "tensor(int64)": "int64",
             "tensor(int16)": "int16", "tensor(uint16)": "uint16", "tensor(uint32)": "uint32",
             "tensor(uint64)": "uint64", "tensor(bool)": "bool", "tensor(float16)": "float16"}
    checked = 0
    for op, dtypes in INPUT_DTYPES.items():
        if not onnx.defs.has(op):  # the compiler's own operators (MaxPoolNd, ...)
            continue
        schema = onnx.defs.get_schema(op, 17) if op != "Gelu" else onnx.defs.get_schema(op)
        param = schema.inputs[0].type_str
        allowed = [c.allowed_type_strs for c in schema.type_constraints
                   if c.type_param_str == param]
        if not allowed:
            continue
        allowed = {names[t] for t in allowed[0] if t in names}
        assert set(dtypes) <= allowed, (op, sorted(set(dtypes) - allowed))
        checked += 1
    assert checked >= 30

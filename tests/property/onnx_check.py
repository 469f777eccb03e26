"""Judge one random ONNX graph (a spec of :mod:`property.gen_onnx`): polyopt.graph
against onnxruntime.

This module's text is pasted into every ``onnx`` case's reproducer, so it imports only
NumPy at the top (onnx, onnxruntime and polyopt inside the functions).  :func:`judge`
builds the model, runs it on onnxruntime (``intra_op_num_threads=1``; ``onnx.reference``
for the dtypes onnxruntime has no kernel for) and on
polyopt.graph (no disk cache), and says the outcome:

* ``ok-accepted``: both ran and the outputs agree (exactly for integers);
* ``ok-refused``: polyopt refused with a ``PolyoptError`` (never ``InternalError``): for
  a dtype it does not compute (``UnsupportedDTypeError``), or a model onnxruntime refuses
  too;
* ``ok-no-oracle``: neither onnxruntime (NOT_IMPLEMENTED) nor ``onnx.reference`` computes
  it and polyopt ran (nothing to compare with); where only onnxruntime has no kernel,
  ``onnx.reference`` is the reference;
* a defect: ``wrong`` (numbers differ), ``internal``, ``crash`` (another exception),
  ``bad-refusal`` (a float32 model of supported operators refused), ``accepted-invalid``
  (a model onnxruntime finds invalid ran); the pool adds ``signal`` and ``timeout``.

>>> spec = {"dtype": "float32", "inputs": {"x": [2, 3]}, "outputs": ["y"], "seed": 1,
...         "fuse": True, "threads": 1, "nodes": [{"op": "Relu", "inputs": ["x"],
...         "output": "y", "attrs": {}, "consts": {}}]}
>>> judge(spec)
('ok-accepted', '')
"""

import numpy as np

FLOATS = ("float32", "float64")


def random_array(rng, dtype: str, shape) -> np.ndarray:
    """Normal floats; small integers, never 0 (an integer division by 0 is undefined:
    onnxruntime's process dies of SIGFPE)."""
    if dtype in FLOATS:
        return rng.standard_normal(shape).astype(dtype)
    value = rng.integers(1 if dtype == "uint8" else -20, 21, size=shape).astype(dtype)
    value[value == 0] = 3
    return value


def build_model(spec):
    """The ONNX model of ``spec``."""
    from onnx import helper, numpy_helper

    def elem(dtype):
        return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    dtype = spec["dtype"]
    inits, nodes = [], []
    for index, node in enumerate(spec["nodes"]):
        for name, data in node["consts"].items():
            array = np.array(data["data"], data["dtype"]).reshape(data["shape"])
            inits.append(numpy_helper.from_array(array, name))
        nodes.append(helper.make_node(node["op"], node["inputs"], [node["output"]],
                                      name=f"n{index}_{node['op']}", **node["attrs"]))
    inputs = [helper.make_tensor_value_info(n, elem(dtype), s) for n, s in spec["inputs"].items()]
    outputs = [helper.make_tensor_value_info(n, elem(dtype), None) for n in spec["outputs"]]
    graph = helper.make_graph(nodes, "property", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def feeds_of(spec) -> dict:
    rng = np.random.default_rng(spec["seed"])
    return {name: random_array(rng, spec["dtype"], shape) for name, shape in spec["inputs"].items()}


def reference_outputs(model, spec, feeds):
    """The outputs of ``onnx.reference`` (ONNX's NumPy implementation of each operator),
    or None where it has none either."""
    try:
        from onnx.reference import ReferenceEvaluator
        outputs = ReferenceEvaluator(model).run(spec["outputs"], feeds)
    except Exception:  # noqa: BLE001  (then there is no oracle)
        return None
    return {name: np.asarray(value) for name, value in zip(spec["outputs"], outputs)}


def onnxruntime_outputs(model, spec, feeds) -> tuple[dict | None, str]:
    """``(outputs, "")`` from onnxruntime (one thread), or ``(None, its error)``.  When
    one of onnxruntime's own graph rewrites fails (its relu_clip_fusion on some Clip
    nodes), the model is run again without them: that is onnxruntime's defect, not the
    model's."""
    import onnxruntime as rt

    options = rt.SessionOptions()
    options.intra_op_num_threads = 1
    oracle = ""
    for rewrites in (True, False):
        if not rewrites:
            options.graph_optimization_level = rt.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            session = rt.InferenceSession(model.SerializeToString(), options,
                                          providers=["CPUExecutionProvider"])
            return dict(zip(spec["outputs"], session.run(spec["outputs"], feeds))), ""
        except Exception as err:  # noqa: BLE001  (onnxruntime's errors: classified by name)
            oracle = f"{type(err).__name__}: {str(err)[:200]}"
            if "optimizer" not in oracle:
                break
    return None, oracle


def judge(spec) -> tuple[str, str]:
    """``(outcome, detail)`` of one case (see the module's doc)."""
    import polyopt as po

    model = build_model(spec)
    feeds = feeds_of(spec)
    expected, oracle = onnxruntime_outputs(model, spec, feeds)
    if expected is None:
        if "NOT_IMPLEMENTED" in oracle:  # no kernel (float64 Elu, int8 Relu, ...): ONNX's
            expected = reference_outputs(model, spec, feeds)  # reference implementation
    try:
        compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=spec["threads"],
                                    fuse_ops=spec["fuse"], cache=False)
        got = compiled.run(feeds)
    except po.InternalError as err:
        return "internal", str(err)[:400]
    except po.PolyoptError as err:
        if expected is not None and spec["dtype"] == "float32" and not isinstance(
                err, po.graph.UnsupportedOperatorError):
            return "bad-refusal", f"{type(err).__name__}: {str(err)[:300]}"
        return "ok-refused", f"{type(err).__name__}: {str(err)[:300]}"
    except Exception as err:  # noqa: BLE001  (the defect this test looks for)
        return "crash", f"{type(err).__module__}.{type(err).__name__}: {str(err)[:300]}"
    if expected is None:
        if "NOT_IMPLEMENTED" in oracle or "NotImplemented" in oracle:
            return "ok-no-oracle", oracle
        return "accepted-invalid", f"onnxruntime: {oracle}"
    for name, value in expected.items():
        result = got[name]
        if result.dtype != value.dtype or result.shape != value.shape:
            return "wrong", (f"{name}: polyopt {result.dtype}{list(result.shape)}, "
                             f"onnxruntime {value.dtype}{list(value.shape)}")
        if spec["dtype"] in FLOATS:
            tol = 1e-3 if spec["dtype"] == "float32" else 1e-5
            close = np.isclose(result, value, rtol=tol, atol=tol, equal_nan=True)
        else:
            close = result == value
        if not close.all():
            where = tuple(int(i) for i in np.argwhere(~close)[0])
            return "wrong", (f"{name}{list(where)}: polyopt {result[where]!r}, onnxruntime "
                             f"{value[where]!r} ({int((~close).sum())} of {close.size} differ)")
    return "ok-accepted", ""

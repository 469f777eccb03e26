"""Random ONNX graphs for the graph layer's property tests, and a worker that runs them.

A case is a plain-data *spec* (JSON): one dtype, the inputs' shapes, the nodes (operator,
inputs, attributes, constant inputs) and the outputs.  :func:`graph_specs` draws one with
hypothesis over the operators polyopt.graph supports and every dtype (float32, float64,
int8, uint8, int32, int64), attributes and broadcasting included.  :func:`judge` builds
the model, runs it on onnxruntime (``intra_op_num_threads=1``) and on polyopt.graph, and
says the outcome:

* ``ok-accepted``: both ran and the outputs agree (exactly for integers);
* ``ok-refused``: polyopt refused with a ``PolyoptError`` (never ``InternalError``): for
  a dtype it does not compute (``UnsupportedDTypeError``), or a model onnxruntime refuses
  too;
* ``ok-no-oracle``: onnxruntime has no kernel for it (NOT_IMPLEMENTED) and polyopt ran;
* a defect: ``wrong`` (numbers differ), ``internal``, ``crash`` (another exception),
  ``bad-refusal`` (a float32 model of supported operators refused), ``accepted-invalid``
  (a model onnxruntime finds invalid ran); the runner adds ``signal`` and ``timeout``.

:class:`CaseRunner` runs each case in a persistent worker process (``python -m
testlib.onnx_property``) under a time limit, restarting it when it dies or hangs.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time

import numpy as np

DTYPES = ("float32", "float64", "int8", "uint8", "int32", "int64")
FLOATS = ("float32", "float64")
OK = ("ok-accepted", "ok-refused", "ok-no-oracle")

UNARY = ("Relu", "Neg", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Identity", "Softmax",
         "Clip", "Transpose", "Reshape", "Flatten", "Slice", "Unsqueeze", "Squeeze")
BINARY = ("Add", "Sub", "Mul", "Div", "Concat", "MatMul")
WINDOW = ("Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization")
INTEGER_OPS = ("Relu", "Neg", "Clip", "Identity", "Transpose", "Reshape", "Flatten", "Slice",
               "Unsqueeze", "Squeeze", "Add", "Sub", "Mul", "Div", "Concat", "MatMul",
               "MaxPool")  # (some of them, onnxruntime only for some integer dtypes)


# -- drawing specs -----------------------------------------------------------------------------

def graph_specs(max_nodes: int = 6):
    """A hypothesis strategy of specs with 1 to ``max_nodes`` operators."""
    from hypothesis import strategies as st

    @st.composite
    def draw_spec(draw):
        dtype = draw(st.sampled_from(DTYPES))
        rank = draw(st.integers(1, 4))
        shape = [draw(st.integers(1, 5)) for _ in range(rank)]
        if rank == 4 and draw(st.booleans()):
            shape[2:] = [draw(st.integers(3, 7)) for _ in range(2)]
        spec = {"dtype": dtype, "inputs": {"x": shape}, "nodes": [], "outputs": []}
        tensors = {"x": shape}
        last = "x"
        for k in range(draw(st.integers(1, max_nodes))):
            # mostly a chain, sometimes a branch from an earlier tensor
            source = last if draw(st.integers(0, 3)) else draw(st.sampled_from(sorted(tensors)))
            node = _draw_node(draw, st, spec, tensors, source, k)
            if node is None:
                continue
            spec["nodes"].append(node)
            last = node["output"]
        outputs = [last] if last != "x" else []
        extra = draw(st.sampled_from(sorted(tensors)))
        if extra not in outputs and extra not in spec["inputs"] and draw(st.booleans()):
            outputs.append(extra)
        if not outputs:  # at least one operator
            spec["nodes"].append({"op": "Relu" if dtype != "uint8" else "Identity",
                                  "inputs": ["x"], "output": "y", "attrs": {}, "consts": {}})
            outputs = ["y"]
        spec["outputs"] = outputs
        spec["seed"] = draw(st.integers(0, 2**16))
        spec["fuse"] = draw(st.integers(0, 3)) > 0
        spec["threads"] = draw(st.sampled_from((1, 1, 2)))
        return spec

    return draw_spec()


def _draw_node(draw, st, spec, tensors, source, k):
    """One node reading ``source`` (and maybe a new input or constant), or None."""
    shape = tensors[source]
    rank = len(shape)
    dtype = spec["dtype"]
    ops = list(UNARY + BINARY) + (list(WINDOW) * 2 if rank == 4 else [])
    if rank >= 1 and dtype in FLOATS:
        ops.append("LayerNormalization")
    if dtype not in FLOATS and draw(st.integers(0, 4)):  # mostly what integers take
        ops = [op for op in ops if op in INTEGER_OPS]
    op = draw(st.sampled_from(ops))
    out = f"t{k}"
    node = {"op": op, "inputs": [source], "output": out, "attrs": {}, "consts": {}}
    new_shape = list(shape)

    def const(name, value):
        node["consts"][name] = {"dtype": str(np.asarray(value).dtype),
                                "shape": list(np.shape(value)),
                                "data": np.asarray(value).ravel().tolist()}
        node["inputs"].append(name)

    def values(shape_):
        rng = np.random.default_rng(draw(st.integers(0, 1000)))
        return _random(rng, dtype, shape_)

    if op == "Clip":
        lo, hi = sorted(values([2]).tolist())
        const(f"{out}_min", np.array(lo, dtype))
        const(f"{out}_max", np.array(hi, dtype))
    elif op == "Softmax":
        node["attrs"]["axis"] = -1
    elif op == "Transpose":
        node["attrs"]["perm"] = draw(st.permutations(range(rank)))
        new_shape = [shape[p] for p in node["attrs"]["perm"]]
    elif op == "Reshape":
        choice = draw(st.integers(0, 2))
        target = [-1] if choice == 0 else shape[::-1] if choice == 1 else [shape[0], -1]
        const(f"{out}_shape", np.array(target, np.int64))
        total = int(np.prod(shape))
        new_shape = [total] if choice == 0 else shape[::-1] if choice == 1 else \
            [shape[0], total // shape[0]]
    elif op == "Flatten":
        axis = draw(st.integers(-rank, rank))
        node["attrs"]["axis"] = axis
        axis = axis + rank if axis < 0 else axis
        new_shape = [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]
    elif op == "Slice":
        axis = draw(st.integers(0, rank - 1))
        step = draw(st.sampled_from((1, 1, 2, -1)))
        start = draw(st.integers(-shape[axis], shape[axis] - 1))
        end = draw(st.integers(-shape[axis] - 1, shape[axis] + 1))
        const(f"{out}_starts", np.array([start], np.int64))
        const(f"{out}_ends", np.array([end], np.int64))
        const(f"{out}_axes", np.array([axis - rank if draw(st.booleans()) else axis], np.int64))
        const(f"{out}_steps", np.array([step], np.int64))
        new_shape[axis] = len(range(*slice(start, end, step).indices(shape[axis])))
        if new_shape[axis] == 0:
            return None
    elif op == "Unsqueeze":
        axis = draw(st.integers(-rank - 1, rank))
        const(f"{out}_axes", np.array([axis], np.int64))
        new_shape.insert(axis % (rank + 1), 1)
    elif op == "Squeeze":
        ones = [a for a, d in enumerate(shape) if d == 1]
        if not ones or rank == 1:
            return None
        const(f"{out}_axes", np.array([ones[0]], np.int64))
        new_shape.pop(ones[0])
    elif op in ("Add", "Sub", "Mul", "Div"):
        other = _broadcast_shape(draw, st, shape)
        name = f"{out}_b"
        if draw(st.booleans()) or (op == "Div" and dtype not in FLOATS):
            if draw(st.booleans()):
                const(name, values(other))
            else:  # a new input (inputs of integer dtypes are never 0)
                spec["inputs"][name] = other
                node["inputs"].append(name)
        else:
            candidates = [t for t, s in tensors.items() if _broadcastable(s, shape)]
            partner = draw(st.sampled_from(sorted(candidates)))
            node["inputs"].append(partner)
            other = tensors[partner]
        if draw(st.booleans()) and not (op == "Div" and dtype not in FLOATS):
            node["inputs"].reverse()  # (an integer divisor is data, never a computed 0)
        new_shape = list(np.broadcast_shapes(tuple(shape), tuple(other)))
    elif op == "Concat":
        axis = draw(st.integers(-rank, rank - 1))
        other = list(shape)
        other[axis] = draw(st.integers(1, 4))
        name = f"{out}_b"
        spec["inputs"][name] = other
        node["inputs"].append(name)
        node["attrs"]["axis"] = axis
        new_shape[axis] += other[axis]
    elif op == "MatMul":
        if rank < 2:
            return None
        cols = draw(st.integers(1, 6))
        const(f"{out}_w", values([shape[-1], cols]))
        new_shape[-1] = cols
    elif op == "LayerNormalization":
        const(f"{out}_scale", values([shape[-1]]))
        if draw(st.booleans()):
            const(f"{out}_bias", values([shape[-1]]))
        node["attrs"]["axis"] = -1
    elif op in ("Conv", "MaxPool", "AveragePool"):
        kh, kw = (draw(st.integers(1, min(3, d))) for d in shape[2:])
        stride = draw(st.integers(1, 2))
        dilation = draw(st.integers(1, 2)) if op != "AveragePool" else 1
        pad = draw(st.integers(0, min(kh, kw) - 1))
        extent = [(kh - 1) * dilation + 1, (kw - 1) * dilation + 1]
        if any(d + 2 * pad < e for d, e in zip(shape[2:], extent)):
            return None
        node["attrs"].update(strides=[stride, stride], pads=[pad] * 4,
                             kernel_shape=[kh, kw])
        if dilation != 1:
            node["attrs"]["dilations"] = [dilation, dilation]
        if op == "Conv":
            channels = shape[1]
            group = draw(st.sampled_from([g for g in (1, channels) if channels % g == 0]))
            filters = draw(st.integers(1, 4)) * group
            node["attrs"]["group"] = group
            const(f"{out}_w", values([filters, channels // group, kh, kw]))
            if draw(st.booleans()):
                const(f"{out}_bias", values([filters]))
            shape_c = filters
        else:
            shape_c = shape[1]
            if op == "AveragePool":
                node["attrs"]["count_include_pad"] = draw(st.integers(0, 1))
        new_shape = [shape[0], shape_c] + [(d + 2 * pad - e) // stride + 1
                                           for d, e in zip(shape[2:], extent)]
    elif op == "GlobalAveragePool":
        new_shape = shape[:2] + [1, 1]
    elif op == "BatchNormalization":
        channels = shape[1]
        for part in ("scale", "bias", "mean"):
            const(f"{out}_{part}", values([channels]))
        rng = np.random.default_rng(draw(st.integers(0, 1000)))
        const(f"{out}_var", rng.uniform(0.5, 2.0, channels).astype(dtype)
              if dtype in FLOATS else values([channels]))
    tensors[out] = new_shape
    return node


def _broadcast_shape(draw, st, shape):
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return list(shape)
    if choice == 1:  # a suffix
        return list(shape[draw(st.integers(0, len(shape) - 1)):])
    if choice == 2:  # some dimensions 1
        return [1 if draw(st.booleans()) else d for d in shape]
    return [1]


def _broadcastable(a, b) -> bool:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b))) == tuple(b)
    except ValueError:
        return False


def _random(rng, dtype: str, shape) -> np.ndarray:
    """Normal floats; small integers, never 0 (an integer division by 0 is undefined:
    onnxruntime's process dies of SIGFPE)."""
    if dtype in FLOATS:
        return rng.standard_normal(shape).astype(dtype)
    value = rng.integers(1 if dtype == "uint8" else -20, 21, size=shape).astype(dtype)
    value[value == 0] = 3
    return value


# -- one case ----------------------------------------------------------------------------------

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
    return {name: _random(rng, spec["dtype"], shape) for name, shape in spec["inputs"].items()}


def judge(spec) -> tuple[str, str]:
    """``(outcome, detail)`` of one case (see the module's doc)."""
    import onnxruntime as rt

    import polyopt as po

    model = build_model(spec)
    feeds = feeds_of(spec)
    options = rt.SessionOptions()
    options.intra_op_num_threads = 1
    expected, oracle = None, ""
    try:
        session = rt.InferenceSession(model.SerializeToString(), options,
                                      providers=["CPUExecutionProvider"])
        expected = dict(zip(spec["outputs"], session.run(spec["outputs"], feeds)))
    except Exception as err:  # noqa: BLE001  (onnxruntime's errors: classified by name)
        oracle = f"{type(err).__name__}: {str(err)[:200]}"
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


# -- the worker and its runner -----------------------------------------------------------------

def serve() -> None:
    """Answer spec lines on stdin with ``{"outcome", "detail"}`` lines (on the original
    stdout: what polyopt prints goes to stderr)."""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import onnxruntime  # noqa: F401  (imported before the first case)

    import polyopt  # noqa: F401

    protocol.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if line.strip():
            outcome, detail = judge(json.loads(line))
            protocol.write(json.dumps({"outcome": outcome, "detail": detail}) + "\n")


class CaseRunner:
    """A persistent worker process; ``runner.run(spec, timeout)`` -> ``(outcome,
    detail)``, the worker restarted after a crash (``signal``) or a ``timeout``."""

    def __init__(self):
        self.process = None

    def _start(self):
        tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        root = os.path.dirname(tests)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [root, tests, os.environ.get("PYTHONPATH", "")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "testlib.onnx_property"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        if self._answer(300.0) is None:
            raise RuntimeError("the property worker did not start")

    def _answer(self, timeout: float):
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if selector.select(timeout=max(0.0, deadline - time.monotonic())):
                line = self.process.stdout.readline()
                return json.loads(line) if line else None
        return None

    def run(self, spec, timeout: float = 120.0) -> tuple[str, str]:
        if self.process is None or self.process.poll() is not None:
            self._start()
        self.process.stdin.write(json.dumps(spec) + "\n")
        self.process.stdin.flush()
        answer = self._answer(timeout)
        if answer is not None:
            return answer["outcome"], answer["detail"]
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
            self.process = None
            return "timeout", f"no answer within {timeout:.0f} s"
        code = self.process.returncode
        self.process = None
        return "signal", f"the worker died (exit status {code})"

    def close(self):
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


if __name__ == "__main__":
    serve()

"""Random ONNX graphs for the ``onnx`` property family: a seed gives one graph.

A case is a plain-data *spec*: one dtype, the inputs' shapes, the nodes (operator,
inputs, attributes, constant inputs) and the outputs.  :func:`random_spec` draws one
over the operators polyopt.graph supports and every dtype (float32, float64, int8, uint8,
int32, int64), attributes, broadcasting, branches and several outputs included;
:func:`property.onnx_check.judge` runs it on onnxruntime and on polyopt.graph.

>>> spec = random_spec(random.Random(7))
>>> spec["dtype"] in DTYPES and spec["outputs"] != []
True
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from polyopt.graph.contracts import INPUT_DTYPES

from .onnx_check import FLOATS, random_array

ONNX_CHECK = (Path(__file__).parent / "onnx_check.py").read_text()
DTYPES = ("float32", "float64", "int8", "uint8", "int32", "int64")

UNARY = ("Relu", "Neg", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Identity", "Softmax",
         "Clip", "Transpose", "Reshape", "Flatten", "Slice", "Unsqueeze", "Squeeze", "Abs",
         "Sign", "LeakyRelu", "Elu", "Selu", "Softplus", "Reciprocal", "LogSoftmax",
         "Dropout")
BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Concat", "MatMul", "Gemm")
ELEMENTWISE = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean")
WINDOW = ("Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
          "BatchNormalization")
UNRESTRICTED = 8  # one node in this many may take a dtype its operator refuses


def random_spec(rng: random.Random, max_nodes: int = 8) -> dict:
    """A spec with 1 to ``max_nodes`` operators, drawn from ``rng``."""
    dtype = rng.choice(DTYPES)
    rank = rng.randint(1, 4)
    shape = [rng.randint(1, 5) for _ in range(rank)]
    if rank == 4 and rng.random() < 0.5:
        shape[2:] = [rng.randint(3, 7) for _ in range(2)]
    spec = {"dtype": dtype, "inputs": {"x": shape}, "nodes": [], "outputs": []}
    tensors = {"x": shape}
    last = "x"
    for k in range(rng.randint(1, max_nodes)):
        # mostly a chain, sometimes a branch from an earlier tensor
        source = last if rng.randint(0, 3) else rng.choice(sorted(tensors))
        node = _draw_node(rng, spec, tensors, source, k)
        if node is None:
            continue
        spec["nodes"].append(node)
        last = node["output"]
    outputs = [last] if last != "x" else []
    extra = rng.choice(sorted(tensors))
    if extra not in outputs and extra not in spec["inputs"] and rng.random() < 0.5:
        outputs.append(extra)
    if not outputs:  # at least one operator
        spec["nodes"].append({"op": "Relu" if dtype != "uint8" else "Identity",
                              "inputs": ["x"], "output": "y", "attrs": {}, "consts": {}})
        outputs = ["y"]
    spec["outputs"] = outputs
    spec["seed"] = rng.randint(0, 2**16)
    spec["fuse"] = rng.randint(0, 3) > 0
    spec["threads"] = rng.choice((1, 1, 2))
    return spec


def _draw_node(rng, spec, tensors, source, k):
    """One node reading ``source`` (and maybe a new input or constant), or None."""
    shape = tensors[source]
    rank = len(shape)
    dtype = spec["dtype"]
    ops = list(UNARY + BINARY) + (list(WINDOW) * 2 if rank == 4 else [])
    if rank >= 1 and dtype in FLOATS:
        ops.append("LayerNormalization")
    if rng.randrange(UNRESTRICTED):  # mostly what the operator computes (else a refusal)
        ops = [op for op in ops if dtype in INPUT_DTYPES.get(op, DTYPES)]
    op = rng.choice(ops)
    out = f"t{k}"
    node = {"op": op, "inputs": [source], "output": out, "attrs": {}, "consts": {}}
    new_shape = list(shape)

    def const(name, value):
        node["consts"][name] = {"dtype": str(np.asarray(value).dtype),
                                "shape": list(np.shape(value)),
                                "data": np.asarray(value).ravel().tolist()}
        node["inputs"].append(name)

    def values(shape_):
        return random_array(np.random.default_rng(rng.randint(0, 1000)), dtype, shape_)

    if op == "Clip":
        lo, hi = sorted(values([2]).tolist())
        const(f"{out}_min", np.array(lo, dtype))
        const(f"{out}_max", np.array(hi, dtype))
    elif op in ("Softmax", "LogSoftmax"):
        node["attrs"]["axis"] = rng.choice([-1, -1, 0])
    elif op in ("LeakyRelu", "Elu"):
        node["attrs"]["alpha"] = rng.choice([0.01, 0.5, 1.0, 2.0])
    elif op == "Selu" and rng.random() < 0.5:
        node["attrs"].update(alpha=1.5, gamma=0.7)
    elif op == "Transpose":
        node["attrs"]["perm"] = rng.sample(range(rank), rank)
        new_shape = [shape[p] for p in node["attrs"]["perm"]]
    elif op == "Reshape":
        choice = rng.randint(0, 2)
        target = [-1] if choice == 0 else shape[::-1] if choice == 1 else [shape[0], -1]
        const(f"{out}_shape", np.array(target, np.int64))
        total = int(np.prod(shape))
        new_shape = [total] if choice == 0 else shape[::-1] if choice == 1 else \
            [shape[0], total // shape[0]]
    elif op == "Flatten":
        axis = rng.randint(-rank, rank)
        node["attrs"]["axis"] = axis
        axis = axis + rank if axis < 0 else axis
        new_shape = [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]
    elif op == "Slice":
        axis = rng.randint(0, rank - 1)
        step = rng.choice((1, 1, 2, -1))
        start = rng.randint(-shape[axis], shape[axis] - 1)
        end = rng.randint(-shape[axis] - 1, shape[axis] + 1)
        const(f"{out}_starts", np.array([start], np.int64))
        const(f"{out}_ends", np.array([end], np.int64))
        const(f"{out}_axes", np.array([axis - rank if rng.random() < 0.5 else axis], np.int64))
        const(f"{out}_steps", np.array([step], np.int64))
        new_shape[axis] = len(range(*slice(start, end, step).indices(shape[axis])))
        if new_shape[axis] == 0:
            return None
    elif op == "Unsqueeze":
        axis = rng.randint(-rank - 1, rank)
        const(f"{out}_axes", np.array([axis], np.int64))
        new_shape.insert(axis % (rank + 1), 1)
    elif op == "Squeeze":
        ones = [a for a, d in enumerate(shape) if d == 1]
        if not ones or rank == 1:
            return None
        const(f"{out}_axes", np.array([ones[0]], np.int64))
        new_shape.pop(ones[0])
    elif op in ELEMENTWISE:
        other = _broadcast_shape(rng, shape)
        name = f"{out}_b"
        if rng.random() < 0.5 or (op == "Div" and dtype not in FLOATS):
            if rng.random() < 0.5:
                const(name, values(other))
            else:  # a new input (inputs of integer dtypes are never 0)
                spec["inputs"][name] = other
                node["inputs"].append(name)
        else:
            candidates = [t for t, s in tensors.items() if _broadcastable(s, shape)]
            partner = rng.choice(sorted(candidates))
            node["inputs"].append(partner)
            other = tensors[partner]
        if rng.random() < 0.5 and not (op == "Div" and dtype not in FLOATS):
            node["inputs"].reverse()  # (an integer divisor is data, never a computed 0)
        new_shape = list(np.broadcast_shapes(tuple(shape), tuple(other)))
    elif op == "Concat":
        axis = rng.randint(-rank, rank - 1)
        other = list(shape)
        other[axis] = rng.randint(1, 4)
        name = f"{out}_b"
        spec["inputs"][name] = other
        node["inputs"].append(name)
        node["attrs"]["axis"] = axis
        new_shape[axis] += other[axis]
    elif op == "MatMul":
        if rank < 2:
            return None
        cols = rng.randint(1, 6)
        const(f"{out}_w", values([shape[-1], cols]))
        new_shape[-1] = cols
    elif op == "Gemm":
        if rank != 2:
            return None
        cols = rng.randint(1, 6)
        trans_a, trans_b = rng.randint(0, 1), rng.randint(0, 1)
        if trans_a:  # A is read transposed: its rows are the contraction
            inner, rows = shape
        else:
            rows, inner = shape
        const(f"{out}_w", values([cols, inner] if trans_b else [inner, cols]))
        if rng.random() < 0.5:
            const(f"{out}_c", values(rng.choice([[cols], [1], [rows, cols]])))
        node["attrs"].update(transA=trans_a, transB=trans_b,
                             alpha=rng.choice([1.0, 0.5]), beta=rng.choice([1.0, 2.0]))
        new_shape = [rows, cols]
    elif op == "LayerNormalization":
        const(f"{out}_scale", values([shape[-1]]))
        if rng.random() < 0.5:
            const(f"{out}_bias", values([shape[-1]]))
        node["attrs"]["axis"] = -1
    elif op in ("Conv", "MaxPool", "AveragePool"):
        kh, kw = (rng.randint(1, min(3, d)) for d in shape[2:])
        stride = rng.randint(1, 2)
        dilation = rng.randint(1, 2) if op != "AveragePool" else 1
        pad = rng.randint(0, min(kh, kw) - 1)
        extent = [(kh - 1) * dilation + 1, (kw - 1) * dilation + 1]
        if any(d + 2 * pad < e for d, e in zip(shape[2:], extent)):
            return None
        node["attrs"].update(strides=[stride, stride], pads=[pad] * 4,
                             kernel_shape=[kh, kw])
        if dilation != 1:
            node["attrs"]["dilations"] = [dilation, dilation]
        if op == "Conv":
            channels = shape[1]
            group = rng.choice([g for g in (1, channels) if channels % g == 0])
            filters = rng.randint(1, 4) * group
            node["attrs"]["group"] = group
            const(f"{out}_w", values([filters, channels // group, kh, kw]))
            if rng.random() < 0.5:
                const(f"{out}_bias", values([filters]))
            shape_c = filters
        else:
            shape_c = shape[1]
            if op == "AveragePool":
                node["attrs"]["count_include_pad"] = rng.randint(0, 1)
        new_shape = [shape[0], shape_c] + [(d + 2 * pad - e) // stride + 1
                                           for d, e in zip(shape[2:], extent)]
    elif op in ("GlobalAveragePool", "GlobalMaxPool"):
        new_shape = shape[:2] + [1, 1]
    elif op == "BatchNormalization":
        channels = shape[1]
        for part in ("scale", "bias", "mean"):
            const(f"{out}_{part}", values([channels]))
        spread = np.random.default_rng(rng.randint(0, 1000))
        const(f"{out}_var", spread.uniform(0.5, 2.0, channels).astype(dtype)
              if dtype in FLOATS else values([channels]))
    tensors[out] = new_shape
    return node


def _broadcast_shape(rng, shape):
    choice = rng.randint(0, 3)
    if choice == 0:
        return list(shape)
    if choice == 1:  # a suffix
        return list(shape[rng.randint(0, len(shape) - 1):])
    if choice == 2:  # some dimensions 1
        return [1 if rng.random() < 0.5 else d for d in shape]
    return [1]


def _broadcastable(a, b) -> bool:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b))) == tuple(b)
    except ValueError:
        return False


def family_onnx(rng, script):
    """One random graph (up to 8 operators) against onnxruntime."""
    spec = random_spec(rng)
    script.run(ONNX_CHECK, top=True)
    script.run(f"SPEC = {spec!r}\noutcome, detail = judge(SPEC)\n"
               "OUTCOME = f'{outcome} {detail}'")
    return script.namespace["OUTCOME"]

"""``tvm.ir.save_json`` / ``tvm.ir.load_json``: tensors, ops and expressions as JSON; a
schedule as its output tensors and its recorded script (``s.script()``), replayed when
loaded.

The JSON lists the graph's nodes once each (shared axes and tensors stay shared), each
with its type and fields; loading rebuilds only polyopt's tensor-expression types
(:data:`TYPES`), never running code, so a JSON text from anywhere is safe to load.
Python functions (a ``te.comm_reducer``'s combiner) have no JSON form: refused.

>>> import polyopt as te
>>> A = te.placeholder((4,), name="A")
>>> B = te.compute((4,), lambda i: A[i] * 2, name="B")
>>> C = load_json(save_json(B))
>>> read = C.op.body.a
>>> str(C.op.body), read.tensor.name, C.op.axis[0] is read.indices[0]
('A[i] * 2', 'A', True)
"""

from __future__ import annotations

import dataclasses
import json

from ..errors import InvalidArgumentError, public
from ..te import expr as _expr
from ..te.scan import ScanGroup, ScanOp
from ..te.tags import OpAttrs
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor
from ..transform.schedule import Schedule, create_schedule

FORMAT = "polyopt-te-json-1"
TYPES = {cls.__name__: cls for cls in (
    _expr.Const, _expr.Var, _expr.IterVar, _expr.BinOp, _expr.Compare, _expr.Logical,
    _expr.Select, _expr.Call, _expr.Cast, _expr.TensorRead, _expr.Reduce,
    PlaceholderOp, ComputeOp, ScanOp, ScanGroup)}


@public
def save_json(node) -> str:
    """A tensor, an op, an expression or a schedule as JSON text (see the module)."""
    nodes: list = []
    index: dict[int, int] = {}

    def encode(value):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, tuple):
            return {"tuple": [encode(v) for v in value]}
        if isinstance(value, list):
            return {"list": [encode(v) for v in value]}
        if isinstance(value, OpAttrs):
            return {"attrs": [[encode(k), encode(v)] for k, v in value.items()]}
        if isinstance(value, dict):
            return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
        if id(value) in index:
            return {"ref": index[id(value)]}
        if isinstance(value, Tensor):
            entry = {"type": "Tensor"}
        elif type(value).__name__ in TYPES and type(value) is TYPES[type(value).__name__]:
            entry = {"type": type(value).__name__}
        else:
            raise InvalidArgumentError(
                f"save_json: a {type(value).__name__} has no JSON form (a comm_reducer's "
                "Python functions, for instance); pickle the tensors instead")
        index[id(value)] = len(nodes)
        nodes.append(entry)
        if isinstance(value, Tensor):
            entry["op"] = encode(value.op)
        else:
            entry["fields"] = {f.name: encode(getattr(value, f.name))
                               for f in dataclasses.fields(value)}
        return {"ref": index[id(value)]}

    if isinstance(node, Schedule):  # its tensors and its script, as pickling does
        if node.kernel is not None or node.default_args is not None:
            raise InvalidArgumentError("save_json: a schedule of an in-place kernel has no "
                                       "JSON form; save s.script() and replay it")
        schedule = {"script": node.script(), "strict_fp": node.strict_fp}
        return json.dumps({"format": FORMAT, "root": encode(tuple(node.output_tensors)),
                           "nodes": nodes, "schedule": schedule})
    root = encode(node)
    return json.dumps({"format": FORMAT, "root": root, "nodes": nodes})


@public
def load_json(text: str):
    """The tensor, op, expression or schedule that :func:`save_json` wrote (new objects)."""
    try:
        document = json.loads(text)
        nodes, root = document["nodes"], document["root"]
    except (TypeError, ValueError, KeyError) as err:
        raise InvalidArgumentError(f"load_json takes the text of save_json ({err})") from None
    if document.get("format") != FORMAT or not isinstance(nodes, list):
        raise InvalidArgumentError(f"load_json takes {FORMAT} text, got format "
                                   f"{document.get('format')!r}")
    built: dict[int, object] = {}
    tensors = {k: Tensor.__new__(Tensor) for k, n in enumerate(nodes)
               if isinstance(n, dict) and n.get("type") == "Tensor"}

    def decode(value):
        if not isinstance(value, dict):
            return value
        if "tuple" in value:
            return tuple(decode(v) for v in value["tuple"])
        if "list" in value:
            return [decode(v) for v in value["list"]]
        if "dict" in value:
            return {decode(k): decode(v) for k, v in value["dict"]}
        if "attrs" in value:
            return OpAttrs({decode(k): decode(v) for k, v in value["attrs"]})
        return node_at(value.get("ref"))

    def node_at(k):
        if not isinstance(k, int) or not 0 <= k < len(nodes):
            raise InvalidArgumentError(f"load_json: no node {k!r}")
        if k in tensors:
            return tensors[k]
        if k not in built:
            entry = nodes[k]
            cls = TYPES.get(entry.get("type")) if isinstance(entry, dict) else None
            fields = entry.get("fields") if cls is not None else None
            if not isinstance(fields, dict) or not _known_fields(cls, fields):
                raise InvalidArgumentError(f"load_json: node {k} is not a tensor-expression "
                                           "node that save_json writes")
            built[k] = cls(**{name: decode(v) for name, v in fields.items()})
        return built[k]

    result = decode(root)
    for k, tensor in tensors.items():
        tensor.op = decode(nodes[k].get("op"))
    if "schedule" in document:
        return _schedule(result, document["schedule"])
    return result


def _schedule(outputs, saved) -> Schedule:
    """The schedule :func:`save_json` saved: its tensors' new schedule, the script replayed
    (literal calls only, each checked)."""
    if not (isinstance(outputs, tuple) and outputs and isinstance(saved, dict)
            and all(isinstance(t, Tensor) for t in outputs)
            and isinstance(saved.get("script"), str)
            and isinstance(saved.get("strict_fp"), bool)):
        raise InvalidArgumentError("load_json: the saved schedule needs its output tensors, "
                                   "script and strict_fp, as save_json writes them")
    schedule = create_schedule(list(outputs), strict_fp=saved["strict_fp"])
    return schedule.replay(saved["script"]) if saved["script"] else schedule


def _known_fields(cls, fields: dict) -> bool:
    """Whether ``fields`` fit ``cls``: every field it names is one of ``cls``'s, and every
    field it leaves out has a default (text saved before a field was added, such as a
    reduction's ``init``, loads with that default)."""
    if cls is None:
        return False
    known = dataclasses.fields(cls)
    required = {f.name for f in known if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    return set(fields) <= {f.name for f in known} and required <= set(fields)

"""What the ONNX importer does to a model as users have it before building the graph:
older opsets converted to the one polyopt reads, constant subgraphs folded, optional
outputs nothing reads dropped.

* :func:`convert_opset`: a model of opset 7 to 12 goes through
  ``onnx.version_converter`` to :data:`TARGET_OPSET` (a failure is refused by name).
* :func:`fold_node`: a node of :data:`FOLDABLE` whose inputs are all constants is
  evaluated once, at import, by onnx's reference evaluator (``ConstantOfShape`` of a
  constant shape, ``Range``, arithmetic, ``Cast``, ``Reshape`` on initializers ...).
* :func:`unread_outputs_dropped`: the outputs after the first that no node and no graph
  output reads become absent (Dropout's mask, BatchNormalization's running statistics).

>>> from onnx import helper
>>> node = helper.make_node("Range", ["a", "b", "c"], ["r"])
>>> import numpy as np
>>> fold_node(node, [np.array(0, np.int64), np.array(5, np.int64), np.array(2, np.int64)])
[array([0, 2, 4])]
"""

from __future__ import annotations

import numpy as np

from .graph_errors import ConstantFoldError, OpsetError

TARGET_OPSET = 13  # the opset older models are converted to
FOLDABLE = frozenset((
    "Constant", "ConstantOfShape", "Range", "Add", "Sub", "Mul", "Div", "Pow", "Neg", "Abs",
    "Sqrt", "Floor", "Ceil", "Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Concat",
    "Gather", "Slice", "Transpose", "Identity", "Expand", "Tile", "Equal", "Less", "Greater",
    "Not", "Where", "Min", "Max", "Sum", "ReduceProd", "ReduceSum", "Size", "Shape",
    "Relu", "Exp", "Sigmoid", "Tanh"))


def convert_opset(onnx, model, version: int | None):
    """``model`` converted to :data:`TARGET_OPSET` when its default-domain opset is
    older; refused with :class:`OpsetError` when onnx cannot convert it."""
    if version is not None and version >= TARGET_OPSET:
        return model
    if version is None:
        raise OpsetError(None, TARGET_OPSET)
    from onnx import version_converter

    try:
        return version_converter.convert_version(model, TARGET_OPSET)
    except Exception as err:  # noqa: BLE001  (the converter raises many kinds: say which)
        raise OpsetError(version, TARGET_OPSET, err) from err


def fold_node(node, values: list, opset: int = TARGET_OPSET) -> list[np.ndarray]:
    """The outputs of the ONNX ``node`` evaluated on the constant ``values`` of its
    inputs (None for an absent optional input)."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"in{k}" if name else "" for k, name in enumerate(node.input)]
    renamed = helper.make_node(node.op_type, names, list(node.output), domain=node.domain)
    renamed.attribute.extend(node.attribute)
    try:
        evaluator = ReferenceEvaluator(helper.make_function(
            "polyopt.fold", "fold", [n for n in names if n], list(node.output), [renamed],
            [helper.make_opsetid("", opset)]))
        feeds = {n: np.asarray(v) for n, v in zip(names, values) if n}
        outputs = evaluator.run(None, feeds, attributes={})
    except Exception as err:  # noqa: BLE001  (the reference evaluator raises many kinds)
        raise ConstantFoldError(node.name or node.op_type, node.op_type, err) from err
    return [np.asarray(o) for o in outputs]


def unread_outputs_dropped(graph) -> list[list[str]]:
    """Per node of ``graph`` (a GraphProto), its output names with those after the first
    that nothing reads replaced by ``""``."""
    read = {name for node in graph.node for name in node.input}
    read |= {o.name for o in graph.output}
    return [[name if k == 0 or name in read else "" for k, name in enumerate(node.output)]
            for node in graph.node]

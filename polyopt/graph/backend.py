"""polyopt.graph as an ONNX backend (``onnx.backend.base.Backend``), so that onnx's own
conformance runner, ``onnx.backend.test.BackendTest``, runs against it.

A prepared model is imported and compiled on its first run, for the shapes of the
inputs it is given (inputs with symbolic dimensions take the given sizes); later runs
with the same shapes reuse the compiled model.  An input polyopt needs as a constant
(Reshape's shape, Pad's pads, a reduction's axes, Gather's indices ...) is compiled in
with the value it is fed; the compiled model is reused only for that value.

>>> import numpy as np
>>> from onnx import helper, TensorProto
>>> from polyopt.graph.backend import PolyoptBackend
>>> model = helper.make_model(helper.make_graph(
...     [helper.make_node("Relu", ["x"], ["y"])], "g",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])]),
...     opset_imports=[helper.make_opsetid("", 17)])
>>> PolyoptBackend.run_model(model, [np.array([[-1, 0, 2]], "float32")])[0]
array([[0., 0., 2.]], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, MissingBackendError
from .graph_errors import UnsupportedInputError

try:
    import onnx
    from onnx.backend.base import Backend, BackendRep
except ImportError as _err:  # pragma: no cover (the graph extra installs onnx)
    raise MissingBackendError(
        "polyopt.graph.backend needs the 'onnx' package: pip install onnx "
        "(or pip install 'polyopt[graph]')") from _err

DEVICES = ("CPU",)


class PolyoptRep(BackendRep):
    """A prepared model: ``run(inputs)`` takes the inputs as a list (in the model's
    order) or a dict by name and returns the outputs as a tuple, in the model's order."""

    def __init__(self, model, num_threads: int = 1):
        self.model = model
        self.num_threads = num_threads
        initialized = {t.name for t in model.graph.initializer}
        self.input_names = [v.name for v in model.graph.input if v.name not in initialized]
        self.output_names = [v.name for v in model.graph.output]
        self._compiled: dict[tuple, object] = {}
        self._frozen: set[str] = set()  # inputs compiled in as constants (see _import)

    def run(self, inputs, **kwargs):
        from . import compile as compile_graph
        from .onnx_import import from_onnx

        feeds = self._feeds(inputs)
        key = tuple((n, a.shape, a.dtype.str) for n, a in feeds.items()) + tuple(
            (n, feeds[n].tobytes()) for n in sorted(self._frozen) if n in feeds)
        compiled = self._compiled.get(key)
        if compiled is None:
            graph = self._import(from_onnx, feeds)
            compiled = compile_graph(graph, num_threads=self.num_threads)
            key = tuple((n, a.shape, a.dtype.str) for n, a in feeds.items()) + tuple(
                (n, feeds[n].tobytes()) for n in sorted(self._frozen) if n in feeds)
            self._compiled[key] = compiled
        results = compiled.run({n: a for n, a in feeds.items() if n not in self._frozen})
        constants = compiled.graph.constants
        return tuple(results[n] if n in results else constants[n] for n in self.output_names)

    def import_graph(self, inputs):
        """The graph the model is compiled to for ``inputs`` (refusals raised here)."""
        from .onnx_import import from_onnx

        return self._import(from_onnx, self._feeds(inputs))

    def _import(self, from_onnx, feeds: dict):
        """The graph of the model for ``feeds``; an input that polyopt needs as a
        constant (a shape, axes, pads, indices ...) takes the value it is fed: the
        compiled model is made for that value (and used again only for it)."""
        while True:
            model = self._with_constants({n: feeds[n] for n in self._frozen if n in feeds})
            try:
                return from_onnx(model, shapes={n: a.shape for n, a in feeds.items()
                                                if n not in self._frozen})
            except UnsupportedInputError as err:
                if err.problem != "constant" or err.tensor not in feeds or \
                        err.tensor in self._frozen:
                    raise
                self._frozen.add(err.tensor)

    def _with_constants(self, values: dict):
        if not values:
            return self.model
        from onnx import numpy_helper

        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        model.graph.initializer.extend(numpy_helper.from_array(np.asarray(value), name)
                                       for name, value in values.items())
        return model

    def _feeds(self, inputs) -> dict:
        if isinstance(inputs, dict):
            return {name: np.asarray(value) for name, value in inputs.items()}
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        inputs = list(inputs)
        if len(inputs) != len(self.input_names):
            raise InvalidArgumentError(
                f"the model has {len(self.input_names)} input(s) ({', '.join(self.input_names)}), "
                f"got {len(inputs)} array(s)")
        return {name: np.asarray(value) for name, value in zip(self.input_names, inputs)}


class PolyoptBackend(Backend):
    """``prepare(model, device="CPU")``, ``run_model``, ``run_node``, ``supports_device``."""

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs) -> PolyoptRep:
        if not isinstance(model, onnx.ModelProto):
            raise InvalidArgumentError(
                f"prepare needs an onnx.ModelProto, got {type(model).__name__}")
        if not cls.supports_device(device):
            raise InvalidArgumentError(
                f"polyopt.graph runs on the devices {', '.join(DEVICES)}, not {device!r}")
        return PolyoptRep(model, int(kwargs.get("num_threads", 1)))

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        """The outputs of one ONNX node on ``inputs`` (a list, in the node's order)."""
        from onnx import helper

        arrays = [np.asarray(a) for a in inputs]
        present = [name for name in node.input if name]
        if len(present) != len(arrays):
            raise InvalidArgumentError(
                f"the node {node.op_type} has {len(present)} input(s), got {len(arrays)} arrays")
        value_infos = [helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for name, a in zip(present, arrays)]
        outputs = [helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None)
                   for name in node.output if name]
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        model = helper.make_model(
            helper.make_graph([node], "node", value_infos, outputs),
            opset_imports=[helper.make_opsetid(node.domain or "", opset)])
        return cls.run_model(model, arrays, device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper().split(":")[0] in DEVICES


prepare = PolyoptBackend.prepare
run_model = PolyoptBackend.run_model
run_node = PolyoptBackend.run_node
supports_device = PolyoptBackend.supports_device

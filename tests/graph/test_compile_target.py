"""``po.graph.compile(g, target="llvm -mcpu=NAME")``: a model made for a named CPU.

Its layouts, tiles and kernels are that CPU's (inspected here without running); run on a
machine that lacks the CPU's instructions it is refused with ``BackendError``, never
left to die of an illegal instruction; made for the host it computes what onnxruntime
does."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import polyopt as po  # noqa: E402
from testlib.machine import HOST, WIDE, WIDE_CPU, vector_of  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402


def matmul_relu():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 48)).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 48])],
        initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return po.graph.from_onnx(model), w


def kernel_ir(model) -> str:
    return "\n".join(s.kernel.optimized_ir for s in model.steps
                     if s.kernel is not None and hasattr(s.kernel, "optimized_ir"))


@pytest.mark.parametrize("cache", [False, True])
def test_a_model_for_a_named_cpu_has_that_cpus_vectors(tmp_path, cache):
    g, _ = matmul_relu()
    folder = str(tmp_path) if cache else False
    for cpu, info in ((WIDE_CPU, WIDE), ("haswell", po.TargetInfo.for_cpu("haswell"))):
        m = po.graph.compile(g, f"llvm -mcpu={cpu}", num_threads=1, cache=folder)
        if not cache:  # (a kernel linked from the disk cache has no IR to show)
            assert vector_of("float32", info) in kernel_ir(m), cpu


def test_a_model_for_instructions_this_machine_lacks_is_refused_when_run(tmp_path):
    g, w = matmul_relu()
    x = np.random.default_rng(1).standard_normal((32, 64)).astype("float32")
    for cache in (False, str(tmp_path)):
        m = po.graph.compile(g, f"llvm -mcpu={WIDE_CPU}", num_threads=1, cache=cache)
        if set(WIDE.features) <= set(HOST.features):
            assert_numbers(m.run({"x": x})["y"], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
        else:
            with pytest.raises(po.BackendError, match="lacks"):
                m.run({"x": x})


def test_a_model_for_the_host_named_as_the_host_computes_the_numbers():
    g, w = matmul_relu()
    x = np.random.default_rng(2).standard_normal((32, 64)).astype("float32")
    m = po.graph.compile(g, "llvm", num_threads=1, cache=False)
    assert_numbers(m.run({"x": x})["y"], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["opencl", "llvm-mcpu=x", 3])
def test_other_targets_are_refused_by_name(target):
    g, _ = matmul_relu()
    with pytest.raises(po.InvalidArgumentError, match="llvm -mcpu=NAME"):
        po.graph.compile(g, target)

"""A second ``po.graph.compile`` of a model in a new process loads every kernel from the
on-disk kernel cache (the AOT libraries' cache, ``POLYOPT_CACHE``), compiles none, and
computes what onnxruntime does."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.aot.cache import DiskCache  # noqa: E402
from testlib.onnx_models import lstm, ort_run, random_inputs, resnet18, single_op  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = """
import json, sys, numpy as np, onnx, polyopt as po
model = onnx.load(sys.argv[1])
feeds = dict(np.load(sys.argv[2]))
m = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
np.savez(sys.argv[3], **m.run(feeds))
kernels = len({id(s.kernel) for s in m.steps if s.kernel is not None and s.template != "lstm"})
print(json.dumps({**m.cache_stats, "groups": kernels}))
"""


def _compile_in_child(tmp_path, cache, model_path, feeds_path, tag):
    out = tmp_path / f"out_{tag}.npz"
    env = dict(os.environ, PYTHONPATH=ROOT, POLYOPT_CACHE=str(cache))
    done = subprocess.run([sys.executable, "-c", CHILD, str(model_path), str(feeds_path),
                           str(out)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), dict(np.load(out))


@pytest.mark.parametrize("build", [lambda: resnet18(width=4, resolution=16, classes=5),
                                   lambda: lstm(layers=2, seq=4, width=6, hidden=8)],
                         ids=["resnet18", "lstm"])
def test_second_process_loads_every_kernel_from_the_cache(tmp_path, build):
    model = build()
    feeds = random_inputs(model)
    model_path, feeds_path = tmp_path / "model.onnx", tmp_path / "feeds.npz"
    onnx.save(model, str(model_path))
    np.savez(feeds_path, **feeds)
    cache = tmp_path / "cache"
    first, first_out = _compile_in_child(tmp_path, cache, model_path, feeds_path, "cold")
    assert first["built"] > 0  # (identical kernels, e.g. of the two LSTM layers, load)
    assert DiskCache(str(cache)).info()["kernels"] == first["built"]
    second, second_out = _compile_in_child(tmp_path, cache, model_path, feeds_path, "warm")
    assert second["built"] == 0 and second["loaded"] == first["built"] + first["loaded"]
    expected = ort_run(model, feeds)
    for name, value in expected.items():
        np.testing.assert_array_equal(second_out[name], first_out[name])
        np.testing.assert_allclose(second_out[name], value, rtol=1e-4, atol=1e-4)


def test_cache_can_be_off_or_a_folder(tmp_path):
    model = single_op("Relu", [(3, 5)])
    g = po.graph.from_onnx(model)
    feeds = random_inputs(model)
    off = po.graph.compile(g, num_threads=1, cache=False)
    assert off.cache_stats == {"loaded": 0, "built": 0}
    folder = tmp_path / "mine"
    po.build_cache.clear()
    on = po.graph.compile(g, num_threads=1, cache=str(folder))
    assert on.cache_stats["built"] == 1 and DiskCache(str(folder)).info()["kernels"] == 1
    po.build_cache.clear()
    again = po.graph.compile(g, num_threads=1, cache=str(folder))
    assert again.cache_stats == {"loaded": 1, "built": 0}
    for name, value in ort_run(model, feeds).items():
        np.testing.assert_array_equal(again.run(feeds)[name], value)
        np.testing.assert_array_equal(off.run(feeds)[name], value)
    with pytest.raises(po.InvalidArgumentError, match="cache"):
        po.graph.compile(g, cache=3)


def test_a_code_generation_switch_does_not_load_kernels_built_without_it(tmp_path):
    model = single_op("Sigmoid", [(4, 40)])  # exp: a libmvec call unless switched off
    model_path, feeds_path = tmp_path / "model.onnx", tmp_path / "feeds.npz"
    onnx.save(model, str(model_path))
    feeds = random_inputs(model)
    np.savez(feeds_path, **feeds)
    cache = tmp_path / "cache"
    first, _ = _compile_in_child(tmp_path, cache, model_path, feeds_path, "libmvec")
    os.environ["POLYOPT_NO_LIBMVEC"] = "1"
    try:
        second, out = _compile_in_child(tmp_path, cache, model_path, feeds_path, "none")
    finally:
        del os.environ["POLYOPT_NO_LIBMVEC"]
    assert first["built"] == 1 and second == {"loaded": 0, "built": 1, "groups": 1}
    for name, value in ort_run(model, feeds).items():
        np.testing.assert_allclose(out[name], value, rtol=1e-5, atol=1e-6)


# -- entries are verified before they are linked; the folder is the user's -------------------------

def _two_kernel_model():
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    return helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Softmax", ["h"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])],
        initializer=[numpy_helper.from_array(w, "w")]), opset_imports=[helper.make_opsetid("", 17)])


def _objects(cache):
    return sorted(str(p) for p in cache.glob("objects/*/*.o"))


def _truncate(path):
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])


def _swap(paths):
    first, second = (open(p, "rb").read() for p in paths[:2])
    open(paths[0], "wb").write(second)
    open(paths[1], "wb").write(first)


def _edit_signature(path):
    meta_path = path[:-2] + ".json"
    meta = json.load(open(meta_path))
    meta["signature"]["args"][-1]["dtype"] = "float64"  # a wider output than the buffer
    open(meta_path, "w").write(json.dumps(meta))


@pytest.mark.parametrize("damage", ["truncate", "swap", "edit_signature", "garbage"])
def test_damaged_entries_are_built_again_never_linked(tmp_path, damage):
    model = _two_kernel_model()
    feeds = random_inputs(model)
    model_path, feeds_path = tmp_path / "model.onnx", tmp_path / "feeds.npz"
    onnx.save(model, str(model_path))
    np.savez(feeds_path, **feeds)
    cache = tmp_path / "cache"
    first, _ = _compile_in_child(tmp_path, cache, model_path, feeds_path, "cold")
    objects = _objects(cache)
    assert first["built"] == len(objects) == 2
    if damage == "truncate":
        _truncate(objects[0])
    elif damage == "swap":
        _swap(objects)
    elif damage == "edit_signature":
        _edit_signature(objects[0])
    else:
        open(objects[0], "wb").write(b"\x7fELF" + b"\xff" * 4000)
    second, out = _compile_in_child(tmp_path, cache, model_path, feeds_path, "damaged")
    assert second["built"] == (2 if damage == "swap" else 1)
    np.testing.assert_allclose(out["y"], ort_run(model, feeds)["y"], rtol=1e-4, atol=1e-5)
    third, _ = _compile_in_child(tmp_path, cache, model_path, feeds_path, "repaired")
    assert third == {"loaded": 2, "built": 0, "groups": 2}  # the rebuilt entries are whole


def test_a_swapped_request_record_is_not_followed(tmp_path):
    from polyopt.graph.kernel_cache import KernelCache

    cache = KernelCache(str(tmp_path / "cache"))
    A = po.placeholder((4,), name="A")
    B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = po.compute((4,), lambda i: A[i] * 3.0, name="C")
    first, second = cache.request(("plus",), 1), cache.request(("times",), 1)
    cache.build(po.create_schedule(B), [A, B], num_threads=1, request=first)
    cache.build(po.create_schedule(C), [A, C], num_threads=1, request=second)
    assert cache.find(first) is not None
    records = sorted((tmp_path / "cache" / "graph-requests").glob("*/*"))
    assert len(records) == 2
    a, b = (p.read_bytes() for p in records)
    records[0].write_bytes(b)
    records[1].write_bytes(a)
    assert cache.find(first) is None and cache.find(second) is None


def test_the_cache_folder_is_private_and_owned(tmp_path, monkeypatch):
    from polyopt.graph.kernel_cache import CacheFolderError, KernelCache

    fresh = tmp_path / "fresh"
    KernelCache(str(fresh))
    assert (fresh.stat().st_mode & 0o777) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    KernelCache(str(shared))
    assert (shared.stat().st_mode & 0o077) == 0  # made private
    link = tmp_path / "link"
    link.symlink_to(fresh)
    with pytest.raises(CacheFolderError, match="not a folder"):
        KernelCache(str(link))
    for name in ("getuid", "geteuid"):  # (make_private asks the effective user)
        monkeypatch.setattr(os, name, lambda: os.stat(fresh).st_uid + 1)
    with pytest.raises(CacheFolderError, match="belongs to another user"):
        KernelCache(str(fresh))
    model = _two_kernel_model()
    with pytest.raises(CacheFolderError):
        po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=str(fresh))

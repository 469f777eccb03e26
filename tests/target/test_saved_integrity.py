"""Saved kernels (export_library / po.load_module) are bound to their library: an edited
or swapped ``.json``, a truncated or replaced ``.so``, a signature naming a function the
library does not define as a kernel (libc's ``system``), a file other users may write,
and reserved kernel names are refused; accelerator programs say they cannot be saved."""

import json
import os

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import BackendError, InvalidArgumentError
from polyopt.private_folder import make_private
from polyopt.target.integrity import check_trusted, signature_digest
from polyopt.target.symbols import check_symbol_name


def _export(folder, n=8, *, parallel=False, name=None):
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = po.create_schedule(B)
    if parallel:
        outer, _ = s[B].split(B.op.axis[0], factor=64)
        s[B].parallel(outer)
    f = po.build(s, [A, B], **({"name": name} if name else {}))
    path = os.path.join(folder, "k.so")
    f.export_library(path)
    return f, path


def _edit_json(path, change):
    data = json.load(open(path + ".json"))
    change(data)
    json.dump(data, open(path + ".json", "w"))


def test_an_intact_export_loads_and_computes(tmp_path):
    f, path = _export(str(tmp_path))
    saved = json.load(open(path + ".json"))
    assert len(saved["library_sha256"]) == 64
    g = po.load_module(path)
    b = np.zeros(8, np.float32)
    g(np.arange(8, dtype=np.float32), b)
    np.testing.assert_array_equal(b, np.arange(8) + 1.0)
    assert signature_digest(g.signature) == signature_digest(f.signature)


def test_an_edited_signature_is_refused_before_any_call(tmp_path):
    _, path = _export(str(tmp_path))

    def shrink(data):
        for arg in data["args"]:
            arg["shape"], arg["shape_text"] = [2], ["2"]

    _edit_json(path, shrink)
    with pytest.raises(BackendError, match="not the one the library was built with"):
        po.load_module(path)


def test_a_signature_naming_libc_system_binds_nothing(tmp_path):
    _, path = _export(str(tmp_path), 1 << 16, parallel=True)

    def to_system(data):
        data["name"] = "system"
        data["args"] = [{"name": "cmd", "dtype": "uint8", "written": False, "shape": [64],
                         "shape_text": ["64"]}]
        data["params"], data["temps"] = [], []

    _edit_json(path, to_system)
    with pytest.raises(InvalidArgumentError, match="'system' is a function of the C library"):
        po.load_module(path)


def test_a_signature_naming_a_runtime_function_of_the_library_is_refused(tmp_path):
    _, path = _export(str(tmp_path), 1 << 16, parallel=True)
    _edit_json(path, lambda data: data.update(name="polyopt_threads"))
    with pytest.raises(InvalidArgumentError, match="reserved to polyopt's runtime"):
        po.load_module(path)


def test_a_library_from_another_export_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, first = _export(str(tmp_path / "a"), 8)
    _, second = _export(str(tmp_path / "b"), 64)  # the same function name, 64 elements
    os.replace(second, first)
    with pytest.raises(BackendError, match="does not match the hash recorded"):
        po.load_module(first)


def test_a_truncated_library_is_refused(tmp_path):
    _, path = _export(str(tmp_path))
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    with pytest.raises(BackendError, match="truncated, replaced or edited"):
        po.load_module(path)


def test_an_export_without_a_hash_is_refused(tmp_path):
    _, path = _export(str(tmp_path))
    _edit_json(path, lambda data: data.pop("library_sha256"))
    with pytest.raises(InvalidArgumentError, match="records no hash"):
        po.load_module(path)


def test_files_other_users_can_write_are_not_loaded(tmp_path, monkeypatch):
    _, path = _export(str(tmp_path))
    os.chmod(path, 0o666)
    with pytest.raises(BackendError, match="writable by every user"):
        po.load_module(path)
    os.chmod(path, 0o644)
    folder = tmp_path / "theirs"
    folder.mkdir()
    if os.getuid() == 0:  # root: make the files another user's
        os.chown(path, 54321, -1)
        os.chown(folder, 54321, -1)
    else:  # look at them as another user
        monkeypatch.setattr(os, "getuid", lambda: os.stat(path).st_uid + 1)
    with pytest.raises(BackendError, match="belongs to another user"):
        check_trusted(path, "saved kernel")
    with pytest.raises(BackendError, match="belongs to another user"):
        po.load_module(path)
    assert "belongs to another user" in make_private(str(folder))


def test_export_to_a_folder_or_under_a_reserved_name_is_refused(tmp_path):
    (tmp_path / "dd").mkdir()
    A = po.placeholder((4,), name="A")
    B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(InvalidArgumentError, match="is a folder"):
        po.build(po.create_schedule(B), [A, B]).export_library(str(tmp_path / "dd"))
    with pytest.raises(InvalidArgumentError, match="function of the C library"):
        po.build(po.create_schedule(B), [A, B], name="free").export_library(
            str(tmp_path / "k.so"))
    assert not (tmp_path / "k.so").exists()


@pytest.mark.parametrize("name, ok", [("scale_n4", True), ("B_kernel", True), ("int", False),
                                      ("class", False), ("exp", False), ("__x", False),
                                      ("_Bool2", False), ("polyopt_parallel", False),
                                      ("9a", False), ("a" * 201, False), ("a" * 200, True)])
def test_symbol_names(name, ok):
    if ok:
        check_symbol_name(name)
    else:
        with pytest.raises(InvalidArgumentError):
            check_symbol_name(name)


ACCEL = """
from polyopt.machine.accel import VTA
from polyopt.tensorize.accel import gemm_intrin
m, n, k, b = 1, 2, 2, 16
A = po.placeholder((m, k, 1, b), name='A', dtype='int8')
W = po.placeholder((n, k, b, b), name='W', dtype='int8')
ko, ki = po.reduce_axis((0, k), name='ko'), po.reduce_axis((0, b), name='ki')
C = po.compute((m, n, 1, b), lambda i, j, x, y: po.sum(
    A[i, ko, x, ki].astype('int32') * W[j, ko, y, ki].astype('int32'), axis=[ko, ki]), name='C')
R = po.compute(C.shape, lambda *a: po.maximum(po.minimum(C[a] // 256, 127), -128), name='R')
O = po.compute(C.shape, lambda *a: R[a].astype('int8'), name='O')
s = po.create_schedule(O); s[C].set_scope('acc'); s[R].set_scope('acc')
AL, WL = s.cache_read(A, 'inp', [C]), s.cache_read(W, 'wgt', [C])
i, j, x, y = O.op.axis
s[C].compute_at(s[O], j); s[R].compute_at(s[O], j)
ci, cj, cx, cy = C.op.axis
s[C].reorder(ko, ci, cj, cx, cy, ki)
s[AL].compute_at(s[C], ko); s[WL].compute_at(s[C], ko)
s[C].tensorize(cx, gemm_intrin(VTA))
f = po.build(s, [A, W, O], target='accel')
"""


def test_accel_programs_refuse_export_and_read_only_outputs(tmp_path):
    scope = {"po": po}
    exec(ACCEL, scope)
    f = scope["f"]
    with pytest.raises(InvalidArgumentError, match="accelerator program .* is not saved"):
        f.export_library(str(tmp_path / "acc.so"))
    rng = np.random.default_rng(0)
    a = rng.integers(-8, 8, (1, 2, 1, 16)).astype(np.int8)
    w = rng.integers(-8, 8, (2, 2, 16, 16)).astype(np.int8)
    o = np.zeros((1, 2, 1, 16), np.int8)
    o.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="output 'O' is read-only"):
        f(a, w, o)
    o = np.zeros((1, 2, 1, 16), np.int8)
    f(a, w, o)
    acc = np.einsum("ikxl,jkyl->ijxy", a.astype(np.int32), w.astype(np.int32))
    np.testing.assert_array_equal(o, np.clip(acc // 256, -128, 127).astype(np.int8))

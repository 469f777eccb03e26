"""A single kernel on AMX tiles saved with ``export_library``: its ``.json`` says
``"amx_tiles": true`` and its library defines ``polyopt_request_amx_<name>``; the two
must agree at ``po.load_module`` (a ``.json`` edited to hide AMX is refused), and the
loaded kernel asks Linux for the tile state before its first run.

Built for ``sapphirerapids``: where this host lacks AMX the first run raises
AMXPermissionError (nothing runs); on an AMX host the kernel runs against NumPy."""

import json
import os
import subprocess

import numpy as np
import pytest

import polyopt as po
from polyopt.schedules.tensorized import int8_matmul_template

from testlib.amx import refusal_errno
from testlib.machine import HOST
from testlib.numeric import assert_numbers

SPR = po.TargetInfo.for_cpu("sapphirerapids")
SPR_TARGET = "llvm -mcpu=sapphirerapids"
REQUEST = "polyopt_request_amx_mm_amx"


def _matmul():
    A = po.placeholder((32, 128), name="A", dtype="uint8")
    W = po.placeholder((1, 32, 32, 4), name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    s = po.create_schedule(C)
    int8_matmul_template(s, C, parallel=False, target_info=SPR)
    return s, [A, W, C]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    s, args = _matmul()
    f = po.build(s, args, target=SPR_TARGET, name="mm_amx")
    path = str(tmp_path_factory.mktemp("amx") / "mm.so")
    f.export_library(path)
    return path


def _defined(path):
    return subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                          capture_output=True, text=True).stdout


def test_the_library_defines_the_request_and_the_json_records_it(exported, tmp_path):
    assert json.loads(open(exported + ".json").read())["amx_tiles"] is True
    assert f" T {REQUEST}\n" in _defined(exported)
    obj = str(tmp_path / "mm.o")  # an object for C programs: the request is in it too
    po.build(*_matmul(), target=SPR_TARGET, name="mm_amx").export_library(obj)
    symbols = subprocess.run(["nm", "--defined-only", obj], check=True,
                             capture_output=True, text=True).stdout
    assert f" T {REQUEST}\n" in symbols


def test_the_first_run_asks_for_the_tile_state(exported):
    f = po.load_module(exported)
    rng = np.random.default_rng(31)
    a = rng.integers(0, 256, (32, 128), dtype=np.uint8)
    w = rng.integers(-128, 128, (128, 32), dtype=np.int8)
    c = np.zeros((32, 32), np.int32)
    code = refusal_errno()
    if not HOST.has_amx_int8:  # the machine model: Linux cannot grant it here
        assert code != 0
    if code:  # refused: the run raises, nothing runs (no SIGILL)
        with pytest.raises(po.AMXPermissionError, match="ARCH_REQ_XCOMP_PERM") as refused:
            f(a, po.ops.pack_vnni_numpy(w, columns=32, blocked=True), c)
        assert refused.value.errno == code and not c.any()
        return
    f(a, po.ops.pack_vnni_numpy(w, columns=32, blocked=True), c)
    assert_numbers(c, (a.astype(np.int64) @ w.astype(np.int64)).astype(np.int32))


@pytest.mark.parametrize("edit", [lambda d: d.pop("amx_tiles"),
                                  lambda d: d.update(amx_tiles=False),
                                  lambda d: d.update(amx_tiles="no")],
                         ids=["removed", "false", "not-a-bool"])
def test_a_json_edited_to_hide_amx_is_refused(exported, tmp_path, edit):
    path = str(tmp_path / "mm.so")
    with open(exported, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    saved = json.loads(open(exported + ".json").read())
    edit(saved)
    with open(path + ".json", "w") as file:
        json.dump(saved, file)
    with pytest.raises(po.BackendError, match="amx_tiles|AMX tiles") as refused:
        po.load_module(path)
    assert type(refused.value) is po.BackendError  # the check, not the request


def test_a_json_claiming_amx_for_a_plain_kernel_is_refused_and_plain_loads(tmp_path):
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2.0, name="B")
    path = str(tmp_path / "plain.so")
    po.build(po.create_schedule(B), [A, B], name="plain").export_library(path)
    saved = json.loads(open(path + ".json").read())
    assert "amx_tiles" not in saved and "polyopt_request_amx" not in _defined(path)
    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    po.load_module(path)(a, b)  # nothing asked, nothing refused
    assert_numbers(b, a * 2)
    saved["amx_tiles"] = True
    with open(path + ".json", "w") as file:
        json.dump(saved, file)
    with pytest.raises(po.BackendError, match="does not define polyopt_request_amx_plain"):
        po.load_module(path)


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    from polyopt.kernels.builder import build_kernel
    from polyopt.kernels.disk import DiskCache

    disk = DiskCache(str(tmp_path_factory.mktemp("cache")))
    s, args = _matmul()
    func = po.lower(s, args, target=SPR_TARGET, name="mm_cached")
    built = build_kernel(func, SPR_TARGET, {"num_threads": 1}, form="object", disk=disk)
    return disk, built


def test_a_cached_amx_object_defines_the_request_and_links_asking_for_tiles(cached):
    from polyopt.kernels.builder import load_kernel

    disk, built = cached
    assert built.meta["amx_tiles"] is True
    again = load_kernel(built.key, SPR_TARGET, disk, cache={})
    assert again.source == "disk" and again.kernel._needs_amx


@pytest.mark.parametrize("how", ["sealed", "unsealed"])
def test_a_cache_entry_edited_to_hide_amx_is_not_linked(cached, tmp_path, how):
    """Unsealed: the entry's hash fails and it is discarded; sealed again (as a writer of
    a bad entry would): the object's request function contradicts it, so it is not
    linked (the caller builds the kernel again)."""
    from polyopt.kernels.builder import load_kernel
    from polyopt.kernels.disk import DiskCache, entry_integrity

    disk, built = cached
    copy = DiskCache(str(tmp_path / "copy"))
    code, meta = disk.get(built.key)
    copy.put(built.key, code, meta)
    meta = {k: v for k, v in meta.items() if k != "amx_tiles"}
    if how == "sealed":
        meta["integrity"] = entry_integrity(built.key, code, meta)
    else:
        meta["integrity"] = json.loads(open(copy._path("objects", built.key, ".json")).read())[
            "integrity"]
    with open(copy._path("objects", built.key, ".json"), "w") as file:
        json.dump(meta, file, sort_keys=True)
    assert (copy.get(built.key) is None) is (how == "unsealed")
    assert load_kernel(built.key, SPR_TARGET, copy, cache={}) is None


def test_an_adopted_object_whose_metadata_hides_amx_is_refused(cached):
    from polyopt.kernels.builder import adopt_object

    _, built = cached
    meta = {k: v for k, v in built.meta.items() if k != "amx_tiles"}
    with pytest.raises(po.BackendError, match="amx_tiles=False.*defines polyopt_request_amx_"):
        adopt_object(built.key, built.code, meta, SPR_TARGET, cache={})
    adopted = adopt_object(built.key, built.code, built.meta, SPR_TARGET, cache={})
    assert adopted.kernel._needs_amx

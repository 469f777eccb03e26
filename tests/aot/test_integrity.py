"""Operator libraries and their cache are bound to their content: a swapped, truncated
or edited cache entry is rebuilt, a damaged or mismatched library refused at load, an
unusable cache only warned about, a failed rebuild leaves the old library, reserved
kernel names are refused, a dead pool worker fails only its variant, and the user's
mistakes end in PolyoptErrors."""

import glob
import json
import os
import shutil

import numpy as np
import pytest

import polyopt as po
from polyopt.aot import DiskCache, build_library
from polyopt.errors import BackendError, InvalidArgumentError, PolyoptWarning

from testlib.numeric import assert_numbers

SPEC = '''
import polyopt as po
from polyopt.aot import Kernel, grid
def scale(n, dtype="float32"):
    A = po.placeholder((n * FACTOR,), name="A", dtype=dtype)
    B = po.compute((n * FACTOR,), lambda i: A[i] * 2, name="B")
    return po.create_schedule(B), [A, B]
def kernels():
    yield Kernel(NAME, scale, grid(n=[4, 8]))
'''


def _spec(folder, *, factor=1, name="scale", extra=""):
    path = os.path.join(folder, "spec.py")
    with open(path, "w") as file:
        file.write(SPEC.replace("FACTOR", str(factor)).replace("NAME", repr(name)) + extra)
    return path


def _build(tmp_path, out="out", cache="cache", **options):
    options.setdefault("jobs", 1)
    return build_library(_spec(str(tmp_path), factor=options.pop("factor", 1)),
                         str(tmp_path / out), cache_root=str(tmp_path / cache),
                         progress=False, **options)


def _check_scale(lib, name="scale_n4", n=4):
    """Call ``name`` on a window of a guarded buffer: the numbers, and nothing written
    past the output."""
    a = np.arange(n, dtype=np.float32)
    guarded = np.full(n + 64, -7.0, np.float32)
    lib[name](a, guarded[:n])
    assert_numbers(guarded[:n], a * 2, exact=True)
    assert (guarded[n:] == -7.0).all()


def _entry(tmp_path, manifest, variant="scale_n4"):
    digest = [v["hash"] for k in manifest["kernels"] for v in k["variants"]
              if v["name"] == variant][0]
    return str(tmp_path / "cache" / "objects" / digest[:2] / digest)


# -- the cache ------------------------------------------------------------------------

def test_a_swapped_cache_object_is_rebuilt_not_linked(tmp_path):
    manifest = _build(tmp_path)
    # another kernel of the same function name, 64 elements instead of 4
    A = po.placeholder((64,), name="A")
    B = po.compute((64,), lambda i: A[i] * 3, name="B")
    po.build(po.create_schedule(B), [A, B], name="scale_n4").export_library(
        str(tmp_path / "evil.o"))
    shutil.copy(tmp_path / "evil.o", _entry(tmp_path, manifest) + ".o")
    again = _build(tmp_path, out="out2")
    assert again["cache_hits"] == 1  # scale_n8 from the cache, scale_n4 built again
    _check_scale(po.load_library(tmp_path / "out2"))
    assert DiskCache(str(tmp_path / "cache")).get(_entry(tmp_path, manifest)[-64:]) is not None


@pytest.mark.parametrize("damage", ["truncate", "json_without_seconds", "json_not_json",
                                    "request_not_hex"])
def test_a_damaged_cache_entry_is_a_miss_and_rebuilt(tmp_path, damage):
    manifest = _build(tmp_path)
    entry = _entry(tmp_path, manifest)
    if damage == "truncate":
        data = open(entry + ".o", "rb").read()
        open(entry + ".o", "wb").write(data[: len(data) // 2])
    elif damage == "json_without_seconds":
        open(entry + ".json", "w").write('{"signature": 5}')
    elif damage == "json_not_json":
        open(entry + ".json", "w").write('{"signature": ')
    else:
        for request in glob.glob(str(tmp_path / "cache" / "requests" / "*" / "*")):
            open(request, "w").write("not a hash")
    again = _build(tmp_path, out="out2")
    assert again["failures"] == [] and again["warnings"] == []
    assert again["cache_hits"] == (2 if damage == "request_not_hex" else 1)  # found by content
    _check_scale(po.load_library(tmp_path / "out2"))
    _check_scale(po.load_library(tmp_path / "out2"), "scale_n8", 8)
    code, meta = DiskCache(str(tmp_path / "cache")).get(entry[-64:])
    assert code[:4] == b"\x7fELF" and isinstance(meta["seconds"], float)


def test_an_unusable_cache_warns_and_the_library_is_complete(tmp_path):
    (tmp_path / "cachefile").write_text("not a folder")
    with pytest.warns(PolyoptWarning, match="kernel cache cannot be used .*cachefile"):
        manifest = _build(tmp_path, cache="cachefile")
    assert manifest["failures"] == []
    assert [v["name"] for v in manifest["kernels"][0]["variants"]] == ["scale_n4", "scale_n8"]
    assert "POLYOPT_CACHE" in manifest["warnings"][0]
    _check_scale(po.load_library(tmp_path / "out"))


def test_a_cache_open_to_other_users_is_closed_and_one_of_another_user_refused(
        tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir(mode=0o777)
    os.chmod(root, 0o777)
    assert DiskCache(str(root)).problem is None
    assert os.stat(root).st_mode & 0o777 == 0o700
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(root).st_uid + 1)
    cache = DiskCache(str(root))
    assert "belongs to another user" in cache.problem
    assert cache.get("ab" * 32) is None and cache.lookup("cd" * 32) is None
    with pytest.raises(BackendError, match="kernel cache cannot be used"):
        cache.put("ab" * 32, b"x", {"signature": {}, "seconds": 0.0})


# -- the library ----------------------------------------------------------------------

def test_a_failed_rebuild_leaves_the_old_library(tmp_path, monkeypatch):
    _build(tmp_path)
    before = {name: (tmp_path / "out" / name).read_bytes() for name in os.listdir(tmp_path / "out")}
    monkeypatch.setenv("AR", "/bin/false")
    with pytest.raises(BackendError, match="false failed writing"):
        _build(tmp_path, factor=16)
    after = {name: (tmp_path / "out" / name).read_bytes() for name in os.listdir(tmp_path / "out")}
    assert after == before  # nothing replaced, no staging folder left
    _check_scale(po.load_library(tmp_path / "out"))


def test_a_truncated_library_and_archive_are_refused_at_load(tmp_path):
    _build(tmp_path)
    for name in ("libspec.so", "libspec.a"):  # the .so alone is relinked (test_relink.py)
        damaged = tmp_path / "out" / name
        damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    with pytest.raises(BackendError, match="libspec.so does not match the hash recorded"):
        po.load_library(tmp_path / "out")


@pytest.mark.parametrize("edit", ["shape", "shared_elsewhere", "other_build", "hash"])
def test_a_manifest_that_does_not_describe_the_library_is_refused(tmp_path, edit):
    _build(tmp_path)
    path = tmp_path / "out" / "manifest.json"
    manifest = json.loads(path.read_text())
    if edit == "shape":
        for array in manifest["kernels"][0]["variants"][0]["signature"]["args"]:
            array["shape"], array["shape_text"] = [64], ["64"]
    elif edit == "shared_elsewhere":
        manifest["shared"] = "../elsewhere/libspec.so"
    elif edit == "hash":  # both: a .so alone not matching is relinked (test_relink.py)
        manifest["shared_sha256"] = manifest["static_sha256"] = "0" * 64
    else:  # the manifest of a build of another spec, beside this library
        manifest = _build(tmp_path, out="other", factor=16)
    path.write_text(json.dumps(manifest))
    with pytest.raises(BackendError) as caught:
        po.load_library(tmp_path / "out")
    expected = {"shape": "not the one the library was built with",
                "shared_elsewhere": "not the lib<name>.so beside it",
                "hash": "does not match the hash", "other_build": "does not match the hash"}
    assert expected[edit] in str(caught.value)


def test_a_manifest_writable_by_everyone_is_not_loaded(tmp_path):
    _build(tmp_path)
    os.chmod(tmp_path / "out" / "manifest.json", 0o666)
    with pytest.raises(BackendError, match="writable by every user"):
        po.load_library(tmp_path / "out")


@pytest.mark.parametrize("name, reason", [
    ("polyopt_parallel", "reserved to polyopt's runtime"),
    ("int", r"C or C\+\+ keyword"),
    ("free", "function of the C library"),
    ("k" + "x" * 300, "at most 200 are allowed"),
])
def test_reserved_kernel_names_are_refused(tmp_path, name, reason):
    spec = _spec(str(tmp_path), name=name)
    text = open(spec).read().replace("grid(n=[4, 8])", "[{}]").replace("(n, dtype", "(n=4, dtype")
    open(spec, "w").write(text)
    with pytest.raises(InvalidArgumentError, match=reason):
        build_library(spec, str(tmp_path / "out"), cache_root=str(tmp_path / "cache"),
                      progress=False)


def test_a_dead_pool_worker_fails_only_its_variant(tmp_path):
    spec = _spec(str(tmp_path))
    text = open(spec).read().replace("grid(n=[4, 8])", "grid(n=[4, 8, 12, 16])").replace(
        "    A = po.placeholder(",
        "    if n == 12:\n        import os, signal; os.kill(os.getpid(), signal.SIGKILL)\n"
        "    A = po.placeholder(")
    open(spec, "w").write(text)
    manifest = build_library(spec, str(tmp_path / "out"), jobs=2,
                             cache_root=str(tmp_path / "cache"), progress=False)
    assert [f["name"] for f in manifest["failures"]] == ["scale_n12"]
    assert "killed by signal SIGKILL" in manifest["failures"][0]["error"]
    lib = po.load_library(tmp_path / "out")
    assert lib.variants == ("scale_n4", "scale_n8", "scale_n16")
    for n in (4, 8, 16):
        _check_scale(lib, f"scale_n{n}", n)


def test_an_output_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "outfile").write_text("x")
    with pytest.raises(InvalidArgumentError, match="is a file, not a folder"):
        _build(tmp_path, out="outfile")


def test_an_unreachable_dask_scheduler_is_a_backend_error(tmp_path):
    dask = pytest.importorskip("dask")
    pytest.importorskip("dask.distributed")
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(BackendError, match="cannot reach the Dask scheduler at tcp://"):
            _build(tmp_path, dask="tcp://127.0.0.1:1")

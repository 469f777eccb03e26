"""A library whose lib<name>.so is damaged (truncated or swapped) but whose lib<name>.a
matches its recorded hash is relinked from the archive, in a private folder, with one
warning, and checked against the signature digests it embeds; with the archive damaged
too, an archive without the digests, or no linker, it is refused as before."""

import json
import os
import pathlib
import shutil
import stat
import subprocess
import warnings

import numpy as np
import pytest

import polyopt as po
from polyopt.aot import build_library
from polyopt.errors import BackendError, DamagedFileError, MissingBackendError, PolyoptWarning
from polyopt.private_folder import digest, private_folder
from polyopt.target import integrity

from testlib.numeric import assert_numbers

SPEC = str(pathlib.Path(__file__).with_name("spec_small.py"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("lib") / "out"
    build_library(SPEC, str(out), jobs=1, cache_root=str(tmp_path_factory.mktemp("cache")),
                  progress=False)
    return out


@pytest.fixture
def out(built, tmp_path, monkeypatch):
    """A copy of the library, and no relinked library kept from an earlier test."""
    monkeypatch.setattr(integrity, "_LOADED", {})
    shutil.copytree(built, tmp_path / "out")
    return tmp_path / "out"


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _check_numbers(lib):
    rng = np.random.default_rng(3)
    for dtype in ("float32", "float64"):
        a, b = rng.standard_normal((6, 8)).astype(dtype), rng.standard_normal((8, 6)).astype(dtype)
        c = np.full((6 + 2, 6), -7, dtype)
        lib[f"matmul_n6_{dtype}"](a, b, c[:6])
        assert_numbers(c[:6], a @ b, rtol=1e-5, atol=0)
        assert (c[6:] == -7).all()
    x, y = np.arange(11, dtype=np.float32), np.empty(11, np.float32)
    lib.scale_factor3(x, y)
    assert_numbers(y, x * 3, exact=True)
    rows, sums = rng.standard_normal((64, 16)).astype(np.float32), np.empty(64, np.float32)
    lib.row_sum_rows64(rows, sums)  # the parallel runtime, linked from the archive too
    assert_numbers(sums, rows.sum(axis=1), rtol=1e-5, atol=0)


def _load_warned(out):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib = po.load_library(out)
    messages = [str(w.message) for w in caught if issubclass(w.category, PolyoptWarning)]
    assert len(messages) == 1, messages
    return lib, messages[0]


def test_a_truncated_shared_library_is_relinked_from_the_verified_archive(out, monkeypatch):
    linked = []

    def recording(static, path, flags, real=integrity.link_archive):
        linked.append(os.path.dirname(path))
        assert not os.path.samefile(os.path.dirname(path), out)
        real(static, path, flags)

    monkeypatch.setattr(integrity, "link_archive", recording)
    _truncate(out / "libspec_small.so")
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    lib, message = _load_warned(out)
    assert str(out / "libspec_small.so") in message
    assert "relinked from the verified libspec_small.a" in message
    _check_numbers(lib)
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before
    (folder,) = linked  # one link, in a fresh folder inside this user's private folder
    assert os.path.dirname(folder) == private_folder("relinked")
    assert stat.S_IMODE(os.stat(private_folder("relinked")).st_mode) == 0o700
    assert not os.path.exists(folder)  # removed once loaded


def test_a_swapped_shared_library_is_relinked(out, tmp_path):
    other = tmp_path / "other.so"
    subprocess.run(["cc", "-shared", "-o", str(other), "-x", "c", "-"], check=True,
                   input=b"int matmul_n6_float32(void) { return 0; }\n")
    shutil.copyfile(other, out / "libspec_small.so")
    lib, message = _load_warned(out)
    assert "does not match the hash recorded" in message
    _check_numbers(lib)


def test_a_damaged_shared_and_static_library_are_refused(out):
    _truncate(out / "libspec_small.so")
    _truncate(out / "libspec_small.a")
    with pytest.raises(DamagedFileError, match="libspec_small.so does not match the hash") \
            as caught:
        po.load_library(out)
    assert isinstance(caught.value.__cause__, DamagedFileError)
    assert "libspec_small.a does not match" in str(caught.value.__cause__)


def test_a_damaged_shared_library_without_its_archive_is_refused(out):
    _truncate(out / "libspec_small.so")
    os.remove(out / "libspec_small.a")
    with pytest.raises(DamagedFileError, match="libspec_small.so does not match the hash"):
        po.load_library(out)


def test_without_a_linker_a_damaged_shared_library_is_refused(out, monkeypatch):
    _truncate(out / "libspec_small.so")
    monkeypatch.setenv("CC", str(out / "no-such-compiler"))
    with pytest.raises(DamagedFileError, match="libspec_small.so does not match") as caught:
        po.load_library(out)
    assert isinstance(caught.value.__cause__, MissingBackendError)


def test_an_archive_without_the_signature_digests_is_refused(out):
    """An archive of the kernels alone (as older builds wrote) matches its hash, but the
    library linked from it cannot show which signatures it was built with."""
    _truncate(out / "libspec_small.so")
    subprocess.run(["ar", "d", str(out / "libspec_small.a"), "polyopt_signatures.o"],
                   check=True)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["static_sha256"] = digest((out / "libspec_small.a").read_bytes())
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DamagedFileError, match="libspec_small.so does not match") as caught:
        po.load_library(out)
    assert isinstance(caught.value.__cause__, BackendError)
    assert "does not define as a polyopt kernel" in str(caught.value.__cause__)

"""The weights file of an export (manifest format 2) is checked a 1 MiB chunk at a time on
the thread pool: the manifest records each chunk's SHA-256 and their root, the library holds
the chunks' hashes; an edited chunk, a truncated or grown file, a manifest of another export
beside the library and an export of the older format (1: the weights hashed whole) are
refused, from C and from ``po.graph.load``, with messages naming what is wrong."""

import hashlib
import json
import shutil

import numpy as np
import pytest

import polyopt as po
from polyopt.deploy.csource import WEIGHTS_CHUNK_BYTES
from polyopt.deploy.export import chunk_digests
from polyopt.deploy.loader import OldExportError
from polyopt.errors import DamagedFileError
from testlib.numeric import assert_numbers

from cprogram import build_program, export_large_matmul, output_specs, run_program

ROWS, COLUMNS = 768, 1100  # float32 weights: 3.2 MiB, four chunks (the last shorter)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A matrix product with four chunks of weights, exported for two threads."""
    folder = tmp_path_factory.mktemp("chunks")
    weights = np.random.default_rng(3).standard_normal((ROWS, COLUMNS)).astype("float32")
    b = po.graph.GraphBuilder()
    x = b.input("x", (2, ROWS))
    g = b.build([b.op("MatMul", [x, b.constant("w", weights)])])
    manifest = po.graph.compile(g, num_threads=2).export_library(folder, name="mm")
    return folder, manifest, weights


def _copy(exported, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(exported[0], folder)
    return folder, build_program(str(folder), "mm")


def _run(folder, program, manifest):
    x = np.random.default_rng(4).standard_normal((2, ROWS)).astype("float32")
    done, got = run_program(program, str(folder), [x], output_specs(manifest))
    return x, done, got


def test_the_manifest_records_the_sha256_of_each_chunk_and_their_root(exported):
    folder, manifest, _ = exported
    data = (folder / "mm.weights").read_bytes()
    assert manifest["format"] == 2 and manifest["weights_chunk_bytes"] == WEIGHTS_CHUNK_BYTES
    chunks = [data[at:at + WEIGHTS_CHUNK_BYTES] for at in range(0, len(data),
                                                                 WEIGHTS_CHUNK_BYTES)]
    assert len(chunks) == 4 and len(chunks[-1]) < WEIGHTS_CHUNK_BYTES
    assert manifest["weights_chunks_sha256"] == [hashlib.sha256(c).hexdigest() for c in chunks]
    root = hashlib.sha256(b"".join(hashlib.sha256(c).digest() for c in chunks)).hexdigest()
    assert manifest["weights_tree_sha256"] == root
    assert chunk_digests(data) == (manifest["weights_chunks_sha256"], root)
    assert manifest["weights_sha256"] == hashlib.sha256(data).hexdigest()


def test_verified_weights_compute_the_product_from_c_and_from_load(exported, tmp_path):
    folder, program = _copy(exported, tmp_path)
    x, done, got = _run(folder, program, exported[1])
    assert done.returncode == 0, done.stderr
    expected = x.astype("float64") @ exported[2].astype("float64")
    assert_numbers(got[0], expected.astype("float32"), rtol=1e-4, atol=1e-4)
    loaded = po.graph.load(folder).run({"x": x})
    assert_numbers(next(iter(loaded.values())), got[0], exact=True)


@pytest.mark.parametrize("chunk, at", [(0, 0), (2, 5), (3, -1)],
                         ids=["first-byte", "third-chunk", "last-byte"])
def test_an_edited_chunk_is_refused_and_named(exported, tmp_path, chunk, at):
    folder, program = _copy(exported, tmp_path)
    path = folder / "mm.weights"
    data = bytearray(path.read_bytes())
    data[chunk * WEIGHTS_CHUNK_BYTES + at if at >= 0 else len(data) + at] ^= 0x10
    path.write_bytes(bytes(data))
    _, done, got = _run(folder, program, exported[1])
    assert done.returncode == 1 and got is None
    assert "create failed (3)" in done.stderr and f"chunk {chunk + 1} of 4" in done.stderr
    first = chunk * WEIGHTS_CHUNK_BYTES
    assert f"in bytes {first} to " in done.stderr
    with pytest.raises(DamagedFileError, match=f"chunk {chunk + 1} of 4"):
        po.graph.load(folder)


@pytest.mark.parametrize("change", [-WEIGHTS_CHUNK_BYTES, -1, 1],
                         ids=["a-chunk-shorter", "a-byte-shorter", "a-byte-longer"])
def test_a_truncated_or_grown_weights_file_is_refused(exported, tmp_path, change):
    folder, program = _copy(exported, tmp_path)
    path = folder / "mm.weights"
    data = path.read_bytes()
    path.write_bytes(data[:change] if change < 0 else data + bytes(change))
    _, done, _ = _run(folder, program, exported[1])
    assert done.returncode == 1 and "create failed (3)" in done.stderr
    assert f"hold {len(data) + change} bytes" in done.stderr
    with pytest.raises(DamagedFileError, match="truncated or from another export"):
        po.graph.load(folder)


def test_an_export_of_the_older_format_is_refused_with_what_to_do(exported, tmp_path):
    folder, _ = _copy(exported, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    for key in ("weights_chunk_bytes", "weights_chunks_sha256", "weights_tree_sha256"):
        del manifest[key]
    manifest["format"] = 1
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    with pytest.raises(OldExportError, match="format 1, written by an older polyopt") as error:
        po.graph.load(folder)
    assert "export the model again" in str(error.value)
    manifest["format"] = 3  # (a newer one: not this polyopt's either)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    with pytest.raises(DamagedFileError, match="of format 2") as error:
        po.graph.load(folder)
    assert type(error.value) is DamagedFileError


def test_the_library_refuses_a_manifest_of_another_export_beside_it(exported, tmp_path):
    """A C user linking the library gets the check ``po.graph.load`` makes: the manifest
    beside the weights must name the library's build id (without a manifest the weights'
    chunks are still checked)."""
    folder, program = _copy(exported, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "build_id": "ab" * 32}))
    _, done, _ = _run(folder, program, exported[1])
    assert done.returncode == 1 and "create failed (3)" in done.stderr
    assert "another export" in done.stderr and manifest["build_id"] in done.stderr
    done, _ = run_program(program, str(folder), [np.zeros((2, ROWS), "float32")],
                          output_specs(exported[1]), weights=str(folder / "mm.weights"))
    assert done.returncode == 1 and "another export" in done.stderr  # (the file's folder)
    (folder / "manifest.json").write_text("{}")
    _, done, _ = _run(folder, program, exported[1])
    assert done.returncode == 1 and "has no build_id" in done.stderr
    (folder / "manifest.json").unlink()
    x, done, got = _run(folder, program, exported[1])
    assert done.returncode == 0, done.stderr
    assert_numbers(got[0], (x.astype("float64") @ exported[2]).astype("float32"),
                   rtol=1e-4, atol=1e-4)


def test_a_shared_library_whose_file_differs_from_the_manifest_is_refused_by_create(
        exported, tmp_path):
    """NAME_create hashes the file the shared library was loaded from against the
    manifest's shared_sha256; a program linked with the static library holds the runtime
    itself and has nothing to compare."""
    folder, program = _copy(exported, tmp_path)
    static = build_program(str(folder), "mm", static=True)
    path = folder / "libmm.so"
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF  # (the section headers: the dynamic loader does not read them)
    path.write_bytes(bytes(data))
    _, done, _ = _run(folder, program, exported[1])
    assert done.returncode == 1 and "create failed (3)" in done.stderr
    assert "libmm.so" in done.stderr and "SHA-256 differs" in done.stderr
    x, done, got = _run(folder, static, exported[1])
    assert done.returncode == 0, done.stderr
    assert_numbers(got[0], (x.astype("float64") @ exported[2]).astype("float32"),
                   rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def exported_odd(tmp_path_factory):
    """A matrix product whose weights (4.5 MiB: over 4 MB, so 2 MB aligned and mapped a
    pair of chunks at a time) have an odd count of chunks, exported for one thread: the
    runtime hashes two chunks at once, the shorter fifth alone."""
    folder = tmp_path_factory.mktemp("odd")
    manifest, weights = export_large_matmul(folder, seed=7)
    return folder, manifest, weights


def test_weights_of_an_odd_count_of_chunks_compute_the_product(exported_odd, tmp_path):
    folder, manifest, weights = exported_odd
    assert len(manifest["weights_chunks_sha256"]) == 5
    folder, program = _copy(exported_odd, tmp_path)
    x = np.random.default_rng(8).standard_normal((2, 1024)).astype("float32")
    done, got = run_program(program, str(folder), [x], output_specs(manifest))
    assert done.returncode == 0, done.stderr
    assert_numbers(got[0], (x.astype("float64") @ weights).astype("float32"),
                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("chunks", [[1], [4], [3, 1]],
                         ids=["second-of-a-pair", "the-lone-last", "two-the-first-named"])
def test_an_edited_chunk_hashed_in_a_pair_or_alone_is_named(exported_odd, tmp_path, chunks):
    folder, program = _copy(exported_odd, tmp_path)
    path = folder / "mm.weights"
    data = bytearray(path.read_bytes())
    for chunk in chunks:
        data[chunk * WEIGHTS_CHUNK_BYTES + 17] ^= 0x01
    path.write_bytes(bytes(data))
    x = np.zeros((2, 1024), "float32")
    done, got = run_program(program, str(folder), [x], output_specs(exported_odd[1]))
    assert done.returncode == 1 and got is None
    assert f"chunk {min(chunks) + 1} of 5" in done.stderr, done.stderr

"""polyopt lib build: a library of variants, its C header, its manifest, the disk cache,
a C program linked against it, process pool and Dask builds, an isolated failure."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import polyopt as po
from polyopt.aot import DiskCache, build_library

SPEC = str(pathlib.Path(__file__).with_name("spec_small.py"))
ROOT = str(pathlib.Path(__file__).resolve().parents[2])
OUTPUTS = ("libspec_small.so", "libspec_small.a", "spec_small.h", "manifest.json")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The library built once with 2 local worker processes, and its cache."""
    cache = str(tmp_path_factory.mktemp("cache"))
    out = str(tmp_path_factory.mktemp("lib"))
    manifest = build_library(SPEC, out, jobs=2, cache_root=cache, progress=False)
    return out, cache, manifest


def test_manifest_and_loaded_kernels(built):
    out, _, manifest = built
    assert sorted(os.listdir(out)) == sorted(OUTPUTS)
    assert manifest["failures"] == []
    names = [v["name"] for k in manifest["kernels"] for v in k["variants"]]
    assert names == ["matmul_n4_float32", "matmul_n4_float64", "matmul_n6_float32",
                     "matmul_n6_float64", "scale_factor3", "row_sum_rows64"]
    assert manifest["target"].startswith("llvm -mcpu=")
    assert set(manifest["versions"]) == {"polyopt", "islpy", "llvmlite"}
    assert all(len(v["hash"]) == 64 for k in manifest["kernels"] for v in k["variants"])
    lib = po.load_library(out)
    rng = np.random.default_rng(1)
    for dtype in ("float32", "float64"):
        a, b = rng.standard_normal((6, 8)).astype(dtype), rng.standard_normal((8, 6)).astype(dtype)
        c = np.empty((6, 6), dtype)
        lib[f"matmul_n6_{dtype}"](a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    x, y = np.arange(11, dtype=np.float32), np.empty(11, np.float32)
    lib.scale_factor3(x, y)
    np.testing.assert_array_equal(y, x * 3)
    rows, sums = rng.standard_normal((64, 16)).astype(np.float32), np.empty(64, np.float32)
    lib.row_sum_rows64(rows, sums)  # an OpenMP kernel
    np.testing.assert_allclose(sums, rows.sum(axis=1), rtol=1e-5)
    with pytest.raises(po.InvalidArgumentError, match="dtype float32"):
        lib.matmul_n4_float32(a[:4].astype(np.float64), b[:, :4], c[:4, :4])
    with pytest.raises(po.InvalidArgumentError, match="no variant"):
        lib["matmul_n5_float32"]


C_PROGRAM = r"""
#include <stdio.h>
#include "spec_small.h"
int main(void) {
    float a[4 * 8], b[8 * 4], c[4 * 4], x[5], y[5];
    for (int i = 0; i < 32; i++) { a[i] = (float)(i % 7) - 2.0f; b[i] = (float)(i % 5) * 0.5f; }
    for (int i = 0; i < 5; i++) x[i] = (float)i + 0.25f;
    if (matmul_n4_float32(a, b, c) != 0) return 3;
    if (scale_factor3(x, y, 5) != 0) return 4;
    for (int i = 0; i < 16; i++) printf("%.6f ", c[i]);
    for (int i = 0; i < 5; i++) printf("%.6f ", y[i]);
    printf("\n");
    return 0;
}
"""


def test_a_c_program_links_against_the_header_and_library(built, tmp_path):
    out, _, _ = built
    source = tmp_path / "main.c"
    source.write_text(C_PROGRAM)
    exe = tmp_path / "main"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-I", out, str(source), "-L", out,
                    "-lspec_small", f"-Wl,-rpath,{out}", "-o", str(exe)], check=True)
    values = np.array(subprocess.run([str(exe)], check=True, capture_output=True,
                                     text=True).stdout.split(), dtype=np.float64)
    a = (np.arange(32) % 7 - 2.0).reshape(4, 8)
    b = (np.arange(32) % 5 * 0.5).reshape(8, 4)
    np.testing.assert_allclose(values[:16], (a @ b).ravel(), rtol=1e-6)
    np.testing.assert_allclose(values[16:], (np.arange(5) + 0.25) * 3, rtol=1e-6)
    header = (pathlib.Path(out) / "spec_small.h").read_text()
    assert "int32_t scale_factor3(const float *X /* [n] */, float *Y /* [n] */, int64_t n);" \
        in header
    assert "matmul_n6_float64: A float64[6][8] (input), B float64[8][6] (input), " \
        "C float64[6][6] (output)" in header


def test_a_cached_rebuild_is_byte_identical_and_lowers_nothing(built, tmp_path):
    out, cache, _ = built
    again = str(tmp_path / "again")
    manifest = build_library(SPEC, again, jobs=1, cache_root=cache, progress=False)
    assert manifest["cache_hits"] == 6
    for name in OUTPUTS:
        assert (pathlib.Path(out) / name).read_bytes() == \
            (pathlib.Path(again) / name).read_bytes(), name


def test_a_failing_variant_is_reported_and_the_rest_built(tmp_path):
    env = dict(os.environ, FAIL="1", PYTHONPATH=ROOT, POLYOPT_CACHE=str(tmp_path / "cache"))
    out = tmp_path / "lib"
    command = [sys.executable, "-m", "polyopt.cli", "lib", "build", SPEC, "-o", str(out),
               "-j", "1", "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "FAILED broken_n13: ValueError: variant 13 is made to fail" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert [f["name"] for f in manifest["failures"]] == ["broken_n13"]
    lib = po.load_library(out)
    y = np.empty(3, np.float32)
    lib.broken_n12(np.ones(3, np.float32), y)
    np.testing.assert_array_equal(y, 12.0)
    info = subprocess.run([sys.executable, "-m", "polyopt.cli", "cache", "info"],
                          capture_output=True, text=True, env=env)
    assert "7 kernel(s)" in info.stdout
    cleared = subprocess.run([sys.executable, "-m", "polyopt.cli", "cache", "clear"],
                             capture_output=True, text=True, env=env)
    assert "removed 7 kernel(s)" in cleared.stdout
    assert DiskCache(env["POLYOPT_CACHE"]).info()["kernels"] == 0


def test_a_dask_local_cluster_builds_the_same_library(built, tmp_path):
    pytest.importorskip("dask.distributed", reason="the dask extra: pip install 'polyopt[dask]'")
    out, _, _ = built
    dask_out = str(tmp_path / "dask")
    manifest = build_library(SPEC, dask_out, jobs=2, dask="local",
                             cache_root=str(tmp_path / "cache"), progress=False)
    assert manifest["cache_hits"] == 0 and manifest["failures"] == []
    for name in OUTPUTS[:3]:  # the manifest differs in the build times
        assert (pathlib.Path(out) / name).read_bytes() == \
            (pathlib.Path(dask_out) / name).read_bytes(), name
    lib = po.load_library(dask_out)
    x, y = np.arange(4, dtype=np.float32), np.empty(4, np.float32)
    lib.scale_factor3(x, y)
    np.testing.assert_array_equal(y, x * 3)


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dask_scheduler_at_a_tcp_address_builds_the_same_library(built, tmp_path):
    """A real scheduler and two real workers, started as the dask command line starts
    them; polyopt lib build --dask tcp://... connects to them."""
    distributed = pytest.importorskip(
        "dask.distributed", reason="the dask extra: pip install 'polyopt[dask]'")
    out, _, _ = built
    address = f"tcp://127.0.0.1:{_free_port()}"
    env = dict(os.environ, PYTHONPATH=ROOT, POLYOPT_CACHE=str(tmp_path / "cache"))
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", address.rsplit(":", 1)[1], "--no-dashboard"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "2",
         "--nthreads", "1", "--no-dashboard"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        dask_out = tmp_path / "tcp"
        done = subprocess.run(
            [sys.executable, "-m", "polyopt.cli", "lib", "build", SPEC, "-o", str(dask_out),
             "--dask", address, "--quiet"], capture_output=True, text=True, env=env,
            timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        for name in OUTPUTS[:3]:
            assert (pathlib.Path(out) / name).read_bytes() == \
                (dask_out / name).read_bytes(), name
        manifest = json.loads((dask_out / "manifest.json").read_text())
        assert manifest["failures"] == []
        lib = po.load_library(str(dask_out))
        x, y = np.arange(4, dtype=np.float32), np.empty(4, np.float32)
        lib.scale_factor3(x, y)
        np.testing.assert_array_equal(y, x * 3)
    finally:
        for process in (workers, scheduler):
            process.terminate()
            process.wait(timeout=30)


def test_an_interrupted_build_continues_from_the_cache(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=ROOT, POLYOPT_CACHE=str(cache))
    command = [sys.executable, "-m", "polyopt.cli", "lib", "build", SPEC, "-o",
               str(tmp_path / "lib"), "-j", "1", "--quiet"]
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while DiskCache(str(cache)).info()["kernels"] < 2 and first.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=60)
    done_before = DiskCache(str(cache)).info()["kernels"]
    assert done_before >= 2
    manifest = build_library(SPEC, str(tmp_path / "lib"), jobs=1, cache_root=str(cache),
                             progress=False)
    assert manifest["cache_hits"] >= 2 and manifest["failures"] == []
    assert sum(len(k["variants"]) for k in manifest["kernels"]) == 6


def _refused_by_lib_build(spec, tmp_path, last_line: str) -> None:
    """``polyopt lib build spec`` ends with status 2 and one error line, no traceback."""
    done = subprocess.run([sys.executable, "-m", "polyopt.cli", "lib", "build", str(spec),
                           "-o", str(tmp_path / "out"), "-j", "1", "--quiet"],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, POLYOPT_CACHE=str(tmp_path / "cache")))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(last_line)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("text", [
    "import sys\nsys.exit(3)\n",
    "raise SystemExit('bye')\n",
    "import sys\ndef kernels():\n    sys.exit(4)\n    yield None\n",
])
def test_a_spec_that_exits_is_refused_not_the_builds_status(tmp_path, text):
    """A spec calling ``sys.exit`` is the user's code failing: ``lib build`` refuses it
    with InvalidArgumentError (status 2 and one error line), it does not exit with the
    spec's status (the ``cli`` property family found ``lib build`` ending with 3)."""
    from polyopt.aot.spec import load_spec
    spec = tmp_path / "spec.py"
    spec.write_text(text)
    with pytest.raises(po.InvalidArgumentError, match="SystemExit"):
        load_spec(str(spec))
    _refused_by_lib_build(spec, tmp_path, "polyopt: error: ")


def test_a_spec_that_is_not_utf8_is_refused_by_name(tmp_path):
    """A spec file of other bytes (the ``cli`` property family's Latin-1 files) is refused
    as not UTF-8 text, with status 2, not a UnicodeDecodeError inside ``lib build``."""
    from polyopt.aot.spec import load_spec
    spec = tmp_path / "spec.py"
    spec.write_bytes(b"\xec\x00kernels = 1\n")
    with pytest.raises(po.InvalidArgumentError, match="is not UTF-8 text"):
        load_spec(str(spec))
    _refused_by_lib_build(spec, tmp_path, "polyopt: error: the spec ")

"""Operator libraries with variants on AMX tiles (issue 31): the manifest records it,
bound to the library (a request function it defines), loading asks Linux for the tile
state before any call, and C programs get the request in the library.

The library is built for ``sapphirerapids``; on a host without AMX loading it must
raise AMXPermissionError (no kernel runs), on an AMX host it loads and runs."""

import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import polyopt as po
from polyopt.aot import build_library

from testlib.amx import refusal_errno
from testlib.machine import HOST
from testlib.numeric import assert_numbers

SPEC = str(pathlib.Path(__file__).with_name("spec_amx.py"))
SPR_TARGET = "llvm -mcpu=sapphirerapids"
REQUEST = "polyopt_spec_amx_request_amx"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("cache"))
    out = str(tmp_path_factory.mktemp("lib"))
    manifest = build_library(SPEC, out, target=SPR_TARGET, cache_root=cache, progress=False)
    return out, cache, manifest


def test_the_manifest_records_amx_per_variant_and_for_the_library(built, tmp_path):
    out, cache, manifest = built
    assert manifest["failures"] == [] and manifest["amx_tiles"] is True
    flags = {v["name"]: v.get("amx_tiles", False)
             for k in manifest["kernels"] for v in k["variants"]}
    assert flags == {"matmul_u8s8_m32_k128_n32": True, "scale_n8": False}
    assert json.loads((pathlib.Path(out) / "manifest.json").read_text())["amx_tiles"] is True
    symbols = subprocess.run(["nm", "-D", "--defined-only", os.path.join(out, "libspec_amx.so")],
                             check=True, capture_output=True, text=True).stdout
    assert f" T {REQUEST}\n" in symbols
    code = subprocess.run(["objdump", "-d", os.path.join(out, "libspec_amx.so")], check=True,
                          capture_output=True, text=True).stdout
    assert "ldtilecfg" in code and "tdpbusd" in code
    header = (pathlib.Path(out) / "spec_amx.h").read_text()
    assert f"int32_t {REQUEST}(void);" in header and "POLYOPT_SPEC_AMX_USES_AMX 1" in header
    warm = build_library(SPEC, str(tmp_path), target=SPR_TARGET, cache_root=cache,
                         progress=False)  # from the cache: the flag comes along
    assert warm["cache_hits"] == 2 and warm["amx_tiles"] is True


def test_loading_asks_for_the_tile_state_before_any_call(built):
    out, _, _ = built
    code = refusal_errno()
    if not HOST.has_amx_int8:  # the machine model: Linux cannot grant it here
        assert code != 0
    if code:  # (EOPNOTSUPP on a CPU without AMX): refused at load, nothing runs
        with pytest.raises(po.AMXPermissionError, match="ARCH_REQ_XCOMP_PERM") as refused:
            po.load_library(out)
        assert refused.value.errno == code
        return
    lib = po.load_library(out)  # an AMX host: granted, the kernel runs
    rng = np.random.default_rng(31)
    a = rng.integers(0, 256, (32, 128), dtype=np.uint8)
    w = rng.integers(-128, 128, (128, 32), dtype=np.int8)
    c = np.zeros((32, 32), np.int32)
    lib.matmul_u8s8_m32_k128_n32(a, po.ops.pack_vnni_numpy(w, columns=32, blocked=True), c)
    assert_numbers(c, (a.astype(np.int64) @ w.astype(np.int64)).astype(np.int32))


@pytest.mark.parametrize("where", ["library", "variant", "both"])
def test_a_manifest_edited_to_hide_amx_is_refused(built, tmp_path, where):
    out, _, _ = built
    copy = tmp_path / "lib"
    shutil.copytree(out, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    if where in ("library", "both"):
        manifest["amx_tiles"] = False
    if where in ("variant", "both"):
        del manifest["kernels"][0]["variants"][0]["amx_tiles"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(po.BackendError, match=f"AMX tiles.*{REQUEST}") as refused:
        po.load_library(copy)
    assert type(refused.value) is po.BackendError  # the check, not the request


C_PROGRAM = f"""
#include <stdio.h>
#include "spec_amx.h"
int main(void) {{
    float a[8] = {{1, 2, 3, 4, 5, 6, 7, 8}}, b[8];
    int32_t status = {REQUEST}();
    printf("%d\\n", (int)status);
    if (status != 0) return 0;  /* refused: no kernel may run */
    if (scale_n8(a, b) != 0) return 1;
    printf("%g\\n", b[7]);
    return 0;
}}
"""


def test_a_c_program_asks_through_the_library(built, tmp_path):
    out, _, _ = built
    source = tmp_path / "main.c"
    source.write_text(C_PROGRAM)
    exe = tmp_path / "main"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-I", out, str(source), "-L", out,
                    "-lspec_amx", f"-Wl,-rpath,{out}", "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True,
                           text=True).stdout.split()
    code = refusal_errno()
    assert int(lines[0]) == code
    assert lines[1:] == ([] if code else ["16"])


def test_a_library_without_amx_records_so_and_defines_no_request(tmp_path):
    spec = pathlib.Path(__file__).with_name("spec_small.py")
    manifest = build_library(str(spec), str(tmp_path), cache_root=str(tmp_path / "c"),
                             progress=False)
    assert manifest["amx_tiles"] is False
    assert "request_amx" not in (tmp_path / "spec_small.h").read_text()
    po.load_library(tmp_path)  # nothing asked, nothing refused

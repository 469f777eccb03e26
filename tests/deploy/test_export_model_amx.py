"""An exported model with AMX kernels (issue 31): its C runtime asks Linux for the tile
state once per process when a model is created, and refuses with POLYOPT_E_AMX where
that is refused, before any kernel runs.

Exported for ``sapphirerapids``; which check refuses creation on this host is chosen by
the machine model: the CPU check (POLYOPT_E_CPU) where the host lacks a feature of the
kernels, else the AMX request (POLYOPT_E_AMX) where Linux refuses it, else the model
runs.  The runtime's own request (``NAME_check_amx``) is called directly too, so the
AMX refusal is exercised on every host."""

import ctypes
import json
import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import polyopt as po  # noqa: E402
from polyopt.deploy.loader import WrongCPUError  # noqa: E402
from testlib.amx import matmul_integer_model, refusal_errno  # noqa: E402
from testlib.machine import HOST  # noqa: E402

from cprogram import build_program, output_specs, run_program  # noqa: E402

SPR_CPU = "sapphirerapids"
SPR = po.TargetInfo.for_cpu(SPR_CPU)
POLYOPT_E_CPU, POLYOPT_E_AMX = 4, 6


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qamx")
    model, _, feeds, expected = matmul_integer_model(seed=31)
    x = feeds["a"]
    compiled = po.graph.compile(po.graph.from_onnx(model), f"llvm -mcpu={SPR_CPU}",
                                num_threads=1, cache=False)
    assert "int8_matmul_amx" in [s.template for s in compiled.steps]
    manifest = compiled.export_library(folder, name="qamx")
    return folder, manifest, x, expected


def runtime_check_amx(folder, name: str) -> tuple[int, str]:
    """``NAME_check_amx()`` of the exported library, and its message: only the runtime's
    own code runs (no kernel)."""
    library = ctypes.CDLL(str(folder / f"lib{name}.so"))
    message = getattr(library, f"{name}_error_message")
    message.restype = ctypes.c_char_p
    status = getattr(library, f"{name}_check_amx")()
    return status, message().decode()


def test_the_export_records_amx_and_its_runtime_asks_for_the_tile_state(exported):
    folder, manifest, _, _ = exported
    assert manifest["amx_tiles"] is True
    assert "int8_matmul_amx" in [s["template"] for s in manifest["plan"]["steps"]]
    header = (folder / "qamx.h").read_text()
    assert "#define POLYOPT_E_AMX 6" in header and "int qamx_check_amx(void);" in header
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(folder / "libqamx.so")],
                             check=True, capture_output=True, text=True).stdout
    assert " T qamx_check_amx\n" in symbols
    code = refusal_errno()
    if not HOST.has_amx_int8:  # the machine model: Linux cannot grant it here
        assert code != 0
    status, message = runtime_check_amx(folder, "qamx")
    if code:
        assert status == POLYOPT_E_AMX
        assert "ARCH_REQ_XCOMP_PERM" in message and "qamx" in message
    else:
        assert status == 0


def test_creation_is_refused_by_the_check_that_fires_first(exported):
    folder, manifest, x, expected = exported
    missing = sorted(set(SPR.features) - set(HOST.features))
    code = refusal_errno()
    program = build_program(str(folder), "qamx")
    done, got = run_program(program, str(folder), [x], output_specs(manifest))
    if missing:  # the CPU check refuses first: the AMX request is not reached
        assert done.returncode == 1 and f"create failed ({POLYOPT_E_CPU})" in done.stderr
        assert missing[0] in done.stderr
        with pytest.raises(WrongCPUError):
            po.graph.load(folder)
    elif code:
        assert done.returncode == 1 and f"create failed ({POLYOPT_E_AMX})" in done.stderr
        with pytest.raises(po.AMXPermissionError, match="ARCH_REQ_XCOMP_PERM") as refused:
            po.graph.load(folder)
        assert refused.value.errno == code
    else:
        assert done.returncode == 0, done.stderr
        np.testing.assert_array_equal(got[0], expected)
        loaded = po.graph.load(folder)
        np.testing.assert_array_equal(loaded.run({"a": x})[loaded.outputs[0]["name"]],
                                      expected)


def test_a_model_without_amx_kernels_asks_nothing(tmp_path):
    model, *_ = matmul_integer_model(seed=31)
    compiled = po.graph.compile(po.graph.from_onnx(model), f"llvm -mcpu={SPR_CPU} "
                                "-mattr=-amx-int8", num_threads=1, cache=False)
    manifest = compiled.export_library(tmp_path, name="qvnni")
    assert manifest["amx_tiles"] is False
    assert json.loads((tmp_path / "manifest.json").read_text())["amx_tiles"] is False
    assert runtime_check_amx(tmp_path, "qvnni") == (0, "")

"""The machine model decides the vector width of generated code: 512-bit wherever the CPU
has AVX-512 (LLVM's Intel CPUs prefer 256-bit unless told), 256-bit on AVX2-only CPUs.
These build for named CPUs and inspect the assembly without running it, so they hold on
any x86-64 host."""

import re

import pytest

import polyopt as po

FMA = {"zmm": re.compile(r"vfmadd\w+\s+.*zmm"), "ymm": re.compile(r"vfmadd\w+\s+.*ymm")}


def _matmul_assembly(cpu: str) -> str:
    A, B = po.placeholder((96, 64), name="A"), po.placeholder((64, 128), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C, target_info=po.TargetInfo.for_cpu(cpu))
    return po.build(s, [A, B, C], target=f"llvm -mcpu={cpu}").assembly


@pytest.mark.parametrize("cpu", ["rocketlake", "sapphirerapids", "skylake-avx512", "znver4"])
def test_avx512_cpus_get_512_bit_code(cpu):
    info = po.TargetInfo.for_cpu(cpu)
    assert info.has_avx512 and info.vector_bits == 512 and info.lanes("float32") == 16
    asm = _matmul_assembly(cpu)
    assert len(FMA["zmm"].findall(asm)) >= 16, f"{cpu}: expected 512-bit FMAs"
    assert not FMA["ymm"].findall(asm)


@pytest.mark.parametrize("cpu", ["znver3", "haswell"])
def test_avx2_cpus_get_256_bit_code(cpu):
    info = po.TargetInfo.for_cpu(cpu)
    assert not info.has_avx512 and info.vector_bits == 256 and info.lanes("float32") == 8
    asm = _matmul_assembly(cpu)
    assert FMA["ymm"].findall(asm) and not FMA["zmm"].findall(asm)
    assert "zmm" not in asm


def test_named_cpu_features_can_be_removed():
    info = po.TargetInfo.for_cpu("sapphirerapids", "-avx512f,-amx-tile")
    assert info.vector_bits == 256 and not info.has_amx_int8
    assert not info.has_vnni  # as LLVM does: no AVX-512 VNNI without AVX-512F


def test_host_model_names_its_features():
    host = po.TargetInfo.host()
    line = host.describe()
    assert host.name in line and f"{host.cores} core" in line
    assert ("has avx512f" in line or ", avx512f" in line.split("has ")[1].split(";")[0]) \
        == host.has_avx512
    assert host.cores >= 1

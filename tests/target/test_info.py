"""TargetInfo: target facts from the host or a named CPU, scope meanings, and templates
that size their register tiles from them (polyopt.machine)."""

import dataclasses
import pathlib

import numpy as np
import pytest

import polyopt as po
from polyopt.machine import (SCOPES, TargetInfo, private_scopes, scope_meaning)

HASWELL = TargetInfo.for_cpu("haswell", "+avx2,+fma,+avx")


def test_host_facts_come_from_llvm_and_sysfs():
    import llvmlite.binding as llvm

    host = TargetInfo.host()
    assert host is TargetInfo.host()  # computed once
    assert host.name == llvm.get_host_cpu_name()
    enabled = {k for k, v in llvm.get_host_cpu_features().items() if v}
    assert set(host.features) == enabled
    expected_bits = 512 if "avx512f" in enabled else 256 if "avx" in enabled else 128
    assert host.vector_bits == expected_bits
    assert host.lanes("float32") == expected_bits // 32 and host.lanes("float64") == expected_bits // 64
    cache = pathlib.Path("/sys/devices/system/cpu/cpu0/cache")
    for index in cache.glob("index*"):
        level = int((index / "level").read_text())
        if (index / "type").read_text().strip() != "Instruction" and level in (1, 2, 3):
            size = (index / "size").read_text().strip()
            assert getattr(host, f"l{level}_bytes") == int(size[:-1]) * {"K": 1024, "M": 1 << 20}[size[-1]]
    with pytest.raises(dataclasses.FrozenInstanceError):
        host.vector_bits = 1


@pytest.mark.parametrize("name, features, bits, registers, tile", [
    ("haswell", "+avx2,+fma,+avx", 256, 16, (6, 2)),
    ("skylake-avx512", "+avx512f,+avx2", 512, 32, (6, 4)),
    ("skylake-avx512", "", 512, 32, (6, 4)),           # the family's width without features
    ("znver4", ["avx2", "-avx512f"], 256, 16, (6, 2)),  # a feature turned off
    ("x86-64", (), 128, 16, (6, 2)),
    ("neoverse-n1", "+neon", 128, 32, (6, 4)),
])
def test_for_cpu(name, features, bits, registers, tile):
    info = TargetInfo.for_cpu(name, features)
    assert (info.name, info.vector_bits, info.vector_registers) == (name, bits, registers)
    assert info.register_tile() == tile
    assert info.kind == "cpu" and info.bind_tags == ()
    assert info.scope("shared").capacity is None


@pytest.mark.parametrize("call, match", [
    (lambda: TargetInfo.for_cpu("", ""), "CPU name must be a non-empty string"),
    (lambda: TargetInfo.for_cpu("haswell", 5), "features must be a string like"),
    (lambda: scope_meaning("texture"), "unknown scope 'texture'; use one of global, shared, local"),
    (lambda: private_scopes("warp.x"), "unknown bind tag 'warp.x'; use one of blockIdx.x"),
])
def test_bad_arguments(call, match):
    with pytest.raises(po.InvalidArgumentError, match=match):
        call()


def test_scope_meanings():
    assert [(s.name, s.shared_by, s.unit) for s in SCOPES] == [
        ("global", "all", "kernel"), ("shared", "group", "work-group"),
        ("local", "thread", "work-item")]
    assert private_scopes("blockIdx.y") == ("shared", "local")
    assert private_scopes("threadIdx.z") == ("local",)


def test_matmul_template_sizes_its_tile_from_the_target():
    A, B = po.placeholder((50, 40), name="A"), po.placeholder((40, 70), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C, target_info=HASWELL)
    assert 's["C"].tile("i", "j", 6, 16)' in s.script()
    host = po.create_schedule(C)
    po.templates.matmul_template(host, C)
    rows, vectors = TargetInfo.host().register_tile()
    assert f'tile("i", "j", {rows}, {vectors * TargetInfo.host().lanes()})' in host.script()
    rng = np.random.default_rng(0)
    a, b = rng.random((50, 40), dtype=np.float32), rng.random((40, 70), dtype=np.float32)
    c = np.full((50, 70), np.nan, np.float32)
    po.build(s, [A, B, C])(a, b, c)  # AVX2-sized tiles run on any x86-64 host
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    with pytest.raises(po.InvalidArgumentError, match="target_info must be a po.TargetInfo"):
        po.templates.matmul_template(po.create_schedule(C), C, target_info="haswell")


def test_nn_templates_take_lanes_and_registers_from_the_target():
    X = po.placeholder((1, 8, 9, 20), name="X")
    W = po.placeholder((8, 8, 3, 3), name="W")
    Y = po.ops.conv2d_nchw(X, W, padding=1, name="Y")
    s = po.create_schedule(Y)
    loops = po.templates.conv2d_template(s, Y, target_info=HASWELL)
    # 20 columns: at most 4 vectors of 8 (32) -> the whole row, more than 2 vectors: unrolled
    assert loops["x"].kind == "unrolled"
    if TargetInfo.host().lanes() == 16:  # with AVX-512 the row is at most 2 vectors
        default = po.templates.conv2d_template(po.create_schedule(Y), Y)
        assert default["x"].kind == "vectorized"
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 8, 9, 20), np.float32), rng.standard_normal((8, 8, 3, 3), np.float32)
    y = np.zeros((1, 8, 9, 20), np.float32)
    po.build(s, [X, W, Y])(x, w, y)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = sum(np.einsum("fc,nchw->nfhw", w[:, :, dy, dx], xp[:, :, dy:dy + 9, dx:dx + 20])
              for dy in range(3) for dx in range(3))
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    A = po.placeholder((100,), name="A")
    B = po.compute((100,), lambda i: A[i] + 1.0, name="B")
    s = po.create_schedule(B)
    po.templates.injective_chain_template(s, B, target_info=HASWELL)
    assert 's["B"].split("i", factor=8)' in s.script()

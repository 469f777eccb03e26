"""Intel AMX tiles (issue 31): the intrinsics, the machine model's choice, the code.

Code is built for a named AMX CPU (``sapphirerapids``) and inspected (tile instructions
present, one ``ldtilecfg`` per function and outside every loop); its numbers are checked
on any x86-64 host by running the same generated IR with the tile instructions
emulated (``testlib.amx_emulator``: everything polyopt decides runs natively, only the
instructions' arithmetic is the manual's); on a host with AMX the kernel itself runs,
elsewhere that part is skipped with the reason."""

import re

import numpy as np
import pytest

import polyopt as po
from polyopt.dtypes import from_bfloat16_bits, to_bfloat16_bits
from polyopt.schedules.tensorized import (amx_matmul_template, bf16_matmul_template,
                                          int8_matmul_template)
from polyopt.tensorize.builtin import from_key
from polyopt.tensorize.builtin_amx import amx_gemm_bf16, amx_gemm_int8, amx_gemm_u8s8
from polyopt.target.amx_state import request_amx

from testlib.amx_emulator import emulated_kernel
from testlib.machine import HOST
from testlib.numeric import assert_numbers

SPR = po.TargetInfo.for_cpu("sapphirerapids")
SPR_TARGET = "llvm -mcpu=sapphirerapids"
RNG = np.random.default_rng(31)
TILE_OPS = r"\b(ldtilecfg|tileloadd|tilestored|tilezero|tilerelease|tdpb\w+)\b"


def tile_instructions(assembly: str) -> set[str]:
    return set(re.findall(TILE_OPS, assembly))


def configurations_in_loops(assembly: str) -> list[int]:
    """The lines of ``ldtilecfg`` instructions that some loop (a backward jump to a
    label above them) encloses."""
    lines = assembly.splitlines()
    labels = {line[:-1]: n for n, line in enumerate(lines)
              if re.match(r"^\.?[\w.$]+:$", line)}
    back_edges = []
    for n, line in enumerate(lines):
        found = re.match(r"^\s+j\w+\s+([\w.$]+)\s*$", line)
        if found and labels.get(found.group(1), n + 1) <= n:
            back_edges.append((labels[found.group(1)], n))
    configs = [n for n, line in enumerate(lines) if "ldtilecfg" in line]
    return [n for n in configs if any(top <= n <= bottom for top, bottom in back_edges)]


def functions_with_tiles(assembly: str) -> dict[str, int]:
    """``{function: number of ldtilecfg}`` for each function using tile instructions."""
    found, name = {}, None
    for line in assembly.splitlines():
        header = re.match(r"^([\w.$]+):\s*(#.*)?$", line)
        if header and not line.startswith("."):
            name = header.group(1)
        elif name and re.search(r"\b(tileloadd|tdpb\w+|tilestored)\b", line):
            found.setdefault(name, 0)
        if name and "ldtilecfg" in line:
            found[name] = found.get(name, 0) + 1
    return found


def int8_matmul(m, k, n, *, cols=32, requantized=False):
    a = RNG.integers(0, 256, (m, k), dtype=np.uint8)
    w = RNG.integers(-128, 128, (k, n), dtype=np.int8)
    packed = po.ops.pack_vnni_numpy(w, columns=cols, blocked=True)
    A = po.placeholder(a.shape, name="A", dtype="uint8")
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    out = po.ops.requantize(C, 0.0021, 9, relu=True, name="Q") if requantized else C
    return (a, w, packed), (A, W, C, out)


def numpy_requantize(acc, scale, zero_point, relu):
    scaled = np.round((acc.astype(np.float32) * np.float32(scale)).astype(np.float64))
    lo = max(0, zero_point) if relu else 0
    return np.clip(scaled + zero_point, lo, 255).astype(np.uint8)


# -- the machine model ---------------------------------------------------------------------
def test_the_machine_model_knows_amx_and_chooses_it():
    assert SPR.amx_tiles == (8, 16, 64) and SPR.has_amx_int8 and SPR.has_amx_bf16
    assert SPR.tensor_unit("int8") == "amx" and SPR.tensor_unit("bf16") == "amx"
    assert SPR.tensor_unit("int8", prefer="avx512") == "avx512"
    zen4 = po.TargetInfo.for_cpu("znver4")
    assert zen4.amx_tiles == (0, 0, 0) and zen4.tensor_unit("int8") == "avx512"
    assert zen4.tensor_unit("int8", prefer="amx") is None
    assert po.TargetInfo.for_cpu("znver3").tensor_unit("bf16") is None
    assert po.TargetInfo.for_cpu("sapphirerapids", "-amx-int8").tensor_unit("int8") == "avx512"
    with pytest.raises(po.InvalidArgumentError, match="tensor unit must be one of"):
        SPR.tensor_unit("int8", prefer="tpu")
    with pytest.raises(po.InvalidArgumentError, match="'int8' or 'bf16'"):
        SPR.tensor_unit("fp8")


# -- the intrinsics ------------------------------------------------------------------------
@pytest.mark.parametrize("a_dtype, b_dtype, op", [("uint8", "int8", "tdpbusd"),
                                                  ("int8", "int8", "tdpbssd"),
                                                  ("int8", "uint8", "tdpbsud"),
                                                  ("uint8", "uint8", "tdpbuud")])
def test_int8_intrinsics_declare_their_operands_and_instruction(a_dtype, b_dtype, op):
    intrin = amx_gemm_int8(2, 1, 3, a_dtype, b_dtype)
    assert [(b.shape, b.dtype) for b in intrin.inputs] == [((32, 192), a_dtype),
                                                            ((48, 16, 4), b_dtype)]
    assert (intrin.output.shape, intrin.output.dtype) == ((32, 16), "int32")
    assert dict(intrin.update[0].params)["instruction"] == op
    assert from_key(intrin.key) is intrin  # a recorded step names it again


def test_bf16_intrinsic_and_the_tile_budget():
    intrin = amx_gemm_bf16(1, 2, 2)
    assert [b.shape for b in intrin.inputs] == [(16, 64), (32, 32, 2)]
    assert intrin.output.dtype == "float32"
    assert amx_gemm_u8s8(2, 2, 1) is amx_gemm_int8(2, 2, 1, "uint8", "int8")
    with pytest.raises(po.InvalidArgumentError, match="needs 11 tile registers"):
        amx_gemm_u8s8(3, 2, 1)
    with pytest.raises(po.InvalidArgumentError, match="uint8 or int8"):
        amx_gemm_int8(1, 1, 1, "int16", "int8")
    with pytest.raises(po.InvalidArgumentError, match="ksteps must be a positive int"):
        amx_gemm_bf16(1, 1, 0)


def test_tensorize_matches_amx_tiles_exactly():
    """The same exact matching as every intrinsic: a tile of the wrong width is refused."""
    _, (A, W, C, _) = int8_matmul(32, 128, 32)
    s = po.create_schedule(C)
    local = s.cache_write(C, "local")
    i, j = C.op.axis
    io, jo, ii, ji = s[C].tile(i, j, 16, 16)
    s[C].reorder(jo, io, ii, ji)
    s[local].compute_at(s[C], io)
    li, lj = local.op.axis
    ko, ki = local.op.reduce_axis
    koo, koi = s[local].split(ko, factor=16)
    s[local].reorder(koo, li, lj, koi, ki)
    with pytest.raises(po.TensorizeError):
        s[local].tensorize(li, amx_gemm_u8s8(1, 2, 1))  # 32 columns; the tile has 16
    with pytest.raises(po.TensorizeError):
        s[local].tensorize(li, amx_gemm_u8s8(2, 1, 1))  # 32 rows; the tile has 16
    s[local].tensorize(li, amx_gemm_u8s8(1, 1, 1))
    assert s.program.tensorized[0][2].name == "amx_gemm_int8_1x1x1"


# -- the code ------------------------------------------------------------------------------
def built_for_spr(s, args):
    f = po.build(s, args, target=SPR_TARGET)
    assembly = f.assembly
    return f, assembly


@pytest.mark.parametrize("m, k, n, parallel", [(64, 256, 64, False), (50, 512, 96, True)])
def test_int8_matmul_on_amx_is_bit_exact_with_requantization(tmp_path, m, k, n, parallel):
    (a, w, packed), (A, W, C, Q) = int8_matmul(m, k, n, requantized=True)
    s = po.create_schedule(Q)
    loops = int8_matmul_template(s, C, epilogue=Q, parallel=parallel, target_info=SPR)
    assert loops["unit"] == "amx" and loops["intrinsic"].startswith("amx_gemm_int8_2x2")
    f, assembly = built_for_spr(s, [A, W, Q])
    assert {"ldtilecfg", "tileloadd", "tdpbusd", "tilestored"} <= tile_instructions(assembly)
    assert "vpdpbusd" not in assembly
    assert configurations_in_loops(assembly) == []
    assert set(functions_with_tiles(assembly).values()) == {1}  # one ldtilecfg each
    expected = numpy_requantize(a.astype(np.int64) @ w.astype(np.int64), 0.0021, 9, True)
    q = np.zeros((m, packed.shape[0] * 32), np.uint8)
    if not parallel:  # (the emulation is run single-threaded: no thread pool)
        emulated_kernel(f, str(tmp_path))(a, packed, q)
        assert_numbers(q[:, :n], expected)
    if not HOST.has_amx_int8:
        with pytest.raises(po.BackendError, match="lacks"):
            f(a, packed, q)
        pytest.skip("this CPU has no AMX: the kernel was built for sapphirerapids and "
                    "inspected (and its IR run with emulated tiles), not run")
    q[:] = 0
    f(a, packed, q)
    assert_numbers(q[:, :n], expected)


def test_bf16_matmul_on_amx_within_bf16_rounding(tmp_path):
    m, k, n = 40, 96, 64
    a = to_bfloat16_bits(RNG.standard_normal((m, k)).astype(np.float32))
    w = to_bfloat16_bits(RNG.standard_normal((k, n)).astype(np.float32))
    packed = po.ops.pack_vnni_numpy(w, columns=32, blocked=True, group=2)
    A = po.placeholder(a.shape, name="A", dtype="bfloat16")
    W = po.placeholder(packed.shape, name="W", dtype="bfloat16")
    C = po.ops.matmul_bf16(A, W)
    s = po.create_schedule(C)
    assert bf16_matmul_template(s, C, parallel=False, target_info=SPR)["unit"] == "amx"
    f, assembly = built_for_spr(s, [A, W, C])
    assert {"ldtilecfg", "tileloadd", "tdpbf16ps"} <= tile_instructions(assembly)
    assert configurations_in_loops(assembly) == []
    exact = from_bfloat16_bits(a).astype(np.float64) @ from_bfloat16_bits(w).astype(np.float64)
    magnitude = np.abs(from_bfloat16_bits(a)).astype(np.float64) @ np.abs(
        from_bfloat16_bits(w)).astype(np.float64)
    bound = k * 2.0 ** -24 * magnitude + 1e-30  # float32 sums of exact products
    c = np.zeros((m, n), np.float32)
    emulated_kernel(f, str(tmp_path))(a, packed, c)
    assert np.all(np.abs(c - exact) <= bound)
    if not HOST.has_amx_bf16:
        pytest.skip("this CPU has no AMX-BF16: built for sapphirerapids and inspected")
    c[:] = 0
    f(a, packed, c)
    assert np.all(np.abs(c - exact) <= bound)


@pytest.mark.parametrize("a_dtype, b_dtype", [("int8", "int8"), ("int8", "uint8"),
                                              ("uint8", "uint8")])
def test_signed_and_unsigned_variants_are_bit_exact(tmp_path, a_dtype, b_dtype):
    """``tdpbssd``, ``tdpbsud``, ``tdpbuud`` on a hand-written schedule (po.ops has u8 x
    s8 only): c[i, j] = sum_k a[i, k] * b[k // 4, j, k % 4]."""
    m, k, n = 32, 128, 32
    A = po.placeholder((m, k), name="A", dtype=a_dtype)
    B = po.placeholder((k // 4, n, 4), name="B", dtype=b_dtype)
    ko = po.reduce_axis((0, k // 4), name="ko")
    ki = po.reduce_axis((0, 4), name="ki")
    C = po.compute((m, n), lambda i, j: po.sum(A[i, 4 * ko + ki].astype("int32")
                                               * B[ko, j, ki].astype("int32"),
                                               axis=[ko, ki]), name="C")
    s = po.create_schedule(C)
    local = s.cache_write(C, "local")
    i, j = C.op.axis
    io, jo, ii, ji = s[C].tile(i, j, 32, 32)
    s[local].compute_at(s[C], io)
    li, lj = local.op.axis
    koo, koi = s[local].split(local.op.reduce_axis[0], factor=32)
    s[local].reorder(koo, li, lj, koi, local.op.reduce_axis[1])
    s[local].tensorize(li, amx_gemm_int8(2, 2, 2, a_dtype, b_dtype))
    f, assembly = built_for_spr(s, [A, B, C])
    op = {("int8", "int8"): "tdpbssd", ("int8", "uint8"): "tdpbsud",
          ("uint8", "uint8"): "tdpbuud"}[a_dtype, b_dtype]
    assert op in tile_instructions(assembly) and configurations_in_loops(assembly) == []
    info = np.iinfo(a_dtype), np.iinfo(b_dtype)
    a = RNG.integers(info[0].min, info[0].max + 1, (m, k)).astype(a_dtype)
    b = RNG.integers(info[1].min, info[1].max + 1, (k // 4, n, 4)).astype(b_dtype)
    expected = (a.astype(np.int64) @ b.transpose(0, 2, 1).reshape(k, n).astype(np.int64)
                ).astype(np.int32)
    c = np.zeros((m, n), np.int32)
    emulated_kernel(f, str(tmp_path))(a, b, c)
    assert_numbers(c, expected)


# -- the choice and its refusals -----------------------------------------------------------
def test_avx512_can_be_forced_and_shapes_amx_cannot_take_fall_back():
    _, (A, W, C, _) = int8_matmul(32, 256, 64, cols=64)
    s = po.create_schedule(C)
    assert int8_matmul_template(s, C, target_info=SPR, tensor_unit="avx512")["unit"] == "avx512"
    assert "vpdpbusd" in po.build(s, [A, W, C], target=SPR_TARGET).assembly
    _, (A, W, C, _) = int8_matmul(32, 96, 64, cols=64)  # K = 96: not whole 64-byte tile rows
    s = po.create_schedule(C)
    assert int8_matmul_template(s, C, target_info=SPR)["unit"] == "avx512"
    with pytest.raises(po.InvalidArgumentError, match="does not fit AMX tiles"):
        int8_matmul_template(po.create_schedule(C), C, target_info=SPR, tensor_unit="amx")


def test_amx_is_refused_where_the_machine_lacks_it():
    zen4 = po.TargetInfo.for_cpu("znver4")
    _, (A, W, C, _) = int8_matmul(32, 256, 64)
    with pytest.raises(po.MissingInstructionsError) as err:
        int8_matmul_template(po.create_schedule(C), C, target_info=zen4, tensor_unit="amx")
    assert err.value.cpu == "znver4"
    with pytest.raises(po.MissingInstructionsError) as err:
        amx_matmul_template(po.create_schedule(C), C, target_info=zen4)
    assert (err.value.cpu, err.value.fact, err.value.stage) == ("znver4", "has_amx_int8", None)
    assert "AMX-INT8" in err.value.missing[0]
    s = po.create_schedule(C)
    amx_matmul_template(s, C, target_info=SPR)
    with pytest.raises(po.MissingInstructionsError) as err:
        po.build(s, [A, W, C], target="llvm -mcpu=znver4")
    assert err.value.intrinsic.startswith("amx_gemm_int8") and err.value.cpu == "znver4"
    assert err.value.missing[:2] == ("amx-tile", "amx-int8") and err.value.stage == "C_local"


def test_the_process_asks_linux_for_the_tile_state_once():
    if HOST.has_amx_int8:
        request_amx()
        request_amx()  # (once: the second call returns at once)
        return
    with pytest.raises(po.AMXPermissionError, match="ARCH_REQ_XCOMP_PERM") as first:
        request_amx()
    with pytest.raises(po.AMXPermissionError) as again:
        request_amx()
    assert again.value is first.value and first.value.errno != 0


# -- convolutions --------------------------------------------------------------------------
@pytest.mark.parametrize("c, f, size, kernel, padding, stride", [
    (64, 32, 6, 3, 1, 1), (128, 64, 7, 3, 0, 1), (64, 32, 7, 1, 0, 2),
    (576, 16, 4, 3, 1, 1)])  # (9 tiles of channels > MOST_KSTEPS: a call per tap and 3)
def test_int8_conv_on_amx_is_bit_exact_with_requantization(tmp_path, c, f, size, kernel,
                                                           padding, stride):
    from polyopt.schedules.amx_conv import amx_conv2d_template
    from testlib.tensorize import numpy_conv_int32

    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, kernel, kernel), dtype=np.int8)
    packed = po.ops.pack_conv_vnni_numpy(w, columns=f)
    X = po.placeholder(x.shape, name="X", dtype="uint8")
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    Y = po.ops.conv2d_u8s8_wide(X, W, padding=padding, stride=stride, name="Y")
    Q = po.ops.requantize(Y, 0.0007, 11, relu=True, axis=1, name="Q")
    s = po.create_schedule(Q)
    loops = amx_conv2d_template(s, Y, epilogue=Q, parallel=False, target_info=SPR)
    whole = c // 64 <= 8  # every tap and channel in one call, else split by taps
    assert loops["intrinsic"].startswith("amx_conv_int8_" if whole else "amx_gemm_int8_")
    f_, assembly = built_for_spr(s, [X, W, Q])
    assert {"ldtilecfg", "tileloadd", "tdpbusd", "tilestored"} <= tile_instructions(assembly)
    if whole:  # (split, the accumulators' zeroing may become a memset call per block,
        # after which LLVM loads the configuration again: outside the tap loops)
        assert configurations_in_loops(assembly) == []
    expected = numpy_requantize(numpy_conv_int32(x, w, padding, stride), 0.0007, 11, True)
    q = np.zeros(expected.shape, np.uint8)
    emulated_kernel(f_, str(tmp_path))(x, packed, q)
    assert_numbers(q, expected)
    if not HOST.has_amx_int8:
        pytest.skip("this CPU has no AMX: built for sapphirerapids, inspected and run with "
                    "emulated tiles, not run natively")
    q[:] = 0
    f_(x, packed, q)
    assert_numbers(q, expected)


def test_wide_conv_refuses_what_amx_cannot_take():
    X = po.placeholder((1, 32, 6, 6), name="X", dtype="uint8")  # 32 channels: half a tile
    W = po.placeholder((1, 8, 3, 3, 64, 4), name="W", dtype="int8")
    Y = po.ops.conv2d_u8s8_wide(X, W, padding=1, name="Y")
    from polyopt.schedules.amx_conv import amx_conv2d_template
    with pytest.raises(po.InvalidArgumentError, match="multiple of 64"):
        amx_conv2d_template(po.create_schedule(Y), Y, target_info=SPR)
    with pytest.raises(po.MissingInstructionsError):
        amx_conv2d_template(po.create_schedule(Y), Y,
                            target_info=po.TargetInfo.for_cpu("znver4"))
    X = po.placeholder((1, 64, 6, 6), name="X", dtype="uint8")
    W = po.placeholder((1, 16, 3, 3, 64, 4), name="W", dtype="int8")
    with pytest.raises(po.InvalidArgumentError, match="stride 1"):
        po.ops.conv2d_u8s8_wide(X, W, padding=1, stride=2)


def test_saved_and_cached_amx_kernels_ask_for_the_tile_state(tmp_path):
    """An exported library and a kernel linked from the disk cache record that they
    use tiles, so that whoever loads them asks Linux before the first run (here, where
    Linux refuses, the run raises AMXPermissionError instead of dying of SIGILL)."""
    _, (A, W, C, _) = int8_matmul(32, 128, 32)
    s = po.create_schedule(C)
    amx_matmul_template(s, C, parallel=False, target_info=SPR)
    f = po.build(s, [A, W, C], target=SPR_TARGET)
    path = str(tmp_path / "k.so")
    f.export_library(path)
    import json
    assert json.loads(open(path + ".json").read())["amx_tiles"] is True
    loaded = po.load_module(path)
    assert loaded._needs_amx
    from polyopt.kernels.builder import build_kernel
    from polyopt.kernels.disk import DiskCache
    disk = DiskCache(str(tmp_path / "cache"))
    func = po.lower(s, [A, W, C], target=SPR_TARGET)
    built = build_kernel(func, SPR_TARGET, {"num_threads": 1}, form="linked", disk=disk)
    assert built.meta["amx_tiles"] is True and built.kernel._needs_amx
    from polyopt.kernels.builder import load_kernel
    again = load_kernel(built.key, SPR_TARGET, disk, cache={})  # (linked from the disk)
    assert again.source == "disk" and again.kernel._needs_amx
    if not HOST.has_amx_int8:
        a = np.zeros((32, 128), np.uint8)
        w = np.zeros((1, 32, 32, 4), np.int8)
        with pytest.raises(po.AMXPermissionError):
            loaded(a, w, np.zeros((32, 32), np.int32))

"""Schedules compiled for target "accel": bit-exact against NumPy, buffer capacities,
derived dependence tokens, virtual threads, both device configurations."""

import dataclasses
import pathlib
import sys

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import IllegalScheduleError
from polyopt.machine.accel import TPU_LIKE, VTA
from polyopt.target.accel.isa import Tokens
from testlib.errors import refused  # noqa: E402
from polyopt.target.accel.sim import HazardError, run, uop_array
from polyopt.target.base import get_target

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from schedules import conv2d, conv2d_reference, matmul, matmul_reference  # noqa: E402


def _shape(tensor):
    return tuple(int(e) for e in tensor.shape)


def _run_matmul(config, m, n, k, **kw):
    s, args = matmul(config, m, n, k, **kw)
    f = po.build(s, args, target="accel" if config is VTA else "accel -config=tpu-like")
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a = rng.integers(-128, 128, _shape(args[0]), dtype=np.int8)
    w = rng.integers(-128, 128, _shape(args[1]), dtype=np.int8)
    o = np.zeros(_shape(args[2]), np.int8)
    f(a, w, o)
    return f, o, matmul_reference(a, w)


@pytest.mark.parametrize("n, k, tile_n, tile_k, threads", [
    (8, 8, 4, 4, 1), (6, 5, 4, 2, 1), (8, 6, 2, 4, 2), (7, 3, 2, 2, 2)])
def test_matmul_bit_exact(n, k, tile_n, tile_k, threads):
    f, got, expected = _run_matmul(VTA, 1, n, k, tile_n=tile_n, tile_k=tile_k,
                                   threads=threads)
    np.testing.assert_array_equal(got, expected)
    assert f.report.gemm_ops == n * k  # one micro-op per output tile and k step
    assert f.report.loaded["wgt"] == n * k * 256


def test_vta_matmul_example_counters():
    f, got, expected = _run_matmul(VTA, 1, 64, 64, tile_n=8, tile_k=16, threads=2)
    np.testing.assert_array_equal(got, expected)
    assert (f.report.gemm_ops, f.report.loaded["wgt"]) == (4096, 1048576)


def test_tpu_like_configuration():
    f, got, expected = _run_matmul(TPU_LIKE, 2, 3, 2, tile_n=2, tile_k=1)
    np.testing.assert_array_equal(got, expected)
    assert got.shape == (2, 3, 8, 64)
    assert f.report.gemm_ops == 2 * 3 * 2


@pytest.mark.parametrize("size, stride, kernel, rows, threads", [
    (8, 1, 3, 4, 1), (7, 1, 3, 3, 2), (8, 2, 1, 3, 1)])
def test_conv_bit_exact(size, stride, kernel, rows, threads):
    s, args = conv2d(VTA, size, 32, 64, kernel, stride, rows=rows, cout_tile=2, cin_tile=1,
                     threads=threads)
    f = po.build(s, args, target="accel")
    rng = np.random.default_rng(size)
    d = rng.integers(-128, 128, _shape(args[0]), dtype=np.int8)
    k = rng.integers(-128, 128, _shape(args[1]), dtype=np.int8)
    o = np.zeros(_shape(args[2]), np.int8)
    f(d, k, o)
    np.testing.assert_array_equal(o, conv2d_reference(d, k, stride))
    if kernel == 3:  # the padded input comes in with zero padding, not from DRAM
        assert any("pad" in line for line in f.listing().splitlines())


@pytest.mark.parametrize("size, kernel, rows, threads", [
    (16, 1, 3, 1), (15, 1, 4, 2), (9, 3, 2, 1)])
def test_strided_conv_loads_one_rectangle_per_tile(size, kernel, rows, threads):
    """A stride-2 input footprint (every other row and column) is loaded as its box
    hull: one LOAD per tile and input-channel block, not one per entry."""
    s, args = conv2d(VTA, size, 32, 64, kernel, 2, rows=rows, cout_tile=2, cin_tile=1,
                     threads=threads)
    f = po.build(s, args, target="accel")
    rng = np.random.default_rng(size + kernel)
    d = rng.integers(-128, 128, _shape(args[0]), dtype=np.int8)
    k = rng.integers(-128, 128, _shape(args[1]), dtype=np.int8)
    o = np.zeros(_shape(args[2]), np.int8)
    f(d, k, o)  # the simulator raises HazardError if a token misses the hull's writes
    np.testing.assert_array_equal(o, conv2d_reference(d, k, 2))
    out = (size + 2 * (kernel // 2) - kernel) // 2 + 1
    tiles = -(-out // rows) * (64 // 16 // 2) * (32 // 16)
    inp_loads = [i for i in f.program if getattr(i, "buffer", "") == "inp"]
    assert len(inp_loads) == tiles
    assert all(i.rows > 1 and i.cols > 1 for i in inp_loads)
    # the weight blocks of a tile: one strided load across the output-channel blocks
    assert len([i for i in f.program if getattr(i, "buffer", "") == "wgt"]) == tiles


def test_capacity_refusal_names_buffer_footprint_and_split():
    s, args = matmul(VTA, 1, 64, 64, tile_n=64, tile_k=32)  # 64x32 weight tiles: 512 KiB
    with pytest.raises(po.DeviceCapacityError) as err:
        po.build(s, args, target="accel")
    assert (err.value.resource, err.value.needed, err.value.available, err.value.buffer) == \
        ("wgt buffer", 524288, 262144, "W_wgt")
    loops, dim, entries, factor, nbytes, room = err.value.split  # the split it names
    assert factor == 32 and nbytes <= room
    s, args = matmul(VTA, 1, 64, 64, tile_n=32, tile_k=32)  # the split it names fits
    po.lower(s, args, target="accel")


def test_virtual_threads_double_the_buffers_and_overlap():
    one, _, _ = _run_matmul(VTA, 1, 16, 16, tile_n=4, tile_k=8, threads=1)
    two, got, expected = _run_matmul(VTA, 1, 16, 16, tile_n=4, tile_k=8, threads=2)
    np.testing.assert_array_equal(got, expected)
    assert two.report.cycles < one.report.cycles
    assert max(i.sram for i in two.program if getattr(i, "buffer", "") == "wgt") > 0


def test_a_threads_accumulator_reset_waits_while_the_other_thread_computes():
    """Virtual threads: a thread's accumulator reset is emitted with its own first loads
    and GEMM, so it waits for that thread's last STORE while the other thread's GEMMs
    run (two resets back to back would stall the compute queue on the store)."""
    s, args = conv2d(VTA, 8, 32, 64, 1, 2, rows=1, cout_tile=2, cin_tile=1, threads=2)
    f = po.build(s, args, target="accel")
    rng = np.random.default_rng(0)
    d = rng.integers(-128, 128, _shape(args[0]), dtype=np.int8)
    k = rng.integers(-128, 128, _shape(args[1]), dtype=np.int8)
    o = np.zeros(_shape(args[2]), np.int8)
    f(d, k, o)
    np.testing.assert_array_equal(o, conv2d_reference(d, k, 2))
    compute = [i for i in f.program if i.queue == "compute" and i.__class__.__name__ != "Load"]
    resets = [n for n, i in enumerate(compute) if getattr(i, "reset", False)]
    assert len(resets) == 2 * 4  # 4 output rows, 2 threads
    assert all(b - a > 1 for a, b in zip(resets, resets[1:]))
    assert all(compute[n + 1].__class__.__name__ == "Gemm" for n in resets)


def test_virtual_thread_on_a_reduction_loop_is_refused_with_instances():
    s, args = matmul(VTA, 1, 4, 4, tile_n=2, tile_k=2)
    C = s.stages[[st.name for st in s.stages].index("C")]
    with pytest.raises(IllegalScheduleError) as err:
        C.virtual_thread("ko.outer")
    assert "carries a dependence" in str(err.value) and "C" in str(err.value)


def _drop_token(program, index):
    """Remove the ``index``-th compute pop from the load queue and the push it matches."""
    pops = [i for i, ins in enumerate(program) if ins.queue == "compute" and ins.tokens.pop_prev]
    pushes = [i for i, ins in enumerate(program) if ins.queue == "load" and ins.tokens.push_next]
    program = list(program)
    for at, flag in ((pops[index], "pop_prev"), (pushes[index], "push_next")):
        tokens = dataclasses.replace(program[at].tokens, **{flag: False})
        program[at] = dataclasses.replace(program[at], tokens=tokens)
    return program


def test_removing_a_derived_token_is_a_hazard():
    s, args = matmul(VTA, 1, 4, 4, tile_n=2, tile_k=2, threads=2)
    f = po.build(s, args, target="accel")
    rng = np.random.default_rng(3)
    dram = {"A": rng.integers(-128, 128, (4, 1, 16), dtype=np.int8),
            "W": rng.integers(-128, 128, (16, 16, 16), dtype=np.int8),
            "O": np.zeros((4, 1, 16), np.int8), "uops": uop_array(f.uops)}
    run(f.program, {k: v.copy() for k, v in dram.items()}, VTA)  # as derived: no hazard
    assert sum(ins.tokens != Tokens() for ins in f.program) > 0
    err = refused(HazardError, lambda: run(_drop_token(f.program, 0), dram, VTA))
    assert err.problem == "unordered" and err.instruction != err.other


def test_target_info_lists_the_device_buffers():
    info = get_target("accel").info
    assert {s.name: s.capacity for s in info.scopes if s.name in ("inp", "wgt", "acc")} == \
        {"inp": 32768, "wgt": 262144, "acc": 131072}
    assert get_target("vta -config=tpu-like").info.scope("wgt").capacity == 4 << 20


def test_the_same_schedule_runs_on_the_cpu():
    """The GEMM intrinsic has a C implementation: a device schedule is checked on llvm."""
    s, args = matmul(VTA, 1, 6, 5, tile_n=4, tile_k=2)
    f = po.build(s, args)
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, _shape(args[0]), dtype=np.int8)
    w = rng.integers(-128, 128, _shape(args[1]), dtype=np.int8)
    o = np.zeros(_shape(args[2]), np.int8)
    f(a, w, o)
    np.testing.assert_array_equal(o, matmul_reference(a, w))


@pytest.mark.parametrize("config, cin, cout, cout_tile, rows, threads", [
    (TPU_LIKE, 64, 128, 1, 3, 2), (VTA, 32, 96, 4, 4, 1)], ids=["tpu-like", "vta-ragged"])
def test_conv_on_the_other_configuration_and_non_dividing_channel_tiles(
        config, cin, cout, cout_tile, rows, threads):
    """The second configuration runs the same conv schedule (batch 8, 64x64 core); on
    VTA, 6 output-channel blocks in tiles of 4 leave a partial tile."""
    s, args = conv2d(config, 6, cin, cout, 3, 1, rows=rows, cout_tile=cout_tile,
                     cin_tile=1, threads=threads)
    f = po.build(s, args, target="accel" if config is VTA else "accel -config=tpu-like")
    rng = np.random.default_rng(cout)
    d = rng.integers(-128, 128, _shape(args[0]), dtype=np.int8)
    k = rng.integers(-128, 128, _shape(args[1]), dtype=np.int8)
    o = np.zeros(_shape(args[2]), np.int8)
    f(d, k, o)
    np.testing.assert_array_equal(o, conv2d_reference(d, k, 1))
    blocks_in, blocks_out = cin // config.block_in, cout // config.block_out
    assert f.report.gemm_ops == 6 * 6 * 9 * blocks_in * blocks_out

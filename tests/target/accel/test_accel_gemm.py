"""The offload's device program (:mod:`polyopt.schedules.accel_gemm`), compiled from its
schedule: the int32 sums as byte planes and the ALU requantization (halves to even)
bit-exact on both configurations, its derived tokens, and the tile choice at the edge of
the buffers (one step more is refused by the compiler)."""

import dataclasses

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import ScheduleError
from polyopt.machine.accel import TPU_LIKE, VTA
from polyopt.schedules.accel_gemm import (Requantize, choose_tiles, from_planes,
                                       gemm_schedule)
from polyopt.tensorize.accel import gemm_intrin
from testlib.errors import refused  # noqa: E402
from polyopt.target.accel.sim import HazardError, run, uop_array
from testlib.errors import refused


def _target(config):
    return "accel" if config is VTA else "accel -config=tpu-like"


def _inputs(config, args, bias_range, seed, data=128):
    rng = np.random.default_rng(seed)
    shapes = [tuple(int(e) for e in a.shape) for a in args]
    a = rng.integers(-data, data, shapes[0], dtype=np.int8)
    w = rng.integers(-data, data, shapes[1], dtype=np.int8)
    column = rng.integers(-bias_range, bias_range, (shapes[2][0], 1, config.block_out))
    b = np.ascontiguousarray(np.broadcast_to(column, shapes[2]).astype(np.int32))
    exact = np.einsum("ikxl,jkyl->ijxy", a.astype(np.int64), w.astype(np.int64)) + b[None]
    return [a, w, b, np.zeros(shapes[3], np.int8)], exact


@pytest.mark.parametrize("config, sizes, tiles, planes, bias", [
    (VTA, (5, 3, 3), (2, 2, 2), 3, 3_000_000),
    (TPU_LIKE, (3, 2, 2), (2, 1, 1), 4, 1 << 30)], ids=["vta", "tpu-like"])
def test_int32_sums_leave_as_byte_planes(config, sizes, tiles, planes, bias):
    """Non-dividing tiles (5 rows in 2s, 3 columns in 2s), two virtual threads; the top
    plane carries the sign."""
    s, args = gemm_schedule(config, *sizes, tiles, threads=2, planes=planes)
    f = po.build(s, args, target=_target(config))
    arrays, exact = _inputs(config, args, bias, 1)
    f(*arrays)
    np.testing.assert_array_equal(from_planes(arrays[3]), exact)
    m, n, k = sizes
    assert f.report.gemm_ops == m * n * k
    assert f.report.stored == planes * m * n * config.batch * config.block_out


@pytest.mark.parametrize("shift, point, low, high", [(1, 100, 0, 255), (5, -3, -128, 127)])
def test_alu_requantization_rounds_halves_to_even(shift, point, low, high):
    """``clip(round_half_even(sum / 2**shift) + point, low, high)``: with shift 1 every
    odd sum is a tie."""
    s, args = gemm_schedule(VTA, 4, 2, 2, (2, 2, 2), threads=2,
                            requantize=Requantize(shift, point, low, high))
    f = po.build(s, args, target="accel")
    arrays, exact = _inputs(VTA, args, 300, shift, data=6)
    f(*arrays)
    expected = np.clip(np.rint(exact / 2 ** shift) + point, low, high).astype(np.int64)
    got = arrays[3].view(np.uint8) if low == 0 else arrays[3]
    np.testing.assert_array_equal(got, expected)
    # ties were met, unclipped, rounding down (even quotient) and up (odd quotient)
    tie = (exact % 2 ** shift == 2 ** (shift - 1)) & (expected > low) & (expected < high)
    assert len(np.unique(exact[tie] // 2 ** shift % 2)) == 2


def test_removing_a_store_token_is_a_hazard():
    """The next tile's accumulator reset waits for the STOREs of the byte planes that
    read the same entries: without that token the simulator objects."""
    s, args = gemm_schedule(VTA, 4, 1, 1, (1, 1, 1), threads=1, planes=2)
    f = po.build(s, args, target="accel")
    arrays, exact = _inputs(VTA, args, 100, 3)
    dram = {a.name: v.reshape((-1,) + v.shape[-2:]) for a, v in zip(args, arrays)}
    dram["uops"] = uop_array(f.uops)
    run(f.program, {k: v.copy() for k, v in dram.items()}, VTA)  # as derived: no hazard
    program = list(f.program)
    pop = next(i for i, ins in enumerate(program)
               if ins.queue == "compute" and ins.tokens.pop_next)
    push = next(i for i, ins in enumerate(program)
                if ins.queue == "store" and ins.tokens.push_prev)
    for at, flag in ((pop, "pop_next"), (push, "push_prev")):
        program[at] = dataclasses.replace(
            program[at], tokens=dataclasses.replace(program[at].tokens, **{flag: False}))
    err = refused(HazardError, lambda: run(program, dram, VTA))
    assert err.problem == "unordered" and err.buffer in ("acc", "out")
    assert err.instruction != err.other


def test_chosen_tiles_fit_and_one_step_deeper_is_refused():
    """Two threads x 32 rows x 32 tiles of depth fill the input buffer (2048 entries):
    one more tile of depth is refused, naming the buffer and a split; the offload's
    choice for these sizes (depth 35, a divisor of 70: no partial chunk) fits."""
    s, args = gemm_schedule(VTA, 64, 2, 70, (32, 2, 32), threads=2, planes=2)
    po.lower(s, args, target="accel")
    s, args = gemm_schedule(VTA, 64, 2, 70, (32, 2, 33), threads=2, planes=2)
    with pytest.raises(po.DeviceCapacityError) as err:
        po.lower(s, args, target="accel")
    assert (err.value.resource, err.value.available) == ("inp buffer", 32768)
    assert err.value.needed > 32768 and err.value.threads == 2
    tiles, threads = choose_tiles(VTA, 64, 2, 70, 2, 2)
    assert threads == 2 and 70 % tiles[2] == 0 and 2 * tiles[0] * tiles[2] <= 2048
    s, args = gemm_schedule(VTA, 64, 2, 70, tiles, threads=threads, planes=2)
    po.lower(s, args, target="accel")


def test_reading_an_array_after_a_stage_computed_in_place_of_it_is_refused():
    """``P = C // 256`` is computed in place of ``C`` in the accumulators; a store that
    still reads ``C`` afterwards would get ``P``: refused, naming both (a copy, as the
    byte planes use, is the way)."""
    A = po.placeholder((2, 1, 1, 16), name="A", dtype="int8")
    W = po.placeholder((1, 1, 16, 16), name="W", dtype="int8")
    ko = po.reduce_axis((0, 1), name="ko")
    ki = po.reduce_axis((0, 16), name="ki")
    C = po.compute((2, 1, 1, 16), lambda i, j, x, y: po.sum(
        A[i, ko, x, ki].astype("int32") * W[j, ko, y, ki].astype("int32"), axis=[ko, ki]),
        name="C")
    P = po.compute(C.shape, lambda *a: C[a] // 256, name="P")
    Y = po.compute((2,) + C.shape, lambda p, *a: po.if_then_else(
        p == 0, C[a], P[a]).astype("int8"), name="Y")
    s = po.create_schedule(Y)
    s[C].set_scope("acc")
    s[P].set_scope("acc")
    s.cache_read(A, "inp", [C])
    s.cache_read(W, "wgt", [C])
    s[C].tensorize(C.op.axis[2], gemm_intrin(VTA))
    err = refused(po.AcceleratorMappingError, lambda: po.build(s, [A, W, Y], target="accel"))
    assert (err.problem, err.array, err.other) == ("overwritten", "C", "P")
    assert isinstance(err, ScheduleError)


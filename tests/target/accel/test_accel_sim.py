"""The simulated accelerator: every instruction against NumPy, the instruction listing
and the hazard detector (a pop nothing pushes; the compiled programs' tokens are tested
in test_accel_compile.py and test_accel_gemm.py)."""

import dataclasses

import numpy as np
import pytest

import polyopt as po
from polyopt.machine.accel import VTA
from polyopt.target.accel.isa import Alu, Gemm, Load, Store, Tokens, Uop, listing
from testlib.errors import refused  # noqa: E402
from polyopt.target.accel.sim import HazardError, run, uop_array

rng = np.random.default_rng(7)


def int8(*shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def _acc_program(values, uops, *instructions):
    """Load accumulators ``values`` and micro-ops, run ``instructions``, store all."""
    n = len(values)
    dram = {"a": values.astype(np.int32), "uops": uop_array(uops),
            "y": np.zeros((n, 1, 16), np.int8)}
    program = [Load("uop", "uops", 0, sram=0, rows=1, cols=len(uops), stride=len(uops)),
               Load("acc", "a", 0, sram=0, rows=1, cols=n, stride=n),
               *instructions,
               Store("y", 0, sram=0, rows=1, cols=n, stride=n,
                     tokens=Tokens(pop_prev=True))]
    return program, dram


def _last_pushes(program):
    program[-2] = dataclasses.replace(program[-2], tokens=Tokens(push_next=True))
    return program


def test_load_strided_block_with_padding():
    src = int8(20, 1, 16)
    dram = {"x": src}
    ins = Load("inp", "x", 3, sram=5, rows=2, cols=3, stride=7, pad=(1, 0, 1, 1))
    from polyopt.target.accel.sim import _Machine
    machine = _Machine(VTA, dram)
    machine.program, machine.where, machine.clocks = [ins], [("load", 0)], [
        {"load": 0, "compute": -1, "store": -1}]
    machine.load(0, ins)
    got = machine.sram["inp"][5:5 + 3 * 5].reshape(3, 5, 1, 16)
    assert not got[0].any() and not got[:, 0].any() and not got[:, 4].any()
    np.testing.assert_array_equal(got[1, 1:4], src[[3, 4, 5]])
    np.testing.assert_array_equal(got[2, 1:4], src[[10, 11, 12]])
    assert machine.report.loaded["inp"] == 6 * 16


@pytest.mark.parametrize("op, imm, reference", [
    ("add", 5, lambda a, b: a + 5), ("max", 3, lambda a, b: np.maximum(a, 3)),
    ("min", -2, lambda a, b: np.minimum(a, -2)), ("shr", 2, lambda a, b: a >> 2),
    ("mul", 3, lambda a, b: a * 3), ("clip", (-10, 10), lambda a, b: np.clip(a, -10, 10)),
    ("add", None, lambda a, b: a + b), ("max", None, lambda a, b: np.maximum(a, b)),
    ("min", None, lambda a, b: np.minimum(a, b)), ("mul", None, lambda a, b: a * b),
    ("shr", None, lambda a, b: a >> np.abs(b) % 8),
])
def test_alu(op, imm, reference):
    values = rng.integers(-40, 40, (4, 1, 16)).astype(np.int32)
    if op == "shr" and imm is None:  # shift amounts 0..7 from the source tiles
        values[2:] = np.abs(values[2:]) % 8
    # dst tiles 0, 1 with src tiles 2, 3
    uops = [Uop(0, 2), Uop(1, 3)]
    program, dram = _acc_program(values, uops, Alu(op, 0, 2, imm=imm))
    _last_pushes(program)
    report = run(program, dram, VTA)
    expected = values.copy()
    expected[:2] = reference(values[:2], values[2:])
    np.testing.assert_array_equal(dram["y"], expected.astype(np.int8))
    assert report.alu_ops == 2


def test_store_narrows_to_the_low_byte_at_strided_places():
    values = rng.integers(-70000, 70000, (6, 1, 16)).astype(np.int32)
    dram = {"a": values, "y": np.full((12, 1, 16), 99, np.int8)}
    program = [Load("acc", "a", 0, sram=0, rows=1, cols=6, stride=6,
                    tokens=Tokens(push_next=True)),
               Store("y", 1, sram=0, rows=2, cols=3, stride=5,
                     tokens=Tokens(pop_prev=True))]
    report = run(program, dram, VTA)
    expected = np.full((12, 1, 16), 99, np.int8)
    expected[[1, 2, 3, 6, 7, 8]] = values.astype(np.int8)  # two rows of 3, 5 apart
    np.testing.assert_array_equal(dram["y"], expected)
    assert report.stored == 6 * 16 and report.loaded["acc"] == 6 * 64


def test_alu_reading_what_an_earlier_micro_op_wrote():
    values = np.arange(3 * 16, dtype=np.int32).reshape(3, 1, 16)
    # acc[1] += acc[0]; acc[2] += acc[1] (the new acc[1]), as a prefix sum
    program, dram = _acc_program(values, [Uop(1, 0), Uop(2, 1)], Alu("add", 0, 2))
    run(_last_pushes(program), dram, VTA)
    np.testing.assert_array_equal(dram["y"].astype(np.int32),
                                  np.cumsum(values, axis=0).astype(np.int8))


def test_gemm_loops_and_reset():
    inp, wgt = int8(6, 1, 16), int8(4, 16, 16)
    dram = {"x": inp, "w": wgt, "uops": uop_array([Uop(0, 0, 0)]),
            "y": np.zeros((2, 1, 16), np.int8)}
    # acc[j] = sum_c inp[c] @ wgt[2 j + c].T for j < 2, c < 2 (+ inp offset 3 for j)
    program = [Load("uop", "uops", 0, sram=0, rows=1, cols=1, stride=1),
               Load("inp", "x", 0, sram=0, rows=1, cols=6, stride=6),
               Load("wgt", "w", 0, sram=0, rows=1, cols=4, stride=4,
                    tokens=Tokens(push_next=True)),
               Gemm(0, 1, iter_out=2, dst_out=1, reset=True),
               Gemm(0, 1, iter_out=2, iter_in=2, dst_out=1, src_out=3, src_in=1,
                    wgt_out=2, wgt_in=1, tokens=Tokens(pop_prev=True, push_next=True)),
               Store("y", 0, sram=0, rows=1, cols=2, stride=2, tokens=Tokens(pop_prev=True))]
    report = run(program, dram, VTA)
    x, w = inp.astype(np.int32), wgt.astype(np.int32)
    expected = [x[3 * j] @ w[2 * j].T + x[3 * j + 1] @ w[2 * j + 1].T for j in range(2)]
    np.testing.assert_array_equal(dram["y"], np.array(expected).astype(np.int8))
    assert report.gemm_ops == 4


def test_a_pop_that_nothing_pushes_is_a_deadlock():
    program = [Gemm(0, 0, tokens=Tokens(pop_prev=True))]
    err = refused(HazardError, lambda: run(program, {}, VTA))
    assert (err.problem, err.waiting) == ("deadlock", {"compute": 0})


def test_refusals_are_polyopt_errors():
    with pytest.raises(po.InvalidArgumentError, match="cannot pop a token from its prev"):
        run([Load("inp", "x", 0, sram=0, rows=1, cols=1, stride=1,
                  tokens=Tokens(pop_prev=True))], {"x": int8(1, 1, 16)}, VTA)
    with pytest.raises(po.InvalidArgumentError, match="outside the buffer"):
        run([Load("inp", "x", 0, sram=2047, rows=1, cols=2, stride=2)],
            {"x": int8(2, 1, 16)}, VTA)
    with pytest.raises(po.InvalidArgumentError, match="clip needs imm"):
        Alu("clip", 0, 1, imm=3)


def test_listing_names_every_instruction():
    program, _ = _acc_program(np.zeros((2, 1, 16)), [Uop(0, 1)], Gemm(0, 1, reset=True),
                              Alu("shr", 0, 1, imm=3))
    text = listing(program)
    assert text.splitlines()[0] == "   0 compute LOAD uop[0..] <- uops[0 + 1x1 stride 1]"
    assert "GEMM reset" in text and "ALU shr imm 3" in text
    assert "STORE acc[0..] -> y[0 + 1x2 stride 2]  (pop prev)" in text

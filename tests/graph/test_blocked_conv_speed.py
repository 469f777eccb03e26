"""The blocked convolution's speed-related code shape (``polyopt/graph/layouts.py``,
``polyopt/graph/flat_conv.py``), issue 29: the padded input copied through a register
transpose (not a gather), row tiles as wide as the machine's registers allow (a partial
last tile where that takes fewer tiles), packed weights on a cache-line boundary, 512-bit
tiles for an AVX-512 CPU.  Code for named CPUs is built and inspected, not run; the
numbers are checked on the host against NumPy."""

import numpy as np
import pytest

import polyopt as po
from polyopt.graph.flat_conv import max_columns
from polyopt.graph.layouts import (pack_blocked, pack_conv_weights, pack_panels,
                                   register_columns, row_tile)
from polyopt.graph.lowering import lower_group, schedule_group
from polyopt.graph.passes import fuse
from polyopt.target.args import data_pointer
from testlib.machine import vector_of
from testlib.numeric import assert_numbers

from graph.test_flat_conv import conv_graph, conv_reference


def scheduled(g, info):
    """The packed conv group of ``g`` lowered and scheduled for ``info``."""
    g = pack_conv_weights(g, target_info=info)
    [group] = [grp for grp in fuse(g) if grp.kind == "complex"]
    lowered = lower_group(g, group.nodes, group.output)
    schedule = schedule_group(lowered, group.kind, group.nodes, target_info=info)
    assert lowered.template == "conv2d_blocked"
    return g, lowered, schedule


def test_register_columns_take_fewer_tiles_or_the_rows_divisor():
    assert register_columns(28, 6) == 6    # 5 tiles (6, 6, 6, 6, 4), not 7 of 4
    assert register_columns(56, 6) == 6    # 10 tiles, not 14 of 4
    assert register_columns(14, 13) == 7   # 2 tiles either way: the divisor
    assert register_columns(28, 7) == 7
    assert register_columns(7, 13) == 7
    assert register_columns(12, 6) == 6
    for width in range(1, 60):
        for columns in range(1, 16):
            tile = register_columns(width, columns)
            assert tile <= columns and -(-width // tile) <= width // row_tile(width, columns)


@pytest.mark.parametrize("cpu, vectors, columns", [
    ("znver3", 2, 6),            # 16 ymm: 6 columns x 2 vectors, 28 = 4 x 6 + 4
    ("znver4", 2, 7),            # 32 zmm: 7 columns x 2 vectors, 28 = 4 x 7
    pytest.param("sapphirerapids", 2, 7, marks=pytest.mark.slow)])
def test_strided_pointwise_tiles_fill_the_registers(cpu, vectors, columns):
    """Built for a named CPU, inspected: a 1x1 stride-2 layer like ResNet-18's projection (28 output
    columns) keeps ``columns`` x ``vectors`` accumulators, at most what the machine's
    registers hold beside the weights, in vectors of the machine's width."""
    info = po.TargetInfo.for_cpu(cpu)
    assert columns * vectors <= info.vector_registers - 2 - vectors
    assert columns <= max_columns(info.vector_registers, vectors)
    g, lowered, schedule = scheduled(conv_graph(16, (56, 56), 32, 1, 2, 0, seed=2)[0], info)
    [node] = g.nodes
    assert g.constants[node.inputs[1]].shape[-1] == vectors * info.lanes("float32")
    source = str(po.lower(schedule, [*lowered.placeholders, lowered.output]))
    assert f"x_inner <= {columns - 1}; x_inner += 1)" in source or \
        f"x_inner < {columns}; x_inner += 1)" in source, source
    kernel = po.build(schedule, [*lowered.placeholders, lowered.output],
                      target=f"llvm -mcpu={cpu}")
    assert vector_of("float32", info) in kernel.get_source()


@pytest.mark.parametrize("cpu", ["znver3", "znver4",
                                 pytest.param("sapphirerapids", marks=pytest.mark.slow)])
def test_padded_input_is_a_transposed_copy_and_tiles_are_the_machines(cpu):
    """Built for a named CPU, inspected: a 3x3 layer's input is padded into blocks of
    16 channels row by row through a register transpose (no per-element loads), and the
    sums' register tile is as many points as the machine's registers hold beside the
    weights (``max_columns``), in vectors of its width."""
    info = po.TargetInfo.for_cpu(cpu)
    g, lowered, schedule = scheduled(conv_graph(32, (16, 16), 32, 3, 1, 1, seed=3)[0], info)
    [node] = g.nodes
    block = g.constants[node.inputs[1]].shape[-1]
    assert node.attrs["points"] == max_columns(info.vector_registers, block // info.lanes(
        "float32"))
    kernel = po.build(schedule, [*lowered.placeholders, lowered.output],
                      target=f"llvm -mcpu={cpu}")
    program = str(kernel.func)
    copy = program.split("for (w = 0")[0]  # the copy into the row buffer, then the row
    assert "// transposed_copy:" in copy and "in0_local" in copy.split("{", 1)[1], \
        program[:3000]
    assert vector_of("float32", info) in kernel.get_source()


def test_packed_weights_start_on_a_cache_line():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((64, 24, 3, 3)).astype(np.float32)
    blocked = pack_blocked(w, 16)
    assert data_pointer(blocked) % 64 == 0 and blocked.flags.c_contiguous
    assert np.array_equal(blocked, w.reshape(4, 16, 24, 3, 3).transpose(0, 2, 3, 4, 1))
    b = rng.standard_normal((40, 100)).astype(np.float32)
    panels = pack_panels(b, 64)
    assert data_pointer(panels) % 64 == 0 and panels.shape == (2, 40, 64)
    assert np.array_equal(panels[1, :, :36], b[:, 64:]) and not panels[1, :, 36:].any()


@pytest.mark.slow
@pytest.mark.parametrize("channels, size, features, k, stride, pad", [
    (32, (23, 21), 32, 3, 1, 1),   # padded input in 2 blocks, rows not a multiple of 8
    (16, (56, 56), 32, 1, 2, 0)])  # 28 output columns: a partial last tile on AVX2
def test_blocked_convolutions_equal_numpy_on_this_host(channels, size, features, k, stride,
                                                       pad):
    g, w, b = conv_graph(channels, size, features, k, stride, pad, seed=channels + k)
    compiled = po.graph.compile(g, num_threads=2, cache=False)
    assert [s.template for s in compiled.steps if s.kernel is not None] == ["conv2d_blocked"]
    x = np.random.default_rng(5).standard_normal((1, channels, *size)).astype(np.float32)
    got = compiled.run({"x": x})[g.outputs[0]]
    assert_numbers(got, conv_reference(x, w, b, stride, pad).astype(np.float32),
                   dtype="float32")

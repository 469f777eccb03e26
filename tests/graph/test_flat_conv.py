"""Convolutions whose sums run over flat output points (``polyopt/graph/flat_conv.py``):
register tiles of points sized from the machine (not from divisors of the row), the
points rounded up to whole tiles, and the results NumPy's."""

import numpy as np
import pytest

import polyopt as po
from polyopt.graph.flat_conv import flat_points
from polyopt.graph.ir import OpNode
from polyopt.graph.layouts import pack_conv_weights


def conv_reference(x, w, b, stride: int, pad: int) -> np.ndarray:
    """NCHW convolution of one image in float64."""
    x = np.pad(x[0].astype(np.float64), ((0, 0), (pad, pad), (pad, pad)))
    k = w.shape[-1]
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))
    windows = windows[:, ::stride, ::stride]
    return (np.einsum("chwrs,fcrs->fhw", windows, w.astype(np.float64))
            + b[:, None, None])[None]


def conv_graph(channels, size, features, k, stride, pad, seed):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((features, channels, k, k)) / np.sqrt(channels * k * k))
    b = rng.standard_normal(features)
    g = po.graph.GraphBuilder()
    x = g.input("x", (1, channels, *size))
    y = g.op("Conv", [x, g.constant("w", w.astype(np.float32)),
                      g.constant("b", b.astype(np.float32))],
             pads=[pad] * 4, strides=[stride] * 2, kernel_shape=[k, k])
    return g.build([y]), w.astype(np.float32), b.astype(np.float32)


@pytest.mark.parametrize("cpu, tiles", [
    ("znver3", {3136: 6, 784: 6, 196: 6, 49: 5}),     # 16 ymm: 6 points x 2 vectors
    ("znver4", {3136: 14, 784: 14, 196: 14, 49: 10})])  # 32 zmm: 14 points x 2 vectors
def test_tile_points_come_from_the_registers_not_from_the_row(cpu, tiles):
    info = po.TargetInfo.for_cpu(cpu)
    conv = OpNode("c", "Conv", ("x", "w"), ("y",), {"pads": [1] * 4})
    assert {p: flat_points(conv, (64, 64, 3, 3), info, points=p) for p in tiles} == tiles
    pointwise = OpNode("c", "Conv", ("x", "w"), ("y",), {})
    strided = OpNode("c", "Conv", ("x", "w"), ("y",), {"strides": [2, 2]})
    strided_3x3 = OpNode("c", "Conv", ("x", "w"), ("y",), {"strides": [2, 2], "pads": [1] * 4})
    grouped = OpNode("c", "Conv", ("x", "w"), ("y",), {"group": 2, "pads": [1] * 4})
    assert flat_points(pointwise, (64, 64, 1, 1), info) == 0  # row tiles, fused epilogue
    assert flat_points(strided, (64, 64, 1, 1), info) == 0  # row tiles: 1.2x faster
    assert flat_points(strided_3x3, (64, 64, 3, 3), info) == tiles[3136]
    assert flat_points(grouped, (64, 32, 3, 3), info) == 0


@pytest.mark.parametrize("cpu, block, points", [("znver3", 16, 6), ("znver4", 32, 14)])
def test_generated_code_for_a_named_cpu_has_whole_tiles(cpu, block, points):
    """Built for a named CPU and inspected, not run: 14 x 14 = 196 points in whole tiles
    (198 or 196 points), every tile's points unrolled without guards, the input padded
    into blocks of 16 channels with the extra zero rows the last tile reads."""
    from polyopt.graph.lowering import lower_group, schedule_group
    from polyopt.graph.passes import fuse

    info = po.TargetInfo.for_cpu(cpu)
    g, _, _ = conv_graph(32, (14, 14), 64, 3, 1, 1, seed=1)
    g = pack_conv_weights(g, target_info=info)
    [node] = g.nodes
    assert (node.op_type, node.attrs["points"]) == ("ConvPacked", points)
    [group] = [grp for grp in fuse(g) if grp.kind == "complex"]
    lowered = lower_group(g, group.nodes, group.output)
    schedule = schedule_group(lowered, group.kind, group.nodes, target_info=info)
    source = str(po.lower(schedule, [*lowered.placeholders, lowered.output]))
    whole = -(-196 // points) * points
    rows = max(16, (whole - 1) // 14 + 3)
    assert lowered.template == "conv2d_blocked"
    assert f"[1][{64 // block}][{whole}][{block}]" in source, source
    assert f"[1][2][{rows}][16][16]" in source, source  # the padded input, in blocks
    assert f"p_inner < {points}; p_inner += 1)" in source and "guarded" not in source


@pytest.mark.parametrize("cpu", ["znver3", "znver4", "sapphirerapids"])
def test_chunks_of_the_parallel_sums_are_even(cpu):
    """Built for a named CPU and inspected, not run: a 28 x 28 layer's tiles split into
    chunks (the pieces of the parallel loop, with the blocks of output channels) of
    sizes that differ by at most one tile, each fitting the chunk the machine's L1
    allows (AVX2: 131 tiles in 4 chunks of 33 or 32, not 42, 42, 42 and 5)."""
    import re

    from polyopt.graph.lowering import lower_group, schedule_group
    from polyopt.graph.passes import fuse

    info = po.TargetInfo.for_cpu(cpu)
    g, _, _ = conv_graph(16, (28, 28), 32, 3, 1, 1, seed=1)
    g = pack_conv_weights(g, target_info=info)
    [node] = g.nodes
    points = node.attrs["points"]
    [group] = [grp for grp in fuse(g) if grp.kind == "complex"]
    lowered = lower_group(g, group.nodes, group.output)
    schedule = schedule_group(lowered, group.kind, group.nodes, target_info=info)
    source = str(po.lower(schedule, [*lowered.placeholders, lowered.output]))
    blocks, whole, block = map(int, re.search(
        r"out_blocked\[1\]\[(\d+)\]\[(\d+)\]\[(\d+)\]", source).groups())
    pieces = int(re.search(r"fb_p_outer_outer_fused < (\d+);", source).group(1))
    chunk = int(re.search(r"p_outer_inner < (\d+);", source).group(1))
    tiles, chunks = whole // points, pieces // blocks
    assert pieces % blocks == 0 and chunks > 1, source
    assert (chunks - 1) * chunk < tiles <= chunks * chunk  # every chunk has tiles
    assert chunks * chunk - tiles < chunks  # the last one at most one tile per chunk short
    assert 2 * chunk * points * block * 4 <= info.l1_bytes  # the sums of a chunk: half of L1


@pytest.mark.parametrize("cpu, lanes", [("znver3", 8), ("sapphirerapids", 16)])
@pytest.mark.parametrize("k, stride", [(3, 1), (1, 2)])
def test_the_bias_is_added_in_the_transposed_copy_of_each_row(cpu, lanes, k, stride):
    """Built for a named CPU and inspected, not run: the output rows (flat 3x3 sums, or
    a 1x1 stride-2 layer's row tiles) are written in NCHW order with the bias in one
    pass (no row buffer read again), each transposed vector plus the bias splat."""
    import re

    from polyopt.graph.lowering import lower_group, schedule_group
    from polyopt.graph.passes import fuse

    info = po.TargetInfo.for_cpu(cpu)
    g, _, _ = conv_graph(16, (28, 28), 32, k, stride, k // 2, seed=1)
    g = pack_conv_weights(g, target_info=info)
    [group] = [grp for grp in fuse(g) if grp.kind == "complex"]
    lowered = lower_group(g, group.nodes, group.output)
    schedule = schedule_group(lowered, group.kind, group.nodes, target_info=info)
    args = [*lowered.placeholders, lowered.output]
    assert "_nchw" not in str(po.lower(schedule, args))
    ir_text = po.build(schedule, args, target=f"llvm -mcpu={cpu}").llvm_ir
    assert re.search(rf"fadd [a-z ]*<{lanes} x float> %\S+, %\S+", ir_text)
    assert "shufflevector" in ir_text


@pytest.mark.slow
@pytest.mark.parametrize("channels, size, features, k, stride, pad, flat", [
    (32, (14, 14), 64, 3, 1, 1, True),   # blocked input, 196 points: whole tiles of 198 (AVX2)
    (3, (11, 12), 32, 3, 1, 1, True),    # NCHW input (3 channels), 132 points
    (16, (10, 10), 32, 5, 1, 2, True),   # a 5x5 kernel: more zero rows below
    (16, (15, 15), 32, 3, 2, 1, True),   # stride 2
    (16, (9, 9), 32, 1, 2, 0, False)])   # a strided 1x1 layer: row tiles (flat_points 0)
def test_flat_convolutions_equal_numpy(channels, size, features, k, stride, pad, flat):
    g, w, b = conv_graph(channels, size, features, k, stride, pad, seed=channels + k)
    compiled = po.graph.compile(g, num_threads=2, cache=False)
    assert "conv2d_blocked" in [s.template for s in compiled.steps]
    assert [n.attrs.get("points", 0) > 0 for n in compiled.graph.nodes
            if n.op_type == "ConvPacked"] == [flat]
    x = np.random.default_rng(0).standard_normal((1, channels, *size)).astype(np.float32)
    got = compiled.run({"x": x})[g.outputs[0]]
    np.testing.assert_allclose(got, conv_reference(x, w, b, stride, pad), rtol=1e-4,
                               atol=1e-4)

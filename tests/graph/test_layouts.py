"""Conv weights laid out at compile time (``polyopt/graph/layouts.py``): the
convolutions that vectorize across output channels read ``[C, R, S, F]`` weights
transposed once (no copy per call), and compute what the plain layout and onnxruntime
compute."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402
from polyopt.graph import layouts  # noqa: E402


def test_packed_convolutions_equal_plain_ones_and_onnxruntime():
    m = ModelBuilder(3)
    x = m.input("x", (1, 12, 14, 14))
    bias = m.const(np.arange(48, dtype=np.float32) / 10)
    a = m.add("Relu", [m.add("Conv", [x, m.weight(48, 12, 3, 3), bias], pads=[1] * 4,
                             strides=[2, 2])])                    # strided 3x3, 3 blocks of 16
    b = m.add("Conv", [a, m.weight(32, 48, 1, 1)])                # 1x1 on 7 columns
    c = m.add("Add", [m.add("Conv", [b, m.weight(32, 32, 3, 3)], pads=[1] * 4), b])
    odd = m.add("Conv", [c, m.weight(20, 32, 3, 3)], pads=[1] * 4)  # 20: no block divides
    wide = m.add("Conv", [x, m.weight(16, 12, 3, 3)], pads=[1] * 4)  # 14 columns, stride 1
    model = m.model([odd, wide])
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 12, 14, 14)).astype(np.float32)}
    g = po.graph.from_onnx(model)
    packed = po.graph.compile(g, num_threads=2)
    assert [n.op_type for n in packed.graph.nodes].count("ConvPacked") == 4
    templates = [s.template for s in packed.steps if s.kernel is not None]
    assert templates.count("conv2d_blocked") == 4, templates
    plain = po.graph.compile(po.graph.optimize(g, layouts=False), num_threads=2, passes=False)
    assert not any("blocked" in s.template for s in plain.steps)
    got, reference, expected = packed.run(feeds), plain.run(feeds), ort_run(model, feeds)
    for name in (odd, wide):
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-4)


def test_packed_matmuls_equal_plain_ones_and_onnxruntime():
    """Constant right operands stored as column panels: batched A, a width that is not
    a multiple of the panel (zero columns never read), an epilogue (bias + residual);
    a product of fewer rows than the register tile keeps its streaming schedule."""
    m = ModelBuilder(5)
    x = m.input("x", (2, 9, 24))
    h = m.add("Add", [m.add("MatMul", [x, m.weight(24, 100)]), m.const(
        np.linspace(-1, 1, 100).astype(np.float32))])            # 100 = 64 + 36
    y = m.add("Add", [m.add("MatMul", [h, m.weight(100, 24)]), x])  # residual
    v = m.input("v", (1, 24))
    narrow = m.add("MatMul", [v, m.weight(24, 40)])                # one row: not packed
    model = m.model([y, narrow])
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((2, 9, 24)).astype(np.float32),
             "v": rng.standard_normal((1, 24)).astype(np.float32)}
    g = po.graph.from_onnx(model)
    packed = po.graph.compile(g, num_threads=2)
    types = [n.op_type for n in packed.graph.nodes]
    assert types.count("MatMulPacked") == 2 and types.count("MatMul") == 1, types
    assert [s.template for s in packed.steps].count("matmul_packed+epilogue") == 2
    plain = po.graph.compile(po.graph.optimize(g, layouts=False), num_threads=2, passes=False)
    assert "MatMulPacked" not in [n.op_type for n in plain.graph.nodes]
    got, reference, expected = packed.run(feeds), plain.run(feeds), ort_run(model, feeds)
    for name in (y, narrow):
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-4)


def test_pack_panels_round_trips_and_pads_with_zeros():
    w = np.arange(3 * 70, dtype=np.float32).reshape(3, 70)
    panels = layouts.pack_panels(w, 32)
    assert panels.shape == (3, 3, 32)
    np.testing.assert_array_equal(panels.transpose(1, 0, 2).reshape(3, 96)[:, :70], w)
    assert not panels[2, :, 6:].any()


def test_blocked_convolutions_on_wide_rows_run_row_by_row_and_equal_onnxruntime():
    """Rows of 20 to 56 columns take the blocked template too (stride 1 where a register
    tile of 4 to 7 columns divides the row); a block whose sums do not fit in L1 is
    computed row by row, with and without an epilogue."""
    m = ModelBuilder(7)
    x = m.input("x", (1, 4, 40, 40))
    bias = m.const(np.linspace(-1, 1, 32).astype(np.float32))
    strided = m.add("Conv", [x, m.weight(32, 4, 3, 3)], pads=[1] * 4, strides=[2, 2])
    wide = m.add("Relu", [m.add("Conv", [x, m.weight(32, 4, 3, 3), bias], pads=[1] * 4)])
    prime = m.add("Conv", [x, m.weight(16, 4, 3, 3)], pads=[1, 1, 0, 0])  # 39 x 39 columns
    model = m.model([strided, wide, prime])
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 4, 40, 40)).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=2)
    types = [n.op_type for n in compiled.graph.nodes]
    assert types.count("ConvPacked") == 2 and types.count("Conv") == 1, types
    assert layouts.row_tile(40) == 5 and layouts.row_tile(39) == 3
    expected = ort_run(model, feeds)
    for name, value in compiled.run(feeds).items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-4, atol=1e-4)


def test_channels_that_no_block_divides_are_padded_with_zero_weights():
    """24 output channels: computed as 32 (8 zero channels) and read back as 24; with a
    bias and a residual add in NCHW, then read by a blocked convolution."""
    m = ModelBuilder(9)
    x = m.input("x", (1, 16, 12, 12))
    y = m.add("Conv", [x, m.weight(24, 16, 1, 1), m.const(np.arange(24, dtype=np.float32))])
    z = m.add("Add", [m.add("Conv", [y, m.weight(24, 24, 3, 3)], pads=[1] * 4), y])
    out = m.add("Relu", [m.add("Conv", [z, m.weight(32, 24, 1, 1)])])
    model = m.model([out])
    for cpu, computed in (("znver4", [(24, 32), (24, 32), (None, 32)]),  # 16 lanes
                          ("haswell", [(None, 24), (None, 24), (None, 32)])):  # 8 divide 24
        g = po.graph.optimize(po.graph.from_onnx(model),
                              target_info=po.TargetInfo.for_cpu(cpu))
        packed = [n for n in g.nodes if n.op_type == "ConvPacked"]
        assert [(n.attrs.get("channels"), g.constants[n.inputs[1]].shape[0] *
                 g.constants[n.inputs[1]].shape[4]) for n in packed] == computed
    assert layouts.padded_channels(20, 16) == 20
    feeds = {"x": np.random.default_rng(3).standard_normal((1, 16, 12, 12)).astype(np.float32)}
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=2).run(feeds)
    np.testing.assert_allclose(got[out], ort_run(model, feeds)[out], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cpu, expected", [
    ("znver4", {28: (32, 14), 7: (32, 10)}),  # 32 registers: 14 points x 2 vectors of 16
    ("haswell", {28: (16, 6), 14: (16, 6), 7: (16, 5)})])  # 16: 6 points x 2 vectors of 8
# (49 points: tiles of 10 (50 points) or 5 (50), not 14 (56) or 6 (54))
def test_the_conv_block_and_register_tile_fit_the_machines_registers(cpu, expected):
    """The channel block and the points of the blocked conv's register tile come from
    the machine compiled for (a named CPU here: inspected, not run), so that the tile's
    sums, its weight vectors and a broadcast fit in the vector registers; the tiles run
    over the flat output points (``p = y * width + x``, rounded up to whole tiles), so
    they need not divide the row; the host's kernels compute what onnxruntime computes."""
    from polyopt.graph.lowering import lower_group, schedule_group
    from polyopt.graph.passes import fuse

    info = po.TargetInfo.for_cpu(cpu)
    for width, (block, columns) in expected.items():  # columns: points of a tile
        m = ModelBuilder(width)
        x = m.input("x", (1, 16, width, width))
        out = m.add("Relu", [m.add("Conv", [x, m.weight(32, 16, 3, 3)], pads=[1] * 4)])
        model = m.model([out])
        g = po.graph.optimize(po.graph.from_onnx(model), target_info=info)
        [conv] = [n for n in g.nodes if n.op_type == "ConvPacked"]
        assert g.constants[conv.inputs[1]].shape[-1] == block
        [group] = [grp for grp in fuse(g) if grp.kind == "complex"]
        lowered = lower_group(g, group.nodes, group.output)
        schedule = schedule_group(lowered, group.kind, group.nodes, target_info=info)
        source = str(po.lower(schedule, [*lowered.placeholders, lowered.output]))
        points = -(-width * width // columns) * columns  # whole tiles
        assert lowered.template == "conv2d_blocked", lowered.template
        assert f"_blocked[1][{32 // block}][{points}][{block}]" in source, source
        assert f"p_inner < {columns}; p_inner += 1)" in source, source
        assert "each guarded" not in source, source
        feeds = {"x": np.random.default_rng(4).standard_normal((1, 16, width, width),
                                                               np.float32)}
        got = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
        np.testing.assert_allclose(got.run(feeds)[out], ort_run(model, feeds)[out],
                                   rtol=1e-4, atol=1e-4)

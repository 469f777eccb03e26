"""Draw the documentation's pictures: ``python docs/pictures.py [FOLDER]`` (default
``docs/img``).  Needs matplotlib (``pip install -e '.[docs]'``).

``heat_1d_tiles.svg``: the iteration domain of a 1-D heat stencil (``N = 12``, ``T = 6``),
its exact flow dependences as polyopt computes them, and the tiles of the schedule
``skew("t", "i", 1)`` then ``tile("t", "i", 2, 4)``, each tile of the skewed nest drawn in
its own colour (the tile of each instance is read from polyopt's schedule, not
recomputed here).

``graph_speed.svg``: the graph layer's speed against onnxruntime and PyTorch per model and
thread count, one panel per machine, from ``benchmarks/results/graph.json``.

``tiny_graph.svg``: the fused groups and the memory plan of ``examples/tiny_model.py``'s
model, as ``m.graph.draw`` draws them (needs onnx and Graphviz's ``dot``).
"""

from __future__ import annotations

import pathlib
import sys
import textwrap

import islpy as isl

import polyopt as po

N, T = po.var("N"), po.var("T")
SIZES = {"N": 12, "T": 6}


@po.kernel
def heat_1d(A: po.f64[2, N]):
    for t in range(T):
        for i in range(1, N - 1):
            A[(t + 1) % 2, i] = 0.25 * (A[t % 2, i - 1] + 2.0 * A[t % 2, i] + A[t % 2, i + 1])


def _points(set_: isl.Set) -> list[tuple[int, ...]]:
    found: list[tuple[int, ...]] = []
    dims = set_.dim(isl.dim_type.set)
    set_.foreach_point(lambda p: found.append(tuple(
        p.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(dims))))
    return sorted(found)


def _fixed(obj, ctx):
    """``obj`` (an isl map or set over the parameters N, T) at :data:`SIZES`."""
    params = ", ".join(SIZES)
    context = isl.Set.read_from_str(
        ctx, f"[{params}] -> {{ : {' and '.join(f'{k} = {v}' for k, v in SIZES.items())} }}")
    return obj.intersect_params(context.align_params(obj.get_space()))


def tiles_and_dependences():
    """``(instances with their tile, flow pairs)`` of the tiled heat_1d at SIZES."""
    s = po.create_schedule(heat_1d)
    s["S0"].skew("t", "i", 1)
    s["S0"].tile("t", "i", 2, 4)
    flow = po.deps(s).flow[0].relation
    ctx = flow.get_ctx()
    pairs = _points(_fixed(flow, ctx).wrap())
    row = s.program.schedule_of("S0")  # S0[t, i] -> the tiled, skewed loop counters
    points = [(tuple(p[:2]), tuple(p[2:])) for p in _points(_fixed(row, row.get_ctx()).wrap())]
    # the loop counters that vary (the others are the sequence's constant levels): the
    # first two are the tile loops, whose values name an instance's tile
    loops = [k for k in range(len(points[0][1])) if len({time[k] for _, time in points}) > 1]
    instances = [(point, tuple(time[k] for k in loops[:2])) for point, time in points]
    return instances, pairs


def draw(folder: pathlib.Path, kind: str = "svg") -> pathlib.Path:
    """Draw the picture into ``folder`` (``kind``: svg, or png to look at it)."""
    import matplotlib

    matplotlib.use("svg" if kind == "svg" else "agg")
    matplotlib.rcParams["svg.hashsalt"] = "polyopt"  # the same file every time
    import matplotlib.pyplot as plt

    instances, pairs = tiles_and_dependences()
    tiles = sorted({tile for _, tile in instances})
    colours = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for (t, i), tile in instances:
        ax.scatter(i, t, s=60, color=colours(tiles.index(tile) % 20), zorder=3,
                   edgecolors="black", linewidths=0.4)
    for t, i, t2, i2 in pairs:
        ax.annotate("", xy=(i2, t2), xytext=(i, t),
                    arrowprops={"arrowstyle": "->", "color": "0.55", "lw": 0.7,
                                "shrinkA": 5, "shrinkB": 5}, zorder=2)
    ax.set_xlabel("i")
    ax.set_ylabel("t")
    ax.set_xticks(range(1, SIZES["N"] - 1))
    ax.set_yticks(range(SIZES["T"]))
    ax.set_title("heat_1d: instances S0[t, i], flow dependences (arrows), and the tiles of "
                 "skew(t, i, 1); tile(t, i, 2, 4) (colours)", fontsize=8)
    ax.set_aspect("equal")
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"heat_1d_tiles.{kind}"
    fig.savefig(path, metadata={"Date": None} if kind == "svg" else None, dpi=110)
    plt.close(fig)
    return path


ROOT = pathlib.Path(__file__).resolve().parents[1]


def speed_rows(results: pathlib.Path = ROOT / "benchmarks" / "results" / "graph.json"):
    """``{machine: [(model, threads, vs onnxruntime, vs torch)]}`` from the graph
    benchmark's results (float models only)."""
    import json

    machines = json.loads(results.read_text())["machines"]
    found = {}
    for entry in machines.values():
        rows = [(r["model"], r["threads"], r.get("vs_onnxruntime"), r.get("vs_torch"))
                for r in entry["results"] if "model" in r and r.get("vs_onnxruntime")]
        if rows:
            found[entry["machine"]] = rows
    return found


def draw_speed(folder: pathlib.Path, kind: str = "svg") -> pathlib.Path:
    """The graph layer's speed relative to onnxruntime and PyTorch (1.0: as fast)."""
    import matplotlib

    matplotlib.use("svg" if kind == "svg" else "agg")
    matplotlib.rcParams["svg.hashsalt"] = "polyopt"
    import matplotlib.pyplot as plt

    machines = speed_rows()
    fig, axes = plt.subplots(len(machines), 1, figsize=(7, 3.2 * len(machines)), squeeze=False)
    for ax, (machine, rows) in zip(axes[:, 0], machines.items()):
        labels = [f"{model.replace('_layer', '').replace('_2layer', '')}, {threads} thr."
                  for model, threads, _, _ in rows]
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r[2] for r in rows], 0.4, label="vs onnxruntime")
        ax.bar([x + 0.2 for x in xs], [r[3] or 0 for r in rows], 0.4, label="vs PyTorch")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks(list(xs), labels, fontsize=7, rotation=30, ha="right")
        ax.set_ylabel("speed-up (x)")
        ax.set_title(textwrap.fill(machine, 110), fontsize=7)
        ax.legend(fontsize=7)
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"graph_speed.{kind}"
    fig.savefig(path, metadata={"Date": None} if kind == "svg" else None, dpi=110)
    plt.close(fig)
    return path


def draw_tiny_graph(folder: pathlib.Path) -> pathlib.Path:
    """The fused groups and arena offsets of the example model, drawn by polyopt."""
    import importlib.util
    import tempfile

    import onnx

    spec = importlib.util.spec_from_file_location("tiny_model",
                                                  ROOT / "examples" / "tiny_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as scratch:
        model = pathlib.Path(scratch) / "tiny.onnx"
        onnx.save(module.tiny_model(), model)
        compiled = po.graph.compile(po.graph.from_onnx(str(model)), num_threads=1)
    folder.mkdir(parents=True, exist_ok=True)
    return pathlib.Path(compiled.graph.draw(str(folder / "tiny_graph.svg")))


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "img")
    for picture in (draw(out), draw_speed(out), draw_tiny_graph(out)):
        print(picture)

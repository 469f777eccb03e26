"""Draw the documentation's pictures: ``python docs/pictures.py [FOLDER]`` (default
``docs/img``).  Needs matplotlib (``pip install -e '.[docs]'``).

``heat_1d_tiles.svg``: the iteration domain of a 1-D heat stencil (``N = 12``, ``T = 6``),
its exact flow dependences as polyopt computes them, and the tiles of the schedule
``skew("t", "i", 1)`` then ``tile("t", "i", 2, 4)``, each tile of the skewed nest drawn in
its own colour (the tile of each instance is read from polyopt's schedule, not
recomputed here).
"""

from __future__ import annotations

import pathlib
import sys

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


if __name__ == "__main__":
    print(draw(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                            pathlib.Path(__file__).parent / "img")))

"""auto_schedule on recursive filters (deriche): the scalars of a row sweep and of a
column sweep are expanded into arrays of their own (one per live range, one step), and
the column sweeps then walk rows, vectorized across columns; the numbers are the
default schedule's at small odd sizes."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt

DERICHE = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench" / "deriche.c"
SCALARS = ["tm1", "tp1", "tp2", "xm1", "xp1", "xp2", "ym1", "ym2", "yp1", "yp2"]


def _numbers(kernel, schedule, sizes):
    values = arguments(kernel, sizes, seed=11)
    values["alpha"][...] = 0.25
    call_polyopt(kernel, po.build(schedule), values)
    return values


@pytest.mark.parametrize("w, h, cache", [(13, 7, 64), (5, 11, None), (1, 3, 64)])
def test_deriche_computes_the_default_numbers(w, h, cache):
    kernel = po.from_c(str(DERICHE), defines={"W": 13, "H": 11})
    s = po.auto_schedule(kernel, cache_bytes=cache)
    assert not s.auto_report.fell_back
    assert s.script().startswith(f"s.expand_scalar({SCALARS}, dims=1)".replace("'", '"'))
    expected = _numbers(kernel, po.create_schedule(kernel), {"w": w, "h": h})
    actual = _numbers(kernel, s, {"w": w, "h": h})
    for name in ("imgOut", "y1", "y2"):
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-14, atol=1e-14,
                                   err_msg=name)


def test_deriche_column_sweeps_walk_rows_vectorized():
    """The column sweeps (S20: y1 down the columns; S28: y2 up) run rows outermost
    and columns innermost, vectorized: their state (``ym1_x_1[j]``...) is one element
    per column, stride-1 like ``imgOut[i][j]``."""
    kernel = po.from_c(str(DERICHE), defines={"W": 13, "H": 11})
    s = po.auto_schedule(kernel)
    report, script = str(s.auto_report), s.script()
    assert "one per live range" in report
    assert "maximal fusion reverses loops" in report
    shapes = {a.name: [str(e) for e in a.shape] for a in s.program.arrays
              if a.name.startswith("ym1_x")}
    assert shapes == {"ym1_x": ["w"], "ym1_x_1": ["h"]}
    for stage in ("S20", "S28"):
        assert f's["{stage}"].reorder("c2", "c1")' in script
        assert f's["{stage}"].vectorize("c1")' in script
    replayed = po.create_schedule(kernel).replay(script)
    sizes = {"w": 9, "h": 7}
    np.testing.assert_array_equal(_numbers(kernel, replayed, sizes)["imgOut"],
                                  _numbers(kernel, s, sizes)["imgOut"])


def test_without_expansion_the_sweeps_stay_scalar():
    kernel = po.from_c(str(DERICHE), defines={"W": 13, "H": 11})
    s = po.auto_schedule(kernel, expand_scalars=False)
    assert "expand_scalar" not in s.script()
    assert 's["S20"].vectorize' not in s.script()

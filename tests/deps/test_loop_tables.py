"""The tables behind the loop checks of ``polyopt opt`` (made faster for PolyBench's
deriche, same answers): which statements share a loop (one table of each statement's
constant schedule entries), the maps of "another iteration" and "not after" (one per
space), the races of a loop (asked twice by a parallel loop's check), and the front
end's names of a kernel (one walk of its tree)."""

import ast
import os
import pathlib
import subprocess
import sys

import islpy as isl
import pytest

import polyopt as po
from polyopt.deps.legality import loop_statements, other_iteration, shares_loop
from polyopt.deps.races import racing_access
from polyopt.errors import InvalidArgumentError
from polyopt.frontend.parse import local_names

SOURCE = """
void two_nests(int n, double A[n][n], double B[n][n], double x[n]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    x[i] = 0.0;
    for (j = 0; j < n; j++)
      x[i] += A[i][j];
  }
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      B[i][j] = x[j] + A[j][i];
#pragma endscop
}"""


def _constant(row: isl.Map, dim: int):
    fixed = row.range().plain_get_val_if_fixed(isl.dim_type.set, dim)
    return None if fixed.is_nan() else fixed.to_python()


def _shares_by_rows(program, other, stmt, dim) -> bool:
    """The answer read from the two rows themselves (the definition)."""
    a, b = program.schedule_of(stmt), program.schedule_of(other)
    return all(_constant(a, d) is None or _constant(b, d) is None
               or _constant(a, d) == _constant(b, d) for d in range(dim))


def test_statements_sharing_a_loop_as_their_rows_say():
    program = po.create_schedule(po.from_c(SOURCE)).program
    names = [st.name for st in program.statements]
    width = program.schedule_of(names[0]).dim(isl.dim_type.out)
    for stmt in names:
        for dim in range(width):
            inside = {o for o in names if _shares_by_rows(program, o, stmt, dim)}
            assert loop_statements(program, stmt, dim) == frozenset(inside)
            assert all(shares_loop(program, o, stmt, dim) == (o in inside) for o in names)
    assert loop_statements(program, "S0", 1) == {"S0", "S1"}  # the first nest
    with pytest.raises(InvalidArgumentError, match="no statement named 'S9'"):
        shares_loop(program, "S9", "S0", 1)


def test_another_iteration_is_built_once_per_space_and_dimension():
    space = isl.Set("[n] -> { [a, b, c] }").get_space()
    again = isl.Set("[n] -> { [a, b, c] }").get_space()
    assert other_iteration(space, 1) is other_iteration(again, 1)
    expected = isl.Map("[n] -> { [a, b, c] -> [a', b', c'] : a' = a and b' != b }")
    assert other_iteration(space, 1).is_equal(expected)
    assert other_iteration(space, 0).is_equal(
        isl.Map("[n] -> { [a, b, c] -> [a', b', c'] : a' != a }"))


def test_a_race_is_found_with_and_without_the_private_buffer():
    A = po.placeholder((10,), name="A")
    B = po.compute((10,), lambda i: A[i] * 2, name="B")
    C = po.compute((8,), lambda i: B[i] + B[i + 2], name="C")
    s = po.create_schedule(C)
    io, _ = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    race = racing_access(s.program, "C", 2)
    assert race == "B[i_outer=0, i=4] writes B[4] that C[i=4] reads, in another iteration"
    assert racing_access(s.program, "C", 2) == race
    buffer = s.program.array_of(B).name
    assert racing_access(s.program, "C", 2, frozenset({buffer})) is None


def test_local_names_of_a_function_with_names_outside_its_body():
    tree = ast.parse("def f(a, b: int = 1, *, c):\n    x = a\n    for i in range(3):\n"
                     "        y, z = i, x\n    return y\n").body[0]
    assert local_names(tree) == {"a", "b", "c", "x", "i", "y", "z"}


def test_the_command_line_does_not_import_the_graph_layer():
    """``polyopt opt`` starts without networkx and polyopt.graph (0.5 s of CPU of its
    1.3 s import; only graphs need them); ``po.graph`` still imports on first use."""
    code = ("import sys, polyopt.cli; print('networkx' in sys.modules, "
            "'polyopt.graph' in sys.modules, polyopt.cli.po.graph.__name__)")
    root = pathlib.Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.stdout.split() == ["False", "False", "polyopt.graph"]

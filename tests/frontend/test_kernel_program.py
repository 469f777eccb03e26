"""The program po.kernel builds: statements, exact domains, dependences, source order."""

import importlib.util
import random

import islpy as isl
import numpy as np
import pytest

import polyopt as po

from testlib.kernels import N, forward_substitution, jacobi_1d, lu, seidel_2d

M = po.var("M")


def _equal(actual, text):
    expected = type(actual)(text)
    assert actual.is_equal(expected), f"got {actual}\nexpected {expected}"


def test_statements_arrays_and_roles():
    program = jacobi_1d.program
    assert [s.name for s in program.statements] == ["S0", "S1"]
    assert [(a.name, a.role, a.dtype) for a in program.arrays] == [
        ("A", "inout", "float64"), ("B", "inout", "float64")]
    assert [p.name for p in program.params] == ["N", "T"]
    assert program.statement("S1").dims == ("t", "i")
    assert [v.name for v in program.statement("S1").iter_vars] == ["t", "i"]
    roles = {a.name: a.role for a in forward_substitution.program.arrays}
    assert roles == {"L": "placeholder", "b": "placeholder", "x": "inout"}
    _equal(program.context, "[N, T] -> { : N >= 0 and T >= 0 }")


def test_lowered_time_loop_with_two_nests_in_source_order():
    assert str(po.lower(po.create_schedule(jacobi_1d))) == """\
void jacobi_1d(float64 A[N], float64 B[N]) {
  for (t = 0; t < T; t += 1) {
    for (i = 1; i < N - 1; i += 1)
      B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
    for (i = 1; i < N - 1; i += 1)
      A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
  }
}"""


def test_lowered_lu_in_source_order():
    assert str(po.lower(po.create_schedule(lu))) == """\
void lu(float64 A[N][N]) {
  for (k = 0; k < N - 1; k += 1)
    for (i = k + 1; i < N; i += 1) {
      A[i, k] = A[i, k] / A[k, k];
      for (j = k + 1; j < N; j += 1)
        A[i, j] = A[i, j] - A[i, k] * A[k, j];
    }
}"""


def test_statement_after_an_inner_loop_runs_after_it():
    assert str(po.lower(po.create_schedule(forward_substitution))) == """\
void forward_substitution(float64 L[N][N], float64 b[N], float64 x[N]) {
  for (i = 0; i < N; i += 1) {
    x[i] = b[i];
    for (j = 0; j < i; j += 1)
      x[i] = x[i] - L[i, j] * x[j];
    x[i] = x[i] / L[i, i];
  }
}"""
    stages = {s.name: s.attach for s in forward_substitution.program.stages}
    assert stages["S0"].kind == "root"
    assert (stages["S1"].stage, stages["S1"].depth) == ("S0", 1)
    assert (stages["S2"].stage, stages["S2"].depth) == ("S0", 1)


def test_triangular_domain_is_exact():
    _equal(lu.program.statement("S0").domain,
           "[N] -> { S0[k, i] : 0 <= k and k < i < N }")
    _equal(lu.program.statement("S1").domain,
           "[N] -> { S1[k, i, j] : 0 <= k and k < i < N and k < j < N }")


def test_strides_guards_and_min_max_bounds_in_the_domain():
    @po.kernel
    def strided(A: po.f64[N, M]):
        for i in range(1, N, 3):
            for j in range(max(0, i - 2), min(M, i + 4)):
                if i + j < N and not j == 2:
                    A[i, j] = 0.0
                else:
                    A[i, j] = 1.0

    program = strided.program
    _equal(program.statement("S0").domain,
           "[N, M] -> { S0[i, j] : exists e: i = 1 + 3e and 1 <= i < N and j >= 0 and j >= i - 2"
           " and j < M and j < i + 4 and i + j < N and j != 2 }")
    _equal(program.statement("S1").domain,
           "[N, M] -> { S1[i, j] : exists e: i = 1 + 3e and 1 <= i < N and j >= 0 and j >= i - 2"
           " and j < M and j < i + 4 and (i + j >= N or j = 2) }")


def test_nested_loops_reusing_a_name_get_distinct_dimensions():
    @po.kernel
    def shadowed(A: po.f64[N, M]):
        for i in range(N):
            for i in range(M):
                A[0, i] = 1.0

    _equal(shadowed.program.statement("S0").domain,
           "[N, M] -> { S0[i, i_1] : 0 <= i < N and 0 <= i_1 < M }")


def test_seidel_flow_dependence_to_the_next_j():
    flow = po.deps(po.create_schedule(seidel_2d)).between("S0", "S0", "flow")
    next_j = isl.UnionMap("{ S0[t, i, j] -> S0[t, i, j + 1] }")
    _equal(flow.intersect(next_j),
           "[N, T] -> { S0[t, i, j] -> S0[t, i, j + 1] : 0 <= t < T and 0 < i < N - 1"
           " and 0 < j < N - 2 }")
    next_t = isl.UnionMap("[N, T] -> { S0[t, i, j] -> S0[t + 1, i, j] : 0 <= t < T - 1"
                          " and 0 < i < N - 1 and 0 < j < N - 1 }")
    assert next_t.is_subset(po.deps(po.create_schedule(seidel_2d)).between("S0", "S0", "output"))


def test_jacobi_flow_dependences_between_the_two_nests():
    deps = po.deps(po.create_schedule(jacobi_1d))
    _equal(deps.between("S0", "S1", "flow"),
           "[N, T] -> { S0[t, i] -> S1[t, i2] : 0 <= t < T and 0 < i < N - 1 and"
           " 0 < i2 < N - 1 and i2 - 1 <= i <= i2 + 1 }")
    _equal(deps.between("S1", "S0", "flow"),
           "[N, T] -> { S1[t, i] -> S0[t + 1, i2] : 0 <= t < T - 1 and 0 < i < N - 1 and"
           " 0 < i2 < N - 1 and i2 - 1 <= i <= i2 + 1 }")


def test_lower_and_build_need_args_for_tensor_expressions():
    A = po.placeholder((4,), name="A")
    B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(po.InvalidArgumentError, match=r"argument list is required.*\[A, B, C\]"):
        po.build(po.create_schedule(B))


def test_in_place_array_is_checked_like_an_output():
    f = po.build(po.create_schedule(forward_substitution))
    L, b = np.eye(3), np.ones(3)
    with pytest.raises(po.InvalidArgumentError, match=r"output 'x' shares memory with argument 'b'"):
        f(L, b, b)
    readonly = np.zeros(3)
    readonly.flags.writeable = False
    with pytest.raises(po.InvalidArgumentError, match=r"output 'x' is read-only"):
        f(L, b, readonly)
    x_tensor = forward_substitution.args[2]
    with pytest.raises(po.UndefinedTensorError, match=r"'x' is read and written in place"):
        po.lower(po.create_schedule(forward_substitution), forward_substitution.args[:2])
    assert po.lower(po.create_schedule(forward_substitution),
                    [x_tensor, *forward_substitution.args[:2]]).args[0].name == "x"


def test_missing_time_var_must_be_passed_by_keyword():
    f = po.build(po.create_schedule(seidel_2d))
    with pytest.raises(po.InvalidArgumentError, match=r"var\(s\) T .* f\(..., T=10\)"):
        f(np.zeros((3, 3)))


def test_calling_the_kernel_directly_explains_how_to_build_it():
    with pytest.raises(po.InvalidArgumentError, match=r"po.build\(po.create_schedule\(lu\)\)"):
        lu(np.zeros((2, 2)))


# -- the default schedule is the source order, for random loop structures ----------------

def _block(rng, loop_vars, counter, indent):
    pad = "    " * indent
    lines = []
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        if len(loop_vars) < 3 and roll < 0.45:
            var = "ijk"[len(loop_vars)]
            outer = loop_vars[-1] if loop_vars else None
            lo = rng.choice(["0", "1"] + ([outer, f"{outer} - 1"] if outer else []))
            hi = rng.choice(["3", "4"] + ([f"{outer} + 2"] if outer else []))
            step = rng.choice(["", "", ", 2"])
            lines.append(f"{pad}for {var} in range({lo}, {hi}{step}):")
            lines += _block(rng, loop_vars + [var], counter, indent + 1)
        elif loop_vars and roll < 0.6 and indent < 5:
            var = rng.choice(loop_vars)
            lines.append(f"{pad}if {var} % 2 == 0 or {var} > 2:")
            lines += _block(rng, loop_vars, counter, indent + 1)
            if rng.random() < 0.5:
                lines.append(f"{pad}else:")
                lines += _block(rng, loop_vars, counter, indent + 1)
        else:
            counter[0] += 1
            mix = " + ".join(f"{3 + n} * {v}" for n, v in enumerate(loop_vars)) or "0"
            lines.append(f"{pad}H[0] = (H[0] * 31 + {counter[0]} * 1000 + {mix}) % 1000003")
    return lines


@pytest.mark.parametrize("seed", range(25))
def test_random_loop_structures_run_in_source_order(seed, tmp_path):
    rng = random.Random(seed)
    body = _block(rng, [], [0], 1)
    source = "import polyopt as po\n\ndef nest(H: po.i64[1]):\n" + "\n".join(body) + "\n"
    path = tmp_path / f"nest_{seed}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"nest_{seed}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expected = np.ones(1, "int64")
    module.nest(expected)  # plain Python
    actual = np.ones(1, "int64")
    po.build(po.create_schedule(po.kernel(module.nest)))(actual)
    assert actual[0] == expected[0], source

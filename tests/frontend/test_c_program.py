"""The programs po.from_c builds: domains, accesses, inferred size ranges, schedules."""

import islpy as isl
import pytest

import polyopt as po


def kernel(body: str, params="int n, int m, double A[n][m]", decls="int i, j;"):
    return po.from_c(f"void k({params}) {{\n {decls}\n#pragma scop\n{body}\n#pragma endscop\n}}\n")


def test_same_program_as_the_python_kernel():
    n = po.var("n")

    @po.kernel
    def k(A: po.f64[n, n]):
        for i in range(n):
            for j in range(i + 1, n):
                A[i, j] += A[j, i]
    from_c = kernel("for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) A[i][j] += A[j][i];",
                    params="int n, double A[n][n]")
    ours, theirs = from_c.program.statement("S0"), k.program.statement("S0")
    assert ours.domain.is_equal(theirs.domain)
    assert str(po.lower(po.create_schedule(from_c))) == str(po.lower(po.create_schedule(k)))


def test_sizes_inferred_from_array_bounds():
    # writes A[0][j] and reads A[i][m - 1]: needs n >= 1 whenever m >= 1, and m >= 1 if n >= 1
    k = kernel("for (j = 0; j < m; j++) A[0][j] = 1.0;\n"
               "for (i = 0; i < n; i++) A[i][0] += A[i][m - 1];")
    expected = isl.Set("[n, m] -> { : (n >= 1 and m >= 1) or (n = 0 and m = 0) }")
    assert k.program.context.is_equal(expected), k.program.context


def test_decreasing_loop_runs_over_minus_i():
    k = kernel("for (i = n - 1; i >= 1; i -= 2) A[i][0] = A[i - 1][0];")
    dom = k.program.statement("S0").domain
    assert dom.is_equal(isl.Set("[n, m] -> { S0[i] : -n < i <= -1 and (i + n + 1) mod 2 = 0 }"))


def test_ternary_min_max_bounds_and_guards():
    k = kernel("for (i = 0; i < n; i++)\n"
               "  for (j = (i > 2 ? i : 2); j < (m < i + 4 ? m : i + 4); j++)\n"
               "    if (i + j != 5 || !(i < 3)) A[i][j] = 0.0;")
    dom = k.program.statement("S0").domain
    expected = isl.Set("[n, m] -> { S0[i, j] : 0 <= i < n and j >= i and j >= 2 and j < m "
                       "and j < i + 4 and (i + j != 5 or i >= 3) }")
    assert dom.is_equal(expected.intersect_params(k.program.context))


def test_scalar_parameters_are_zero_d_arrays_and_sizes_are_vars():
    k = kernel("for (i = 0; i < n; i++) for (j = 0; j < m; j++) A[i][j] *= alpha;",
               params="int n, int m, double alpha, double A[n][m]")
    assert [t.name for t in k.args] == ["alpha", "A"]
    assert k.args[0].shape == ()
    assert [p.name for p in k.program.params] == ["n", "m"]
    assert [(p.name, p.kind) for p in k.c_params] == [
        ("n", "size"), ("m", "size"), ("alpha", "scalar"), ("A", "array")]


@pytest.mark.parametrize("decl, role", [("double acc;", "compute"), ("double acc[1];", "compute")])
def test_accumulators_become_scratch_arrays(decl, role):
    index = "[0]" if "[" in decl else ""
    k = kernel(f"acc{index} = 0.0;\nfor (i = 0; i < n; i++) {{ acc{index} += A[i][0]; "
               f"A[i][1] = acc{index}; }}", decls=f"int i; {decl}")
    assert k.program.array("acc").role == role
    assert "acc" not in [t.name for t in k.args]


def test_schedules_apply_to_c_kernels():
    k = kernel("for (i = 0; i < n; i++) for (j = 0; j < m; j++) A[i][j] = A[i][j] * 2.0;")
    s = po.create_schedule(k)
    io, jo, ii, ji = s["S0"].tile("i", "j", 4, 8)
    s["S0"].parallel(io)
    assert "parallel" in s.script()

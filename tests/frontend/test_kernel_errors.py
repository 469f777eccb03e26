"""Python outside the kernel subset is refused with a FrontendError naming the line."""

import pathlib
import re

import numpy as np
import pytest

import polyopt as po

N, M = po.var("N"), po.var("M")
GLOBAL_ARRAY = np.zeros(4)
_LINES = pathlib.Path(__file__).read_text().splitlines()


def _line(marker: str) -> int:
    """The line of this file carrying the comment ``# <marker>``."""
    hits = [n for n, text in enumerate(_LINES, start=1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def _refused(marker: str, message: str, cls=po.FrontendError):
    location = re.escape(f'{__file__}", line {_line(marker)}, in kernel')
    return pytest.raises(cls, match=f"{location} '\\w+': .*{message}")


def test_frontend_error_is_a_polyopt_error():
    assert issubclass(po.FrontendError, po.PolyoptError)


def test_while_loop():
    with _refused("while", "'while' loops are not supported"):
        @po.kernel
        def k(A: po.f64[N]):
            i = 0
            while i < N:  # while
                A[i] = 0.0


def test_break_continue_return_and_calls_as_statements():
    with _refused("break", "'break' is not supported"):
        @po.kernel
        def k1(A: po.f64[N]):
            for i in range(N):
                A[i] = 0.0
                break  # break
    with _refused("continue", "'continue' is not supported"):
        @po.kernel
        def k2(A: po.f64[N]):
            for i in range(N):
                continue  # continue
    with _refused("return", "'return' is not supported"):
        @po.kernel
        def k3(A: po.f64[N]):
            A[0] = 1.0
            return A  # return
    with _refused("print", "expression statement .* not supported"):
        @po.kernel
        def k4(A: po.f64[N]):
            for i in range(N):
                print(i)  # print


def test_unsupported_calls():
    with _refused("dot", "calling 'np.dot' is not supported; a kernel may call po.exp"):
        @po.kernel
        def k1(A: po.f64[N]):
            for i in range(N):
                A[i] = np.dot(A[i], A[i])  # dot
    with _refused("helper", "calling 'helper' is not supported"):
        def helper(x):
            return x

        @po.kernel
        def k2(A: po.f64[N]):
            for i in range(N):
                A[i] = helper(A[i])  # helper


def test_loops_must_be_over_range_with_a_positive_constant_step():
    with _refused("over-list", "loops must be 'for x in range\\(...\\)'"):
        @po.kernel
        def k1(A: po.f64[N]):
            for i in [0, 1]:  # over-list
                A[i] = 0.0
    with _refused("negative-step", "step of range\\(\\) must be a positive integer constant, got '-1'"):
        @po.kernel
        def k2(A: po.f64[N]):
            for i in range(N, 0, -1):  # negative-step
                A[i - 1] = 0.0
    with _refused("var-step", "step of range\\(\\) must be a positive integer constant"):
        @po.kernel
        def k3(A: po.f64[N]):
            for i in range(0, N, M):  # var-step
                A[i] = 0.0
    with _refused("for-else", "'for ... else' is not supported"):
        @po.kernel
        def k4(A: po.f64[N]):
            for i in range(N):  # for-else
                A[i] = 0.0
            else:
                A[0] = 1.0


def test_non_affine_bounds_and_conditions():
    with _refused("square-bound", "'i \\* i' in the bounds of loop 'j' is not affine"):
        @po.kernel
        def k1(A: po.f64[N, N]):
            for i in range(N):
                for j in range(i * i):  # square-bound
                    A[i, j] = 0.0
    with _refused("data-if", "'A\\[i\\]' in an 'if' condition is not affine.*po.if_then_else"):
        @po.kernel
        def k2(A: po.f64[N]):
            for i in range(N):
                if A[i] > 0.0:  # data-if
                    A[i] = 0.0
    with _refused("truthy-if", "must be a comparison"):
        @po.kernel
        def k3(A: po.f64[N]):
            for i in range(N):
                if i:  # truthy-if
                    A[i] = 0.0


def test_attributes_slices_and_arrays_that_are_not_parameters():
    with _refused("attribute", "attribute access 'A.shape' is not supported"):
        @po.kernel
        def k1(A: po.f64[N]):
            for i in range(A.shape[0]):  # attribute
                A[i] = 0.0
    with _refused("slice", "slicing is not supported"):
        @po.kernel
        def k2(A: po.f64[N, N]):
            for i in range(N):
                A[i, :] = 0.0  # slice
    with _refused("global-array", "array 'GLOBAL_ARRAY' is not a parameter of kernel 'k3'"):
        @po.kernel
        def k3(A: po.f64[N]):
            for i in range(N):
                A[i] = GLOBAL_ARRAY[i]  # global-array
    with _refused("bare-array", "array 'A' is used without an index"):
        @po.kernel
        def k4(A: po.f64[N]):
            A[0] = A  # bare-array


def test_assignments_to_parameters_loop_variables_and_tuples():
    with _refused("to-param", "assigning to the parameter 'A' is not supported"):
        @po.kernel
        def k1(A: po.f64[N]):
            A = 0.0  # to-param
    with _refused("to-loop-var", "assigning to the loop variable 'i' is not supported"):
        @po.kernel
        def k2(A: po.f64[N]):
            for i in range(N):
                i = 0  # to-loop-var
                A[i] = 0.0
    with _refused("tuple", "assigning to '\\(a, b\\)' is not supported"):
        @po.kernel
        def k3(A: po.f64[N]):
            a, b = 1.0, 2.0  # tuple
    with _refused("chained", "chained assignment"):
        @po.kernel
        def k4(A: po.f64[N], B: po.f64[N]):
            A[0] = B[0] = 1.0  # chained


def test_temporaries_that_are_not_a_forward_substitution():
    with _refused("before", "'t' is used where it has no value"):
        @po.kernel
        def k1(A: po.f64[N]):
            for i in range(N):
                A[i] = t  # before
                t = 1.0
    with _refused("carried", "the scalar temporary 's' was assigned outside this loop"):
        @po.kernel
        def k2(A: po.f64[N]):
            s = 0.0
            for i in range(N):
                s = s + A[i]  # carried
            A[0] = s
    with _refused("stale", "'t' \\(assigned at line \\d+\\) reads array 'A', which line \\d+ writes"):
        @po.kernel
        def k3(A: po.f64[N], B: po.f64[N]):
            for i in range(N):
                t = A[i]
                A[i] = 0.0
                B[i] = t  # stale
    with _refused("pivot", "'pivot' .* reads array 'A'"):
        @po.kernel
        def k4(A: po.f64[N, N]):
            for k in range(N):
                pivot = A[k, k]
                for i in range(k + 1, N):
                    A[i, k] = A[i, k] / pivot  # pivot
    with _refused("branch-temp", "'t' is used where it has no value"):
        @po.kernel
        def k5(A: po.f64[N]):
            for i in range(N):
                if i > 0:
                    t = 1.0
                A[i] = t  # branch-temp
    with _refused("after-loop", "'i' is used where it has no value"):
        @po.kernel
        def k6(A: po.f64[N]):
            for i in range(N):
                A[i] = 0.0
            A[i] = 1.0  # after-loop
    with _refused("clobbered", "'i' is used after the loop at line \\d+ re-bound it"):
        @po.kernel
        def k7(A: po.f64[N]):
            for i in range(N):
                for i in range(N):
                    A[i] = 0.0
                A[i] = 1.0  # clobbered


def test_temporary_refusals_are_typed_with_the_name_and_the_problem():
    def before(A: po.f64[N]):
        for i in range(N):
            A[i] = t
            t = 1.0

    def carried(A: po.f64[N]):
        s = 0.0
        for i in range(N):
            s = s + A[i]
        A[0] = s

    def pivot(A: po.f64[N, N]):
        for k in range(N):
            p = A[k, k]
            for i in range(k + 1, N):
                A[i, k] = A[i, k] / p

    for function, name, problem in ((before, "t", "no_value"), (carried, "s", "reassigned"),
                                    (pivot, "p", "stale")):
        with pytest.raises(po.errors.TemporaryScalarError) as err:
            po.kernel(function)
        assert (err.value.name, err.value.problem) == (name, problem)
        assert err.value.problem in po.errors.TemporaryScalarError.PROBLEMS


def test_temporary_in_the_other_branch_is_still_fresh():
    @po.kernel
    def k(A: po.f64[N], B: po.f64[N]):
        for i in range(N):
            t = A[i]
            if i > 0:
                A[i] = 0.0
            else:
                B[i] = t

    assert [s.name for s in k.program.statements] == ["S0", "S1"]


def test_parameters_need_array_annotations():
    with _refused("no-annotation", "parameter 'A' needs an array annotation"):
        @po.kernel
        def k1(A):  # no-annotation
            A[0] = 1.0
    with _refused("no-shape", "annotated po.f64 without a shape"):
        @po.kernel
        def k2(A: po.f64):  # no-shape
            A[0] = 1.0
    with pytest.raises(po.InvalidArgumentError,
                       match=r"dimension 0 of placeholder 'po.f64\[...\]' is '2.5'"):
        po.f64[2.5]


def test_other_mistakes_are_located():
    with _refused("power", "'\\*\\*' is supported only with a constant integer exponent"):
        @po.kernel
        def k1(A: po.f64[N]):
            for i in range(N):
                A[i] = A[i] ** 0.5  # power
    with _refused("index-count", "has 1 dimension\\(s\\) but is indexed with 2",
                  po.InvalidArgumentError):
        @po.kernel
        def k2(A: po.f64[N]):
            for i in range(N):
                A[i, i] = 0.0  # index-count
    with _refused("with", "'With' statements are not supported"):
        @po.kernel
        def k3(A: po.f64[N]):
            with open("x"):  # with
                A[0] = 1.0
    with _refused("nothing", "assigns no array element"):
        @po.kernel
        def k4(A: po.f64[N]):  # nothing
            pass


def test_lambda_is_refused():
    with pytest.raises(po.FrontendError, match="needs a function defined with 'def'"):
        po.kernel(lambda A: None)


def test_non_affine_index_names_the_expression_and_line():
    line = _line("square-index")
    with pytest.raises(po.NonAffineError,
                       match=f"'i \\* i' in kernel 'k' at line {line} of .* is not affine"):
        @po.kernel
        def k(A: po.f64[N]):
            for i in range(N):
                A[i * i] = 0.0  # square-index


def test_out_of_bounds_write_and_read():
    line = _line("oob-write")
    with pytest.raises(po.OutOfBoundsError,
                       match=f"kernel 'k1' at line {line} of .* writes A\\[0\\] at S0\\[i=0\\] "
                             "when N=0, outside the shape \\(N\\) of 'A'"):
        @po.kernel
        def k1(A: po.f64[N]):
            for i in range(N + 1):
                A[i] = 0.0  # oob-write
    with pytest.raises(po.OutOfBoundsError, match=r"reads A\[-1\] at S0\[i=0\]"):
        @po.kernel
        def k2(A: po.f64[N]):
            for i in range(N):
                A[i] = A[i - 1]
    with pytest.raises(po.OutOfBoundsError, match=r"writes B\[\d+\].*outside the shape \(M\)"):
        @po.kernel
        def k3(A: po.f64[N], B: po.f64[M]):
            for i in range(N):
                B[i] = A[i]

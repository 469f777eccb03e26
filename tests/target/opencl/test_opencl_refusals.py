"""What the OpenCL backend refuses, and how it says so: binds that would race (with the
dependence and a pair of instances), schedules that would need a barrier nowhere to be
placed, buffers that cannot live in one group, a missing runtime."""

import os
import subprocess
import sys

import numpy as np
import pytest

import polyopt as po
from testlib.errors import pair, refused
from testlib.opencl import neighbours

N = po.var("N")


def _columns_with_their_producer():
    """B computed inside C's column loop j; rows bound to work-groups."""
    A, B, C = neighbours(columns=8)
    s = po.create_schedule(C)
    i, j = C.op.axis
    s[B].compute_with(s[C], j)
    s[C].bind(i, "blockIdx.x")
    return s, [A, C], j


def test_binding_a_loop_that_carries_a_dependence_is_refused_with_it():
    s, (_, C), j = _columns_with_their_producer()
    assert not s[C].can_bind(j, "threadIdx.x")
    err = refused(po.LoopCarriesDependenceError, lambda: s[C].bind(j, "threadIdx.x"))
    assert (err.loop, err.what, err.repair) == ("j", "threadIdx.x loop",
                                                "use a loop that carries no dependence: i")
    assert pair(err) == ("B[i=0, j=0]", "C[i=0, j=1]", "B[0, 0]")


def test_a_barrier_inside_threadidx_loops_is_refused():
    s, args, j = _columns_with_their_producer()
    s[args[1]].bind(j, "threadIdx.x", check=False)  # the backend still refuses it
    with pytest.raises(po.WorkItemRaceError) as refused:
        po.build(s, args, target="opencl")
    err = refused.value
    assert (err.array, err.unit) == ("B", "work-item")
    assert (err.example.kind, err.example.source, err.example.sink, err.example.element,
            err.example.params) == ("flow", "B[i=0, j=0]", "C[i=0, j=1]", "B[0, 0]",
                                    {"N": 1})
    assert (err.problem, err.kernel is not None) == ("inside_thread_loops", True)


def test_a_dependence_between_work_groups_is_refused():
    A = po.placeholder((N,), name="A")
    B = po.compute((N,), lambda i: A[i] * 2.0, name="B")
    C = po.compute((N,), lambda i: B[i] + po.if_then_else(i > 0, B[i - 1], 0.0), name="C")
    s = po.create_schedule(C)
    s[B].compute_with(s[C], C.op.axis[0])
    io, ii = s[C].split(C.op.axis[0], factor=8)
    err = refused(po.LoopCarriesDependenceError, lambda: s[C].bind(io, "blockIdx.x"))
    assert (err.loop, err.what) == ("i.outer", "blockIdx.x loop")
    assert pair(err) == ("B[i=7]", "C[i=8]", "B[7]")
    s[C].bind(io, "blockIdx.x", check=False)  # the backend still refuses it
    err = refused(po.WorkItemRaceError, lambda: po.build(s, [A, C], target="opencl"))
    assert (err.array, err.unit) == ("B", "work-group") and err.kernel
    assert (err.example.source, err.example.sink, err.example.element,
            err.example.params) == ("B[i=7]", "C[i=8]", "B[7]", {"N": 9})
    assert err.problem == "across_groups"


def test_a_reduction_loop_goes_to_work_items_not_to_work_groups():
    A = po.placeholder((4, 64), name="A")
    k = po.reduce_axis((0, 64), name="k")
    S = po.compute((4,), lambda i: po.sum(A[i, k], axis=k), name="S")
    s = po.create_schedule(S)
    err = refused(po.LoopCarriesDependenceError, lambda: s[S].bind(k, "blockIdx.x"))
    assert (err.loop, err.what) == ("k", "blockIdx.x loop")
    assert "split the reduction with s.rfactor" in err.repair  # what to do instead
    s[S].bind(S.op.axis[0], "blockIdx.x")
    ko, _ = s[S].split(k, nparts=16)
    s[S].bind(ko, "threadIdx.x")  # a tree reduction across the group's work-items
    f = po.build(s, [A, S], target="opencl")
    a = np.arange(256, dtype="float32").reshape(4, 64)
    out = np.zeros(4, "float32")
    f(a, out)
    np.testing.assert_array_equal(out, a.sum(axis=1))


def test_unknown_tags_and_misplaced_bound_loops():
    A = po.placeholder((N,), name="A")
    B = po.compute((N,), lambda i: A[i] + 1.0, name="B")
    s = po.create_schedule(B)
    with pytest.raises(po.InvalidArgumentError, match="use one of blockIdx.x"):
        s[B].bind(B.op.axis[0], "threadIdx.w")
    io, ii = s[B].split(B.op.axis[0], factor=8)
    s[B].bind(io, "threadIdx.x")
    s[B].bind(ii, "blockIdx.x")
    with pytest.raises(po.ThreadBindingError) as refused:
        po.build(s, [A, B], target="opencl")
    assert (refused.value.loop, refused.value.kind) == ("i_inner", "blockIdx.x")
    assert refused.value.problem == "not_outermost"
    s = po.create_schedule(B)  # a serial loop around one runs on the host (as a scan's)
    io, ii = s[B].split(B.op.axis[0], factor=8)
    s[B].bind(ii, "blockIdx.x")
    f = po.build(s, [A, B], target="opencl")
    assert "const long i_outer" in f.source
    a = np.random.rand(21).astype("float32")
    b = np.zeros(21, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a + 1.0)
    s = po.create_schedule(B)
    s[B].bind(B.op.axis[0], "threadIdx.x")
    with pytest.raises(po.ThreadBindingError) as refused:
        po.build(s, [A, B], target="opencl")
    assert (refused.value.loop, refused.value.kind) == ("i", "threadIdx.x")
    assert refused.value.problem == "non_constant_extent"


def test_a_shared_buffer_must_fit_a_group():
    K = po.var("K")
    X = po.placeholder((K,), name="X")
    k = po.reduce_axis((0, K), name="k")
    Y = po.compute((N,), lambda i: po.sum(X[k] * (i + 1), axis=k), name="Y")
    s = po.create_schedule(Y)
    XS = s.cache_read(X, "shared", [Y])
    io, ii = s[Y].split(Y.op.axis[0], factor=8)
    s[Y].bind(io, "blockIdx.x")
    s[XS].compute_at(s[Y], io)
    with pytest.raises(po.BufferScopeError) as refused:
        po.build(s, [X, Y], target="opencl")
    assert (refused.value.buffer, refused.value.scope) == ("X_shared", "shared")
    assert refused.value.problem == "grows" and refused.value.dim == 0


def test_missing_pyopencl_names_the_package(monkeypatch):
    from polyopt.target.opencl import runtime

    monkeypatch.setitem(sys.modules, "pyopencl", None)
    with pytest.raises(po.MissingBackendError, match="pip install pyopencl"):
        runtime.queue_for()


@pytest.mark.no_runtime
def test_missing_opencl_runtime_names_the_system_package(tmp_path):
    code = """
import polyopt as po
A = po.placeholder((4,), name="A"); B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
try:
    po.build(po.create_schedule(B), [A, B], target="opencl")
except po.MissingBackendError as err:
    print(err)
"""
    env = dict(os.environ, OCL_ICD_VENDORS=str(tmp_path))  # an empty list of vendors
    env.pop("PYOPENCL_CTX", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert "apt-get install pocl-opencl-icd" in done.stdout, done.stdout + done.stderr


def test_unknown_device_lists_the_devices():
    A = po.placeholder((4,), name="A")
    B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(po.InvalidArgumentError, match="no OpenCL device matches 'no-such-gpu'"
                       ".*Portable Computing Language"):
        po.build(po.create_schedule(B), [A, B], target="opencl", device="no-such-gpu")


def test_wrong_arguments_are_refused_before_running():
    A = po.placeholder((N,), name="A")
    B = po.compute((N,), lambda i: A[i] + 1.0, name="B")
    s = po.create_schedule(B)
    po.templates.opencl_injective_template(s, B, threads=8)
    f = po.build(s, [A, B], target="opencl")
    with pytest.raises(po.InvalidArgumentError, match="must be a numpy.ndarray"):
        f([1.0, 2.0], np.zeros(2, "float32"))
    with pytest.raises(po.InvalidArgumentError, match="dimension 0 of 'B' has size 3"):
        f(np.zeros(2, "float32"), np.zeros(3, "float32"))


def test_work_groups_larger_than_devices_allow_are_refused():
    A = po.placeholder((64, 64), name="A")
    B = po.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="B")
    s = po.create_schedule(B)
    i, j = B.op.axis
    s[B].bind(i, "threadIdx.y")
    s[B].bind(j, "threadIdx.x")
    with pytest.raises(po.WorkGroupSizeError) as refused:
        po.build(s, [A, B], target="opencl")
    assert (refused.value.size, refused.value.limit, refused.value.shape) == (4096, 1024,
                                                                              (64, 64, 1))


def test_the_scan_axis_cannot_go_to_work_items():
    from testlib.opencl import cumsum_rows

    stage = po.create_schedule(cumsum_rows).stages[0]
    err = refused(po.LoopCarriesDependenceError, lambda: stage.bind("j", "threadIdx.x"))
    assert (err.loop, err.what, err.repair) == ("j", "threadIdx.x loop",
                                                "use a loop that carries no dependence: i")
    assert pair(err) == ("S0[i=0, j=1]", "S0[i=0, j=2]", "X[0, 1]")

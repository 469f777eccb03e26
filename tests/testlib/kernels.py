"""In-place ``po.kernel`` loop nests shared by tests/frontend, tests/recurrence,
tests/transform and benchmarks/bench_stencil.py, each with a plain Python (or NumPy
slicing) reference that computes the same values on NumPy arrays in place.

The kernels use the vars ``N`` (the array extent) and ``T`` (the number of time steps),
defined here once; a kernel with a time loop is called with ``T=...``.  The references
take the sizes from the arrays and the number of steps as an argument.
"""

import polyopt as po

N, T = po.var("N"), po.var("T")
M = po.var("M")  # (triangles' inner trip count)


@po.kernel
def seidel_2d(A: po.f64[N, N]):
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i-1, j-1] + A[i-1, j] + A[i-1, j+1] + A[i, j-1] + A[i, j]
                           + A[i, j+1] + A[i+1, j-1] + A[i+1, j] + A[i+1, j+1]) / 9.0


def seidel_2d_ref(A, steps):
    n = A.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (A[i-1, j-1] + A[i-1, j] + A[i-1, j+1] + A[i, j-1] + A[i, j]
                           + A[i, j+1] + A[i+1, j-1] + A[i+1, j] + A[i+1, j+1]) / 9.0


@po.kernel
def jacobi_1d(A: po.f64[N], B: po.f64[N]):
    for t in range(T):
        for i in range(1, N - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, N - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


def jacobi_1d_ref(A, B, steps):
    n = A.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


# LU decomposition without pivoting, in place: L below the diagonal (its unit diagonal
# implied), U on and above it.
@po.kernel
def lu(A: po.f64[N, N]):
    for k in range(N):
        for i in range(k + 1, N):
            A[i, k] = A[i, k] / A[k, k]
            for j in range(k + 1, N):
                A[i, j] -= A[i, k] * A[k, j]


def lu_ref(A):
    n = A.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            A[i, k] = A[i, k] / A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]


# The triangular solve L x = b (PolyBench's trisolv): x written in place, L and b only read.
@po.kernel
def forward_substitution(L: po.f64[N, N], b: po.f64[N], x: po.f64[N]):
    for i in range(N):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]


def forward_substitution_ref(L, b, x):
    for i in range(b.shape[0]):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]


# Jacobi-style heat equations over time, two buffers indexed by t % 2 (the form of
# benchmarks/bench_stencil.py): every dependence advances time by 1 or 2 and moves at
# most one element in space, so they admit diamond tiling.
@po.kernel
def heat_1d(A: po.f64[2, N]):
    for t in range(T):
        for i in range(1, N - 1):
            A[(t + 1) % 2, i] = 0.25 * (A[t % 2, i - 1] + 2.0 * A[t % 2, i] + A[t % 2, i + 1])


def heat_1d_ref(A, steps):
    for t in range(steps):
        src, dst = A[t % 2], A[(t + 1) % 2]
        dst[1:-1] = 0.25 * (src[:-2] + 2.0 * src[1:-1] + src[2:])


@po.kernel
def heat_2d(A: po.f64[2, N, N]):
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[(t + 1) % 2, i, j] = 0.125 * (A[t % 2, i - 1, j] + A[t % 2, i + 1, j]
                                                + A[t % 2, i, j - 1] + A[t % 2, i, j + 1]) \
                    + 0.5 * A[t % 2, i, j]


def heat_2d_ref(A, steps):
    for t in range(steps):
        src, dst = A[t % 2], A[(t + 1) % 2]
        dst[1:-1, 1:-1] = 0.125 * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2]
                                   + src[1:-1, 2:]) + 0.5 * src[1:-1, 1:-1]


@po.kernel
def triangles(A: po.f64[N, N]):
    """An in-place time loop around two triangular nests reading and writing one array
    (the kernel of the defect hang_m2: split(nparts=) of t, cache_write, then reverse)."""
    for t in range(T):
        for i in range(1, N):
            for j in range(max(0, i - 1), min(N, i + 2)):
                for k in range(0, M - 1):
                    A[j, i] = 1.0 * A[i - 1, j]
            for j in range(1, N - 1):
                if j < N - 2:
                    for k in range(1, j):
                        A[i, j] = po.maximum(A[k - 1, k], A[i, j]) * 0.5
                        A[i, j] = 0.167 * A[j, i] + -0.333 * A[k, j] + 0.45 * A[i, k + 1]
                A[i, j] = 0.2 * A[j, i - 1] + -0.36 * A[j, i] + 0.36 * A[i, i - 1]

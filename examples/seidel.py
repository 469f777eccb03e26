"""A Gauss-Seidel stencil, for ``polyopt check examples/seidel.py --schedule ...``.

``polyopt check`` runs this file and takes the ``@po.kernel`` function it defines.
``examples/wavefront.isl`` is a legal schedule for it, ``examples/interchange.isl``
an illegal one.
"""

import polyopt as po

N, T = po.var("N"), po.var("T")


@po.kernel
def seidel_2d(A: po.f64[N, N]):
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0

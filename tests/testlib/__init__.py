"""Shared helpers of the test suite, importable from every test directory as ``testlib``
(``pythonpath = ["tests"]`` in pyproject.toml).

- :mod:`testlib.kernels`: the in-place ``po.kernel`` loop nests used by several test
  directories and by ``benchmarks/bench_stencil.py`` (seidel-2d, jacobi-1d, heat-1D/2D,
  LU, the triangular solve) with their plain Python or NumPy references;
- :mod:`testlib.numeric`: building and running tensor-expression kernels on NumPy arrays
  with fixed or symbolic sizes.

This package holds no ``test_`` files: pytest collects nothing from it.
"""

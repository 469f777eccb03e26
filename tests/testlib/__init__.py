"""Shared helpers of the test suite, importable from every test directory as ``testlib``
(``pythonpath = ["tests"]`` in pyproject.toml).

- :mod:`testlib.kernels`: the in-place ``po.kernel`` loop nests used by several test
  directories and by ``benchmarks/bench_stencil.py`` (seidel-2d, jacobi-1d, heat-1D/2D,
  LU, the triangular solve) with their plain Python or NumPy references;
- :mod:`testlib.numeric`: the one reference check of numbers (against NumPy or the
  default schedule; bit for bit or within the documented tolerance of the dtype), and
  building and running tensor-expression kernels on NumPy arrays with fixed or
  symbolic sizes;
- :mod:`testlib.machine`: what to expect of the host, asked of the machine model (its
  vector types and registers; code needing AVX-512, VNNI or BF16 built for a CPU that
  has them and inspected, run only where the host has them), so tests hold on any
  x86-64 host.

This package holds no ``test_`` files: pytest collects nothing from it.
"""

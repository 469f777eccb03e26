#!/bin/sh
# Install everything the tests need (system packages included) and run the whole suite.
# Usage: sh scripts/test.sh [pytest arguments]    (slow tests: sh scripts/test.sh -m slow)
set -eu
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    # PoCL: a real OpenCL runtime for the CPU, used by the OpenCL backend's tests;
    # Oclgrind: a simulated OpenCL device that checks the generated kernels for data
    # races, out-of-bounds accesses and barrier divergence (tests/target/opencl); gcc,
    # binutils, libc6-dev: the C front end's preprocessor, the reference builds of its
    # tests, and linking saved kernels and libraries (tests/target/test_export.py,
    # tests/aot); libgomp1: OpenMP's runtime; Graphviz: the pictures of graphs; clang:
    # tvm.contrib.clang.create_llvm (C++ to LLVM IR for pragma import_llvm, tests/tvm_compat).
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        pocl-opencl-icd oclgrind gcc binutils libc6-dev libgomp1 graphviz clang >/dev/null
fi
python3 -m pip install -q -e ".[test]"
# -n auto: one pytest worker per CPU this process may use (pytest-xdist); add -n 0 to
# run in one process.
exec python3 -m pytest -q -n auto "$@"

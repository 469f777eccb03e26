#!/bin/sh
# Install everything the tests need (system packages included) and run the whole suite.
# Usage: sh scripts/test.sh [pytest arguments]    (slow tests: sh scripts/test.sh -m slow)
set -eu
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    # PoCL: a real OpenCL runtime for the CPU, used by the OpenCL backend's tests;
    # Oclgrind: a simulated OpenCL device that checks the generated kernels for data
    # races, out-of-bounds accesses and barrier divergence (tests/target/opencl).
    # gcc and binutils link saved kernels and libraries (tests/target/test_export.py,
    # tests/aot); libgomp1 is OpenMP's runtime.
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        pocl-opencl-icd oclgrind gcc binutils libgomp1 >/dev/null
fi
python3 -m pip install -q -e ".[test]"
exec python3 -m pytest -q "$@"

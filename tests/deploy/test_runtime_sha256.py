"""The C runtime's SHA-256 (it checks the weights at load), with the SHA extensions where
the CPU has them and without, equals hashlib's on the lengths around the padding's
edges and on a few blocks."""

import hashlib
import subprocess

import numpy as np
import pytest

from polyopt.deploy.csource import RUNTIME

from cprogram import GCC

HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sha256.c"
int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "rb");
    static unsigned char data[1 << 16];
    size_t size = fread(data, 1, sizeof data, in);
    char hex[65];
    po_sha256_hex(data, size, hex);
    puts(hex);
    return 0;
}
"""


@pytest.mark.parametrize("scalar", [False, True], ids=["sha-extensions-if-any", "scalar"])
def test_the_runtime_sha256_equals_hashlib(tmp_path, scalar):
    source = tmp_path / "harness.c"
    source.write_text(HARNESS)
    program = tmp_path / "harness"
    build = subprocess.run([GCC, "-O2", "-Wall", "-Werror", *(["-DPO_NO_SHA_NI"] * scalar),
                            "-I", RUNTIME, str(source), "-o", str(program)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    data = np.random.default_rng(5).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    for size in (0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 5000):
        path = tmp_path / "data.bin"
        path.write_bytes(data[:size])
        done = subprocess.run([str(program), str(path)], capture_output=True, text=True)
        assert done.stdout.strip() == hashlib.sha256(data[:size]).hexdigest(), size

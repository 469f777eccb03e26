"""The C runtime's SHA-256 (it checks the weights at load), with the SHA extensions where
the CPU has them and without, equals hashlib's on the lengths around the padding's
edges and on a few blocks, one buffer at a time and two at once (``po_sha256_pair``)."""

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
    if (argc > 2) { /* two halves at once (po_sha256_pair) */
        unsigned char digest[2][32];
        int i, k;
        po_sha256_pair(data, data + size / 2, size / 2, digest[0], digest[1]);
        for (k = 0; k < 2; k++, puts(""))
            for (i = 0; i < 32; i++) printf("%02x", digest[k][i]);
        return 0;
    }
    po_sha256_hex(data, size, hex);
    puts(hex);
    return 0;
}
"""


def test_the_runtime_sha256_equals_hashlib(built, tmp_path):
    program, data = built
    for size in (0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 5000):
        path = tmp_path / "data.bin"
        path.write_bytes(data[:size])
        done = subprocess.run([str(program), str(path)], capture_output=True, text=True)
        assert done.stdout.strip() == hashlib.sha256(data[:size]).hexdigest(), size


def test_two_buffers_hashed_at_once_equal_hashlib(built, tmp_path):
    program, data = built
    for size in (0, 2, 110, 112, 128, 130, 256, 2000, 10000):
        path = tmp_path / "data.bin"
        path.write_bytes(data[:size])
        done = subprocess.run([str(program), str(path), "pair"], capture_output=True,
                              text=True)
        half = size // 2
        assert done.stdout.split() == [hashlib.sha256(data[:half]).hexdigest(),
                                       hashlib.sha256(data[half:2 * half]).hexdigest()], size


@pytest.fixture(params=[False, True], ids=["sha-extensions-if-any", "scalar"])
def built(tmp_path, request):
    """The harness (with the SHA extensions where the CPU has them, or scalar) and its
    data."""
    scalar = request.param
    source = tmp_path / "harness.c"
    source.write_text(HARNESS)
    program = tmp_path / "harness"
    build = subprocess.run([GCC, "-O2", "-Wall", "-Werror", *(["-DPO_NO_SHA_NI"] * scalar),
                            "-I", RUNTIME, str(source), "-o", str(program)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    data = np.random.default_rng(5).integers(0, 256, 10000, dtype=np.uint8).tobytes()
    return program, data

"""An exported model's big buffers get transparent huge pages advised as NumPy's arrays do
for the Python executor, the weights only once they are read and verified (advised
before, each fresh 2 MB page is made when first written: slow on virtual machines);
``POLYOPT_HUGEPAGES=0`` advises none.  Read from the process's ``/proc/self/smaps``
(the ``hg`` flag of a mapping) right after ``NAME_create``."""

import json
import os
import subprocess
import sys

import pytest

from cprogram import GCC, export_large_matmul

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="/proc/self/smaps and madvise are Linux's")

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mm.h"
int main(int argc, char **argv) {
    mm_model *m;
    char line[512];
    long size = 0, advised = 0;
    FILE *maps;
    if (mm_create(argv[1], &m) != POLYOPT_OK) {
        fprintf(stderr, "%s\n", mm_error_message());
        return 1;
    }
    maps = fopen("/proc/self/smaps", "r");
    while (fgets(line, sizeof line, maps)) {
        if (!strncmp(line, "Size:", 5)) size = atol(line + 5);
        if (!strncmp(line, "VmFlags:", 8) && strstr(line, " hg")) advised += size;
    }
    fclose(maps);
    printf("%ld\n", advised); /* KB in mappings with huge pages advised */
    mm_destroy(m);
    return 0;
}
"""
WEIGHTS_KB = 1024 * 1152 * 4 // 1024  # 4.5 MiB: over 4 MB; the arena and output are small


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    folder = tmp_path_factory.mktemp("huge")
    manifest, _ = export_large_matmul(folder, seed=9)
    assert manifest["plan"]["arena_bytes"] < 4 << 20
    source, path = folder / "advised.c", folder / "advised"
    source.write_text(PROGRAM)
    with open(folder / "manifest.json") as file:
        flags = json.load(file)["link"][1:]
    done = subprocess.run([GCC, "-O2", "-Wall", "-Werror", "-I", str(folder), str(source),
                           str(folder / "libmm.a"), *flags, "-lpthread", "-o", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return str(folder), str(path)


def _advised_kb(program, mode):
    folder, path = program
    env = {k: v for k, v in os.environ.items() if k != "POLYOPT_HUGEPAGES"}
    if mode is not None:
        env["POLYOPT_HUGEPAGES"] = mode
    done = subprocess.run([path, folder], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.parametrize("mode", [None, "early"], ids=["default-after-load", "early"])
def test_the_weights_get_huge_pages_advised(program, mode):
    assert _advised_kb(program, mode) >= WEIGHTS_KB


def test_polyopt_hugepages_0_advises_nothing(program):
    assert _advised_kb(program, "0") == 0

"""The user's side of an export: tests/deploy/run_model.c built with gcc against the
library, run in a fresh process on inputs written to files, its outputs read back."""

import json
import os
import shutil
import subprocess

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GCC = shutil.which("gcc") or shutil.which("cc")


def build_program(folder: str, name: str, *, static: bool = False) -> str:
    """The path of run_model.c compiled and linked against lib<name>.so (or .a)."""
    with open(os.path.join(folder, "manifest.json")) as file:
        flags = json.load(file)["link"][1:]  # after -l<name>
    program = os.path.join(folder, f"run_{name}{'_static' if static else ''}")
    library = [os.path.join(folder, f"lib{name}.a")] if static else \
        ["-L", folder, f"-l{name}", f"-Wl,-rpath,{os.path.abspath(folder)}"]
    command = [GCC, "-O2", "-Wall", "-Werror", f"-DMODEL_H=\"{name}.h\"", f"-DP(x)={name}_##x",
               "-I", folder, os.path.join(HERE, "run_model.c"), "-o", program,
               *library, *flags, "-lpthread"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return program


def run_program(program: str, folder: str, feeds: list, outputs: list, *,
                weights: str | None = None) -> tuple[subprocess.CompletedProcess, list]:
    """Run ``program`` on ``feeds`` (arrays, in the model's input order); the finished
    process and the outputs (``outputs``: (shape, dtype) in order; None if it failed)."""
    paths = []
    for k, array in enumerate(feeds):
        path = os.path.join(folder, f"input{k}.bin")
        np.ascontiguousarray(array).tofile(path)
        paths.append(path)
    out_paths = [os.path.join(folder, f"output{k}.bin") for k in range(len(outputs))]
    for path in out_paths:
        if os.path.exists(path):
            os.remove(path)
    done = subprocess.run([program, weights or folder, *paths, *out_paths],
                          capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    if done.returncode != 0:
        return done, None
    return done, [np.fromfile(path, dtype).reshape(shape)
                  for path, (shape, dtype) in zip(out_paths, outputs)]


def output_specs(manifest: dict) -> list:
    return [(tuple(t["shape"]), np.dtype(t["dtype"])) for t in manifest["plan"]["outputs"]]


def export_large_matmul(folder, seed: int):
    """``(manifest, weights)`` of a matrix product ``x[2, 1024] @ w`` whose weights (4.5
    MiB: over 4 MB, an odd count of 1 MiB chunks) come from ``seed``, exported to
    ``folder`` as ``mm`` for one thread."""
    import numpy as np
    import polyopt as po

    weights = np.random.default_rng(seed).standard_normal((1024, 1152)).astype("float32")
    b = po.graph.GraphBuilder()
    x = b.input("x", (2, 1024))
    g = b.build([b.op("MatMul", [x, b.constant("w", weights)])])
    return po.graph.compile(g, num_threads=1).export_library(folder, name="mm"), weights

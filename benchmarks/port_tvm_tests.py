"""Port TVM's tensor-expression tests mechanically: only their import lines change.

Reads the files from a git checkout of apache/tvm at tag v0.12.0 and writes
``tests/tvm_compat/ported/test_tvm012_<name>.py``, each naming its source path and TVM
version at the top, above the Apache license header the file carries.

    python3 benchmarks/port_tvm_tests.py /path/to/tvm.git
"""

import pathlib
import subprocess
import sys

TAG = "v0.12.0"
SOURCES = [f"tests/python/integration/test_{name}.py"
           for name in ("reduce", "ewise", "scan", "gemm", "dot")] + [
           f"tests/python/unittest/test_te_{name}.py"
           for name in ("tensor", "tag", "group", "tensor_overload", "schedule",
                        "build_lower", "verify_compute", "schedule_lstm",
                        "schedule_bound_inference_tiling")]
IMPORTS = {
    "import tvm": "from polyopt import tvm",
    "import tvm.testing": "import polyopt.tvm.testing  # noqa: F401",
    "from tvm import te": "import polyopt as te",
    "from tvm import te, topi": "import polyopt as te\nfrom polyopt.tvm import topi",
    "from tvm import topi": "from polyopt.tvm import topi",
    "import tvm.topi.testing": "import polyopt.tvm.topi  # noqa: F401",
    "from tvm.topi.utils import get_const_tuple": "from polyopt.tvm.topi import get_const_tuple",
    "from tvm.topi.nn.pooling import pool2d": "from polyopt.tvm.topi import pool2d",
    "from tvm.contrib import nvcc": "from polyopt.tvm.contrib import nvcc",
    "from tvm.driver.build_module import schedule_to_module":
        "from polyopt.tvm import schedule_to_module",
}


def port(repo: str, source: str) -> str:
    text = subprocess.run(["git", "-C", repo, "show", f"refs/tags/{TAG}:{source}"],
                          check=True, capture_output=True, text=True).stdout
    lines = [IMPORTS.get(line.rstrip(), line) for line in text.splitlines()]
    unknown = [line for line in lines if "tvm" in line.split("#")[0]
               and line.startswith(("import ", "from ")) and "polyopt" not in line]
    if unknown:
        raise SystemExit(f"{source}: unmapped imports {unknown}")
    head = (f"# Ported from apache/tvm {TAG}, {source}: only the imports changed\n"
            "# (benchmarks/port_tvm_tests.py); expected failures: conftest.py.\n")
    return head + "\n".join(lines) + "\n"


def main(repo: str) -> None:
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "tvm_compat" / "ported"
    for source in SOURCES:
        name = pathlib.Path(source).name.replace("test_", "test_tvm012_", 1)
        (out / name).write_text(port(repo, source))


if __name__ == "__main__":
    main(sys.argv[1])

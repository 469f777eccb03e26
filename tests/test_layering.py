"""Each layer imports only from the layers above it in the data flow (see DESIGN.md)."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "polyopt"
# Layers in data-flow order; a module may import its own layer and earlier ones.
LAYERS = ["te", "domain", "frontend", "deps", "transform", "tensorize", "ast", "target", "graph"]
# the bottom layer, importable from everywhere: errors, dtypes, names and the machine
# model (polyopt.machine: TargetInfo, scope meanings), which imports only errors
BASE = {"errors", "dtypes", "names", "machine", "private_folder"}
DRIVERS = {"lower", "build", "cli", "cli_opt", "emit_c", "__init__", "__main__"}  # entry points
# polyopt/aot (ahead-of-time libraries) is a driver too: it lowers and builds


def _imported_layers(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0 and module.startswith("polyopt."):
                found.add(_layer(module.split(".")[1:]))
            elif node.level > 0:
                depth = len(path.relative_to(PACKAGE).parts) - 1  # 0 for top-level modules
                if node.level - 1 < depth:
                    parts = path.relative_to(PACKAGE).parts[: depth - (node.level - 1)]
                    found.add(_layer(list(parts) + module.split(".")))
                elif module:
                    found.add(_layer(module.split(".")))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("polyopt."):
                    found.add(alias.name.split(".")[1])
    return found


def _layer(parts: list[str]) -> str:
    """The layer of the module ``polyopt.<parts>``."""
    return parts[0]


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) > 1 and parts[0] in LAYERS:
            yield pytest.param(path, parts[0], id=str(path.relative_to(PACKAGE)))


@pytest.mark.parametrize("path, layer", list(_modules()))
def test_layer_imports_only_earlier_layers(path, layer):
    allowed = set(LAYERS[: LAYERS.index(layer) + 1]) | BASE
    if layer == "graph":  # the last layer builds its kernels through po.build, and keeps
        allowed |= {"build", "lower", "aot"}  # them in the AOT libraries' disk cache
    imported = _imported_layers(path) - {layer}
    assert imported <= allowed, f"{path.name} ({layer}) imports {sorted(imported - allowed)}"


def test_nothing_below_imports_graph_or_drivers():
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] in ("graph", "aot") or path.stem in DRIVERS and len(parts) == 1:
            continue
        imported = _imported_layers(path)
        assert "graph" not in imported, path
        assert not (imported & (DRIVERS - {"__init__"})), path


def test_core_imports_without_backends():
    """llvmlite and pyopencl are imported lazily, inside their target modules."""
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        if parts[:2] in (("target", "llvm"), ("target", "opencl")):
            continue
        text = path.read_text()
        assert "import llvmlite" not in text and "from llvmlite" not in text, path
        assert "import pyopencl" not in text, path


def test_machine_model_imports_only_errors():
    """The machine model is the bottom layer: every other layer may ask it for facts."""
    imported = _imported_layers(PACKAGE / "machine.py")
    assert imported <= {"errors"}, f"machine.py imports {sorted(imported)}"

"""The package's shape (DESIGN.md, issue 38): layers by job, every import pointing down,
no import cycles, and no whitelist.  Imports inside functions count like the others.

Layers, bottom to top (a module may import its own layer and the layers below):

- ``errors``, ``dtypes``, ``names`` and ``machine`` (the machine model: facts about CPUs
  and devices), which import nothing but each other;
- ``te`` (tensor expressions), ``domain`` (exact programs), ``frontend`` (Python and C
  loop nests), ``deps`` (exact dependences and legality);
- ``transform``: the checked schedule primitives (mechanism);
- ``tensorize``: matching sub-nests to intrinsics, and the intrinsics per hardware family;
- ``schedules``: policy that only calls primitives (the automatic scheduler, every
  template);
- ``ast`` (loop ASTs), ``target`` (the backends: they never import ``transform`` or
  ``schedules``);
- the drivers ``lower``, ``build``, ``emit_c``, ``extern_build`` and ``aot``;
- ``graph``; then the user-facing APIs ``tvm``, the command line and ``polyopt`` itself.
"""

import ast
import pathlib

import networkx as nx
import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "polyopt"
LAYERS = [
    {"errors", "dtypes", "names", "machine"},
    {"te"}, {"domain"}, {"frontend"}, {"deps"},
    {"transform"},
    {"tensorize"},
    {"schedules"},
    {"ast"},
    {"target"},
    {"lower", "build", "emit_c", "extern_build", "aot"},
    {"graph"},
    {"tvm", "cli", "cli_check", "cli_opt", "cli_run", "__init__", "__main__"},
]
NEVER = {"target": {"transform", "schedules"}}  # backends only see lowered programs


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """The polyopt modules ``name`` imports, anywhere in its file."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1]
                                + ([node.module] if node.module else []))
            # "from package import module" imports that module; other names, the package
            candidates = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES
                          else base for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in MODULES:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate not in (name, "polyopt"):
                found.add(candidate)
    return found


def _layer_of(name: str) -> tuple[int, str]:
    part = name.split(".")[1] if "." in name else "__init__"
    for level, members in enumerate(LAYERS):
        if part in members:
            return level, part
    raise AssertionError(f"{name} is in no layer: add its package to LAYERS in this test")


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for name in MODULES:
        graph.add_node(name)
        graph.add_edges_from((name, imported) for imported in _imports(name))
    return graph


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_import_points_down(name):
    level, part = _layer_of(name)
    for imported in _imports(name):
        imported_level, imported_part = _layer_of(imported)
        assert imported_level <= level, f"{name} ({part}) imports {imported} ({imported_part})"
        assert imported_part not in NEVER.get(part, ()), f"{name} imports {imported}"


def test_no_import_cycles():
    cycles = [sorted(c) for c in nx.strongly_connected_components(_graph()) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_the_machine_model_is_at_the_bottom():
    for name in MODULES:
        if name.startswith("polyopt.machine"):
            assert {m.split(".")[1] for m in _imports(name)} <= {"errors", "machine"}, name


def test_core_imports_without_backends():
    """llvmlite and pyopencl are imported lazily, inside their target modules."""
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        if parts[:2] in (("target", "llvm"), ("target", "opencl")):
            continue
        text = path.read_text()
        assert "import llvmlite" not in text and "from llvmlite" not in text, path
        assert "import pyopencl" not in text, path

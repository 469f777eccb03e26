"""The package's shape (DESIGN.md, issue 38): layers by job, every import pointing down,
no import cycles, no whitelist, the drawing of the layers up to date, and no module over
600 lines.  The layers and the import scanner are in ``scripts/layers.py`` (which draws
``docs/layers.md``); imports inside functions count like the others."""

import importlib.util
import pathlib

import networkx as nx
import pytest

_SPEC = importlib.util.spec_from_file_location(
    "layers", pathlib.Path(__file__).resolve().parents[1] / "scripts" / "layers.py")
layers = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(layers)


@pytest.mark.parametrize("name", sorted(layers.MODULES))
def test_every_import_points_down(name):
    level, part = layers.layer_of(name), layers.part_of(name)
    for imported in layers.imports_of(name):
        assert layers.layer_of(imported) <= level, f"{name} ({part}) imports {imported}"
        assert layers.part_of(imported) not in layers.NEVER.get(part, ()), \
            f"{name} ({part}) imports {imported}"


def test_no_import_cycles():
    graph = nx.DiGraph()
    for name in layers.MODULES:
        graph.add_node(name)
        graph.add_edges_from((name, imported) for imported in layers.imports_of(name))
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_the_machine_model_is_at_the_bottom():
    for name in layers.MODULES:
        if layers.part_of(name) == "machine":
            assert {layers.part_of(m) for m in layers.imports_of(name)} <= {"errors",
                                                                            "machine"}, name


def test_the_drawing_of_the_layers_is_up_to_date():
    assert layers.DRAWING.read_text() == layers.drawing(), \
        "run `python scripts/layers.py` to redraw docs/layers.md"


def test_the_readme_names_every_layer():
    readme = (layers.ROOT / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    for members in layers.LAYERS:
        for member in members:
            if not member.startswith("_") and any(layers.part_of(m) == member
                                                  for m in layers.MODULES):
                assert f"`{member}" in layout, f"the README's Layout does not name {member}"


def test_core_imports_without_backends():
    """llvmlite and pyopencl are imported lazily, inside their target modules."""
    for path in layers.PACKAGE.rglob("*.py"):
        parts = path.relative_to(layers.PACKAGE).parts
        if parts[:2] in (("target", "llvm"), ("target", "opencl")):
            continue
        text = path.read_text()
        assert "import llvmlite" not in text and "from llvmlite" not in text, path
        assert "import pyopencl" not in text, path


MAX_LINES = 600  # DESIGN.md, issue 38: modules that read in one sitting


def test_no_module_is_over_600_lines():
    long = {str(path.relative_to(layers.ROOT)): count for path in layers.PACKAGE.rglob("*.py")
            if (count := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules by theme (at most {MAX_LINES} lines each): {long}"

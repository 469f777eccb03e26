"""The documentation site builds with warnings as errors (``mkdocs build --strict``), its
API reference generated from the docstrings and its command-line reference from the
parser; every page of docs/ is in the navigation."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_site_builds_in_strict_mode(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    for command in ("polyopt demo", "polyopt check", "polyopt opt", "polyopt run",
                    "polyopt lib build", "polyopt cache info", "polyopt cache clear"):
        assert f"usage: {command}" in cli, command
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in ("polyopt.create_schedule", "polyopt.build.build", "polyopt.check",
                 "polyopt.errors.IllegalScheduleError", "polyopt.TargetInfo"):
        assert f'id="{name}"' in api, name


def _pages(nav):
    for item in nav:
        for value in item.values():
            if isinstance(value, list):
                yield from _pages(value)
            else:
                yield value


def test_every_page_is_in_the_navigation():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    listed = set(_pages(config["nav"]))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages == listed, (pages - listed, listed - pages)


def _pictures():
    spec = importlib.util.spec_from_file_location("pictures", ROOT / "docs" / "pictures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tiling_picture_shows_a_legal_tiling(tmp_path):
    """docs/pictures.py draws from polyopt's dependences and schedule: every flow
    dependence of the tiled heat_1d stays in its tile or goes to a later tile."""
    pictures = _pictures()
    instances, pairs = pictures.tiles_and_dependences()
    tile = dict(instances)
    assert len(instances) == pictures.SIZES["T"] * (pictures.SIZES["N"] - 2)
    assert len(set(tile.values())) > 4 and pairs
    for t, i, t2, i2 in pairs:
        assert t2 == t + 1 and abs(i2 - i) <= 1
        assert tile[(t, i)] <= tile[(t2, i2)]
    assert pictures.draw(tmp_path).read_text().lstrip().startswith("<?xml")
    assert (ROOT / "docs" / "img" / "heat_1d_tiles.svg").exists()


def test_the_speed_chart_reads_the_benchmark_results(tmp_path):
    pictures = _pictures()
    machines = pictures.speed_rows()
    assert machines and all(rows for rows in machines.values())
    for rows in machines.values():
        assert all(vs_ort > 0 for _, _, vs_ort, _ in rows)
    assert pictures.draw_speed(tmp_path).exists()

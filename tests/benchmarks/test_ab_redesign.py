"""The redesign A/B (``benchmarks/ab_redesign.py``) without timing anything: its throwaway
worktrees hold the asked commits and are gone afterwards (also after an error), the
no-slowdown rule decides as its docstring says, the children's environment is the same
for both sides with spinning off, and a polyopt loaded from outside a side's tree is
caught."""

import os
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
import ab_redesign  # noqa: E402


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A repository with two commits (``first``, ``second``) of one file."""
    folder = tmp_path / "repo"
    folder.mkdir()
    _git(folder, "init", "-q")
    commits = {}
    for label in ("first", "second"):
        (folder / "version.txt").write_text(label)
        _git(folder, "add", "version.txt")
        _git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", label)
        commits[label] = _git(folder, "rev-parse", "HEAD")
    return folder, commits


def _listed(repo) -> list[str]:
    return [line.split(" ", 1)[1] for line in
            _git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def test_the_worktrees_hold_the_commits_and_are_removed(repo):
    folder, commits = repo
    with ab_redesign.throwaway_worktrees({"old": commits["first"], "new": commits["second"]},
                                         repo=str(folder)) as trees:
        assert {k: (pathlib.Path(v) / "version.txt").read_text() for k, v in trees.items()} \
            == {"old": "first", "new": "second"}
        assert _git(trees["old"], "rev-parse", "HEAD") == commits["first"]
        assert set(map(os.path.realpath, trees.values())) <= set(
            map(os.path.realpath, _listed(folder)))
        scratch = os.path.dirname(trees["old"])
    assert not os.path.exists(scratch)
    assert _listed(folder) == [str(folder)]


def test_the_worktrees_are_removed_after_an_error(repo):
    folder, commits = repo
    with pytest.raises(KeyError):
        with ab_redesign.throwaway_worktrees({"old": commits["first"]},
                                             repo=str(folder)) as trees:
            scratch = os.path.dirname(trees["old"])
            raise KeyError("inside")
    assert not os.path.exists(scratch)
    assert _listed(folder) == [str(folder)]


def test_an_unknown_commit_leaves_nothing_behind(repo, monkeypatch, tmp_path):
    folder, commits = repo
    monkeypatch.setattr(ab_redesign.tempfile, "tempdir", str(tmp_path))
    with pytest.raises(subprocess.CalledProcessError):
        with ab_redesign.throwaway_worktrees({"old": commits["first"], "new": "f" * 40},
                                             repo=str(folder)):
            pass
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("polyopt-ab-redesign-")]
    assert _listed(folder) == [str(folder)]


def test_the_rule_passes_at_the_limit_and_marks_noise():
    same = ab_redesign.verdict({"old": [[1.0, 1.0], [1.0]], "new": [[1.03, 1.03], [1.03]]})
    assert same["passed"] and same["ratio"] == pytest.approx(1.03)
    noisy = ab_redesign.verdict({"old": [[1.0], [1.0], [1.0]], "new": [[1.2], [0.9], [1.1]]})
    assert (noisy["passed"], noisy["within_noise"]) == (False, True)
    assert noisy["round_ratios"] == pytest.approx([1.2, 0.9, 1.1])
    slower = ab_redesign.verdict({"old": [[1.0], [1.0]], "new": [[1.1], [1.05]]})
    assert (slower["passed"], slower["within_noise"]) == (False, False)
    assert slower["samples"] == {"old": 2, "new": 2}


def test_the_ratio_pairs_the_rounds_instead_of_pooling_their_samples():
    # a loaded round gives a side fewer (slower) calls: pooled, the sides' medians would
    # be 1.0 and 2.0; round by round the two sides took the same time
    found = ab_redesign.verdict({"old": [[1.0] * 10, [2.0]], "new": [[1.0], [2.0] * 10]})
    assert found["round_ratios"] == [1.0, 1.0]
    assert (found["ratio"], found["passed"]) == (1.0, True)
    assert found["old_ms"] == found["new_ms"] == pytest.approx(1500.0)


def test_the_children_get_one_environment_with_spinning_off(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    old, new = (ab_redesign.child_environment(tree, "/cache") for tree in ("/a", "/b"))
    assert (old["PYTHONPATH"], new["PYTHONPATH"]) == ("/a", "/b")
    assert {k: v for k, v in old.items() if k != "PYTHONPATH"} == \
        {k: v for k, v in new.items() if k != "PYTHONPATH"}
    assert "OPENBLAS_CORETYPE" not in old
    assert (old["OMP_WAIT_POLICY"], old["POLYOPT_SPIN"], old["POLYOPT_SESSION_SPIN"]) == \
        ("PASSIVE", "0", "0")
    assert old["OPENBLAS_NUM_THREADS"] == old["OMP_NUM_THREADS"] == "2"


def test_a_polyopt_from_another_tree_is_caught(tmp_path):
    import polyopt

    tree = pathlib.Path(polyopt.__file__).resolve().parents[1]
    ab_redesign._check_origin(str(tree))
    with pytest.raises(SystemExit, match="outside"):
        ab_redesign._check_origin(str(tmp_path))

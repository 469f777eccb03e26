"""`polyopt demo`: the README's first command runs and checks its numbers."""

from polyopt.cli import main


def test_demo_runs_and_matches_numpy(capsys):
    assert main(["demo", "--size", "48"]) == 0
    out = capsys.readouterr().out
    assert out.count("matches NumPy: yes") == 3
    assert "refused, as it should be" in out and "s.rfactor(C, 'k')" in out
    assert "flow C_update[i, j, k] -> C_update[i, j, k + 1] through C[i, j]" in out

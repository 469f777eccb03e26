"""The C front end's surfaces: compiled kernels refuse sizes outside their valid range,
compiled C is cached only where no other user can write, and user mistakes (in
``po.from_c`` and ``polyopt opt``) are PolyoptErrors, never InternalError."""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.cli import main
from polyopt.frontend.c_native import compile_c
from polyopt import private_folder
from polyopt.te.evaluate import evaluate

COPY = ("void k(int n, double A[10], double B[10]) {\n int i;\n#pragma scop\n"
        " for (i = 0; i < n; i++) B[i] = A[i];\n#pragma endscop\n}\n")
STENCIL = ("void k(int n, double A[n][n], double B[n][n]) {\n int i, j;\n#pragma scop\n"
           " for (i = 1; i < n - 1; i++)\n  for (j = 1; j < n - 1; j++)\n"
           "   B[i][j] = 0.25 * (A[i-1][j] + A[i+1][j] + A[i][j-1] + A[i][j+1]);\n"
           "#pragma endscop\n}\n")


# -- sizes outside the valid range ----------------------------------------------------------

def test_a_size_outside_the_valid_range_is_refused_before_any_write():
    kernel = po.from_c(COPY)
    assert str(kernel.program.context) == "[n] -> {  : 0 <= n <= 10 }"
    f = po.build(po.create_schedule(kernel))
    buffer, a = np.full(12, -1.0), np.arange(12.0)
    for n in (11, 10 ** 8):
        with pytest.raises(po.InvalidArgumentError, match="0 <= n <= 10"):
            f(a[:10], buffer[:10], n=n)
    assert buffer.tolist() == [-1.0] * 12
    f(a[:10], buffer[:10], n=10)  # the largest valid size: every element, nothing past
    assert buffer.tolist() == list(range(10)) + [-1.0, -1.0]


def test_the_valid_range_survives_export_and_load(tmp_path):
    f = po.build(po.create_schedule(po.from_c(COPY)))
    path = str(tmp_path / "k.so")
    f.export_library(path)
    loaded = po.load_module(path)
    with pytest.raises(po.InvalidArgumentError, match="0 <= n <= 10"):
        loaded(np.zeros(10), np.zeros(10), n=11)


def test_polyopt_opt_check_refuses_sizes_outside_the_range(tmp_path, capsys):
    path = tmp_path / "k.c"
    path.write_text(COPY)
    assert main(["opt", str(path), "--check", "--sizes", "n=100000"]) == 2
    assert "0 <= n <= 10" in capsys.readouterr().err


# -- the cache of compiled C ---------------------------------------------------------------

def test_compiled_c_is_cached_in_a_private_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYOPT_CACHE", str(tmp_path / "cache"))
    library = compile_c("int seven(void) { return 7; }\n", ("-O1",))
    folder = os.path.dirname(library)
    assert folder == str(tmp_path / "cache" / "c")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert os.stat(folder).st_uid == os.geteuid()
    assert {name.rsplit(".", 1)[-1] for name in os.listdir(folder)} == {"so", "sha256"}


def test_a_cached_library_that_was_changed_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYOPT_CACHE", str(tmp_path / "cache"))
    text = "int seven(void) { return 7; }\n"
    library = compile_c(text, ("-O1",))
    with open(library, "wb") as handle:
        handle.write(b"planted")
    again = compile_c(text, ("-O1",))
    with open(again, "rb") as handle:
        assert handle.read(4) == b"\x7fELF"


def test_a_cache_folder_others_can_write_is_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    (shared / "c").mkdir(parents=True)
    os.chmod(shared / "c", 0o777)
    os.chmod(shared, 0o777)
    monkeypatch.setenv("POLYOPT_CACHE", str(shared))
    folder = private_folder.private_folder("c")
    assert not folder.startswith(str(shared))
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


def test_a_symbolic_link_as_the_cache_folder_is_not_followed(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    base = tmp_path / "cache"
    base.mkdir(mode=0o700)
    os.symlink(elsewhere, base / "c")
    monkeypatch.setenv("POLYOPT_CACHE", str(base))
    library = compile_c("int eight(void) { return 8; }\n", ("-O1",))
    assert not library.startswith(str(base)) and os.listdir(elsewhere) == []


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/sbin/runuser")
                    and not os.path.exists("/bin/su"), reason="needs root to play two users")
def test_another_users_planted_folder_is_not_used():
    """Another user (nobody) makes the cache folder first, in a sticky shared folder."""
    shared = Path(tempfile.mkdtemp(prefix="polyopt-test-shared-"))
    try:
        os.chmod(shared, 0o1777)
        subprocess.run(["su", "-s", "/bin/sh", "nobody", "-c", f"mkdir -m 777 {shared}/c"],
                       check=True)
        assert (shared / "c").stat().st_uid != os.geteuid()
        env = dict(os.environ, POLYOPT_CACHE=str(shared))
        code = ("from polyopt.frontend.c_native import compile_c\n"
                "print(compile_c('int nine(void) { return 9; }\\n', ('-O1',)))")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out.endswith(".so") and not out.startswith(str(shared))
        assert os.listdir(shared / "c") == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)


# -- user mistakes are PolyoptErrors ---------------------------------------------------------

@pytest.mark.parametrize("call, error", [
    (lambda: po.from_c(STENCIL, defines=[("N", 3)]), po.FrontendError),
    (lambda: po.from_c(STENCIL, defines={"N": "1\n#define X"}), po.FrontendError),
    (lambda: po.from_c(STENCIL, defines={"not a name": 1}), po.FrontendError),
    (lambda: po.from_c(STENCIL.replace("A[i-1][j]", "A[i-1+18446744073709551616][j]")),
     po.FrontendError),
])
def test_from_c_mistakes_are_frontend_errors(call, error):
    with pytest.raises(error) as info:
        call()
    assert not isinstance(info.value, po.InternalError)


def test_a_binary_file_is_a_frontend_error(tmp_path):
    path = tmp_path / "b.c"
    path.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(po.FrontendError):
        po.from_c(str(path))


@pytest.mark.parametrize("args, words", [
    (["--check", "--sizes", "n=-5"], "at least 0"),
    (["--check", "--sizes", "n=abc"], "integer"),
    (["--check", "--sizes", "n=10000000000"], "fits a C int"),
    (["--check", "--sizes", "m=4"], "which the kernel has not"),
    (["--emit", "c", "-o", "{tmp}"], "is a folder"),
    (["--emit", "c", "-o", "/proc/nope/x.c"], "cannot write"),
])
def test_polyopt_opt_mistakes_exit_2_with_a_message(tmp_path, capsys, args, words):
    path = tmp_path / "k.c"
    path.write_text(STENCIL)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(["opt", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "bug in polyopt" not in err


def test_polyopt_opt_writes_its_output_whole(tmp_path, capsys):
    path, out = tmp_path / "k.c", tmp_path / "k.opt.c"
    path.write_text(STENCIL)
    os.symlink(tmp_path / "target.c", out)  # a planted link is replaced, not followed
    assert main(["opt", str(path), "--emit", "c", "-o", str(out)]) == 0
    assert not out.is_symlink() and "optimized by polyopt" in out.read_text()
    assert not (tmp_path / "target.c").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.c", "k.opt.c"]


# -- an expanded scalar whose range starts at a size-dependent index ------------------------

def test_an_expanded_scalar_covers_every_index_the_emitted_c_writes():
    """``l`` is written for ``i >= n / 2`` only: its expansion (auto_schedule) starts at
    the least start over all sizes, 0, so it must reach ``n - 1`` (it had n / 2
    elements, and the emitted C wrote past them; found by the c-types property run)."""
    text = ("void k(int n, long L[n], long B[n]) {\n long i;\n long l;\n#pragma scop\n"
            " for (i = 0; i < n; i++) {\n  l = -L[i];\n  if (i >= n / 2)\n   l = L[i] % 3;\n"
            "  else\n   B[i] += L[i];\n }\n#pragma endscop\n}\n")
    schedule = po.auto_schedule(po.from_c(text))
    expanded = [a for a in schedule.program.arrays if a.name.startswith("l_x")]
    assert len(expanded) == 2
    for array in expanded:
        assert [evaluate(array.shape[0], {"n": n}) for n in (1, 2, 7, 10)] == [1, 2, 7, 10]

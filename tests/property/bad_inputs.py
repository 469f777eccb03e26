"""Bad inputs of every public entry point: primitives, compiled functions, ``po.check``
and the ``polyopt check`` command.

A case is one call with one bad argument, drawn from the tables below, on one of two
small programs (a tensor expression with a reduction feeding an elementwise stage, and
an in-place kernel with a time loop and a triangular nest).  The right answer is a
``PolyoptError`` (never ``InternalError``); where the input may be meant (a strided
view, an unusual but valid factor) acceptance is fine if the numbers are right, and for
inputs that are never right (a wrong dtype, shape or count of arrays, a read-only
output, a missing size) acceptance is a defect.

>>> import random
>>> call, mode = draw_call(random.Random(1), "te")
>>> mode in ("primitive", "refuse", "either", "checked", "refuse-if-symbolic")
True
"""

from __future__ import annotations

from .families import IMPORTS

TE_SETUP = '''
n = po.var("n") if SYMBOLIC else 5
A = po.placeholder((n, 6), name="A", dtype="float32")
k = po.reduce_axis((0, 6), name="k")
B = po.compute((n,), lambda i: po.sum(A[i, k] * 2.0, axis=k), name="B")
C = po.compute((n, 6), lambda i, j: A[i, j] + B[i], name="C")
s = po.create_schedule(C)
NAMES = dict(main="C", other="B", i="i", j="j", k="k", array="A")


def fresh_numbers_ok(schedule):
    """The schedule still computes C = A + 2 * rowsum(A)."""
    a = np.arange(30, dtype="float32").reshape(5, 6) % 7 - 3
    c = np.full((5, 6), np.nan, "float32")
    po.build(schedule, [A, C])(a, c)
    if not np.array_equal(c, a + 2 * a.sum(1, keepdims=True)):
        raise Defect("wrong", "accepted primitive: C differs from A + 2 * rowsum(A)")


def make_call():
    return po.build(s, [A, C])


def arrays(rows=5):
    a = (np.arange(rows * 6, dtype="float32").reshape(rows, 6) % 7) - 3
    return a, np.full((rows, 6), np.nan, "float32")


def expected(a):
    return np.asarray(a, "float32") + 2 * np.asarray(a, "float32").sum(1, keepdims=True)


def same_as_expected(pair):
    """An accepted call with unusual arrays wrote C = A + 2 * rowsum(A) into them."""
    a, c = pair
    if not np.array_equal(np.asarray(c), expected(a)):
        raise Defect("wrong", f"accepted the arrays but computed {np.asarray(c)[0]}, "
                     f"expected {expected(a)[0]}")
'''

KERNEL_SETUP = '''
N, T = po.var("N"), (po.var("T") if SYMBOLIC else 2)


@po.kernel
def kern(A: po.f64[N, N], x: po.f64[N], y: po.f64[N]):
    for t in range(T):
        for i in range(1, N):
            y[i] = x[i] * 0.5
            for j in range(i):
                x[i] += A[i, j] * y[j]


s = po.create_schedule(kern)
NAMES = dict(main="S1", other="S0", i="i", j="j", k="j", array="A")


def reference(a, x, y, steps):
    x, y = x.copy(), y.copy()
    for t in range(steps):
        for i in range(1, len(x)):
            y[i] = x[i] * 0.5
            for j in range(i):
                x[i] += a[i, j] * y[j]
    return x, y


def fresh_numbers_ok(schedule):
    a, x, y = arrays()
    want = reference(a, x, y, 2)
    po.build(schedule)(a, x, y, **({"T": 2} if SYMBOLIC else {}))
    if not (np.array_equal(x, want[0]) and np.array_equal(y, want[1])):
        raise Defect("wrong", "accepted primitive: x, y differ from the reference")


def make_call():
    return po.build(s)


def arrays(n=5):
    a = (np.arange(n * n, dtype="float64").reshape(n, n) % 5 - 2) / 4
    return a, np.linspace(-1, 1, n), np.zeros(n)
'''

INTS = ["0", "-1", "-7", "10**20", "2**63", "2**31", "1.5", "'4'", "None", "True",
        "float('nan')", "float('inf')", "[]", "np.int64(3)", "np.float32(2)", "3"]
AXES = ["'nope'", "''", "None", "3", "1.5", "'{i}' * 300", "('{i}',)", "po.var('{i}')",
        "s[{other!r}].axes[0]", "'{i}.outer'", "'{j}'", "'{k}'"]
STAGES = ["'nope'", "None", "5", "s", "{array!r}", "s[{main!r}]", "{other!r}", "[]", "''"]
LAYOUTS = ["'{{ [d0] -> [0] }}'", "'{{ [d0, d1] -> [d0] }}'", "'garbage'", "''", "5",
           "'{{ [d0, d1] -> [d0, d1, d2] }}'", "'[Q] -> {{ [d0, d1] -> [d0 + Q, d1] }}'",
           "'{{ [d0, d1] -> [d0 * d1, d1] }}'", "'{{ [d0, d1] -> [d1, d0] : d0 > 2 }}'",
           "'{{ [a] -> [a] }}'", "'{{ [d0, d1] -> [d0 mod 2, d1] }}'",
           "'{{ [d0, d1] -> [floor(d0 / 4), d1, d0 mod 4] }}'", "'{{ [d0, d1] -> [d1, d0] }}'"]
RELATIONS = ["'garbage'", "''", "None", "5", "'{{ [a0] -> [a0] }}'",
             "'{{ [a0, a1] -> [a0] }}'", "'{{ [a0, a1] -> [a0, a0] }}'",
             "'{{ [a0, a1] -> [a1 * a1, a0] }}'", "'[Q] -> {{ [a0, a1] -> [a0 + Q, a1] }}'",
             "'{{ [a0, a1] -> [a1, a0, 0] }}'", "'{{ [a0, a1] -> [2 * a0, a1] }}'",
             "'{{ [a0, a1] -> [a0, a1] : a0 > 1 }}'", "'{{ [a0, a1] -> [floor(a0 / 2), a1] }}'"]
SCOPES = ["'bogus'", "None", "5", "''", "'LOCAL'"]
LISTS = ["[]", "['nope']", "None", "'{main}'", "[{main!r}, {main!r}]", "[5]", "[{other!r}]"]

PRIMITIVES = [
    "s[{main!r}].split({axis}, factor=3)", "s[{main!r}].split('{i}', factor={int})",
    "s[{main!r}].split('{i}', nparts={int})", "s[{main!r}].split('{i}')",
    "s[{main!r}].split('{i}', factor=2, nparts=2)", "s[{main!r}].tile('{i}', '{j}', {int}, 2)",
    "s[{main!r}].tile({axis}, '{j}', 2, 2)", "s[{main!r}].reorder({axis}, '{i}')",
    "s[{main!r}].reorder()", "s[{main!r}].reorder('{i}', '{i}')",
    "s[{main!r}].fuse({axis}, '{j}')", "s[{main!r}].fuse('{j}', '{i}')",
    "s[{main!r}].skew('{i}', '{j}', {int})", "s[{main!r}].skew({axis}, '{j}')",
    "s[{main!r}].shift('{i}', {int})", "s[{main!r}].reverse({axis})",
    "s[{main!r}].transform({relation})", "s[{main!r}].diamond_tile('{i}', '{j}', {int})",
    "s[{main!r}].diamond_tile({axis}, '{j}', 4)", "s[{main!r}].wavefront({axis})",
    "s[{main!r}].wavefront()", "s[{main!r}].parallel({axis})", "s[{main!r}].vectorize({axis})",
    "s[{main!r}].unroll({axis})", "s[{other!r}].compute_at({stage}, '{i}')",
    "s[{other!r}].compute_at(s[{main!r}], {axis})", "s[{other!r}].compute_with({stage}, '{i}')",
    "s[{stage}]", "s[{stage}].compute_inline()", "s[{other!r}].compute_root()",
    "s.cache_read({stage}, 'local', [{main!r}])", "s.cache_read({array!r}, {scope}, [{main!r}])",
    "s.cache_read({array!r}, 'local', {list})",
    "s.cache_read({array!r}, 'global', [{main!r}], layout={layout})",
    "s.cache_write({stage}, 'local')", "s.cache_write({main!r}, 'local', layout={layout})",
    "s.cache_write({main!r}, {scope})", "s.rfactor({stage}, '{k}')",
    "s.rfactor({main!r}, {axis})", "s.replay({text})", "s[{main!r}].bind({axis}, 'threadIdx.x')",
    "po.create_schedule({stage})", "s[{main!r}].can_split({axis}, factor={int})",
]
TEXTS = ["'garbage'", "'s[\"nope\"].split(\"i\", factor=2)'", "'1/0'", "5", "None",
         "'s[' * 500", "''"]

TE_CALLS = [  # (call, mode); a, c = arrays(); f = make_call()
    ("f(a.astype('float64'), c)", "refuse"), ("f(a[:, :5], c[:, :5])", "refuse"),
    ("f(a, c[:3])", "refuse"), ("f(a)", "refuse"), ("f(a, c, c)", "refuse"),
    ("f(None, c)", "refuse"), ("f(a, np.float32(1))", "refuse"),
    ("f(a.reshape(-1), c)", "refuse"), ("f(a[None], c)", "refuse"),
    ("f(a, c.astype('float64'))", "refuse"), ("f(a.astype('int32'), c)", "refuse"),
    ("f(a, readonly(c))", "refuse"), ("f(a, c, n=3)", "either"), ("f(a, c, bogus=1)", "either"),
    ("f(np.asfortranarray(a), c) or (a, c)", "checked"),
    ("f(a, (o := np.asfortranarray(c))) or (a, o)", "checked"),
    ("f((i := a[::-1]), c) or (i, c)", "checked"), ("f(a, (o := c[::-1])) or (a, o)", "checked"),
    ("f((i := wide(a)[:, ::2]), c) or (i, c)", "checked"), ("f(a, a) or a", "either"),
    ("f(a.tolist(), c) or (a, c)", "checked"), ("f(a.astype('>f4'), c) or (a, c)", "checked"),
    ("f(*arrays(0)) or 0", "either"), ("f(a, c.tolist())", "refuse"),
]
KERNEL_CALLS = [  # a, x, y = arrays(); f = make_call()
    ("f(a, x, y)", "refuse-if-symbolic"), ("f(a, x, y, T='3')", "refuse"),
    ("f(a, x, y, T=None)", "refuse"), ("f(a, x, y, T=2.5)", "refuse"),
    ("f(a, x, y, T=-1)", "either"), ("f(a, x, y, T=True)", "either"),
    ("f(a, x, y, T=np.int64(2))", "either"), ("f(a, x, x, T=2)", "either"),
    ("f(a.astype('float32'), x, y, T=2)", "refuse"), ("f(a[:, :4], x, y, T=2)", "refuse"),
    ("f(a, x[:4], y, T=2)", "refuse"), ("f(a, x, T=2)", "refuse"),
    ("f(a, x, y, y, T=2)", "refuse"), ("f(a, readonly(x), y, T=2)", "refuse"),
    ("f(a, x, y, T=2, N=9)", "either"), ("f(a.T, x, y, T=2)", "either"),
    ("f(a, x[::-1], y, T=2)", "either"),
    ("f(*arrays(0), T=2)", "either"), ("f(a, x.tolist(), y, T=2)", "refuse"),
]
SCHEDULES = [
    "'{{\"statements\": ['", "'{{\"statements\": ' + '[' * 5000 + ']' * 5000 + '}}'",
    "'{{\"statements\": 5}}'", "'{{}}'", "{{}}", "{{'statements': 'S0'}}",
    "{{'statements': [{{'name': 'S0'}}]}}", "{{'statements': [5]}}",
    "'{{ S0[t, i] -> [t, i] '", "'{{ S0[t, i] -> [t, i * i]; S1[t, i, j] -> [t, i, j] }}'",
    "'{{ S0[t, i] -> [t, k]; S1[t, i, j] -> [t, i, j] }}'",
    "'{{ S0[t, i] -> [t, i, 0] : i < 2; S1[t, i, j] -> [t, i, j] }}'",
    "'{{ S0[t, i] -> [t, i]; S1[t, i, j] -> [t, i, j] }}'",
    "'[Q] -> {{ S0[t, i] -> [t, i, Q]; S1[t, i, j] -> [t, i, j] }}'",
    "'{{ S0[t, i] -> [t, i, 0]; S1[t, i, j] -> X[t, i, j] }}'",
    "'/no/such/file'", "'/'", "b'{{ S0[i] -> [i] }}'", "5", "[]", "''", "'{{'",
    "'{{ S0[t, i] -> [100000000000000000000000 t, i, 0]; S1[t, i, j] -> [t, i, j] }}'",
    "'{{ S0[t, i] -> [t, i, 0]; S1[t, i, j] -> [t, i, j]; S9[q] -> [q, 0, 0] }}'",
    "'{{ S0[t] -> [t, 0, 0]; S1[t, i, j] -> [t, i, j] }}'",
    "'{{ S0[t, i] -> [t, i, 0]; S1[t, i, j] -> [t, i, j] }}'",
    "'{{ S0[t, i] -> [t, i, 0]; S1[t, i, j] -> [t, floor(i / 0), j] }}'",
]
CLI_FILES = {
    "kernel": KERNEL_SETUP.split("NAMES =")[0].replace("SYMBOLIC", "True"),
    "raises": "raise KeyError('x')\n", "syntax": "def (:\n", "exits": "import sys\nsys.exit(3)\n",
    "nothing": "x = 1\n", "recursion": "def f():\n    return f()\nf()\n",
    "binary": b"\xff\xfe\x00garbage".decode("latin-1"),
    "two": "import polyopt as po\nN = po.var('N')\n@po.kernel\ndef a(X: po.f64[N]):\n"
           "    for i in range(N):\n        X[i] = 1.0\n@po.kernel\ndef b(X: po.f64[N]):\n"
           "    for i in range(N):\n        X[i] = 2.0\n",
}
CLI_SCHEDULES = ["{ S0[t, i] -> [t, i, 0]; S1[t, i, j] -> [t, i, j] }", "garbage",
                 "{\"statements\": [", "", "{ S0[t, i] -> [t, i, 0]; S1[t, i, j] -> [t, i, 1] }"]
CLI_ARGV = ["['check', KERNEL, '--schedule', SCHEDULE]", "['check', KERNEL]",
            "['check', FILE, '--schedule', SCHEDULE]", "['check', KERNEL, '--schedule', '/nope']",
            "['check', KERNEL, '--name', 'nope', '--schedule', SCHEDULE]", "['check']", "[]",
            "['bogus']", "['check', '/no/file.py']", "['check', KERNEL, '--schedule']",
            "['check', KERNEL, '--name', 'kern', '--schedule', SCHEDULE]",
            "['check', DIRECTORY, '--schedule', SCHEDULE]"]

CLI_RUN = '''
import atexit
import shutil
import tempfile
from pathlib import Path

from polyopt.cli import main as cli_main

DIRECTORY = tempfile.mkdtemp(prefix="polyopt-cli-")
atexit.register(shutil.rmtree, DIRECTORY, True)  # (a case may run in a persistent worker)
KERNEL = str(Path(DIRECTORY) / "kernel.py")
FILE = str(Path(DIRECTORY) / "case.py")
SCHEDULE = str(Path(DIRECTORY) / "schedule.isl")
Path(KERNEL).write_text("import polyopt as po\\n" + KERNEL_FILE)
Path(FILE).write_text(CASE_FILE)
Path(SCHEDULE).write_text(SCHEDULE_TEXT)


def cli(argv):
    """polyopt's command line in this process: a status 0, 1 or 2 (argparse's usage
    errors exit with 2), never an exception."""
    try:
        status = cli_main(argv)
    except SystemExit as stop:
        status = stop.code
    if status not in (0, 1, 2):
        raise Defect("crash", f"polyopt {argv} ended with status {status!r}")
    return status
'''


def _fill(rng, template, names):
    values = dict(names)
    for slot, table in (("int", INTS), ("axis", AXES), ("stage", STAGES), ("layout", LAYOUTS),
                        ("relation", RELATIONS), ("scope", SCOPES), ("list", LISTS),
                        ("text", TEXTS)):
        if "{" + slot + "}" in template:
            values[slot] = rng.choice(table).format(**names)
    return template.format(**values)


TE_NAMES = dict(main="C", other="B", i="i", j="j", k="k", array="A")
KERNEL_NAMES = dict(main="S1", other="S0", i="i", j="j", k="j", array="A")


def draw_call(rng, program):
    """(Python text of the call, expectation) for ``program`` "te" or "kernel"."""
    kind = rng.choice(["primitive", "primitive", "call", "call", "check"])
    names = TE_NAMES if program == "te" else KERNEL_NAMES
    if kind == "primitive":
        return _fill(rng, rng.choice(PRIMITIVES), names), "primitive"
    if kind == "check":
        return f"po.check(s, schedule={rng.choice(SCHEDULES).format()})", "either"
    return rng.choice(TE_CALLS if program == "te" else KERNEL_CALLS)


CHECKS = {
    "primitive": "expect(lambda: {call}, 'either', lambda _: fresh_numbers_ok(s))",
    "either": "expect(lambda: {call}, 'either')",
    "refuse": "expect(lambda: {call}, 'refuse')",
}


def family_bad_input(rng, script):
    symbolic = rng.random() < 0.6
    script.run(IMPORTS + "import islpy as isl\n\n\ndef readonly(a):\n    a = a.copy()\n"
               "    a.setflags(write=False)\n    return a\n\n\ndef wide(a):\n"
               "    return np.repeat(a, 2, axis=1)\n", top=True)
    if rng.random() < 0.12:
        return _cli_case(rng, script)
    program = rng.choice(["te", "kernel"])
    script.run(f"SYMBOLIC = {symbolic}\n" + (TE_SETUP if program == "te" else KERNEL_SETUP))
    call, mode = draw_call(rng, program)
    if call.startswith("f("):
        script.run("f = make_call()\n" + ("a, c = arrays()" if program == "te" else
                                          "a, x, y = arrays()"))
    if mode == "refuse-if-symbolic":
        mode = "refuse" if symbolic else "either"
    if mode == "checked":
        script.run(f"OUTCOME = expect(lambda: {call}, 'either', same_as_expected)")
    else:
        script.run("OUTCOME = " + CHECKS[mode].format(call=call))
    return script.namespace["OUTCOME"]


def _cli_case(rng, script):
    case_file = rng.choice(list(CLI_FILES))
    argv = rng.choice(CLI_ARGV)
    script.run(f"KERNEL_FILE = {CLI_FILES['kernel']!r}\nCASE_FILE = {CLI_FILES[case_file]!r}\n"
               f"SCHEDULE_TEXT = {rng.choice(CLI_SCHEDULES)!r}\n" + CLI_RUN)
    script.run(f"cli({argv})\nOUTCOME = 'ok-accepted'")
    return script.namespace["OUTCOME"]

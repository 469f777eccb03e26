"""po.check: hand-written schedules against exact dependences (matmul, a two-stage
stencil written as tensor expressions, and seidel-2d written as a po.kernel)."""

import json

import islpy as isl
import pytest

import polyopt as po
from polyopt.errors import ScheduleFormatError

INTERCHANGE = "{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k] }"
K_REVERSED = "[K] -> { C_init[i, j] -> [i, j, 0, 0]; C_update[i, j, k] -> [i, j, 1, K - 1 - k] }"


def _matmul():
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A = po.placeholder((M, K), name="A")
    B = po.placeholder((K, N), name="B")
    k = po.reduce_axis((0, K), name="k")
    return po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")


def _blur():
    """Two 3-point stencils in a row: C[i] reads B[i], B[i + 1], B[i + 2]."""
    N = po.var("N")
    A = po.placeholder((N + 4,), name="A")
    B = po.compute((N + 2,), lambda i: A[i] + A[i + 1] + A[i + 2], name="B")
    return po.compute((N,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")


def _kinds(report, statement):
    return [loop.kind for loop in report.loops_of(statement)]


# -- matmul --------------------------------------------------------------------------------

def test_matmul_interchange_is_legal_with_parallel_i_and_j():
    report = po.check(po.create_schedule(_matmul()), schedule=INTERCHANGE)
    assert report.legal and report.violations == ()
    assert _kinds(report, "C_update") == ["parallel", "parallel", "static", "sequential"]
    assert _kinds(report, "C_init") == ["parallel", "parallel", "static", "static"]
    assert str(report).splitlines() == [
        "legal",
        "loops:",
        "  C_init: dimension 0 (j): parallel; dimension 1 (i): parallel; "
        "dimension 2: static 0; dimension 3: static 0",
        "  C_update: dimension 0 (j): parallel; dimension 1 (i): parallel; "
        "dimension 2: static 1; dimension 3 (k): sequential "
        "(carries flow, anti, output C_update -> C_update)",
    ]
    assert str(report.program.schedule_of("C_update")).startswith(
        "[M, K, N] -> { C_update[i, j, k] -> [j, i, 1, k]")


def test_matmul_reversed_reduction_is_illegal_with_every_violation():
    """Reversing k changes the order of the updates of each C[i, j]: refused."""
    report = po.check(po.create_schedule(_matmul()), schedule=K_REVERSED, strict_fp=True)
    assert not report.legal
    assert [v.dependence.kind for v in report.violations] == ["flow", "anti", "output"]
    first = report.violations[0]
    assert (first.source, first.sink, first.element) == (
        "C_update[i=0, j=0, k=0]", "C_update[i=0, j=0, k=1]", "C[0, 0]")
    text = str(report)
    assert text.startswith("illegal: 3 dependences violated\n")
    assert ("  - C_update[i=0, j=0, k=0] writes C[0, 0] that C_update[i=0, j=0, k=1] reads, "
            "but the new schedule runs the reader first") in text
    assert "dimension 3 (-k + K - 1): sequential (carries flow, anti, output" in text


def test_matmul_schedule_in_every_accepted_form(tmp_path):
    s = po.create_schedule(_matmul())
    as_json = {"statements": [{"name": "C_init", "schedule": "{ C_init[i, j] -> [j, i, 0, 0] }"},
                              {"name": "C_update", "domain": "ignored",
                               "schedule": "{ C_update[i, j, k] -> [j, i, 1, k] }"}]}
    (tmp_path / "s.json").write_text(json.dumps(as_json))
    (tmp_path / "s.isl").write_text(INTERCHANGE)
    tree = isl.Schedule.from_domain(s.program.domains).insert_partial_schedule(
        isl.MultiUnionPwAff.from_union_map(isl.UnionMap(INTERCHANGE)))
    forms = [INTERCHANGE, isl.UnionMap(INTERCHANGE), as_json, json.dumps(as_json),
             tmp_path / "s.json", str(tmp_path / "s.isl"), tree, str(tree)]
    reports = [po.check(s, schedule=form) for form in forms]
    assert all(r.legal for r in reports)
    assert len({str(r) for r in reports}) == 1


def test_schedule_tree_with_sequence_is_flattened():
    s = po.create_schedule(_matmul())
    tree = ('{ domain: "[M, N, K] -> { C_init[i, j] : 0 <= i < M and 0 <= j < N; '
            'C_update[i, j, k] : 0 <= i < M and 0 <= j < N and 0 <= k < K }", '
            'child: { schedule: "[{ C_init[i, j] -> [(i)]; C_update[i, j, k] -> [(i)] }]", '
            'child: { sequence: [ { filter: "{ C_init[i, j] }" }, '
            '{ filter: "{ C_update[i, j, k] }", child: { schedule: '
            '"[{ C_update[i, j, k] -> [(k)] }, { C_update[i, j, k] -> [(j)] }]" } } ] } } }')
    report = po.check(s, schedule=tree)
    assert report.legal
    assert _kinds(report, "C_update") == ["parallel", "static", "sequential", "parallel"]


def test_without_schedule_the_current_one_is_checked_against_the_original_dependences():
    C = _matmul()
    s = po.create_schedule(C)
    assert po.check(s).legal
    s[C].reverse(C.op.reduce_axis[0], check=False)
    assert po.check(s).legal == s.is_legal() is True  # a sum may be reassociated
    report = po.check(s, strict_fp=True)
    assert not report.legal
    assert report.violations[0].sink == "C_update[i=0, j=0, k=1]"
    assert "dimension 6 (loop k: -k): sequential" in str(report)


def test_program_and_precomputed_dependences_are_accepted():
    s = po.create_schedule(_matmul())
    assert not po.check(s.program, schedule=K_REVERSED, strict_fp=True).legal
    assert po.check(s.program, schedule=K_REVERSED).legal  # (reassociated)
    assert po.check(s, schedule=INTERCHANGE, deps=s.deps).legal


# -- a stencil pipeline ----------------------------------------------------------------------

def test_fused_stencils_with_enough_shift_are_legal():
    report = po.check(po.create_schedule(_blur()), schedule="{ B[i] -> [i, 0]; C[i] -> [i + 2, 1] }")
    assert report.legal
    assert str(report).splitlines()[2:] == [
        "  B: dimension 0 (i): sequential (carries flow B -> C); dimension 1: static 0",
        "  C: dimension 0 (i + 2): sequential (carries flow B -> C); dimension 1: static 1",
    ]


def test_fused_stencils_with_too_small_a_shift_are_illegal():
    report = po.check(po.create_schedule(_blur()), schedule="{ B[i] -> [i, 0]; C[i] -> [i + 1, 1] }")
    assert not report.legal
    assert str(report).splitlines()[:2] == [
        "illegal: 1 dependence violated",
        "  - B[i=2] writes B[2] that C[i=0] reads, but the new schedule runs the reader first "
        "(when N=1) [flow dependence B -> C through B]",
    ]


def test_separate_stencil_loops_are_parallel_and_their_order_matters():
    s = po.create_schedule(_blur())
    report = po.check(s, schedule="{ B[i] -> [0, i]; C[i] -> [1, i] }")
    assert report.legal and _kinds(report, "B") == _kinds(report, "C") == ["static", "parallel"]
    assert [loop.dim for loop in report.parallel_loops if loop.parallel] == [1, 1]
    swapped = po.check(s, schedule="{ B[i] -> [1, i]; C[i] -> [0, i] }")
    assert not swapped.legal and swapped.violations[0].sink == "C[i=0]"


# -- seidel-2d, in place -----------------------------------------------------------------------

def _seidel():
    from testlib.kernels import seidel_2d

    return seidel_2d


def test_seidel_interchange_of_t_and_i_is_refused_with_a_counterexample():
    """S0[t, i, j] reads A[i + 1, j] as written by S0[t - 1, i + 1, j] (distance
    (1, -1, 0)): with i outermost, the reader runs first."""
    report = po.check(_seidel(), schedule="{ S0[t, i, j] -> [i, t, j] }")
    assert not report.legal
    assert [v.dependence.kind for v in report.violations] == ["flow", "anti"]
    flow, anti = report.violations
    assert flow.explain().startswith(
        "S0[t=0, i=2, j=1] writes A[2, 1] that S0[t=1, i=1, j=1] reads, "
        "but the new schedule runs the reader first (when N=4, T=2)")
    # the element both instances access (S0[1, 1, 1] writes A[1, 1])
    assert anti.explain().startswith(
        "S0[t=0, i=2, j=1] reads A[1, 1] before S0[t=1, i=1, j=1] overwrites it")


def test_seidel_interchange_of_i_and_j_is_refused():
    report = po.check(_seidel(), schedule="{ S0[t, i, j] -> [t, j, i] }")
    assert not report.legal
    assert report.violations[0].explain().startswith(
        "S0[t=0, i=1, j=2] writes A[1, 2] that S0[t=0, i=2, j=1] reads")


def test_seidel_wavefront_2t_i_j_is_legal_but_not_parallel():
    """(0, 1, -1) stays inside a front 2t + i + j: the inner loops carry it."""
    report = po.check(_seidel(), schedule="[N, T] -> { S0[t, i, j] -> [2t + i + j, t, i] }")
    assert report.legal
    assert _kinds(report, "S0") == ["sequential", "sequential", "sequential"]


def test_seidel_wavefront_4t_2i_j_is_legal_with_parallel_inner_loops():
    """Every distance d has 4*d_t + 2*d_i + d_j >= 1: the fronts carry all dependences."""
    report = po.check(_seidel(), schedule="{ S0[t, i, j] -> [4t + 2i + j, t, i] }")
    assert report.legal
    assert str(report).splitlines() == [
        "legal",
        "loops:",
        "  S0: dimension 0 (4*t + 2*i + j): sequential (carries flow, anti, output S0 -> S0); "
        "dimension 1 (t): parallel; dimension 2 (i): parallel",
    ]


# -- malformed input -----------------------------------------------------------------------------

MATMUL_ERRORS = [
    ("{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k +] }",
     "malformed isl text in the schedule text, in the map of statement C_update (syntax error): "
     "C_update[i, j, k] -> [j, i, 1, k +]; write e.g. [N] -> { S0[i, j] -> [i, j] }"),
    ("{ C_init[i, j] -> [j, i, 0, 0]; D[i, j, k] -> [j, i, 1, k] }",
     "the schedule maps unknown statement D; the program's statements are: C_init, C_update"),
    ("{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j] -> [j, i, 1, 0] }",
     "the map of statement C_update has 2 input dimensions but C_update has 3: "
     "write C_update[i, j, k] -> [...]"),
    ("{ C_init[i, j] -> [j, i, 0, 0] }",
     "the schedule has no map for statement C_update; every statement needs one"),
    ("{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k]; "
     "C_update[i, j, k] -> [j, i, 1, k + 1] }",
     "the map of statement C_update gives several times to C_update[i=0, j=0, k=0] "
     "(when M=1, K=1, N=1); a schedule must be a function of the instance"),
    ("{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k] : k < 5 }",
     "the map of statement C_update gives no time to C_update[i=0, j=0, k=5] "
     "(when M=1, K=6, N=1); it must be defined on the statement's whole domain"),
    ("{ C_init[i, j] -> [j, i, 0]; C_update[i, j, k] -> [j, i, 1, k] }",
     "the schedule's maps have different numbers of output dimensions (C_init has 3, "
     "C_update has 4); give every statement the same number, padding with trailing zeros"),
    ("{ C_init[i, j] -> T[j, i, 0, 0]; C_update[i, j, k] -> U[j, i, 1, k] }",
     "the schedule's maps have different range tuple names (C_init -> T, C_update -> U); "
     "use the same name everywhere, or none: S0[i] -> [i]"),
    ("[P] -> { C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, P] }",
     "the schedule uses parameter P that the program does not have; its parameters are: "
     "M, K, N"),
    ('{"statements": [{"name": "C_init", "schedule": "{ C_init[i, j] -> [0] }"},}',
     "malformed JSON in the schedule text: Expecting value at line 1, column 75"),
    ('{"statements": [{"name": "C_update", "schedule": "{ C_update[i, j, k] -> [k "}]}',
     "malformed isl text in the schedule text, in the map of statement C_update "
     "(syntax error): { C_update[i, j, k] -> [k"),
    ('{"statements": [{"name": "C_update", "schedule": "{ C_init[i, j] -> [0] }"}]}',
     "the JSON entry of statement C_update maps C_init; write C_update[...] -> [...]"),
    ('{"statements": [{"name": "C_init"}]}',
     'the schedule text: statement entry 0 needs a "name" and a "schedule" string, '
     'got {"name": "C_init"}'),
    ('{"statements": [{"name": "C_init", "schedule": "{ C_init[i, j] -> [0] }"}, '
     '{"name": "C_init", "schedule": "{ C_init[i, j] -> [1] }"}]}',
     "the schedule text: statement C_init is listed twice"),
    ("{ domain: \"{ C_init[i, j] }\" child: }",
     "malformed isl schedule tree in the schedule text (syntax error)"),
    ("no_such_file.json",
     "schedule file 'no_such_file.json' does not exist (schedule text needs isl braces: "
     "{ S0[i] -> [i] })"),
]


@pytest.mark.parametrize("text, message", MATMUL_ERRORS, ids=range(len(MATMUL_ERRORS)))
def test_malformed_schedules_are_refused_with_a_one_line_message(text, message):
    with pytest.raises(ScheduleFormatError) as info:
        po.check(po.create_schedule(_matmul()), schedule=text)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, po.InvalidArgumentError)


def test_malformed_json_file_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{ C_init[i, j] -> [0] }")
    with pytest.raises(ScheduleFormatError, match=r"malformed JSON in '.*bad.json': "
                                                   r"Expecting property name"):
        po.check(po.create_schedule(_matmul()), schedule=path)


def test_wrong_argument_types_are_refused():
    with pytest.raises(ScheduleFormatError, match="a schedule is an isl map or schedule text, "
                                                  "a dict or a file path, got int"):
        po.check(po.create_schedule(_matmul()), schedule=3)
    with pytest.raises(po.InvalidArgumentError, match="po.check takes a po.Schedule"):
        po.check("C", schedule=INTERCHANGE)


def test_nested_power_of_two_levels_keep_one_piece_per_dimension():
    """``[floor(i/1024), floor(i/512) mod 2, ..., i mod 2]``: isl's conversion of the whole
    map split every dimension on the others' divisions (a 425 KB report, 12 s, at this
    depth); each dimension is now its own one-piece expression, and each is parallel."""
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2, name="B")
    levels = [f"floor(i/{2 ** k}) mod 2" for k in range(9, 0, -1)]
    text = "[n] -> { B[i] -> [floor(i/1024), " + ", ".join(levels) + ", i mod 2] }"
    report = po.check(po.create_schedule(B), schedule=text)
    assert report.legal
    loops = report.loops_of("B")
    assert [loop.kind for loop in loops] == ["parallel"] * 11
    assert loops[0].expression == "floor((i)/1024)"
    pieced = [loop.expression for loop in loops if ":" in loop.expression or ";" in
              loop.expression]  # one affine piece each: no condition, no second piece
    assert not pieced, pieced
    row = isl.Map(text).intersect_domain(isl.Set("[n] -> { B[i] : 0 <= i < n }"))
    assert report.program.schedule_of("B").is_equal(row)

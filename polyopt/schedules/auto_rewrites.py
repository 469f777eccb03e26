"""Rewrites of an in-place kernel that ``auto_schedule`` makes before scheduling it,
each through a checked primitive: scalar expansion (``expand_scalar``) and transposed
copies of inputs read along columns (``cache_read(..., layout=)``, ``compute_root``).

>>> import polyopt as po
>>> k = po.from_c('''
... #define N 10
... void rowsum(int n, double A[N][N], double y[N]) {
...   int i, j;
...   double w;
... #pragma scop
...   for (i = 0; i < n; i++) {
...     w = 0.0;
...     for (j = 0; j < n; j++)
...       w += A[i][j];
...     y[i] = w;
...   }
... #pragma endscop
... }''')
>>> notes = []
>>> print(scalars_expanded(po.create_schedule(k), notes).script())
s.expand_scalar("w")
>>> notes
['scalar w expanded into the elements its values are stored to (no loop is then ordered by it)']
"""

from __future__ import annotations

from ..domain.accesses import read_accesses
from ..domain.affine import AffineSpace
from ..errors import IllegalScheduleError, ScheduleError


def scalars_expanded(schedule, notes: list):
    """The kernel with each scalar temporary kept in the elements its values are
    stored to (``expand_scalar``), else in a new array indexed by the loops around
    each of its statements (``dims=``; one array per live range), where that is exact:
    a scalar carried across every loop forbids any reordering (ludcmp's ``w``: lu's
    schedule, 1.1x -> 6x gcc; symm's ``acc``: 3.1x -> 7x; deriche's recurrences, whose
    column sweeps then walk rows).  The scalars expanded into new arrays with the same
    number of loops go in one step (one check: deriche's ten scalars in 0.2 s of CPU
    rather than 1.3 s one by one)."""
    result = schedule.fork()
    by_depth, failures = {}, {}
    for array in schedule.program.arrays:
        if array.role != "compute" or array.shape != ():
            continue
        try:
            with result.atomic():
                result.expand_scalar(array.name)
        except (IllegalScheduleError, ScheduleError) as err:
            failures[array.name] = first_line(err)
            depth = min((len(st.dims) for st in result.program.statements
                         if any(a.array == array.name for a in st.accesses)), default=0)
            if depth >= 1:
                by_depth.setdefault(depth, []).append(array.name)
            continue
        notes.append(f"scalar {array.name} expanded into the elements its values are stored "
                     "to (no loop is then ordered by it)")
    for depth, names in sorted(by_depth.items()):
        groups = [names] if len(names) > 1 else []
        groups += [[name] for name in names]  # one by one when the group is refused
        for group in groups:
            if not all(name in failures for name in group):
                continue
            try:
                with result.atomic():
                    result.expand_scalar(group if len(group) > 1 else group[0], depth)
            except (IllegalScheduleError, ScheduleError) as err:
                if len(group) == 1:
                    failures[group[0]] += f"; into a new array: {first_line(err)}"
                continue
            for name in group:
                del failures[name]
            loops = f"the {depth} loop{'s' * (depth > 1)} around each of"
            notes.append(f"scalar {group[0]} expanded into a new array indexed by {loops} "
                         "its statements (no loop is then ordered by it)" if len(group) == 1
                         else f"scalars {', '.join(group)} expanded into new arrays indexed "
                         f"by {loops} their statements, one per live range (no loop is then "
                         "ordered by them)")
    for name, failure in failures.items():
        notes.append(f"scalar {name} not expanded: {failure}")
    return result


def matrix_reads(program):
    """``(statement, v, read, array)`` for each statement of three or more loops (a
    stage's main statement) whose output's last index is a loop ``v``, and each of its
    reads ``X[a, b]`` of a 2-D array the kernel never writes (``read``: the expression
    node, its ``indices`` loop variables or expressions; ``array``: the program's name)."""
    written = {a.array for st in program.statements for a in st.writes}
    stages = {st.main for st in program.stages}
    for stmt in program.statements:
        indices = stmt.target.indices
        if len(stmt.iter_vars) < 3 or not indices or stmt.name not in stages:
            continue
        v = indices[-1]
        if not any(v is var for var in stmt.iter_vars):
            continue
        space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
        for node, access in read_accesses(stmt, space):
            if access.array not in written and len(node.indices) == 2:
                yield stmt, v, node, access.array


def transposed_copies(schedule, notes: list):
    """Per statement of three or more loops whose output's last index is a loop ``v``:
    each 2-D array the kernel never writes that it reads as ``X[v, u]`` (a column walk
    along ``v``, the loop that will be vectorized) is read from a copy stored
    transposed, made once before the statement's nest (O(size of X) copies for
    O(n^3) work; syrk 0.55 -> 0.24 s)."""
    result = schedule.fork()
    program = schedule.program
    stage_of = {st.main: st.name for st in program.stages}
    columns: dict = {}  # statement name -> (it, its loop v, the arrays read along columns)
    for stmt, v, node, array in matrix_reads(program):
        if node.indices[0] is v and node.indices[1] is not v and \
                any(node.indices[1] is var for var in stmt.iter_vars):
            columns.setdefault(stmt.name, (stmt, v, set()))[2].add(array)
    for stmt, v, arrays in columns.values():
        for array in sorted(arrays):
            try:
                with result.atomic():
                    copy = result.cache_read(array, "global", [stage_of[stmt.name]],
                                             layout="{ [a, b] -> [b, a] }")
                    result[copy].compute_root()
            except (IllegalScheduleError, ScheduleError) as err:
                notes.append(f"{stmt.name}: no transposed copy of {array} "
                             f"({first_line(err)})")
                continue
            notes.append(f"{stmt.name} reads columns of {array} along its stride-1 loop "
                         f"{v.name}: it reads a transposed copy made before its nest")
    return result


def first_line(err: Exception) -> str:
    return str(err).splitlines()[0][:200]

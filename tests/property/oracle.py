"""Hand-written schedules judged by running the statement instances in the new order.

A case is a random in-place kernel with constant sizes (:mod:`property.gen_kernel`) and
a random schedule: the kernel's own ``2d + 1`` order (static positions between loop
variables) changed by interchanges, reversals, skews, shifts, statement swaps and
fusions of sibling loops, each applied to some or all statements, with a last dimension
that numbers the statements (so that the new order is total).  The oracle, in plain
Python, lists the instances in program order with the elements they read and write,
and calls the schedule legal when every pair of instances that touch one element (one of
them writing it) keeps its order; it also runs the statements in both orders and checks
that a legal schedule computes the same arrays.  ``po.check`` must agree: ``legal``
exactly when the oracle says so, and each violation it reports must name two instances
that the new order swaps and an element they really share (issue 12, item 4).  The schedule reaches ``po.check`` as isl text, JSON
text, a dict or an ``isl.UnionMap``.

>>> import random
>>> from property.script import Script
>>> "SCHEDULE = " in family_handwritten(random.Random(0), Script(), dry=True)
True
"""

from __future__ import annotations

import re

from .families import IMPORTS
from .gen_kernel import make_kernel_program

ACCESS = re.compile(r"([ABy])\[([^\]]+)\]")

ORACLE = '''
import itertools
import json

import islpy as isl

CODE = {name: [compile(e, name, "eval") for e in dims] for name, dims in SCHEDULE.items()}


def _at(name, vector):
    return dict(zip(LOOPS[name], vector))


def program_order():
    order = []
    walk(SIZES[0]["N"], SIZES[0]["M"], SIZES[0]["T"], lambda n, v: order.append((n, v)))
    return order


def new_time(name, vector):
    env = _at(name, vector)
    return tuple(eval(code, {}, env) for code in CODE[name])


def touched(name, vector):
    """[(element, is_write)] of one instance."""
    env = _at(name, vector)
    return [((array, tuple(eval(e, {}, env) for e in index)), write)
            for array, index, write in ACCESSES[name]]


def oracle():
    """(legal, witness): the first pair of instances touching one element (one of them
    writing it) that the new order swaps."""
    order = program_order()
    times = [new_time(*instance) for instance in order]
    uses = {}
    for position, instance in enumerate(order):
        for element, write in touched(*instance):
            uses.setdefault(element, []).append((position, write))
    for element, seq in uses.items():
        for (a, wa), (b, wb) in itertools.combinations(seq, 2):
            if (wa or wb) and a != b and not times[a] < times[b]:
                return False, (order[a], order[b], element)
    return True, None


def execute(new_order):
    rng = np.random.default_rng(5)
    arrays = [rng.integers(-8, 8, size=tuple(SIZES[0][d] for d in shape)) / 8
              for _, shape in ARRAYS]
    order = program_order()
    if new_order:
        order = sorted(order, key=lambda instance: new_time(*instance))
    for name, vector in order:
        STATEMENTS[name](*arrays, *vector)
    return arrays


def schedule_text():
    maps = [f"{name}[{', '.join(LOOPS[name])}] -> [{', '.join(dims)}]"
            for name, dims in SCHEDULE.items()]
    return "{ " + "; ".join(maps) + " }"


def schedule_in(form):
    if form == "text":
        return schedule_text()
    if form == "union_map":
        return isl.UnionMap(schedule_text())
    entries = [{"name": name, "schedule": "{ " + f"{name}[{', '.join(LOOPS[name])}] -> "
                f"[{', '.join(dims)}]" + " }", "domain": "ignored"}
               for name, dims in SCHEDULE.items()]
    data = {"statements": entries}
    return data if form == "dict" else json.dumps(data)


def judge(form):
    legal, witness = oracle()
    if legal and any(not np.array_equal(a, b, equal_nan=True)
                     for a, b in zip(execute(False), execute(True))):
        raise Defect("harness", "the oracle calls the schedule legal but the arrays differ")
    try:
        report = po.check(po.create_schedule(kern), schedule=schedule_in(form))
    except po.PolyoptError as error:
        if isinstance(error, po.InternalError):
            raise
        raise Defect("bad-refusal", f"po.check refuses a well-formed schedule: "
                     f"{type(error).__name__}: {error}") from error
    if report.legal != legal:
        said = "legal" if report.legal else "illegal: " + str(report).splitlines()[1][:300]
        truth = "legal" if legal else f"illegal: {witness[0]} and {witness[1]} share {witness[2]}"
        raise Defect("oracle", f"po.check says {said}; the instances say {truth}")
    for violation in report.violations:
        check_violation(violation)
    return "ok-accepted" if legal else "ok-refused"


def _parse(text):
    name, _, inside = text.rstrip("]").partition("[")
    return name, tuple(int(part.split("=")[-1]) for part in inside.split(",") if part.strip())


def check_violation(violation):
    """A violation names two instances that the new schedule swaps and the element they
    really share (the source writes it for flow and output, reads it for anti)."""
    kind = violation.dependence.kind
    source, sink = _parse(violation.source), _parse(violation.sink)
    element = _parse(violation.element)
    roles = {"flow": (True, False), "anti": (False, True), "output": (True, True)}[kind]
    if (element, roles[0]) not in touched(*source) or (element, roles[1]) not in touched(*sink):
        raise Defect("message", f"the {kind} violation names {violation.source}, "
                     f"{violation.sink} and {violation.element}, which they do not share "
                     f"that way: {violation.explain()}")
    if new_time(*source) < new_time(*sink):
        raise Defect("message", f"the {kind} violation's pair keeps its order: "
                     f"{violation.explain()}")
'''


def _structure(program):
    """Each statement's 2d+1 schedule as a list of dimension texts."""
    paths: list[list] = []
    counts = [0] * 16
    schedule = {}
    for indent, text, stmt in program.lines:
        depth = indent - 1
        del paths[depth:]
        index = counts[depth]
        counts[depth] += 1
        if stmt is None:
            paths.append((index, text.split()[1]))
            for deeper in range(depth + 1, 16):
                counts[deeper] = 0
        else:
            schedule[stmt.name] = [x for i, v in paths for x in (str(i), v)] + [str(index)]
    width = max(len(dims) for dims in schedule.values())
    return {name: dims + ["0"] * (width - len(dims)) for name, dims in schedule.items()}


def _perturb(rng, schedule, loops):
    names = list(schedule)
    for _ in range(rng.randint(0, 3)):
        chosen = [n for n in names if rng.random() < 0.7] or names[:1]
        kind = rng.choice(["interchange", "reverse", "skew", "shift", "swap", "fuse"])
        for name in chosen:
            dims = schedule[name]
            loop_dims = [k for k, d in enumerate(dims) if d in set(loops[name])]
            if kind == "interchange" and len(loop_dims) >= 2:
                a, b = rng.sample(loop_dims, 2)
                dims[a], dims[b] = dims[b], dims[a]
            elif kind == "reverse" and loop_dims:
                k = rng.choice(loop_dims)
                dims[k] = f"-({dims[k]})"
            elif kind == "skew" and len(loop_dims) >= 2:
                a, b = sorted(rng.sample(loop_dims, 2))
                dims[b] = f"{dims[b]} + {rng.choice([1, 2, -1])}*{loops[name][0]}"
            elif kind == "shift" and loop_dims:
                k = rng.choice(loop_dims)
                dims[k] = f"{dims[k]} + {rng.choice([1, -1, 2])}"
        if kind in ("swap", "fuse") and len(names) >= 2:
            a, b = rng.sample(names, 2)
            statics = [k for k, d in enumerate(schedule[a]) if d.isdigit()
                       and k < len(schedule[b]) and schedule[b][k].isdigit()]
            if statics:
                k = rng.choice(statics)
                if kind == "swap":
                    schedule[a][k], schedule[b][k] = schedule[b][k], schedule[a][k]
                else:
                    schedule[a][k] = schedule[b][k]
    for k, name in enumerate(names):  # a last dimension: the statement's number
        schedule[name].append(str(k))
    return schedule


def family_handwritten(rng, script, dry=False):
    program = make_kernel_program(rng, fixed=True)
    loops = {s.name: list(s.loops) for s in program.statements}
    schedule = _perturb(rng, _structure(program), loops)
    accesses = {}
    functions = []
    arrays = "A, B, y" if "y: po" in program.source else "A, B"
    for s in program.statements:
        reads = [(a, [e.strip() for e in i.split(",")], False) for a, i in ACCESS.findall(s.rhs)]
        (target, index), = ACCESS.findall(s.target)
        writes = [(target, [e.strip() for e in index.split(",")], True)]
        if s.op == "+=":
            reads.append((target, writes[0][1], False))
        accesses[s.name] = reads + writes
        functions.append(f"def {s.name}({arrays}, {', '.join(s.loops)}):\n"
                         f"    {s.target} {s.op} {s.rhs}")
    tables = (program.walk + "\n" + "\n\n".join(functions) + "\n\n"
              f"STATEMENTS = {{{', '.join(f'{s.name!r}: {s.name}' for s in program.statements)}}}\n"
              f"LOOPS = {loops!r}\nACCESSES = {accesses!r}\nSCHEDULE = {schedule!r}\n")
    form = rng.choice(["text", "text", "json", "dict", "union_map"])
    if dry:
        return tables
    script.run(IMPORTS, top=True)
    script.run(program.source + tables + ORACLE)
    script.run(f"OUTCOME = judge({form!r})")
    return script.namespace["OUTCOME"]

"""A refusal names the two instances of the broken dependence and the element they both
access, for flow, anti and output dependences (issue 12, item 4).

Each kernel is a one-statement loop whose reads and writes differ, so that naming "an
element the source accesses" is not enough: the element must be the one that the source
and the sink really share.  The accesses are checked in plain Python from the kernel's
own index expressions, for the refusal of a primitive (``reverse``) and for ``po.check``
of the same order written by hand, with symbolic and with constant sizes.  (At the time
of writing the anti-dependence cases with constant sizes fail: the message names
``A[3]``, which the source reads, while the sink writes ``A[2]``; see
/work/wt/found/message_anti_element.py.)
"""

from __future__ import annotations

import re

import pytest

import polyopt as po

N = po.var("N")


@po.kernel
def flow_only(A: po.f64[N], B: po.f64[N]):
    for i in range(1, N - 2):
        A[i + 1] = A[i - 1] * 0.5 + B[i]     # S[i] writes A[i + 1], S[i + 2] reads it


@po.kernel
def anti_only(A: po.f64[N]):
    for i in range(1, N - 2):
        A[i - 1] = A[i + 1] + A[i + 2]       # S[i] reads A[i + 1] and A[i + 2], later overwritten


@po.kernel
def output_only(A: po.f64[N, N], B: po.f64[N]):
    for i in range(N // 2):
        for j in range(N // 2):
            A[i + j, 0] = B[i] - B[j]        # S[i, j] and S[i + 1, j - 1] write one element


@po.kernel
def flow_fixed(A: po.f64[8], B: po.f64[8]):
    for i in range(1, 6):
        A[i + 1] = A[i - 1] * 0.5 + B[i]


@po.kernel
def anti_fixed(A: po.f64[8]):
    for i in range(1, 6):
        A[i - 1] = A[i + 1] + A[i + 2]


@po.kernel
def output_fixed(A: po.f64[8, 8], B: po.f64[8]):
    for i in range(4):
        for j in range(4):
            A[i + j, 0] = B[i] - B[j]


# (array, index as a function of the instance, is it a write) of each kernel's statement
ACCESSES = {
    "flow": [("A", lambda i: (i + 1,), True), ("A", lambda i: (i - 1,), False),
             ("B", lambda i: (i,), False)],
    "anti": [("A", lambda i: (i - 1,), True), ("A", lambda i: (i + 1,), False),
             ("A", lambda i: (i + 2,), False)],
    "output": [("A", lambda i, j: (i + j, 0), True), ("B", lambda i, j: (i,), False),
               ("B", lambda i, j: (j,), False)],
}
KERNELS = {("flow", "symbolic"): flow_only, ("anti", "symbolic"): anti_only,
           ("output", "symbolic"): output_only, ("flow", "fixed"): flow_fixed,
           ("anti", "fixed"): anti_fixed, ("output", "fixed"): output_fixed}
SIZES = ["symbolic", "fixed"]
# what the source and the sink do to the shared element, per kind
ROLES = {"flow": (True, False), "anti": (False, True), "output": (True, True)}
HAND_WRITTEN = {"flow": "{ S0[i] -> [-i] }", "anti": "{ S0[i] -> [-i] }",
                "output": "{ S0[i, j] -> [-i, j] }"}

INSTANCE = re.compile(r"S0\[([^\]]*)\]")
ELEMENT = re.compile(r"\b(A|B)\[([-\d, ]+)\]")


def _instance(text: str) -> tuple[int, ...]:
    return tuple(int(part.split("=")[1]) for part in text.split(","))


def _assert_names_shared_element(kind: str, message: str) -> None:
    instances = INSTANCE.findall(message)
    elements = ELEMENT.findall(message)
    assert len(instances) >= 2 and elements, f"no instances and element in: {message}"
    source, sink = _instance(instances[0]), _instance(instances[1])
    array, index = elements[0][0], tuple(int(x) for x in elements[0][1].split(","))
    touched = {}
    for who, instance in (("source", source), ("sink", sink)):
        touched[who] = {write for name, at, write in ACCESSES[kind]
                        if name == array and at(*instance) == index}
    source_writes, sink_writes = ROLES[kind]
    assert source_writes in touched["source"], (
        f"{kind}: the source {source} does not {'write' if source_writes else 'read'} "
        f"{array}{list(index)}: {message}")
    assert sink_writes in touched["sink"], (
        f"{kind}: the sink {sink} does not {'write' if sink_writes else 'read'} "
        f"{array}{list(index)}: {message}")


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("kind", ["flow", "anti", "output"])
def test_refused_primitive_names_the_shared_element(kind, sizes):
    s = po.create_schedule(KERNELS[kind, sizes])
    with pytest.raises(po.IllegalScheduleError) as refused:
        s["S0"].reverse("i")
    assert refused.value.violation.dependence.kind == kind
    _assert_names_shared_element(kind, str(refused.value))


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("kind", ["flow", "anti", "output"])
def test_check_report_names_the_shared_element(kind, sizes):
    report = po.check(po.create_schedule(KERNELS[kind, sizes]), schedule=HAND_WRITTEN[kind])
    assert not report.legal
    violations = [v for v in report.violations if v.dependence.kind == kind]
    assert violations and {v.dependence.kind for v in report.violations} == {kind}
    _assert_names_shared_element(kind, violations[0].explain())

"""Loop-nest features: extents, annotations, strides and footprints of known schedules."""

import math

import pytest

import polyopt as po
from polyopt.errors import InvalidArgumentError
from polyopt.tune import features as F


def _transpose():
    A = po.placeholder((64, 32), name="A")
    B = po.compute((32, 64), lambda i, j: A[j, i] * 2.0, name="B")
    return A, B


def _access(vector, number):
    base = F.ACCESSES + F.PER_ACCESS * number
    return vector[base:base + F.PER_ACCESS]


def test_extents_and_strides_of_the_default_schedule():
    A, B = _transpose()
    vector = F.nest_features(po.lower(po.create_schedule(B), [A, B]))
    assert vector[0] == pytest.approx(math.log2(1 + 32 * 64))  # iterations
    assert vector[F.GLOBAL] == pytest.approx(math.log2(1 + 64))  # innermost loop: j
    assert vector[F.GLOBAL + 4] == pytest.approx(math.log2(1 + 32))  # then i
    write, read = _access(vector, 0), _access(vector, 1)
    assert write[2] == 1.0 and write[0] == pytest.approx(1.0)  # B[i, j]: stride 1
    assert read[2] == 0.0 and read[0] == pytest.approx(math.log2(1 + 32))  # A[j, i]: 32
    # bytes touched by the innermost loop: 64 floats of each array
    assert write[4] == pytest.approx(math.log2(1 + 64 * 4))
    assert read[4] == pytest.approx(math.log2(1 + 64 * 4))


def test_annotations_and_tiles_show():
    A, B = _transpose()
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=8)
    jo, ji = s[B].split(B.op.axis[1], factor=16)
    s[B].reorder(io, jo, ii, ji)
    s[B].vectorize(ji)
    s[B].parallel(io)
    vector = F.nest_features(po.lower(s, [A, B]))
    assert vector[4:7].tolist() == [1.0, 1.0, 0.0]  # parallel, vectorized, unrolled loops
    assert vector[7] == pytest.approx(math.log2(1 + 4))  # the parallel loop: 32 / 8
    assert vector[8] == pytest.approx(math.log2(1 + 16))  # the vector loop
    innermost = vector[F.GLOBAL:F.GLOBAL + 4].tolist()
    assert innermost == [pytest.approx(math.log2(17)), 0.0, 1.0, 0.0]


def test_every_vector_has_the_same_length_and_bad_input_is_typed():
    A, B = _transpose()
    C = po.compute((32,), lambda i: B[i, 0] + 1.0, name="C")
    assert len(F.nest_features(po.lower(po.create_schedule(C), [A, C]))) == F.LENGTH
    with pytest.raises(InvalidArgumentError):
        F.nest_features("not lowered")

"""po.build pauses the cyclic garbage collector while it builds, and only then."""

import gc

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import InvalidArgumentError


def _schedule():
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2.0, name="B")
    return po.create_schedule(B), [A, B]


@pytest.fixture
def collector_state():
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def test_build_leaves_the_collector_on(collector_state):
    gc.enable()
    s, args = _schedule()
    f = po.build(s, args, num_threads=1)
    assert gc.isenabled()
    b = np.zeros(8, "float32")
    f(np.arange(8, dtype="float32"), b)
    np.testing.assert_array_equal(b, np.arange(8) * 2)


def test_build_leaves_a_disabled_collector_off(collector_state):
    gc.disable()
    s, args = _schedule()
    po.build(s, args)
    assert not gc.isenabled()


def test_build_turns_the_collector_back_on_after_an_error(collector_state):
    gc.enable()
    s, args = _schedule()
    with pytest.raises(InvalidArgumentError, match="unknown option"):
        po.build(s, args, unrolled=True)
    assert gc.isenabled()

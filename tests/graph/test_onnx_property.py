"""Property test of the graph layer: random ONNX graphs against onnxruntime.

Random graphs (:mod:`testlib.onnx_property`) over the operators polyopt.graph supports
and every dtype (float32, float64, int8, uint8, int32, int64), with attributes,
broadcasting, branches and several outputs, each run in a worker process under a time
limit: polyopt's outputs must equal onnxruntime's (``intra_op_num_threads=1``; exactly
for integers), or polyopt must refuse with a ``PolyoptError`` (a dtype it does not
compute: ``UnsupportedDTypeError``).  Never an ``InternalError``, another exception, a
crash or a hang.  The default run takes a few dozen cases; ``-m slow`` takes 600.
``POLYOPT_PROPERTY_EXAMPLES=N`` runs N cases from a random seed.
"""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from testlib.onnx_property import OK, CaseRunner, graph_specs  # noqa: E402

_EXAMPLES = int(os.environ.get("POLYOPT_PROPERTY_EXAMPLES", "0"))
TIMEOUT = 240.0  # seconds per case (a loaded machine compiles slowly)
OUTCOMES: list[str] = []


def _settings(examples: int):
    """The same ``examples`` every run (no shrinking: a case takes seconds), or as many
    as POLYOPT_PROPERTY_EXAMPLES asks from a random seed."""
    return settings(max_examples=_EXAMPLES or examples, deadline=None,
                    derandomize=not _EXAMPLES, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def runner():
    worker = CaseRunner()
    yield worker
    worker.close()


def _check(runner, spec):
    outcome, detail = runner.run(spec, TIMEOUT)
    OUTCOMES.append(outcome)
    assert outcome in OK, (
        f"{outcome}: {detail}\nreproduce: PYTHONPATH=.:tests python -c \"from "
        f"testlib.onnx_property import judge; import json; print(judge(json.loads("
        f"'{json.dumps(spec)}')))\"")


def test_random_graphs_equal_onnxruntime(runner):
    @_settings(30)
    @given(spec=graph_specs(max_nodes=4))
    def case(spec):
        _check(runner, spec)

    case()
    accepted = OUTCOMES.count("ok-accepted")
    assert accepted >= len(OUTCOMES) // 3, OUTCOMES  # most cases compare numbers


@pytest.mark.slow
def test_many_random_graphs_equal_onnxruntime(runner):
    @_settings(600)
    @given(spec=graph_specs(max_nodes=8))
    def case(spec):
        _check(runner, spec)

    case()

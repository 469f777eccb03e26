"""Per-operator time of one model: polyopt's fused groups beside onnxruntime's nodes.

Run: ``python benchmarks/profile_graph.py mobilenet_v2 [--threads 1] [--repeat 20]``
(``--cpu-time``: only the end-to-end latency of both, as process CPU time on one
thread, medians of alternating blocks: steadier than the clock on a loaded machine,
where the clock also counts the time the process waits for a core).
Prints one line per polyopt group in execution order: its time, the time of the
onnxruntime nodes that hold the same ONNX operators (matched by node name; onnxruntime
keeps a fused node's first name), their ratio and the group's output shape, then the
totals.  A diagnostic (no results file): use it to find where a model loses time.
"""

from __future__ import annotations

import collections
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from _env import restart_with_clean_environment  # noqa: E402

if __name__ == "__main__":
    restart_with_clean_environment(2)

import polyopt as po  # noqa: E402
from testlib.onnx_models import ort_session, random_inputs  # noqa: E402
import bench_graph  # noqa: E402


def ort_node_times(model, threads: int, feeds: dict, repeat: int) -> dict[str, float]:
    """Median ms per onnxruntime node name over ``repeat`` runs (its own profiler)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for _ in range(3):
        session.run(names, feeds)
    for _ in range(repeat):
        session.run(names, feeds)
    with open(session.end_profiling(), encoding="utf-8") as file:
        events = json.load(file)
    samples = collections.defaultdict(list)
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            samples[event["name"][:-len("_kernel_time")]].append(event["dur"] / 1e3)
    return {name: statistics.median(times[-repeat:]) for name, times in samples.items()}


def cpu_time_latency(compiled, model, feeds: dict, blocks: int = 12, runs: int = 5):
    """Median process CPU time per run (ms) of polyopt and onnxruntime on one thread,
    in alternating blocks of ``runs`` runs."""
    session = ort_session(model, 1)
    names = [o.name for o in session.get_outputs()]
    calls = [lambda: compiled.run(feeds), lambda: session.run(names, feeds)]
    samples: list[list[float]] = [[], []]
    for call in calls:
        call()
    for _ in range(blocks):
        for k, call in enumerate(calls):
            for _ in range(runs):
                start = time.process_time()
                call()
                samples[k].append(time.process_time() - start)
    return [1e3 * statistics.median(s) for s in samples]


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a model of bench_graph.py (mobilenet_v2, resnet18, ...)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--cpu-time", action="store_true",
                        help="end-to-end CPU time of both on one thread, no profile")
    opts = parser.parse_args()
    model = bench_graph.models(False)[opts.model]
    feeds = random_inputs(model)
    compiled = po.graph.compile(po.graph.from_onnx(model),
                                num_threads=1 if opts.cpu_time else opts.threads)
    if opts.cpu_time:
        ours, theirs = cpu_time_latency(compiled, model, feeds)
        print(f"{opts.model}, 1 thread, CPU time: polyopt {ours:.3f} ms, onnxruntime "
              f"{theirs:.3f} ms, {theirs / ours:.3f}x (load {os.getloadavg()[0]:.1f})")
        return 0
    ours = {r["group"]: r for r in compiled.profile(feeds, repeat=opts.repeat)}
    theirs = ort_node_times(model, opts.threads, feeds, opts.repeat)
    total_ours = total_theirs = 0.0
    print(f"{'group':<22}{'ours':>8}{'ort':>8}{'ratio':>7}  {'template':<18}shape  ops")
    for step in compiled.steps:
        row = ours[step.group.name]
        keys = [k for n in step.group.nodes
                for k in (n.name, *n.outputs, *(f"{o}_nchwc" for o in n.outputs))]
        ort_ms = sum(theirs.pop(k, 0.0) for k in keys)
        total_ours += row["ms"]
        total_theirs += ort_ms
        ratio = f"{ort_ms / row['ms']:.2f}" if row["ms"] > 0.005 and ort_ms else ""
        shape = compiled.graph.tensors[step.group.output].shape \
            if step.group.output in compiled.graph.tensors else ""
        print(f"{step.group.name:<22}{row['ms']:8.3f}{ort_ms:8.3f}{ratio:>7}  "
              f"{row['template']:<18}{shape}  {row['ops']}")
    rest = sum(theirs.values())
    print(f"{'total':<22}{total_ours:8.3f}{total_theirs + rest:8.3f}   "
          f"(onnxruntime nodes not matched: {rest:.3f} ms; load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Autotuning (issue 30): tuned kernels against the untuned ones, sample efficiency, resume.

Run: ``python benchmarks/bench_tune.py`` (the targets' setting: PolyBench's 30 kernels,
200 trials each, 1,000 random trials for the sample-efficiency reference) or
``--tiny`` (three PolyBench kernels at an eighth of their sizes, a few trials: a check
that the pipeline works on a loaded machine, not a measurement of the targets).  Writes
``benchmarks/results/tune.md`` and ``tune.json`` (this machine's section).

Rows:

* PolyBench: each kernel through ``po.tune.auto_task`` (the automatic scheduler's
  choices), tuned by ``XGBTuner``; speed = the untuned schedule's time (``auto_schedule``
  alone, point 0, measured by the same runner) / the best trial's.
* Templates: ``po.tune.matmul_task`` and ``po.tune.conv2d_task`` (register tiles,
  packing, channel tiles), tuned the same way; against the templates' defaults.
* Sample efficiency: on a split/knob matmul template, the best time 1,000 random trials
  find (``--tiny``: all points of its 60), the trials random search and the model-based
  tuner need to come within 5% of it.
* Resume: a run stopped half-way and started again measures no point twice.
* Models: ResNet-18, MobileNetV2 and a BERT layer (``tests/testlib/onnx_models.py``)
  tuned by ``po.graph.tune(model, budget=...)`` on 1 and 2 threads, then built with
  ``po.graph.compile(model, db=...)``; its outputs compared with onnxruntime's and its
  latency timed against the untuned model and onnxruntime (alternating medians); the
  tuning's wall time (the whole-ResNet-18 target: the 2-thread row).
* Dask: the same tuning (a split/knob matmul template, RandomTuner, the same seed) with
  a ``LocalRunner`` in this process and with a ``DaskRunner`` on a real ``LocalCluster``
  of 2 worker processes (both measuring: resource ``measure=1`` each, one thread each);
  trials per minute of each (cluster start-up not counted: the workers import polyopt
  and build one kernel first, as this process did before its own timing) and their ratio.

``--tiny`` uses reduced models (ResNet-18 width 8 at 32x32, MobileNetV2 0.35 at 32x32,
a BERT layer of hidden 64, sequence 16), 1 thread and a budget of 8 trials per model, and
16 trials per Dask runner; its verdicts are NOT RUN with what the tiny run showed.

Targets (issue 30): PolyBench geomean >= 1.25x over auto_schedule alone; matmul and the
five ResNet convs >= 1.15x the best of onnxruntime and PyTorch; ResNet-18, MobileNetV2
and a BERT layer >= 1.15x onnxruntime (``po.graph.tune``); 200 trials within 5% of
1,000 random ones, the model needing at most half the trials of random search; whole
ResNet-18 tuning within 60 min on 2 cores; resume repeats no trial; a 2-worker Dask
cluster >= 1.7x one process.  Rows this script does not measure say NOT RUN.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from _env import alternating_medians, cpu_model, write_results  # noqa: E402
from bench_polybench import KERNELS, inputs, macros  # noqa: E402

import numpy as np  # noqa: E402

import polyopt as po  # noqa: E402

TINY_KERNELS = ("gemm", "atax", "jacobi-2d")


def tuned(task, trials: int, runner, tuner_class=po.tune.XGBTuner) -> dict:
    db = po.tune.RecordsDB(tempfile.mkdtemp())
    summary = tuner_class(task, batch_size=8).tune(trials, runner, db=db)
    return {"task": task.name, "trials": summary.trials, "refused": summary.refused,
            "failed": summary.failed, "untuned": summary.baseline_cost,
            "best": summary.best_cost, "speed": summary.speedup}


def polybench(names, scale: int, trials: int, runner) -> list[dict]:
    rows = []
    for path in sorted(KERNELS.glob("*.c")):
        if names and path.stem not in names:
            continue
        table = macros(path.read_text())
        defines = {k: max(v // scale, 8) for k, v in table.items()}
        for key in ("TSTEPS", "TMAX"):
            if key in defines and scale > 1:
                defines[key] = 10
        kernel = po.from_c(path.read_text(), defines=defines or None)
        sizes = {p.name: defines[p.name.upper()] for p in kernel.c_params if p.kind == "size"}
        try:
            task = po.tune.auto_task(kernel, name=path.stem, sizes=sizes, inputs=lambda seed, n=(
                path.stem, kernel, sizes): inputs(*n))  # (PolyBench's well-conditioned inputs)
            row = tuned(task, trials, runner)
        except po.PolyoptError as err:
            row = {"task": path.stem, "error": f"{type(err).__name__}: {err}"[:200]}
        print(row, flush=True)
        rows.append(row)
    return rows


def template_matmul(cfg, n=64):
    A = po.placeholder((n, n), name="A")
    B = po.placeholder((n, n), name="B")
    k = po.reduce_axis((0, n), name="k")
    C = po.compute((n, n), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = po.create_schedule(C)
    i, j = s[C].op.axis
    cfg.define_split("tile_i", n, num_outputs=2, policy="power2", max_factor=16)
    cfg.define_split("tile_j", n, num_outputs=2, policy="power2", max_factor=32)
    cfg.define_knob("vectorize", [False, True])
    io, ii = cfg["tile_i"].apply(s, C, i)
    jo, ji = cfg["tile_j"].apply(s, C, j)
    s[C].reorder(io, jo, k, ii, ji)
    if cfg["vectorize"].val:
        s[C].vectorize(ji)
    return s, [A, B, C]


def trials_to_reach(costs: list[float], goal: float) -> int | None:
    best = math.inf
    for number, cost in enumerate(costs, 1):
        best = min(best, cost)
        if best <= goal * 1.05:
            return number
    return None


def sample_efficiency(reference_trials: int, budget: int, runner) -> dict:
    task = po.tune.template_task("matmul_template", template_matmul, (64,))
    found = {}
    for label, tuner_class, trials in (("random", po.tune.RandomTuner, reference_trials),
                                       ("xgb", po.tune.XGBTuner, budget)):
        costs = []
        tuner_class(task, batch_size=8, seed=1).tune(
            trials, runner, callbacks=[lambda t, i, results: costs.extend(
                r.cost for r in results)])
        found[label] = costs
    goal = min(found["random"])
    return {"space": len(task.space), "reference_trials": len(found["random"]),
            "reference_best": goal, "budget": budget,
            "budget_best": min(found["xgb"]) if found["xgb"] else math.inf,
            "random_trials_to_5pct": trials_to_reach(found["random"], goal),
            "xgb_trials_to_5pct": trials_to_reach(found["xgb"], goal)}


def resume_check(runner) -> dict:
    task = po.tune.template_task("matmul_template", template_matmul, (32,))
    db = po.tune.RecordsDB(tempfile.mkdtemp())
    po.tune.RandomTuner(task, batch_size=4, seed=1).tune(6, runner, db=db)
    po.tune.RandomTuner(task, batch_size=4, seed=2).tune(12, runner, db=db)
    indices = [r["config"]["index"] for r in db.records(task.signature, task.target_key)]
    return {"records": len(indices), "distinct": len(set(indices))}


def model_zoo(tiny: bool) -> dict:
    from testlib.onnx_models import bert_layer, mobilenet_v2, resnet18
    if tiny:
        return {"resnet18": resnet18(width=8, resolution=32, classes=10),
                "mobilenet_v2": mobilenet_v2(width=0.35, resolution=32, classes=10),
                "bert_layer": bert_layer(hidden=64, heads=2, seq=16, ffn=128)}
    return {"resnet18": resnet18(), "mobilenet_v2": mobilenet_v2(), "bert_layer": bert_layer()}


def model_rows(tiny: bool, budget: int, threads_list, repeat: int) -> list[dict]:
    """Per model and thread count: po.graph.tune, then po.graph.compile(db=) against the
    untuned model and onnxruntime (same inputs; outputs compared)."""
    from testlib.onnx_models import ort_session, random_inputs
    rows = []
    for name, model in model_zoo(tiny).items():
        feeds = random_inputs(model)
        for threads in threads_list:
            row = {"model": name, "threads": threads, "budget": budget}
            try:
                g = po.graph.from_onnx(model)
                db = po.tune.RecordsDB(tempfile.mkdtemp())
                runner = po.tune.LocalRunner(threads=threads, repeat=3 if tiny else 5,
                                             timeout=120)
                start = time.perf_counter()
                tuned_report = po.graph.tune(g, budget=budget, db=db, runner=runner,
                                             num_threads=threads, tuner="xgb")
                row["tune_minutes"] = (time.perf_counter() - start) / 60
                row["kernels"] = len(tuned_report.rows)
                row["trials"] = sum(r["trials"] for r in tuned_report.rows)
                tuned = po.graph.compile(g, num_threads=threads, db=db, cache=False)
                untuned = po.graph.compile(g, num_threads=threads)
                row["tuned_steps"] = sum(1 for s in tuned.steps
                                         if str(s.template or "").endswith("+tuned"))
                session = ort_session(model, threads)
                names = [o.name for o in session.get_outputs()]
                expected = dict(zip(names, session.run(names, feeds)))
                ours = tuned.run(feeds)
                row["max_rel_error"] = max(
                    float(np.max(np.abs(ours[k] - v)) / max(1.0, float(np.max(np.abs(v)))))
                    for k, v in expected.items())
                times = alternating_medians([lambda: tuned.run(feeds),
                                             lambda: untuned.run(feeds),
                                             lambda: session.run(names, feeds)], repeat)
                row.update(tuned_ms=times[0] * 1e3, untuned_ms=times[1] * 1e3,
                           onnxruntime_ms=times[2] * 1e3, vs_onnxruntime=times[2] / times[0],
                           vs_untuned=times[1] / times[0])
            except po.PolyoptError as err:
                row["error"] = f"{type(err).__name__}: {err}"[:200]
            print(row, flush=True)
            rows.append(row)
    return rows


def _warm_worker() -> None:
    """(On each worker, before timing: what this process did before its own timing) polyopt
    imported and one kernel built."""
    import polyopt as po_here
    A = po_here.placeholder((8,), name="A")
    B = po_here.compute((8,), lambda i: A[i] + 1.0, name="B")
    po_here.build(po_here.create_schedule(B), [A, B])


def dask_speedup(trials: int, repeat: int) -> dict:
    """Trials per minute of the same tuning with a LocalRunner and with a DaskRunner on a
    LocalCluster of 2 measuring worker processes."""
    try:
        import distributed
        from polyopt.tune.dask_runner import MEASURE_RESOURCE, DaskRunner
    except ImportError as err:
        return {"error": f"dask is not installed ({err})"}
    row = {"trials": trials}

    def timed(runner) -> float:
        task = po.tune.template_task("matmul_template", template_matmul, (64,))
        tuner = po.tune.RandomTuner(task, batch_size=8, seed=5)
        start = time.perf_counter()
        summary = tuner.tune(trials, runner, db=po.tune.RecordsDB(tempfile.mkdtemp()))
        seconds = time.perf_counter() - start
        return summary.trials * 60 / seconds

    row["local_per_minute"] = timed(po.tune.LocalRunner(threads=1, repeat=repeat, timeout=60))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None,
                                  resources={MEASURE_RESOURCE: 1}) as cluster, \
            distributed.Client(cluster) as client:
        client.wait_for_workers(2, timeout=180)
        client.run(_warm_worker)  # (start-up: not counted)
        with DaskRunner(client, threads=1, repeat=repeat, timeout=60) as runner:
            row["workers"] = len(runner.measuring_workers())
            row["dask_per_minute"] = timed(runner)
    row["speedup"] = row["dask_per_minute"] / row["local_per_minute"]
    print(row, flush=True)
    return row


def geomean(values) -> float:
    values = [v for v in values if v and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


def verdict(ok: bool | None) -> str:
    return "NOT RUN" if ok is None else ("PASS" if ok else "FAIL")


def tiny_note(full: bool, met: bool | None) -> str:
    if full or met is None:
        return ""
    return f" (tiny: {'met' if met else 'not met'})"


def model_lines(models: list[dict]) -> list[str]:
    lines = ["", "| model | threads | kernels | trials | tuning | tuned steps | tuned | untuned "
             "| onnxruntime | vs onnxruntime | vs untuned | max rel. error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in models:
        if "error" in r and "tuned_ms" not in r:
            lines.append(f"| {r['model']} | {r['threads']} | - | - | - | - | - | - | - | - "
                         f"| - | failed: {r['error']} |")
            continue
        lines.append(f"| {r['model']} | {r['threads']} | {r['kernels']} | {r['trials']} | "
                     f"{r['tune_minutes']:.1f} min | {r['tuned_steps']} | "
                     f"{r['tuned_ms']:.3f} ms | {r['untuned_ms']:.3f} ms | "
                     f"{r['onnxruntime_ms']:.3f} ms | {r['vs_onnxruntime']:.2f}x | "
                     f"{r['vs_untuned']:.2f}x | {r['max_rel_error']:.1e} |")
    return lines


def model_targets(models: list[dict], full: bool) -> tuple[str, str]:
    measured = [r for r in models if "vs_onnxruntime" in r]
    names = {"resnet18", "mobilenet_v2", "bert_layer"}
    complete = {(r["model"], r["threads"]) for r in measured} >= {
        (n, t) for n in names for t in (1, 2)}
    fast = bool(measured) and all(r["vs_onnxruntime"] >= 1.15 for r in measured) and \
        all(r["max_rel_error"] < 1e-3 for r in measured)
    worst = min((r["vs_onnxruntime"] for r in measured), default=math.nan)
    speed = (f"worst {worst:.2f}x over {len(measured)} row(s): "
             f"{verdict(fast if full and complete else None)}"
             f"{tiny_note(full and complete, fast if measured else None)}")
    resnet = [r for r in measured if r["model"] == "resnet18" and r["threads"] == 2]
    within = bool(resnet) and resnet[0]["tune_minutes"] <= 60
    if resnet:
        minutes = f"{resnet[0]['tune_minutes']:.1f} min: {verdict(within if full else None)}"
    else:
        small = [r for r in measured if r["model"] == "resnet18"]
        minutes = (f"NOT RUN (tiny, 1 thread: {small[0]['tune_minutes']:.1f} min for a "
                   f"reduced model)" if small else "NOT RUN")
    return speed, minutes


def dask_target(dask: dict, full: bool) -> str:
    if "speedup" not in dask:
        return f"NOT RUN ({dask.get('error', 'not measured')})"
    met = dask["speedup"] >= 1.7
    return (f"{dask['speedup']:.2f}x ({dask['dask_per_minute']:.1f} vs "
            f"{dask['local_per_minute']:.1f} trials/min, {dask['trials']} trials each, "
            f"{dask['workers']} measuring workers): {verdict(met if full else None)}"
            f"{tiny_note(full, met)}")


def _trials(count) -> str:
    """``after 12 trials``, or that a search never came within 5% of the best."""
    return "in none of its trials" if count is None else f"after {count} trials"


def report(args, rows, templates, efficiency, resume, load, models, dask) -> str:
    poly = geomean(r.get("speed") for r in rows)
    full = not args.tiny
    setting = ("TINY setting (machine loaded by other jobs): three PolyBench kernels at 1/8 "
               "of their sizes, a few trials, reduced models on 1 thread (budget 8), 16 "
               "trials per Dask runner; the targets are NOT measured by this run"
               if args.tiny else "the targets setting")
    command = "python benchmarks/bench_tune.py" + (" --tiny" if args.tiny else "")
    lines = [
        "# Autotuning (issue 30)", "",
        f"{datetime.date.today()} · {cpu_model()} · load {load[0]:.1f} -> {load[1]:.1f} · "
        f"{setting} · `{command}`", "",
        "| kernel | trials | refused | failed | untuned | tuned | speed |",
        "|---|---|---|---|---|---|---|"]
    for row in rows + templates:
        if "error" in row:
            lines.append(f"| {row['task']} | - | - | - | - | - | refused: {row['error']} |")
            continue
        lines.append(f"| {row['task']} | {row['trials']} | {row['refused']} | {row['failed']} "
                     f"| {row['untuned'] * 1e3:.3f} ms | {row['best'] * 1e3:.3f} ms "
                     f"| {row['speed']:.2f}x |")
    efficient = efficiency["xgb_trials_to_5pct"] is not None and (
        efficiency["random_trials_to_5pct"] is None or
        efficiency["xgb_trials_to_5pct"] * 2 <= efficiency["random_trials_to_5pct"])
    lines += [
        "", f"Sample efficiency (split/knob matmul 64, {efficiency['space']} points): random "
        f"search's best in {efficiency['reference_trials']} trials "
        f"{efficiency['reference_best'] * 1e6:.1f} us, reached within 5% by random "
        f"search {_trials(efficiency['random_trials_to_5pct'])} and by the model-based "
        f"tuner {_trials(efficiency['xgb_trials_to_5pct'])} (budget {efficiency['budget']}).",
        f"Resume: {resume['records']} records, {resume['distinct']} distinct points."]
    lines += model_lines(models)
    speed, minutes = model_targets(models, full)
    lines += [
        "", "Models: `po.graph.tune(model, budget=...)` (XGBTuner, records in a fresh "
        "database), then `po.graph.compile(model, db=...)`; tuned steps: kernels built with "
        "a record (`+tuned`); latencies: alternating medians; max rel. error: against "
        "onnxruntime's outputs.", ""]
    lines += [
        "| target | result |", "|---|---|",
        f"| PolyBench (all 30) geomean >= 1.25x over auto_schedule | "
        f"{poly:.2f}x over {len(rows)} kernel(s): "
        f"{verdict((poly >= 1.25) if full and len(rows) >= 30 else None)} |",
        "| matmul and five convs >= 1.15x best of onnxruntime/PyTorch | NOT RUN |",
        f"| ResNet-18, MobileNetV2, BERT layer >= 1.15x onnxruntime (1 and 2 threads) | "
        f"{speed} |",
        f"| 200 trials within 5% of 1,000 random; model <= half the trials of random | "
        f"{verdict(efficient if full else None)}"
        f"{'' if full else ' (tiny: ' + ('met' if efficient else 'not met') + ')'} |",
        f"| whole ResNet-18 tuning <= 60 min on 2 cores | {minutes} |",
        f"| a resumed run repeats no trial | "
        f"{verdict(resume['records'] == resume['distinct'])} |",
        f"| Dask LocalCluster of 2 workers >= 1.7x one process (trials per minute) | "
        f"{dask_target(dask, full)} |",
        "| zero wrong numbers: every winner checked | PASS (by construction: a point whose "
        "outputs differ from the untuned schedule's has status `wrong` and never wins) |"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a few kernels and trials")
    parser.add_argument("--only", help="comma-separated PolyBench kernel names")
    parser.add_argument("--trials", type=int, help="trials per kernel (200; tiny: 8)")
    args = parser.parse_args()
    trials = args.trials or (8 if args.tiny else 200)
    names = set(args.only.split(",")) if args.only else (set(TINY_KERNELS) if args.tiny
                                                         else set())
    runner = po.tune.LocalRunner(repeat=3 if args.tiny else 5, timeout=60)
    load_before = os.getloadavg()[0]
    rows = polybench(names, 8 if args.tiny else 1, trials, runner)
    sizes = (128, (1, 16, 28, 32)) if args.tiny else (1024, (1, 64, 56, 64))
    templates = [tuned(po.tune.matmul_task(sizes[0], sizes[0], sizes[0]), trials, runner),
                 tuned(po.tune.conv2d_task(*sizes[1]), trials, runner)]
    print(templates, flush=True)
    efficiency = sample_efficiency(60 if args.tiny else 1000, 24 if args.tiny else 200,
                                   runner)
    print(efficiency, flush=True)
    resume = resume_check(runner)
    models = model_rows(args.tiny, 8 if args.tiny else 200, (1,) if args.tiny else (1, 2),
                        3 if args.tiny else 10)
    dask = dask_speedup(16 if args.tiny else 96, 3 if args.tiny else 5)
    text = report(args, rows, templates, efficiency, resume,
                  (load_before, os.getloadavg()[0]), models, dask)
    print(text)
    write_results("tune", text, {"polybench": rows, "templates": templates,
                                 "efficiency": efficiency, "resume": resume,
                                 "models": models, "dask": dask, "tiny": args.tiny})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The property tests of issues 12 and 32: generated cases, each judged against a reference
computed without polyopt, each run in a worker process under a time limit.

- :mod:`property.plan`: the default (fast, fixed seeds) and slow (10,000+) sets;
- :mod:`property.pool` runs cases on persistent workers (:mod:`property.worker`),
  restarting a worker that died or hung and charging the case in flight;
- :mod:`property.script`: a case is a growing Python script, printable as a
  standalone reproducer that ends with ``OUTCOME: ...``;
- :mod:`property.harness`: the checks (pasted into every reproducer);
- families: :mod:`property.gen_te` (tensor expressions with NumPy-scalar twins),
  :mod:`property.gen_kernel` (in-place kernels with plain-Python twins),
  :mod:`property.gen_c` (C kernels with local scalars, twinned by gcc; scheduled by
  ``po.auto_schedule``, as are tensor expressions in the ``te-auto`` family),
  :mod:`property.steps` (random primitives), :mod:`property.oracle` (hand-written
  schedules judged by running instances in the new order), :mod:`property.bad_inputs`;
- the surfaces of issue 32: :mod:`property.gen_onnx` (random ONNX graphs against
  onnxruntime, judged by :mod:`property.onnx_check`), :mod:`property.gen_library`
  (operator libraries built, interrupted, built concurrently and tampered with, judged
  by :mod:`property.library_check`) and :mod:`property.gen_cli` (bad inputs of every
  ``polyopt`` command, run as a subprocess).

Run ``pytest tests/property`` (fast subset), ``pytest -m slow tests/property`` or
``python benchmarks/run_property.py`` (the slow set, results in
``benchmarks/results/property.md``); one case by hand:
``PYTHONPATH=.:tests python -m property.worker --family te-steps --seed 12``.
"""

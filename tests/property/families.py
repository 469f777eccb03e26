"""The case families: each one builds a case from ``random.Random`` into a
:class:`~property.script.Script` and returns the case's outcome (or raises).

- ``te``: a random tensor-expression program, default schedule against its twin;
- ``te-steps``: the same with 1-6 random primitives (:mod:`property.steps`);
- ``kernel-steps``: a random in-place kernel with 1-6 random primitives;
- ``te-auto``: the same scheduled by ``po.auto_schedule`` and then 0-2 random
  primitives;
- ``c-steps``: a random C kernel with local scalars (:mod:`property.gen_c`) read by
  ``po.from_c``, with 1-5 random primitives, against the same C compiled by gcc;
- ``c-auto``: the same scheduled by ``po.auto_schedule`` and then 0-3 random
  primitives;
- ``c-types``: a random C kernel mixing C's types, casts, math functions, guards and
  integer ``/`` and ``%`` of negative values (:mod:`property.gen_c_types`): polyopt's
  builds (default and automatic schedule) and ``polyopt opt --emit c`` against gcc;
- ``te-tune`` / ``c-tune``: the same scheduled by ``po.auto_schedule`` with the options of
  a random point of the autotuner's space (``po.tune.auto_space``), then 0-2 random
  primitives;
- ``handwritten``: a hand-written schedule judged by the instance oracle
  (:mod:`property.oracle`);
- ``bad-input``: a bad argument to a public entry point (:mod:`property.bad_inputs`);
- ``onnx``: a random ONNX graph over the supported operators and every dtype, against
  onnxruntime (:mod:`property.gen_onnx`, :mod:`property.onnx_check`);
- ``library``: a random operator library built, interrupted, built twice at once and
  tampered with, loaded after every step (:mod:`property.gen_library`,
  :mod:`property.library_check`);
- ``cli``: bad inputs of every ``polyopt`` command, run as a subprocess
  (:mod:`property.gen_cli`).
"""

from __future__ import annotations

from .gen_c import C_RUNNER, make_c_program
from .gen_c_types import C_TYPES_RUNNER, make_c_types_program
from .gen_kernel import KERNEL_RUNNER, make_kernel_program
from .gen_te import TE_RUNNER, make_te_program
from .steps import next_step

IMPORTS = "import numpy as np\nimport polyopt as po\n"


def te_case(rng, script, steps=0, start="s = fresh()"):
    program = make_te_program(rng)
    script.run(IMPORTS + program.reference, top=True)
    script.run(program.source + TE_RUNNER)
    _steps(rng, script, steps, start)
    script.run("OUTCOME = finish(s)")
    return script.namespace["OUTCOME"]


def kernel_case(rng, script, steps):
    program = make_kernel_program(rng)
    script.run(IMPORTS, top=True)
    script.run(program.source + KERNEL_RUNNER)
    _steps(rng, script, steps)
    script.run("OUTCOME = finish(s)")
    return script.namespace["OUTCOME"]


def c_case(rng, script, steps, start):
    program = make_c_program(rng)
    script.run(IMPORTS, top=True)
    script.run(f"SOURCE = {program.source!r}\nSIZES = {list(program.sizes)!r}\n"
               f"REDUCTIONS = {program.reductions}\n" + C_RUNNER)
    _steps(rng, script, steps, start)
    script.run("OUTCOME = finish(s)")
    return script.namespace["OUTCOME"]


def _steps(rng, script, count, start="s = fresh()"):
    script.run(start)
    for _ in range(count):
        text = next_step(script.namespace["s"], rng)
        if text is not None:
            unchecked = text[:-1] + ("check=False)" if text.endswith("()") else ", check=False)")
            script.run(f"attempt(s, lambda: {text},\n        lambda s: {unchecked})")


def family_te(rng, script):
    return te_case(rng, script, steps=0)


def family_te_steps(rng, script):
    return te_case(rng, script, steps=rng.randint(1, 6))


def family_te_auto(rng, script):
    return te_case(rng, script, rng.choice([0, 0, 1, 2]), "s = po.auto_schedule(fresh())")


def family_kernel_steps(rng, script):
    return kernel_case(rng, script, steps=rng.randint(1, 6))


def family_c_auto(rng, script):
    return c_case(rng, script, rng.choice([0, 0, 1, 2, 3]), "s = po.auto_schedule(kernel)")


def _tuning_point(rng, subject: str) -> str:
    """Schedule ``subject`` as a random point of the autotuner's space does."""
    return (f"space = po.tune.auto_space(po.TargetInfo.host())\n"
            f"s = po.auto_schedule({subject}, **po.tune.auto_options("
            f"space.get({rng.randrange(1 << 40)} % len(space))))")


def family_te_tune(rng, script):
    return te_case(rng, script, rng.choice([0, 0, 1, 2]), _tuning_point(rng, "fresh()"))


def family_c_tune(rng, script):
    return c_case(rng, script, rng.choice([0, 0, 1, 2]), _tuning_point(rng, "kernel"))


def family_c_steps(rng, script):
    return c_case(rng, script, rng.randint(1, 5), "s = fresh()")


def family_c_types(rng, script):
    program = make_c_types_program(rng)
    script.run(IMPORTS, top=True)
    script.run(f"SOURCE = {program.source!r}\nSIZES = {list(program.sizes)!r}\n"
               f"REDUCTIONS = {program.reductions}\n"
               "kernel = po.from_c(SOURCE, 'kern')\n" + C_TYPES_RUNNER)
    script.run("OUTCOME = check_c_types()")
    return script.namespace["OUTCOME"]


def family_selftest_signal(rng, script):
    """A case that kills its worker (tests of the runner only)."""
    script.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")


def family_selftest_hang(rng, script):
    """A case that never ends (tests of the runner only)."""
    script.run("import time\ntime.sleep(3600)")


def family_selftest_spin(rng, script):
    """A case that never ends and keeps a core busy (tests of the runner only)."""
    script.run("while True:\n    pass")


def families():
    """Family name -> function(rng, script) -> outcome text."""
    from .bad_inputs import family_bad_input
    from .gen_cli import family_cli
    from .gen_library import family_library
    from .gen_onnx import family_onnx
    from .oracle import family_handwritten
    return {"te": family_te, "te-steps": family_te_steps, "te-auto": family_te_auto,
            "kernel-steps": family_kernel_steps, "c-steps": family_c_steps,
            "c-auto": family_c_auto, "c-types": family_c_types,
            "te-tune": family_te_tune, "c-tune": family_c_tune,
            "handwritten": family_handwritten,
            "bad-input": family_bad_input, "cli": family_cli,
            "onnx": family_onnx, "library": family_library, "selftest-signal": family_selftest_signal,
            "selftest-hang": family_selftest_hang, "selftest-spin": family_selftest_spin}

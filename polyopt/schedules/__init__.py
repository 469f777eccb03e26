"""Policy: what to do with a program, decided by calling the checked primitives of
``polyopt.transform`` and nothing else, so every schedule made here is legal by
construction.  The automatic scheduler (:mod:`.auto`, ``po.auto_schedule``), the schedule
templates (:mod:`.templates` and :mod:`.nn_templates`, ``po.templates``), the tensorized
int8/bf16 templates (:mod:`.tensorized`) and the accelerator's GEMM (:mod:`.accel_gemm`).
Each takes the machine it schedules for as a ``TargetInfo`` (``polyopt.machine``)."""

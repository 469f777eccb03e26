"""The accelerator's GEMM intrinsic (``gemm_intrin``) is declared with the other tensor
intrinsics, in :mod:`polyopt.tensorize.accel`; this import path is kept for code written
before it moved."""

from ...tensorize.accel import gemm_intrin  # noqa: F401

__all__ = ["gemm_intrin"]

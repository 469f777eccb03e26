"""The accelerator's configuration (``AccelConfig``, ``VTA``, ``TPU_LIKE``) lives in the
machine model, :mod:`polyopt.machine.accel`; this import path is kept for code written
before it moved.

>>> from polyopt.target.accel.config import VTA
>>> VTA is __import__("polyopt.machine.accel", fromlist=["VTA"]).VTA
True
"""

from ...machine.accel import *  # noqa: F401,F403
from ...machine.accel import __all__  # noqa: F401

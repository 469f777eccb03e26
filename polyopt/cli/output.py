"""The command line's output when its reader stops reading.

``polyopt demo | head -3``: once ``head`` has its lines it closes the pipe, and the
next write raises ``BrokenPipeError``.  That is no error of polyopt's nor of the
input; the command ends quietly, as Unix tools do on a closed pipe.

>>> reader_gone(1)
1
"""

from __future__ import annotations

import os
import sys


def reader_gone(status: int) -> int:
    """Point standard output (and standard error, if its reader is gone too) at
    /dev/null, so that what is still buffered for the closed pipe does not fail again
    when Python flushes it at exit, and return ``status``."""
    for stream, always in ((sys.stdout, True), (sys.stderr, False)):
        try:
            stream.flush()
            if not always:
                continue
        except (BrokenPipeError, ValueError):
            pass
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # (a stream without a file descriptor, e.g. under a test's capture)
    return status

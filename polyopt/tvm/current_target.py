"""The targets of the ``with tvm.target.Target(...):`` blocks running now (innermost
last): an autotvm template called directly looks its records up for the innermost.

>>> current_string()
'llvm'
"""

ENTERED: list = []  # target strings


def current_string() -> str:
    """The innermost entered target string ("llvm" outside every ``with`` block)."""
    return ENTERED[-1] if ENTERED else "llvm"

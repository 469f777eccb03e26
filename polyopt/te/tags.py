"""TVM's ``tag_scope``: the computes defined inside it get its tag (``C.op.tag``).

>>> import polyopt as te
>>> A = te.placeholder((4,), name="A")
>>> with te.tag_scope(tag="ewise"):
...     B = te.compute((4,), lambda i: A[i] + 1, name="B")
>>> B.op.tag
'ewise'
"""

import functools
import threading

from ..errors import InvalidArgumentError

_STATE = threading.local()


def current_tag() -> str:
    """The tag of the innermost active scope ("" outside any)."""
    return getattr(_STATE, "tag", None) or ""


class tag_scope:  # noqa: N801 (TVM's name)
    """``with te.tag_scope(tag="conv"):`` or ``@te.tag_scope(tag="conv")`` on a function
    that defines computes. Scopes do not nest (as in TVM)."""

    def __init__(self, tag: str):
        if not isinstance(tag, str):
            raise InvalidArgumentError(f"tag_scope needs a string tag, got {tag!r}")
        self.tag = tag

    def __enter__(self):
        if getattr(_STATE, "tag", None) is not None:
            raise InvalidArgumentError(
                f"tag_scope '{self.tag}' is opened inside tag_scope '{_STATE.tag}'; tag "
                "scopes do not nest: close the outer one first, or pass tag= to compute")
        _STATE.tag = self.tag
        return self

    def __exit__(self, *exc):
        _STATE.tag = None
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def tagged(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return tagged

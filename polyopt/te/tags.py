"""TVM's ``tag_scope``: the computes defined inside it get its tag (``C.op.tag``).

>>> import polyopt as te
>>> A = te.placeholder((4,), name="A")
>>> with te.tag_scope(tag="ewise"):
...     B = te.compute((4,), lambda i: A[i] + 1, name="B")
>>> B.op.tag
'ewise'
"""

import functools
import json
import numbers
import threading

from ..errors import InvalidArgumentError
from .expr import Const, as_expr

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


class OpAttrs(dict):
    """A compute's ``attrs`` as TVM converts them: numbers become constants (``.value``),
    lists hold converted items, and ``str()`` is JSON (as TVM's happens to be).

    >>> attrs = op_attrs({"hello": 1, "arr": [10, 12]})
    >>> attrs["hello"].value, attrs["arr"][1].value, str(attrs)
    (1, 12, '{"hello": 1, "arr": [10, 12]}')
    """

    def __str__(self) -> str:
        return json.dumps({k: _plain(v) for k, v in self.items()})


def op_attrs(attrs) -> OpAttrs:
    """``compute(attrs=...)`` converted (see :class:`OpAttrs`); keys are strings."""
    attrs = dict(attrs or {})
    for key in attrs:
        if not isinstance(key, str):
            raise InvalidArgumentError(f"compute attrs keys are strings, got {key!r}")
    return OpAttrs({k: _converted(v) for k, v in attrs.items()})


def _converted(value):
    if isinstance(value, (list, tuple)):
        return [_converted(v) for v in value]
    if isinstance(value, numbers.Number):
        return as_expr(value)
    return value


def _plain(value):
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Const):
        return value.value
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)

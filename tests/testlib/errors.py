"""Asserting on typed errors (issue 38): the exact class and its attributes, not text.

>>> import polyopt as po
>>> err = refused(po.UnknownLoopError, lambda: (_ for _ in ()).throw(
...     po.UnknownLoopError("C", "k", ("i",))))
>>> (err.stage, err.loop)
('C', 'k')
"""

import pytest

import polyopt as po


def refused(cls, action):
    """The error ``action()`` raises, which must be exactly of class ``cls`` (a subclass
    would be another way of failing)."""
    with pytest.raises(po.PolyoptError) as info:
        action()
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    return info.value


def read_change(err) -> tuple:
    """(reader, element, source, original source) of the read a
    :class:`~polyopt.ChangedValuesError` says would change."""
    change = err.example
    assert change.kind == "read", change
    return change.reader, change.element, change.source, change.original


def pair(err) -> tuple[str, str, str]:
    """(source, sink, element) of the dependence an illegal-schedule error broke."""
    v = err.violation
    return v.source, v.sink, v.element

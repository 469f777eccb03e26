"""Parts of TVM polyopt does not have yet: using one raises a PolyoptError that says so
and what to use meanwhile.

>>> autotvm = NotYet("tvm.autotvm", "write the schedule by hand")
>>> try:
...     autotvm.template("matmul")
... except Exception as err:
...     print(type(err).__name__, str(err).split(';')[0])
PolyoptError tvm.autotvm.template is not available in polyopt yet
"""

from ..errors import PolyoptError


class NotYet:
    """A namespace whose every attribute raises :class:`PolyoptError`."""

    def __init__(self, name: str, meanwhile: str):
        self._name, self._meanwhile = name, meanwhile

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise PolyoptError(f"{self._name}.{attr} is not available in polyopt yet; "
                           f"{self._meanwhile}")

"""One error class per way ``tensorize`` can fail (issue 38, "typed errors").

Each derives from :class:`~polyopt.errors.TensorizeError` (a
:class:`~polyopt.errors.ScheduleError`), keeps the objects involved as attributes and
renders its message from them.  The primitives' failures are in
:mod:`polyopt.schedule_errors`.

>>> err = TensorizeMismatchError("B", "i", "vadd", "loop_count", loops=("i", "j"),
...                              intrinsic_loops=("i",))
>>> (err.stage, err.problem, err.loops)
('B', 'loop_count', ('i', 'j'))
>>> print(err)
the sub-nest under 'i' has 2 loop(s) (i, j) but intrinsic 'vadd' has 1 (i)
"""

from __future__ import annotations

from .errors import TensorizeError

__all__ = ["AlreadyTensorizedError", "TensorizeMismatchError",
           "TensorizeDomainMismatchError", "TensorizeExpressionMismatchError",
           "TensorizeAccessMismatchError", "BufferAlignmentError", "IllegalTensorizeError"]


class AlreadyTensorizedError(TensorizeError):
    """``stage`` is tensorized at ``axis`` already."""

    def __init__(self, stage: str, axis: str):
        self.stage, self.axis = stage, axis
        super().__init__(f"stage '{stage}' is already tensorized at '{axis}'")


class TensorizeMismatchError(TensorizeError):
    """The sub-nest of ``stage`` under ``axis`` does not have the shape of ``intrinsic``:
    ``problem`` is one of :attr:`PROBLEMS` (``statements``: the other statements inside
    the loop; ``loops``/``intrinsic_loops``: the loops of each; ``reduction``: whether
    the stage is a reduction).  Where the matcher compared the two (iteration domain,
    expression, accesses), a subclass says which, with the ``mismatch`` it found."""

    PROBLEMS = {
        "foreign_statements": "statement(s) {statements} run inside loop '{axis}' of stage "
                              "'{stage}'; the intrinsic would replace only the stage's own "
                              "work: compute them at a loop outside it",
        "reduction_kind": "stage '{stage}' is {a_stage} reduction but intrinsic "
                          "'{intrinsic}' is {an_intrinsic}",
        "loop_count": "the sub-nest under '{axis}' has {count} loop(s) ({loop_names}) but "
                      "intrinsic '{intrinsic}' has {i_count} ({i_loop_names})",
        "no_update": "the reduction of '{stage}' is split around '{axis}' (its init runs "
                     "outside), so the intrinsic's update part is needed, and '{intrinsic}' "
                     "has none: return (body, reset, update) from fimpl, or tensorize a loop "
                     "outside the reduction loops",
    }

    def __init__(self, stage: str | None, axis: str | None, intrinsic: str | None,
                 problem: str, *, statements: tuple[str, ...] = (),
                 loops: tuple[str, ...] = (), intrinsic_loops: tuple[str, ...] = (),
                 reduction: bool | None = None):
        self.stage, self.axis, self.intrinsic, self.problem = stage, axis, intrinsic, problem
        self.statements, self.reduction = tuple(statements), reduction
        self.loops, self.intrinsic_loops = tuple(loops), tuple(intrinsic_loops)
        super().__init__(self.PROBLEMS[problem].format(
            stage=stage, axis=axis, intrinsic=intrinsic,
            statements=", ".join(self.statements), a_stage="a" if reduction else "not a",
            an_intrinsic="not" if reduction else "one", count=len(self.loops),
            loop_names=", ".join(self.loops), i_count=len(self.intrinsic_loops),
            i_loop_names=", ".join(self.intrinsic_loops)))


class _MatcherMismatchError(TensorizeMismatchError):
    """Base of the matcher's findings: ``mismatch`` says where the sub-nest and the
    intrinsic differ (an example point, what each touches)."""

    problem_name = ""

    def __init__(self, stage: str, axis: str, intrinsic: str, mismatch):
        self.stage, self.axis, self.intrinsic = stage, axis, intrinsic
        self.problem, self.mismatch = self.problem_name, mismatch
        self.statements, self.loops, self.intrinsic_loops, self.reduction = (), (), (), None
        TensorizeError.__init__(self, f"tensorize of '{stage}' at '{axis}' with "
                                      f"'{intrinsic}' refused: {mismatch}")


class TensorizeDomainMismatchError(_MatcherMismatchError):
    """The tiles of ``stage`` under ``axis`` are not the iteration domain of
    ``intrinsic`` (a loop longer or shorter; ``mismatch`` has the tile)."""

    problem_name = "domain"


class TensorizeExpressionMismatchError(_MatcherMismatchError):
    """The statement under ``axis`` computes another expression than ``intrinsic``
    (another operation, data type or number of reads)."""

    problem_name = "expression"


class TensorizeAccessMismatchError(_MatcherMismatchError):
    """An access of the sub-nest under ``axis`` does not touch ``intrinsic``'s buffer
    the same way (rank, offsets from the buffer's origin, or strides)."""

    problem_name = "access"


class BufferAlignmentError(TensorizeError):
    """An intrinsic's ``buffer`` needs ``offset_factor=factor`` but ``array`` has a tile
    starting at ``start`` (the ``what`` operand), or a row of ``row`` elements, that is
    not a multiple of it."""

    def __init__(self, buffer: str, factor: int, array: str, start: tuple | None = None,
                 row: str | None = None, what: str = "operand"):
        self.buffer, self.factor, self.array, self.start, self.row = (buffer, factor, array,
                                                                      start, row)
        if start is not None:
            message = (f"buffer '{buffer}' needs offset_factor={factor} but the {what} "
                       f"starts at {array}{list(start)} in some tile: split so that its "
                       f"tiles start at multiples of {factor}, or declare a smaller "
                       "offset_factor")
        else:
            message = (f"buffer '{buffer}' needs offset_factor={factor} but a row of "
                       f"'{array}' has {row} elements, not known to be a multiple of "
                       f"{factor}: use sizes that are, or declare offset_factor=1")
        super().__init__(message)


class IllegalTensorizeError(TensorizeError):
    """Running each tile of ``axis`` as one step would break ``violation.dependence``:
    two of its instances (``violation``'s pair) lie in one tile (``inside``), or in two
    tiles that the steps run in the wrong order."""

    def __init__(self, axis: str, violation, inside: bool):
        self.axis, self.violation, self.inside = axis, violation, inside
        self.dependence = violation.dependence
        if inside:
            message = (f"tensorize at '{axis}' is illegal: inside a tile, "
                       f"{violation.explain('and the intrinsic runs both as one step')}")
        else:
            message = (f"tensorize at '{axis}' is illegal: running each tile as one step "
                       f"breaks a dependence: {violation.explain()}")
        super().__init__(message)

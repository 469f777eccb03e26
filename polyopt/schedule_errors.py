"""One error class per way a schedule primitive can fail (issue 38, "typed errors").

Each class derives from :class:`~polyopt.errors.ScheduleError` (or
:class:`~polyopt.errors.IllegalScheduleError`, :class:`~polyopt.errors.TensorizeError`),
so ``except ScheduleError`` keeps catching them; the argument errors (a bad factor, a
loop listed twice, an axis of another stage) derive from
:class:`~polyopt.errors.InvalidArgumentError` only, as before: ``s[C].can_split(...)``
answers False for a schedule it refuses and raises for a bad argument.  Each
keeps the objects involved as attributes (stage, loop names, factor, violation, ...)
and renders its message from them: what was wrong and what to do.  The failures of the
lowering passes (OpenCL, the accelerator, LLVM intrinsics) are in
:mod:`polyopt.lowering_errors`.

>>> err = UnknownLoopError("C", "k", ("i", "j"))
>>> (err.stage, err.loop, err.loops)
('C', 'k', ('i', 'j'))
>>> print(err)
stage 'C' has no loop 'k'; its loops are: i, j
"""

from __future__ import annotations

from .errors import (IllegalScheduleError, InvalidArgumentError, ScheduleError,
                     TensorizeError)

__all__ = [
    "UnknownLoopError", "ForeignAxisError", "UnknownLoopKindError", "InvalidFactorError", "SplitArgumentsError",
    "SymbolicSplitError", "LoopsNotAdjacentError", "LoopOrderError", "DuplicateLoopError",
    "NonConstantExtentError", "PartlySharedLoopsError", "NotEnoughLoopsError",
    "BandMismatchError",
    "AttachCycleError", "SharedReductionLoopError", "AlreadyAttachedError",
    "SharedLoopsError", "NotAReaderError", "PartialOutputError", "AttachedLoopError",
    "CannotInlineError",
    "CacheOfWrittenError", "AmbiguousWriterError", "NotComputedError",
    "PrimitiveOrderError", "NotAReductionError", "TupleReductionError",
    "PiecewiseBoundError", "InPlaceKernelError", "ScalarExpansionError",
    "RationalLayoutError", "StorePredicateError", "UnknownPragmaError", "AutoScheduleError",
    "DependenceViolationError", "LoopCarriesDependenceError", "LoopRaceError",
    "LoopNotEnclosingError", "ChangedValuesError", "AlreadyTensorizedError",
    "TensorizeMismatchError", "BufferAlignmentError", "IllegalTensorizeError",
    "TensorizedLoopMissingError",
]


def _quoted(names) -> str:
    return " then ".join(f"'{n}'" for n in names)


# -- loops ------------------------------------------------------------------------------
class UnknownLoopError(ScheduleError):
    """A primitive names a loop the stage does not have (``loops``: the ones it has)."""

    def __init__(self, stage: str, loop: str, loops: tuple[str, ...]):
        self.stage, self.loop, self.loops = stage, loop, tuple(loops)
        super().__init__(f"stage '{stage}' has no loop '{loop}'; its loops are: "
                         f"{', '.join(self.loops)}")


class ForeignAxisError(InvalidArgumentError):
    """An axis object (``IterVar``) of another stage passed to a primitive of ``stage``
    (an argument error: ``can_*`` raise it rather than answer False)."""

    def __init__(self, stage: str, axis: str):
        self.stage, self.axis = stage, axis
        super().__init__(f"axis '{axis}' does not belong to stage '{stage}'")


class UnknownLoopKindError(ScheduleError):
    """A loop kind (``parallel``, ``vectorized``, ...) that polyopt does not know."""

    def __init__(self, kind, kinds: tuple[str, ...]):
        self.kind, self.kinds = kind, tuple(kinds)
        super().__init__(f"unknown loop kind {kind!r}; use one of {', '.join(self.kinds)}")


class InvalidFactorError(InvalidArgumentError):
    """A factor, part count or offset (``what``) is not an integer in range
    (``requirement`` says which)."""

    def __init__(self, what: str, value, requirement: str):
        self.what, self.value, self.requirement = what, value, requirement
        super().__init__(f"{what} must be {requirement}, got {value!r}")


class SplitArgumentsError(InvalidArgumentError):
    """``split`` got both or neither of ``factor=`` and ``nparts=``."""

    def __init__(self, factor, nparts):
        self.factor, self.nparts = factor, nparts
        super().__init__("split needs exactly one of factor= or nparts=")


class SymbolicSplitError(ScheduleError):
    """``split(nparts=)`` of a loop whose extent depends on the sizes, either with too
    many parts (``tiled_loop`` is None) or in a nest already tiled at ``tiled_loop``."""

    def __init__(self, stage: str, loop: str, nparts: int, tiled_loop: str | None = None,
                 limit: int = 64):
        self.stage, self.loop, self.nparts, self.tiled_loop = stage, loop, nparts, tiled_loop
        if tiled_loop is None:
            super().__init__(
                f"split(nparts={nparts}) of loop '{loop}', whose extent depends on the sizes: "
                f"polyopt splits such a loop into one piece per part, at most {limit}; use "
                "fewer parts or split(factor=...) with a constant factor")
        else:
            super().__init__(
                f"split(nparts={nparts}) of loop '{loop}', whose extent depends on the "
                f"sizes, in a nest whose loop '{tiled_loop}' is already tiled or skewed: "
                "polyopt does this split exactly only on plain loops; split with a "
                f"constant factor (split('{loop}', factor=...)), or split with nparts "
                "before tiling")


class LoopsNotAdjacentError(ScheduleError):
    """``tile``, ``fuse``, ``skew``, ``wavefront`` or diamond tiling got loops that are
    not adjacent in the stated order (``order``: e.g. "outer first")."""

    def __init__(self, primitive: str, stage: str, loops: tuple[str, ...], order: str,
                 count: str = "two"):
        self.primitive, self.stage, self.order = primitive, stage, order
        self.loops = tuple(loops)
        if count == "two":
            super().__init__(f"{primitive} needs two adjacent loops, {order}: "
                             f"{_quoted(self.loops)}")
        else:
            super().__init__(f"{primitive} needs {count} adjacent loops, {order}")


class LoopOrderError(ScheduleError):
    """``primitive`` needs loop ``outer`` outside loop ``inner`` (``skew``)."""

    def __init__(self, primitive: str, stage: str, outer: str, inner: str):
        self.primitive, self.stage, self.outer, self.inner = primitive, stage, outer, inner
        super().__init__(f"{primitive} needs '{outer}' outside '{inner}'")


class DuplicateLoopError(InvalidArgumentError):
    """``reorder`` lists a loop twice."""

    def __init__(self, primitive: str, stage: str, loops: tuple[str, ...]):
        self.primitive, self.stage, self.loops = primitive, stage, tuple(loops)
        super().__init__(f"{primitive} lists a loop twice")


class NonConstantExtentError(ScheduleError):
    """A primitive needs a loop of constant extent (``fuse`` of ``loops``; the inner
    one, ``loop``, is not)."""

    def __init__(self, primitive: str, stage: str, loops: tuple[str, ...], loop: str,
                 outer_symbolic: bool = True):
        self.primitive, self.stage, self.loop = primitive, stage, loop
        self.loops = tuple(loops)
        a, b = self.loops
        why = (f"the extents of both '{a}' and '{b}' depend on the sizes, and i * N + j is "
               "not affine" if outer_symbolic else
               f"the extent of '{b}' depends on the sizes and '{a}' has more than 64 "
               "iterations (fused by one affine piece per outer iteration)")
        super().__init__(
            f"cannot {primitive} '{a}' and '{b}': {why} (split one by a constant first, "
            "or fuse loops of constant extent)")


class PartlySharedLoopsError(ScheduleError):
    """Loops ``lo..hi`` of ``stage`` are only partly shared with stage ``other`` (it
    shares ``depth`` of them): change the loops first, or only the shared ones."""

    def __init__(self, stage: str, other: str, lo: int, hi: int, depth: int,
                 attached: bool = False):
        self.stage, self.other, self.lo, self.hi, self.depth = stage, other, lo, hi, depth
        self.attached = attached
        if attached:
            super().__init__(
                f"stage '{stage}' is attached inside loops {lo}..{hi} of '{other}' (at depth "
                f"{depth}); change the loops before attaching it, or attach it outside them")
        else:
            super().__init__(
                f"loops {lo}..{hi} of stage '{stage}' are only partly shared with stage "
                f"'{other}' (which shares {depth}); change the loops before fusing the "
                "stages, or only the shared ones")


class NotEnoughLoopsError(ScheduleError):
    """``stage`` has ``count`` loops, fewer than the ``needed`` the request uses."""

    def __init__(self, stage: str, count: int, needed: int, detail: str = ""):
        self.stage, self.count, self.needed = stage, count, needed
        super().__init__(detail or f"stage '{stage}' has only {count} loops")


class BandMismatchError(ScheduleError):
    """A loop change on ``stage`` would give the ``stages`` sharing those loops different
    loops."""

    def __init__(self, stage: str, stages: tuple[str, ...]):
        self.stage, self.stages = stage, tuple(stages)
        super().__init__("stages sharing these loops would get different loops")


# -- attaching, inlining, caches ---------------------------------------------------------
class AttachCycleError(ScheduleError):
    """``compute_at(producer, consumer)`` where ``consumer`` is (inside) ``producer``."""

    def __init__(self, producer: str, consumer: str):
        self.producer, self.consumer = producer, consumer
        super().__init__(f"stage '{consumer}' is (inside) '{producer}': attaching "
                         f"'{producer}' to it would make a cycle")


class SharedReductionLoopError(ScheduleError):
    """Attaching would make ``stage`` share its reduction loop ``loop``."""

    def __init__(self, stage: str, loop: str):
        self.stage, self.loop = stage, loop
        super().__init__(f"stage '{stage}' would share its reduction loop '{loop}'; share "
                         "fewer loops or reorder them first")


class AlreadyAttachedError(ScheduleError):
    """``stage`` is attached to ``target`` already."""

    def __init__(self, stage: str, target: str):
        self.stage, self.target = stage, target
        super().__init__(f"stage '{stage}' is already attached to '{target}'; call "
                         f"s[{stage!r}].compute_root() first")


class SharedLoopsError(ScheduleError):
    """``primitive`` on ``stage`` while stage ``sharer`` shares its loops."""

    def __init__(self, primitive: str, stage: str, sharer: str):
        self.primitive, self.stage, self.sharer = primitive, stage, sharer
        if primitive == "compute_inline":
            message = (f"cannot inline '{stage}': stage '{sharer}' shares its loops; move "
                       "that stage first")
        elif primitive == "compute_at":
            message = (f"stage '{sharer}' shares the loops of '{stage}'; attach it after "
                       "moving the producer")
        else:
            message = (f"{primitive}: stage '{sharer}' shares the loops of '{stage}'; apply "
                       f"{primitive} before attaching it")
        super().__init__(message)


class NotAReaderError(ScheduleError):
    """``compute_at``/``cache_read`` target ``reader`` does not read ``producer`` (inside
    the loops asked for, when ``inside``)."""

    def __init__(self, producer: str, reader: str, inside: bool = False, detail: str = ""):
        self.producer, self.reader, self.inside = producer, reader, inside
        if detail:
            message = detail
        elif inside:
            message = f"'{producer}' is not read inside those loops of the consumer"
        else:
            message = f"stage '{reader}' does not read '{producer}'"
        super().__init__(message)


class PartialOutputError(ScheduleError):
    """``compute_at`` of ``output`` (an output) at ``consumer``, whose tiles do not read
    all of it."""

    def __init__(self, output: str, consumer: str):
        self.output, self.consumer = output, consumer
        super().__init__(f"cannot compute '{output}' at '{consumer}': it is an output, and "
                         f"the tiles of '{consumer}' do not read all of it")


class AttachedLoopError(ScheduleError):
    """A loop of a stage computed at another one depends on the loops it was computed
    at (so the stage cannot be recomputed inside them)."""

    def __init__(self, stage: str | None = None):
        self.stage = stage
        super().__init__("a loop of this stage depends on the loops it was computed at")


class CannotInlineError(ScheduleError):
    """``compute_inline`` of ``stage`` (a stage, or a statement of an in-place kernel
    when ``statement``; into ``reader`` when known) is impossible; ``reason`` says why
    and what to do instead."""

    def __init__(self, stage: str, reason: str, reader: str | None = None,
                 statement: bool = False):
        self.stage, self.reason, self.reader = stage, reason, reader
        name = stage if statement else f"'{stage}'"
        into = f" into {reader}" if reader else ""
        super().__init__(f"cannot inline {name}{into}: {reason}")


class CacheOfWrittenError(ScheduleError):
    """``cache_read`` of ``array`` for ``statement``, which also writes it."""

    def __init__(self, statement: str, array: str):
        self.statement, self.array = statement, array
        super().__init__(f"statement {statement} writes '{array}'; it cannot read a copy")


class AmbiguousWriterError(ScheduleError):
    """``cache_write`` of ``array`` written by no stage or several (``writers``)."""

    def __init__(self, array: str, writers: tuple[str, ...]):
        self.array, self.writers = array, tuple(writers)
        super().__init__(f"'{array}' is written by {', '.join(self.writers) or 'no stage'}; "
                         "pass the stage to cache: s.cache_write(s[\"S1\"], ...)")


class NotComputedError(ScheduleError):
    """``primitive`` of ``tensor``, which the program does not compute."""

    def __init__(self, primitive: str, tensor: str):
        self.primitive, self.tensor = primitive, tensor
        super().__init__(f"{primitive}: '{tensor}' is not computed by the program")


# -- order of primitives, reductions, kernels --------------------------------------------
class PrimitiveOrderError(ScheduleError):
    """``primitive`` must come before ``before`` (other primitives already applied to
    ``stage``): ``advice`` says what to do."""

    def __init__(self, primitive: str, before: str, advice: str, stage: str | None = None):
        self.primitive, self.before, self.stage, self.advice = primitive, before, stage, advice
        super().__init__(advice)


class NotAReductionError(ScheduleError):
    """``rfactor`` of a stage (``loop`` is None) or a loop that is not a reduction one
    (or a reduction it cannot split, ``detail``)."""

    def __init__(self, primitive: str, stage: str, loop: str | None = None,
                 detail: str = ""):
        self.primitive, self.stage, self.loop = primitive, stage, loop
        if detail:
            message = detail
        elif loop is None:
            message = f"{primitive} needs a reduction; stage '{stage}' is not one"
        else:
            message = f"{primitive} needs a reduction loop; '{loop}' is not one"
        super().__init__(message)


class TupleReductionError(ScheduleError):
    """``primitive`` of ``stage``, a reduction over a tuple (with ``outputs``)."""

    def __init__(self, primitive: str, stage: str, outputs: tuple[str, ...], detail: str = ""):
        self.primitive, self.stage, self.outputs = primitive, stage, tuple(outputs)
        super().__init__(detail or (
            f"{primitive} of '{stage}', a reduction over a tuple (it updates "
            f"{', '.join((stage,) + self.outputs)} together), is not supported yet; split, "
            "reorder, fuse, parallelize or compute_at it instead"))


class PiecewiseBoundError(ScheduleError):
    """``primitive`` needs a loop bound that is one affine expression; ``bound`` has
    several pieces."""

    def __init__(self, primitive: str, bound: str):
        self.primitive, self.bound = primitive, bound
        super().__init__(
            f"{primitive} needs loop bounds that are one affine expression of the sizes; "
            f"here a bound is {bound} (one piece per case): use {primitive} on fewer "
            "loops, or on loops that run over the same range in every statement")


class InPlaceKernelError(ScheduleError):
    """``primitive`` cannot run (yet, or in this form) on an in-place kernel (a C
    function) or needs one; ``reason`` says why and what to do."""

    def __init__(self, primitive: str, reason: str, stage: str | None = None):
        self.primitive, self.reason, self.stage = primitive, reason, stage
        super().__init__(reason)


class ScalarExpansionError(ScheduleError):
    """``expand_scalar`` of ``scalar`` is impossible (at ``statement``, when known)."""

    def __init__(self, scalar: str | None, reason: str, statement: str | None = None):
        self.scalar, self.reason, self.statement = scalar, reason, statement
        super().__init__(f"expand_scalar: {reason}")


class RationalLayoutError(ScheduleError):
    """A layout (``transform_layout``) with a rational coefficient."""

    def __init__(self, layout: str = ""):
        self.layout = layout
        super().__init__("the layout has a rational coefficient; use floor(...)")


class StorePredicateError(ScheduleError):
    """``set_store_predicate`` with a condition polyopt does not support."""

    def __init__(self, stage: str, predicate=None):
        self.stage, self.predicate = stage, predicate
        super().__init__(
            f"set_store_predicate on '{stage}': polyopt supports only "
            "thread.var.equal(0) for a thread index bound to a reduction loop of the stage "
            "(bind the reduction loop first; the store then happens once per group); "
            "for other conditions write them into the compute with po.if_then_else")


class UnknownPragmaError(ScheduleError):
    """``pragma`` of a kind polyopt does not have (``pragmas``: the ones it has)."""

    def __init__(self, pragma, pragmas: tuple[str, ...], stage: str | None = None):
        self.pragma, self.pragmas, self.stage = pragma, tuple(pragmas), stage
        if stage is None:
            super().__init__(f"unknown pragma {pragma!r}; the pragmas that import code "
                             f"are {', '.join(map(repr, self.pragmas))}")
        else:
            super().__init__(
                f"s[{stage!r}].pragma(..., {pragma!r}) is not available in polyopt; "
                f"the pragmas are {' and '.join(map(repr, self.pragmas))}; unroll with "
                "s[C].unroll(axis), parallelize with s[C].parallel(axis) (LLVM decides the "
                "rest of the unrolling itself)")


class AutoScheduleError(ScheduleError):
    """``auto_schedule`` cannot schedule this input (``reason``)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


# -- legality ----------------------------------------------------------------------------
class DependenceViolationError(IllegalScheduleError):
    """``transform`` runs the sink of a dependence before its source: ``violation``
    holds the dependence and the pair of instances; ``repair`` a suggestion or None."""

    def __init__(self, transform: str, violation, repair: str | None = None):
        self.transform, self.repair = transform, repair
        message = f"{transform} is illegal: {violation.explain()}"
        if repair:
            message += f". Repair: {repair}"
        super().__init__(message, violation)


class LoopCarriesDependenceError(IllegalScheduleError):
    """``transform`` (``parallel``, ``vectorize``, ``bind``) of ``loop``, which carries
    ``violation``'s dependence between its iterations."""

    def __init__(self, transform: str, loop: str, violation, repair: str, what: str = "loop"):
        self.transform, self.loop, self.repair, self.what = transform, loop, repair, what
        super().__init__(
            f"{transform} is illegal: {what} '{loop}' carries a dependence between its "
            f"iterations: {violation.explain('in another iteration of that loop')}. "
            f"Repair: {repair}", violation)


class LoopRaceError(IllegalScheduleError):
    """Iterations of ``loop`` would race on a shared buffer (``race`` describes it)."""

    def __init__(self, transform: str, loop: str, race: str, repair: str):
        self.transform, self.loop, self.race, self.repair = transform, loop, race, repair
        super().__init__(f"{transform} is illegal: iterations of loop '{loop}' would race "
                         f"on a shared buffer: {race}. Repair: {repair}")


class LoopNotEnclosingError(IllegalScheduleError):
    """``loop`` does not enclose ``statement``."""

    def __init__(self, loop: str, statement: str):
        self.loop, self.statement = loop, statement
        super().__init__(f"loop '{loop}' does not enclose statement {statement}")


class ChangedValuesError(IllegalScheduleError):
    """A rewrite (``primitive``: compute_inline, a cache, ...) would change the values
    the program reads or leaves (``example``: a concrete read or element)."""

    def __init__(self, primitive: str, example: str, what: str = "reads", repair: str = ""):
        self.primitive, self.example, self.what, self.repair = primitive, example, what, repair
        if what == "reads":
            message = f"{primitive} would change the values the program reads: {example}"
        elif what == "leaves":
            message = f"{primitive} would change what the program leaves in {example}"
        else:
            message = example
        super().__init__(message + repair)


# -- tensorize ---------------------------------------------------------------------------
class AlreadyTensorizedError(TensorizeError):
    """``stage`` is tensorized at ``axis`` already."""

    def __init__(self, stage: str, axis: str):
        self.stage, self.axis = stage, axis
        super().__init__(f"stage '{stage}' is already tensorized at '{axis}'")


class TensorizeMismatchError(TensorizeError):
    """The sub-nest of ``stage`` under ``axis`` does not match ``intrinsic``
    (``reason``: how, and what to do)."""

    def __init__(self, stage: str | None, axis: str | None, intrinsic: str | None,
                 reason: str):
        self.stage, self.axis, self.intrinsic, self.reason = stage, axis, intrinsic, reason
        super().__init__(reason)


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


class TensorizedLoopMissingError(TensorizeError):
    """The loop ``axis`` of ``stage`` tensorized with ``intrinsic`` is not in the
    generated code."""

    def __init__(self, stage: str, axis: str, intrinsic: str):
        self.stage, self.axis, self.intrinsic = stage, axis, intrinsic
        super().__init__(f"the loop '{axis}' of stage '{stage}' tensorized with "
                         f"'{intrinsic}' is not in the generated code")

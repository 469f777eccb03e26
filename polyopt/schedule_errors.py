"""One error class per way a schedule primitive can fail (issue 38, "typed errors").

Each class derives from :class:`~polyopt.errors.ScheduleError` (or
:class:`~polyopt.errors.IllegalScheduleError`),
so ``except ScheduleError`` keeps catching them; the argument errors (a bad factor, a
loop listed twice, an axis of another stage) derive from
:class:`~polyopt.errors.InvalidArgumentError` only, as before: ``s[C].can_split(...)``
answers False for a schedule it refuses and raises for a bad argument.  Each
keeps the objects involved as attributes (stage, loop names, factor, violation, ...)
and renders its message from them: what was wrong and what to do.  The failures of the
lowering passes (OpenCL, the accelerator, LLVM intrinsics) are in
:mod:`polyopt.lowering_errors`, those of ``tensorize`` in :mod:`polyopt.tensorize_errors`.

>>> err = UnknownLoopError("C", "k", ("i", "j"))
>>> (err.stage, err.loop, err.loops)
('C', 'k', ('i', 'j'))
>>> print(err)
stage 'C' has no loop 'k'; its loops are: i, j
"""

from __future__ import annotations

from .errors import IllegalScheduleError, InvalidArgumentError, ScheduleError

__all__ = [
    "UnknownLoopError", "ForeignAxisError", "InvalidFactorError", "SplitArgumentsError",
    "SymbolicSplitError", "LoopsNotAdjacentError", "LoopOrderError", "DuplicateLoopError",
    "NonConstantExtentError", "FusedPartsError", "PartlySharedLoopsError", "NotEnoughLoopsError",
    "BandMismatchError",
    "AttachCycleError", "SharedReductionLoopError", "AlreadyAttachedError",
    "SharedLoopsError", "NotAReaderError", "ReaderOutsideError", "PartialOutputError",
    "AttachedLoopError",
    "CannotInlineError",
    "CacheOfWrittenError", "AmbiguousWriterError", "NotComputedError",
    "PrimitiveOrderError", "NotAReductionError", "TupleReductionError",
    "PiecewiseBoundError", "InPlaceKernelError", "ScalarExpansionError",
    "StorePredicateError", "UnknownPragmaError", "AutoScheduleError",
    "DependenceViolationError", "LoopCarriesDependenceError", "LoopRaceError",
    "ChangedValuesError",
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


class FusedPartsError(ScheduleError):
    """A primitive changes loop ``loop`` of ``stage``, a fuse of two loops whose extents
    both depend on the sizes (run as those two loops), other than marking it parallel
    or reordering it (the two move as one)."""

    def __init__(self, stage: str, loop: str):
        self.stage, self.loop = stage, loop
        super().__init__(
            f"loop '{loop}' of stage '{stage}' fuses two loops whose extents both depend on "
            "the sizes; polyopt runs it as those two loops, in the same order (i * N + j "
            "is a product of two unknowns, not affine), so it can be marked parallel (its "
            "outer part) and reordered (the two move as one) but not split, vectorized, "
            "unrolled, bound, fused again or computed at: split one of the two loops by a "
            "constant before fusing")


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
    """``stage`` has ``count`` loops, fewer than the ``needed`` the request uses (to
    share the loops of stage ``shared_with`` down to its loop ``down_to``, when given)."""

    def __init__(self, stage: str, count: int, needed: int, shared_with: str | None = None,
                 down_to: str | None = None):
        self.stage, self.count, self.needed = stage, count, needed
        self.shared_with, self.down_to = shared_with, down_to
        if shared_with is not None:
            message = (f"stage '{stage}' has {count} loops; it cannot share {needed} loops "
                       f"of '{shared_with}' (down to '{down_to}')")
        else:
            message = (f"stage '{stage}' has only {count} loops; the change needs {needed}: "
                       "change fewer loops")
        super().__init__(message)


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

    def __init__(self, producer: str, reader: str | None, inside: bool = False,
                 copies_back: bool = False):
        self.producer, self.reader, self.inside = producer, reader, inside
        self.copies_back = copies_back  # (a cache_write's copy back: nothing to copy)
        if copies_back:
            message = f"{reader} writes nothing that {producer} copies back"
        elif inside and reader is not None:
            message = (f"{reader} reads no value of {producer} inside those loops; there is "
                       "nothing to compute there")
        elif inside:
            message = f"'{producer}' is not read inside those loops of the consumer"
        else:
            message = f"stage '{reader}' does not read '{producer}'"
        super().__init__(message)


class ReaderOutsideError(ScheduleError):
    """``compute_at(producer, consumer)`` while statement ``reader`` also reads
    ``producer`` outside the consumer's loops (the schedule defers the call until that
    reader is attached too, as TVM's order-free calls; lowering raises it if never)."""

    def __init__(self, producer: str, consumer: str, reader: str):
        self.producer, self.consumer, self.reader = producer, consumer, reader
        super().__init__(
            f"cannot compute '{producer}' at '{consumer}': statement {reader} reads it too, "
            "outside those loops, and would see only what the last tile computed; compute "
            "that reader in the same loops first, use compute_with, or cache_read per reader")


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
    when ``statement``; into ``reader`` when known) is impossible: ``problem`` is one of
    :attr:`PROBLEMS` (``array``: the array read, when it matters)."""

    PROBLEMS = {
        "reduction": "it is a reduction; compute it at its reader with compute_at instead",
        "output": "it is an output of the schedule",
        "several_writers": "its array is written by several statements",
        "writes_twice": "it writes an element of its array more than once; compute it at "
                        "its reader instead",
        "piecewise_writer": "the instance that writes an element of its array is a "
                            "piecewise function of the element; compute it at its reader "
                            "instead",
        "rational_layout": "its layout has a rational inverse; compute it at its reader "
                           "instead",
        "unread": "no other statement reads the values it writes",
        "partly_read": "{reader} reads {array} from it only at some of its instances (at "
                       "others the value comes from elsewhere)",
        "not_affine": "the instance read is not one affine function of the reader's loops",
    }

    def __init__(self, stage: str, problem: str, reader: str | None = None,
                 statement: bool = False, array: str | None = None):
        self.stage, self.problem, self.reader, self.array = stage, problem, reader, array
        self.statement = statement
        name = stage if statement else f"'{stage}'"
        into = f" into {reader}" if reader and problem != "partly_read" else ""
        reason = self.PROBLEMS[problem].format(reader=reader, array=array)
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
    ``stage``, or to an in-place kernel when ``in_place``); for ``cache_read`` of an
    array inlined before stages were added, ``before`` is the primitive that added them."""

    def __init__(self, primitive: str, before: str, stage: str | None = None,
                 in_place: bool = False):
        self.primitive, self.before, self.stage, self.in_place = primitive, before, stage, in_place
        if in_place:
            message = (f"on an in-place kernel, apply {primitive} before the other rewrites "
                       f"({before})")
        elif primitive == "cache_read":
            message = (f"cache_read of '{stage}', inlined before {before}: make the copy "
                       "before the steps that add stages (call cache_read right after "
                       f"s[{stage!r}].compute_inline(), or before it)")
        elif before == "compute_at":
            message = f"apply {primitive} to '{stage}' before attaching it"
        else:
            message = (f"{primitive} must be applied to stage '{stage}' before its loops are "
                       "changed or it is attached; apply it first, then schedule the stages")
        super().__init__(message)


class NotAReductionError(ScheduleError):
    """``rfactor`` of a stage (``loop`` is None) or a loop that is not a reduction one,
    or of a reduction it cannot split (``update``: ``"combiner"``, not a sum, max or
    min; ``"reduced"``, the reduced expression not found; ``"addend"``, a kernel's
    ``+=`` whose addend reads ``array``)."""

    def __init__(self, primitive: str, stage: str, loop: str | None = None,
                 update: str | None = None, array: str | None = None):
        self.primitive, self.stage, self.loop = primitive, stage, loop
        self.update, self.array = update, array
        if update == "combiner":
            message = (f"{primitive}: the update of '{stage}' is not a sum, max or min (a "
                       "reduction with a data-dependent where= cannot be rfactored)")
        elif update == "reduced":
            message = f"{primitive}: cannot find the reduced expression of '{stage}'"
        elif update == "addend":
            message = (f"{primitive} needs a sum '{array}[...] += ...' whose addend does not "
                       f"read {array}; {stage} is not one")
        elif loop is None:
            message = f"{primitive} needs a reduction; stage '{stage}' is not one"
        else:
            message = f"{primitive} needs a reduction loop; '{loop}' is not one"
        super().__init__(message)


class TupleReductionError(ScheduleError):
    """``primitive`` of ``stage``, a reduction over a tuple (with ``outputs``)."""

    def __init__(self, primitive: str, stage: str, outputs: tuple[str, ...],
                 init_moved: bool = False):
        self.primitive, self.stage, self.outputs = primitive, stage, tuple(outputs)
        self.init_moved = init_moved  # its init is no longer inside the first's loops
        if init_moved:
            super().__init__(
                f"stage '{stage}' (an output of a reduction over a tuple) no longer has the "
                f"loops of '{self.outputs[0]}' around its init; change the loops of the "
                "first output only, the others follow")
        else:
            super().__init__(
                f"{primitive} of '{stage}', a reduction over a tuple (it updates "
                f"{', '.join((stage,) + self.outputs)} together), is not supported yet; "
                "split, reorder, fuse, parallelize or compute_at it instead")


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
    function) or needs one: ``problem`` is one of :attr:`PROBLEMS` (of ``stage``)."""

    PROBLEMS = {
        "not_alone": "rfactor on an in-place kernel needs '{stage}' alone in its loop nest "
                     "(so nothing else sees the sums half-done); move the other statements "
                     "out first",
        "one_reader": "cache_read on an in-place kernel takes one reader stage at a time "
                      "(each reader gets its own buffer)",
        "layout": "cache_write(..., layout=) is not supported on in-place kernels yet",
        "needs_kernel": "{primitive} applies to in-place kernels (a C function's local "
                        "scalars); tensor expressions have no scalar temporaries",
    }

    def __init__(self, primitive: str, problem: str, stage: str | None = None):
        self.primitive, self.problem, self.stage = primitive, problem, stage
        super().__init__(self.PROBLEMS[problem].format(primitive=primitive, stage=stage))


class ScalarExpansionError(ScheduleError):
    """``expand_scalar`` of ``scalar`` is impossible (at ``statement``, when known):
    ``problem`` is one of :attr:`PROBLEMS` (``dims``: the loops asked for)."""

    PROBLEMS = {
        "not_a_scalar": "'{scalar}' is not a scalar temporary of the kernel (a local "
                        "variable, not an argument)",
        "never_stored": "no statement stores '{scalar}' into an array element, so its "
                        "values have no element to live in; expand_scalar(..., dims=1) "
                        "expands it into a new array",
        "too_few_loops": "a statement using '{scalar}' has fewer than {dims} loops around it",
        "no_store_after": "no store follows {statement}",
        "several_arrays": "the values {statement} writes are stored into several arrays; "
                          "expansion needs one",
        "not_one_store": "the instances of {statement} are not each followed by one store "
                         "of the scalar",
        "not_affine": "the element {statement} would use is not one affine function of its "
                      "loops",
    }

    def __init__(self, scalar: str | None, problem: str, statement: str | None = None,
                 dims: int | None = None):
        self.scalar, self.problem, self.statement, self.dims = scalar, problem, statement, dims
        super().__init__("expand_scalar: " + self.PROBLEMS[problem].format(
            scalar=scalar, statement=statement, dims=dims))


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
    """``pragma`` of a kind TVM's passes read that polyopt does not do (``pragmas``: the
    ones it does; names TVM gives no meaning are recorded with no effect)."""

    def __init__(self, pragma, pragmas: tuple[str, ...], stage: str | None = None):
        self.pragma, self.pragmas, self.stage = pragma, tuple(pragmas), stage
        if stage is None:
            super().__init__(f"unknown pragma {pragma!r}; the pragmas that import code "
                             f"are {', '.join(map(repr, self.pragmas))}")
        else:
            super().__init__(
                f"s[{stage!r}].pragma(..., {pragma!r}) is not available in polyopt (TVM's "
                "passes read it; polyopt would ignore it); the pragmas polyopt does are "
                f"{', '.join(map(repr, self.pragmas))}, and names TVM gives no meaning "
                "(recorded, no effect); unroll with s[C].unroll(axis), parallelize with "
                "s[C].parallel(axis) (LLVM decides the rest of the unrolling itself)")


class AutoScheduleError(ScheduleError):
    """``auto_schedule`` cannot schedule this input: ``problem`` is ``"primitives"``
    (the schedule has ``steps`` applied already) or ``"scheduler"`` (isl's scheduler
    found no schedule; ``scheduler`` says how it stopped)."""

    def __init__(self, problem: str, *, steps: tuple[str, ...] = (), scheduler: str = ""):
        self.problem, self.steps, self.scheduler = problem, tuple(steps), scheduler
        if problem == "primitives":
            message = (f"auto_schedule starts from a schedule without primitives applied "
                       f"(this one has {', '.join(self.steps)}): "
                       "po.auto_schedule(po.create_schedule(...))")
        else:
            message = (f"auto_schedule found no schedule for this kernel: {scheduler}; "
                       "allow it more effort (po.auto_schedule(s, max_operations=..., "
                       "scheduler_seconds=...)), or schedule it by hand")
        super().__init__(message)


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


class ChangedValuesError(IllegalScheduleError):
    """A rewrite (``primitive``: compute_inline, a cache, ...) would change the values
    the program reads or leaves: ``example`` is the concrete read or element
    (:class:`~polyopt.deps.counterexample.ChangedValue`, printed by the counterexample
    printer), ``what`` ``"reads"``, ``"leaves"`` or ``"unfilled"`` (from its kind);
    ``repair``: the step that would make the rewrite legal, or None."""

    def __init__(self, primitive: str, example, repair: str | None = None):
        self.primitive, self.example, self.repair = primitive, example, repair
        self.what = {"read": "reads", "unfilled": "unfilled"}.get(example.kind, "leaves")
        if self.what == "reads":
            message = f"{primitive} would change the values the program reads: {example}"
        elif self.what == "leaves":
            message = f"{primitive} would change what the program leaves in {example}"
        else:
            message = str(example)
        super().__init__(message + (f". Repair: {repair}" if repair else ""))

"""One error class per way the graph layer refuses a model (issue 38, "typed errors").

Every class derives from :class:`UnsupportedOperatorError` (an
:class:`~polyopt.errors.InvalidArgumentError`) or from ``InvalidArgumentError`` itself
(too many inputs, a tensor too large), keeps the objects involved as attributes (the
node's name and operator, the attribute, dtype, input or shape in question) and renders
its message from them: what was wrong and what to do.  Where one class covers several
related failures, ``problem`` is a key of its closed ``PROBLEMS`` table.

>>> err = UnsupportedAttributeValueError("n", "Pad", "mode", "median",
...                                      ("constant", "reflect", "edge"))
>>> (err.node, err.op_type, err.attribute, err.value)
('n', 'Pad', 'mode', 'median')
>>> print(err)
node 'n' (Pad): mode='median' is not supported; supported: 'constant', 'reflect', 'edge'
"""

from __future__ import annotations

from ..errors import InvalidArgumentError

__all__ = ["UnsupportedOperatorError", "UnknownOperatorError", "UnsupportedAttributeError",
           "UnsupportedAttributeValueError", "UnsupportedDTypeError", "UnsupportedShapeError",
           "UnsupportedInputError", "UnsupportedCombinationError", "RecurrenceAttributeError",
           "OptionalOutputsError",
           "NotFusableError", "OpsetError", "ConstantFoldError", "EinsumEquationError",
           "KernelSignatureError", "TooManyInputsError", "TensorTooLargeError"]


def _where(node, op_type) -> str:
    if node is None:
        return f"{op_type}" if op_type else "the model"
    return f"node '{node}' ({op_type})" if op_type else f"node '{node}'"


def _listed(values) -> str:
    return ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values)


class UnsupportedOperatorError(InvalidArgumentError):
    """An operator, attribute, dtype or shape the graph layer does not support: ``node``
    (its name; None for the model as a whole) and ``op_type``. Each way of failing is a
    subclass carrying what was refused."""

    def __init__(self, node: str | None, op_type: str | None):
        self._refuse(node, op_type, f"{_where(node, op_type)} is not supported by "
                                    "polyopt.graph")

    def _refuse(self, node, op_type, text: str) -> None:
        """Keeps ``node`` and ``op_type`` and says ``text`` (rendered by the subclass)."""
        self.node, self.op_type = node, op_type
        InvalidArgumentError.__init__(self, text)


class UnknownOperatorError(UnsupportedOperatorError):
    """An operator polyopt.graph does not compute: ``problem`` in :attr:`PROBLEMS`
    (``domain``: the operator's ONNX domain; ``supported``: the operators it computes)."""

    PROBLEMS = {
        "unknown": "the operator {op_type} is not supported by polyopt.graph; supported: "
                   "{supported}",
        "int8": "the int8 operator {op_type} is not supported yet; it comes with polyopt's "
                "int8 support (the tensorize issue). Export the model in float32 for now",
        "domain": "the operator {domain}.{op_type} of the domain '{domain}' is not "
                  "supported (only the default ONNX domain is)",
        "internal": "{op_type} is not an ONNX operator (polyopt.graph makes it from ONNX "
                    "ones); supported: {supported}",
    }

    def __init__(self, node: str, op_type: str, problem: str, *, domain: str = "",
                 supported: tuple[str, ...] = ()):
        self.problem, self.domain, self.supported = problem, domain, tuple(supported)
        text = self.PROBLEMS[problem].format(op_type=op_type, domain=domain,
                                             supported=", ".join(self.supported))
        self._refuse(node, op_type, f"node '{node}': {text}")


class UnsupportedAttributeError(UnsupportedOperatorError):
    """``node`` has ``attribute``, which its operator does not read (``supported``: the
    ones it reads), or (``kind``: the Python type it would be read as) an attribute of a
    kind the importer does not read at all."""

    def __init__(self, node: str | None, op_type: str | None, attribute: str,
                 supported: tuple[str, ...] = (), *, kind: str | None = None):
        self.attribute, self.supported, self.kind = attribute, tuple(supported), kind
        if kind is not None:
            text = (f"the attribute '{attribute}' has a kind polyopt.graph does not read "
                    f"({kind}); remove it or export the model without it")
        else:
            text = (f"the attribute '{attribute}' is not supported; supported attributes: "
                    f"{', '.join(self.supported) or 'none'}")
        where = _where(node, op_type)
        self._refuse(node, op_type, text if node is None else f"{where}: {text}")


class UnsupportedAttributeValueError(UnsupportedOperatorError):
    """``attribute`` (an attribute, or a value input such as Dropout's ``training_mode``)
    has ``value``; ``supported``: the values polyopt.graph computes."""

    def __init__(self, node: str, op_type: str, attribute: str, value, supported: tuple):
        self.attribute, self.value, self.supported = attribute, value, tuple(supported)
        self._refuse(node, op_type,
                         f"{_where(node, op_type)}: {attribute}={value!r} is not supported; "
                         f"supported: {_listed(self.supported)}")


class UnsupportedDTypeError(UnsupportedOperatorError):
    """An operator (or the model's input ``input``, with ``node`` None) given a tensor of
    ``dtype`` (an ONNX element type number when NumPy has no such dtype), which it does
    not compute; ``supported``: the dtypes it takes."""

    def __init__(self, node: str | None, op_type: str | None, input: str, dtype: str,
                 supported: tuple[str, ...]):
        self.input, self.dtype, self.supported = input, dtype, tuple(supported)
        if dtype == "bool":
            advice = "Cast it to a number first"
        else:
            advice = f"{op_type or 'polyopt.graph'} takes {', '.join(self.supported)}"
        kind = f"ONNX element type {dtype}" if isinstance(dtype, int) else dtype
        if node is None:
            text = f"the model's input '{input}' is {kind}, which is not supported; {advice}"
        else:
            text = (f"{_where(node, op_type)}: {kind} tensors are not supported (input "
                    f"'{input}'); {advice}")
        self._refuse(node, op_type, text)


class UnsupportedShapeError(UnsupportedOperatorError):
    """``input`` (a tensor name or role, e.g. ``"x_zero_point"``) has ``shape``, which
    ``op_type`` does not compute: ``ranks`` the numbers of dimensions it takes (or
    ``min_rank`` the least), or ``shapes`` the shapes it takes."""

    def __init__(self, node: str | None, op_type: str, input: str, shape: tuple, *,
                 ranks: tuple[int, ...] = (), shapes: tuple = (), min_rank: int | None = None):
        self.input, self.shape, self.min_rank = input, tuple(shape), min_rank
        self.ranks, self.shapes = tuple(ranks), tuple(tuple(s) for s in shapes)
        if min_rank is not None:
            wanted = f"at least {min_rank}-D (Unsqueeze it first)"
        elif self.ranks:
            wanted = " or ".join(f"{r}-D" for r in self.ranks)
        else:
            wanted = " or ".join(str(list(s)) for s in self.shapes)
        self._refuse(node, op_type,
                         f"{_where(node, op_type)}: its input {input} of shape "
                         f"{list(self.shape)} is not supported; it must be {wanted}")


class UnsupportedInputError(UnsupportedOperatorError):
    """An input of ``node`` polyopt.graph cannot take: ``problem`` is ``"optional"`` (an
    optional input it does not read) or ``"constant"`` (an input it must know at
    compile time, given as a tensor computed at run time); ``input``: its role,
    ``tensor``: the graph tensor's name."""

    PROBLEMS = {
        "optional": "the input {input} is not supported; remove it from the model",
        "constant": "its input {input} ('{tensor}') must be a constant (polyopt.graph "
                    "needs static shapes)",
    }

    def __init__(self, node: str, op_type: str, problem: str, input: str, tensor: str = ""):
        self.problem, self.input, self.tensor = problem, input, tensor
        self._refuse(node, op_type, f"{_where(node, op_type)}: " +
                         self.PROBLEMS[problem].format(input=input, tensor=tensor))


class UnsupportedCombinationError(UnsupportedOperatorError):
    """Values of several attributes (``attributes``: name -> value) that polyopt.graph
    does not compute together; ``problem`` in :attr:`PROBLEMS` says why."""

    PROBLEMS = {
        "partial_window": "ceil_mode=1 with count_include_pad=1 and a partial last window "
                          "is not supported; pad the input explicitly instead",
        "dilated_padding": "dilations with padding and count_include_pad=0 are not "
                           "supported; pad the input explicitly instead",
        "wide_pads": "mode={mode} with pads {pads} wider than the input {shape} allows is "
                     "not supported (at most {most} on that axis)",
        "gather_indices": "{count} indices that are not an arithmetic progression are not "
                          "supported (at most {most}); gather fewer indices per node",
        "paired_recurrence": "the paired LSTM recurrence needs an even sequence and a block "
                             "dividing {gates} gate columns, got seq={seq}, block={block}; "
                             "use recurrence()",
    }

    def __init__(self, node: str | None, op_type: str, problem: str, **attributes):
        self.problem, self.attributes = problem, dict(attributes)
        text = self.PROBLEMS[problem].format(**attributes)
        self._refuse(node, op_type, f"{_where(node, op_type)}: {text}")


class RecurrenceAttributeError(UnsupportedOperatorError):
    """An attribute of a recurrence (LSTM, GRU, RNN) with a value ONNX does not define:
    ``problem`` in :attr:`PROBLEMS`, ``attribute`` the attribute, ``details`` the values
    involved."""

    PROBLEMS = {
        "activation_count": "activations={names} must name {count} functions per direction "
                            "({total} for {directions} direction(s))",
        "unknown_activation": "the activation {name!r} in activations is not supported; "
                              "supported: {supported}",
        "clip": "clip={clip} must be a positive threshold",
        "direction": "direction={direction!r} must be 'forward', 'reverse' or "
                     "'bidirectional'",
        "layout": "layout={layout!r} must be 0 or 1",
    }
    ATTRIBUTES = {"activation_count": "activations", "unknown_activation": "activations",
                  "clip": "clip", "direction": "direction", "layout": "layout"}

    def __init__(self, node: str, op_type: str, problem: str, **details):
        self.problem, self.details = problem, dict(details)
        self.attribute = self.ATTRIBUTES[problem]
        text = self.PROBLEMS[problem].format(**details)
        self._refuse(node, op_type, f"{_where(node, op_type)}: {text}")


class OptionalOutputsError(UnsupportedOperatorError):
    """``node`` asks for ``asked`` outputs; polyopt.graph computes ``computed``."""

    def __init__(self, node: str, op_type: str, asked: int, computed: int):
        self.asked, self.computed = asked, computed
        self._refuse(node, op_type, f"{_where(node, op_type)} asks for {asked} outputs; "
                         f"polyopt.graph computes {computed} (optional outputs are not "
                         "supported); remove the others from the model")


class NotFusableError(UnsupportedOperatorError):
    """An opaque operator (LSTM, GRU, RNN) asked for a tensor-expression lowering, which
    it does not have (the executor runs it as a kernel of its own)."""

    def __init__(self, node: str, op_type: str):
        self._refuse(node, op_type, f"{_where(node, op_type)} cannot be fused; "
                         "compile it as a group of its own")


class OpsetError(UnsupportedOperatorError):
    """A model of ``version`` of the default ONNX domain (None: it imports none) that
    onnx's version converter cannot bring to ``target`` (``cause``: its error)."""

    def __init__(self, version: int | None, target: int, cause: BaseException | None = None):
        self.version, self.target, self.cause = version, target, cause
        if version is None:
            text = ("the model imports no opset of the default ONNX domain; polyopt.graph "
                    "reads models of the default domain")
        else:
            said = str(cause).strip().splitlines()[0] if str(cause).strip() else "no message"
            text = (f"the model uses opset {version} of the default ONNX domain and onnx's "
                    f"version converter cannot bring it to opset {target} "
                    f"({type(cause).__name__}: {said}); export the model at opset 13 or later")
        self._refuse(None, None, text)


class ConstantFoldError(UnsupportedOperatorError):
    """``node``, all of whose inputs are constants, cannot be evaluated at import
    (``cause``: the reference evaluator's error)."""

    def __init__(self, node: str, op_type: str, cause: BaseException):
        self.cause = cause
        self._refuse(node, op_type, f"{_where(node, op_type)} of constant inputs cannot "
                         f"be evaluated at import ({type(cause).__name__}: {cause}); "
                         "simplify the model (onnxsim) first")


class EinsumEquationError(UnsupportedOperatorError):
    """An Einsum polyopt.graph does not compute: ``equation`` and ``problem`` in
    :attr:`PROBLEMS`; ``details`` the letters, terms, sizes or dtypes involved (for a
    ``"malformed"`` equation, ``faults``: pairs of a key of :attr:`FAULTS` and the term,
    or the term and input counts, it is about)."""

    FAULTS = {
        "operands": "it has {0} operand term(s) for {1} input(s)",
        "characters": "the term '{0}' is not letters with at most one '...'",
        "diagonal": "the term '{0}' repeats a letter (a diagonal or trace, which "
                    "polyopt.graph does not compute)",
    }

    PROBLEMS = {
        "malformed": "the equation '{equation}' is not supported: {problems}",
        "unknown_letters": "the output of '{equation}' names {letters}, which no operand has",
        "term_shape": "the term '{term}' does not fit the input '{input}' of shape {shape}",
        "letter_sizes": "the letter '{letter}' has sizes {sizes[0]} and {sizes[1]} in "
                        "'{equation}'",
        "no_broadcast": "the '...' dimensions {shapes} do not broadcast",
        "mixed_dtypes": "its inputs have different dtypes {dtypes}; Cast them to one dtype "
                        "first",
        "missing": "the attribute 'equation' is missing",
        "sums_ellipsis": "'{equation}' sums over the '...' dimensions, which polyopt.graph "
                         "does not compute; keep '...' in the output",
    }

    def __init__(self, node: str, problem: str, equation=None, **details):
        self.problem, self.equation, self.details = problem, equation, dict(details)
        if problem == "malformed":
            details = {"problems": "; ".join(
                self.FAULTS[key].format(*(value if isinstance(value, tuple) else (value,)))
                for key, value in details["faults"])}
        text = self.PROBLEMS[problem].format(equation=equation, **details)
        self._refuse(node, "Einsum", f"{_where(node, 'Einsum')}: {text}")


class KernelSignatureError(UnsupportedOperatorError):
    """A compiled kernel of ``group`` (operators ``ops``) whose arguments are not the
    graph's tensors: ``problem`` is ``"count"``, ``"dtype"`` or ``"shape"``, for the
    tensor ``tensor``; ``expected`` what the graph passes, ``got`` what the kernel takes."""

    PROBLEMS = {
        "count": "its kernel takes {got} arguments, the graph passes {expected}; this model "
                 "is not supported",
        "dtype": "its kernel computes {got} for '{tensor}', which the graph says is "
                 "{expected}: {ops} on {expected} tensors is not supported; cast the "
                 "model's tensors to float32",
        "shape": "its kernel takes '{tensor}' as {got}, the graph's tensor is {expected}; "
                 "this model is not supported",
    }

    def __init__(self, group: str, ops: str, problem: str, *, tensor: str | None = None,
                 expected=None, got=None):
        self.group, self.ops, self.problem = group, ops, problem
        self.tensor, self.expected, self.got = tensor, expected, got
        text = self.PROBLEMS[problem].format(got=got, expected=expected, tensor=tensor,
                                             ops=ops)
        self._refuse(None, ops, f"group '{group}' ({ops}): {text}")


class TooManyInputsError(InvalidArgumentError):
    """``node`` is given ``inputs``, more than the ``max_inputs`` its operator takes (ONNX
    would refuse the model)."""

    def __init__(self, node: str, op_type: str, max_inputs: int, inputs: tuple[str, ...]):
        self.node, self.op_type, self.max_inputs = node, op_type, max_inputs
        self.inputs = tuple(inputs)
        super().__init__(
            f"node '{node}' ({op_type}) takes at most {max_inputs} input(s), got "
            f"{len(self.inputs)} ({', '.join(n or '_' for n in self.inputs)}); remove the "
            "extra inputs (ONNX does not allow them)")


def _bytes(size: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f} {unit}"
    return f"{size} bytes"


class TensorTooLargeError(InvalidArgumentError):
    """A tensor (``tensor``, described by ``info``: dtype and shape) or the memory plan
    (``tensor`` None; ``largest``: its biggest tensors) of ``nbytes``, more than the
    ``limit`` of bytes this machine holds."""

    def __init__(self, tensor: str | None, nbytes: int, limit: int, *, info: str = "",
                 largest: tuple[str, ...] = ()):
        self.tensor, self.nbytes, self.limit, self.largest = tensor, nbytes, limit, tuple(largest)
        self.info = info
        if tensor is not None:
            text = (f"the tensor '{tensor}' ({info}) takes {_bytes(nbytes)}, more than this "
                    f"machine's memory ({_bytes(limit)}); check the model's input shapes "
                    "(set POLYOPT_MEMORY_LIMIT to allow more)")
        else:
            text = (f"the model's intermediate tensors take {_bytes(nbytes)} at once, more "
                    f"than this machine's memory ({_bytes(limit)}); the largest: "
                    f"{', '.join(self.largest)} (set POLYOPT_MEMORY_LIMIT to allow more)")
        super().__init__(text)

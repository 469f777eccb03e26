"""The activation functions of ONNX's recurrent operators (``LSTM``, ``GRU``, ``RNN``),
their ``activations``, ``activation_alpha``, ``activation_beta`` and ``clip``
attributes read per direction, as tensor-expression functions.

An activation taking parameters (``LeakyRelu``: alpha; ``HardSigmoid``: alpha, beta;
...) takes the next values of ``activation_alpha`` / ``activation_beta`` in order, or
its ONNX operator's defaults when the lists are shorter (as onnxruntime reads them).

>>> [(a.name, a.alpha, a.beta) for a in direction_activations(
...     "LSTM", ["HardSigmoid", "Tanh", "LeakyRelu"], [0.3, 0.1], [0.6], 1, "n")[0]]
[('HardSigmoid', 0.3, 0.6), ('Tanh', None, None), ('LeakyRelu', 0.1, None)]
"""

from __future__ import annotations

from dataclasses import dataclass

from ..te.tensor import abs_, exp, if_then_else, maximum, minimum, tanh
from .operators import sigmoid
from .graph_errors import RecurrenceAttributeError
from .operators_math import softplus

DEFAULTS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}
# name -> the (alpha, beta) defaults of a function with parameters (None: not taken)
PARAMETERS = {"Relu": (None, None), "Tanh": (None, None), "Sigmoid": (None, None),
              "Softsign": (None, None), "Softplus": (None, None),
              "LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None), "Elu": (1.0, None),
              "HardSigmoid": (0.2, 0.5), "Affine": (1.0, 0.0), "ScaledTanh": (1.0, 1.0)}


@dataclass(frozen=True)
class Activation:
    """One activation function: its ONNX name and parameters (None where it takes none)."""
    name: str
    alpha: float | None = None
    beta: float | None = None

    def __call__(self, x):
        a, b, name = self.alpha, self.beta, self.name
        if name == "Sigmoid":
            return sigmoid(x)
        if name == "Tanh":
            return tanh(x)
        if name == "Relu":
            return maximum(x, 0.0)
        if name == "LeakyRelu":
            return if_then_else(x >= 0.0, x, a * x)
        if name == "ThresholdedRelu":
            return if_then_else(x > a, x, 0.0 * x)
        if name == "Elu":
            return if_then_else(x >= 0.0, x, a * (exp(x) - 1.0))
        if name == "HardSigmoid":
            return maximum(minimum(a * x + b, 1.0), 0.0)
        if name == "Affine":
            return a * x + b
        if name == "ScaledTanh":
            return a * tanh(b * x)
        if name == "Softsign":
            return x / (1.0 + abs_(x))
        return softplus(x)  # (sound for large and very negative x)


def direction_activations(op: str, names, alphas, betas, directions: int,
                          node_name: str) -> list[tuple[Activation, ...]]:
    """The activation functions of each direction of a node (``names``: the attribute
    ``activations``, None for the defaults; the functions of the forward direction
    first), refusing a name ONNX does not define and a list of the wrong length."""
    count = len(DEFAULTS[op])
    if names is None:
        names = list(DEFAULTS[op]) * directions
    names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    if len(names) != count * directions:
        raise RecurrenceAttributeError(node_name, op, "activation_count", names=names,
                                       count=count, total=count * directions,
                                       directions=directions)
    lookup = {k.lower(): k for k in PARAMETERS}
    alphas, betas = list(alphas or []), list(betas or [])
    functions = []
    for name in names:
        known = lookup.get(name.lower())
        if known is None:
            raise RecurrenceAttributeError(node_name, op, "unknown_activation", name=name,
                                           supported=", ".join(PARAMETERS))
        alpha, beta = PARAMETERS[known]
        if alpha is not None and alphas:
            alpha = float(alphas.pop(0))
        if beta is not None and betas:
            beta = float(betas.pop(0))
        functions.append(Activation(known, alpha, beta))
    return [tuple(functions[d * count:(d + 1) * count]) for d in range(directions)]


def clipped(x, clip):
    """``x`` clipped to ``[-clip, clip]`` (the ``clip`` attribute; None: unchanged)."""
    return x if clip is None else minimum(maximum(x, -float(clip)), float(clip))


def check_clip(op: str, clip, node_name: str):
    """``clip`` as a float, refusing a value that is not positive."""
    if clip is None:
        return None
    if not float(clip) > 0:
        raise RecurrenceAttributeError(node_name, op, "clip", clip=clip)
    return float(clip)

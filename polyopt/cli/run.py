"""polyopt run: compile an ONNX model with polyopt.graph and run it on .npy inputs.

--input takes x.npy for a model with one input, or NAME=x.npy per input; --output
out.npz saves the outputs; --draw model.svg writes the picture of the fused groups and
the memory plan; --offload conv_int8=accel runs the int8 convolutions on the simulated
accelerator and prints each one's counters and cycles.  A progress bar shows while the
kernels compile when standard error is a terminal.

Examples:

    python examples/tiny_model.py tiny.onnx
    python -c "import numpy; numpy.save('x.npy', numpy.ones((1, 3, 16, 16), 'float32'))"
    polyopt run tiny.onnx --input x.npy --threads 2 --profile
    polyopt run tiny.onnx --input input=x.npy --output out.npz --draw tiny.svg
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from .help import help_text
from ..errors import InvalidArgumentError


def add_parser(commands) -> None:
    parser = commands.add_parser("run", help="compile an ONNX model and run it on .npy inputs",
                                 **help_text(__doc__))
    parser.add_argument("model", help="the .onnx file")
    parser.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                        help="an input array (repeat for several inputs)")
    parser.add_argument("--threads", type=int, default=0, help="threads (0: all cores)")
    parser.add_argument("--profile", action="store_true", help="print the time of each group")
    parser.add_argument("--output", help="save the outputs to this .npz file")
    parser.add_argument("--draw", help="write the graph's picture (.svg, .png or .dot)")
    parser.add_argument("--offload", action="append", default=[], metavar="OPS=TARGET",
                        help="run these operators on a device: conv_int8=accel")
    parser.set_defaults(run=run)


def _load(path: str) -> np.ndarray:
    try:
        return np.load(path)
    except (OSError, ValueError) as err:
        raise InvalidArgumentError(f"cannot read the input array {path!r}: {err}") from err


def _check_writable(path: str | None, what: str) -> None:
    """Refuse, before the model is compiled, an output whose folder is not writable."""
    if not path:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise InvalidArgumentError(f"cannot write {what} {path!r}: the folder {folder} does "
                                   "not exist or is not writable")


def _save(path: str, outputs: dict) -> None:
    try:
        np.savez(path, **outputs)
    except OSError as err:
        raise InvalidArgumentError(f"cannot write the outputs to {path!r}: {err}") from err


def run(args) -> int:
    from .. import graph

    _check_writable(args.output, "the outputs to")
    _check_writable(args.draw, "the picture to")
    g = graph.from_onnx(args.model)
    feeds = {}
    for item in args.input:
        name, _, path = item.rpartition("=")
        if not name:
            if len(g.inputs) != 1:
                raise InvalidArgumentError(
                    f"the model has inputs {g.inputs}: pass --input NAME=FILE.npy for each")
            name = g.inputs[0]
        feeds[name] = _load(path)
    offload = {}
    for item in args.offload:
        ops, sep, target = item.partition("=")
        if not sep:
            raise InvalidArgumentError(f"--offload takes OPS=TARGET (conv_int8=accel), got "
                                       f"{item!r}")
        offload[ops] = target
    started = time.perf_counter()
    model = graph.compile(g, num_threads=args.threads, progress=sys.stderr.isatty(),
                          offload=offload)
    print(f"compiled {len(g.nodes)} operators into "
          f"{sum(1 for s in model.steps if s.kernel is not None)} kernels in "
          f"{time.perf_counter() - started:.1f} s; {model.memory_report()}")
    started = time.perf_counter()
    outputs = model.run(feeds)
    print(f"ran in {1e3 * (time.perf_counter() - started):.2f} ms")
    for name, value in outputs.items():
        flat = ", ".join(f"{v:.5g}" for v in value.ravel()[:6])
        print(f"{name}: {value.dtype}{list(value.shape)} [{flat}{', ...' if value.size > 6 else ''}]")
    if offload:  # (graph.offload is loaded with graph.compile)
        for name, report in graph.offload.device_reports(model).items():
            print(f"{name} on the accelerator: {report}")
    if args.profile:
        print(model.profile_text(feeds))
    if args.output:
        _save(args.output, outputs)
    if args.draw:
        print(f"wrote {model.graph.draw(args.draw)}")
    return 0

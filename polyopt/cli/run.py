"""polyopt run: compile an ONNX model with polyopt.graph and run it on .npy inputs.

--input takes x.npy for a model with one input, or NAME=x.npy per input; --shape
NAME=1,3,224,224 gives an input with symbolic dimensions its sizes (by default an input
takes the shape of its array); inputs are checked against the model before it compiles;
--output
out.npz saves the outputs; --draw model.svg writes the picture of the fused groups and
the memory plan; --offload conv_int8=accel runs the int8 convolutions on the simulated
accelerator and prints each one's counters and cycles.  A progress bar shows while the
kernels compile when standard error is a terminal.

Examples:

    python examples/tiny_model.py tiny.onnx
    python -c "import numpy; numpy.save('x.npy', numpy.ones((1, 3, 16, 16), 'float32'))"
    polyopt run tiny.onnx --input x.npy --threads 2 --profile
    polyopt run tiny.onnx --input input=x.npy --output out.npz --draw tiny.svg
    polyopt run tiny.onnx --shape input=1,3,16,16 --input x.npy
"""

from __future__ import annotations

import os
import zipfile
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
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=D,D,...",
                        help="the sizes of an input with symbolic dimensions (repeatable)")
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
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:  # (EOFError: empty)
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


def parse_shape(item: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=D,D,...`` as ``(name, sizes)``; InvalidArgumentError naming the mistake."""
    name, sep, dims = item.partition("=")
    try:
        sizes = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
    except ValueError:
        sizes = None
    if not sep or not name or sizes is None or any(d < 0 for d in sizes):
        raise InvalidArgumentError(f"--shape takes NAME=D,D,... (sizes >= 0: input=1,3,224,224), "
                                   f"got {item!r}")
    return name, sizes


def _input_names(path: str) -> dict[str, bool]:
    """The inputs of the ONNX model at ``path`` (initializers excepted): whether each
    has a symbolic (or undeclared) dimension."""
    try:
        import onnx

        model = onnx.load(path, load_external_data=False)
    except ImportError:
        return {}  # from_onnx says what to install
    except Exception as err:  # noqa: BLE001  (onnx raises many kinds: say which file)
        raise InvalidArgumentError(f"cannot read the ONNX model {path!r}: {err}") from err
    initialized = {t.name for t in model.graph.initializer}
    return {v.name: not v.type.tensor_type.HasField("shape") or any(
        not d.HasField("dim_value") for d in v.type.tensor_type.shape.dim)
        for v in model.graph.input if v.name not in initialized}


def _checked_feeds(g, feeds: dict) -> None:
    """Refuse, before compiling, inputs the model does not have, lacks, or of another
    shape or dtype than the model's."""
    unknown = sorted(set(feeds) - set(g.inputs))
    if unknown:
        raise InvalidArgumentError(f"--input names {unknown}, which are not inputs of the "
                                   f"model ({', '.join(g.inputs)})")
    missing = [name for name in g.inputs if name not in feeds]
    if missing:
        raise InvalidArgumentError(f"the model's input(s) {missing} have no --input")
    for name, value in feeds.items():
        info = g.tensors[name]
        if tuple(value.shape) != tuple(info.shape) or value.dtype.name != info.dtype:
            raise InvalidArgumentError(
                f"input '{name}' must be {info}, got {value.dtype}{list(value.shape)} (checked "
                "before compiling)")


def run(args) -> int:
    from .. import graph

    _check_writable(args.output, "the outputs to")
    _check_writable(args.draw, "the picture to")
    shapes = dict(parse_shape(item) for item in args.shape)
    names = _input_names(args.model)
    feeds = {}
    for item in args.input:
        name, _, path = item.rpartition("=")
        if not name:
            if len(names) != 1:
                raise InvalidArgumentError(
                    f"the model has inputs {list(names)}: pass --input NAME=FILE.npy for each")
            name = next(iter(names))
        feeds[name] = _load(path)
    for name, value in feeds.items():
        if names.get(name):  # a symbolic dimension: the array's size
            shapes.setdefault(name, tuple(value.shape))
    g = graph.from_onnx(args.model, shapes=shapes or None)
    if feeds:
        _checked_feeds(g, feeds)
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
    if offload:
        from ..graph.offload import device_reports
        for name, report in device_reports(model).items():
            print(f"{name} on the accelerator: {report}")
    if args.profile:
        print(model.profile_text(feeds))
    if args.output:
        _save(args.output, outputs)
    if args.draw:
        print(f"wrote {model.graph.draw(args.draw)}")
    return 0

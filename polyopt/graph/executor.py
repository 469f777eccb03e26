"""``po.graph.compile``: a graph becomes fused, scheduled kernels over one memory arena.

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder()
>>> x = b.input("x", (2, 8))
>>> y = b.op("Relu", [b.op("Add", [x, b.constant("c", np.ones(8, "float32"))])])
>>> m = po.graph.compile(b.build([y]), num_threads=1)
>>> float(m.run({"x": np.zeros((2, 8), "float32")})[y].sum())
16.0
"""

from __future__ import annotations

import ctypes
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..errors import BackendError, InvalidArgumentError, public, public_methods
from ..machine import TargetInfo
from ..target.args import data_pointer
from .contracts import KernelSignatureError, check_arena, check_kernel, check_sizes
from .ir import Graph
from .lstm import LSTMRunner
from .recurrent import RecurrentRunner
from .recurrent_states import STATES, StatesRunner
from .inplace import overwritable_inputs
from .kernel_cache import KernelCache, group_signature
from .lowering import as_stored, build_group, group_arguments, lower_group, schedule_group
from .memory import MemoryPlan, plan_memory
from .offload import offload_groups
from .passes import Group, fuse, optimize
from .tuned import tuned_knobs


@dataclass
class RunStep:
    """One group at run time: its kernel (None for a view), argument names and the
    shapes the kernel sees."""

    group: Group
    kernel: object
    inputs: list[str]
    kernel_shapes: list[tuple]
    template: str
    compile_seconds: float = 0.0
    in_place: tuple = ()  # positions of inputs the kernel may write its output over


@public
def compile(g: Graph, target: str = "llvm", *, num_threads: int = 0, fuse_ops: bool = True,
            plan: bool = True, passes=True, progress: bool = False,
            cache: bool | str = True, offload: dict | None = None,
            db=None) -> "CompiledModel":
    """Compile ``g``: graph passes (constant and batch-norm folding, constant weight
    layouts), fusion (``fuse_ops``), one scheduled kernel per fused group (built for
    ``num_threads`` threads, 0: all cores) and a memory plan (``plan``; without it each
    intermediate tensor has its own buffer).  ``passes``: False skips the graph passes;
    a function from their pipeline to the one to run inserts one's own (see
    ``po.graph.passes.graph_passes``).  ``progress`` prints a progress bar to
    stderr while the kernels compile.  ``cache`` keeps the kernels in the on-disk kernel
    cache (True: ``$POLYOPT_CACHE``, by default ``~/.cache/polyopt``; a folder; False:
    none), so compiling the model again in another process loads them:
    ``m.cache_stats`` says how many were loaded and how many built.  ``target``: the
    host (``"llvm"``) or a named CPU (``"llvm -mcpu=znver4"``): layouts, tiles and kernels
    are made for that CPU; a model made for instructions this machine lacks is refused
    when run here (``BackendError``), its kernels' code can be read (``m.steps``).
    ``db``: tuning records (a :class:`polyopt.tune.RecordsDB`, from ``po.graph.tune``):
    a kernel with a record for this machine is scheduled with its best parameters (its
    step's template then ends in ``+tuned``)."""
    if not isinstance(target, str) or target.split(" ", 1)[0] != "llvm":
        raise InvalidArgumentError(
            f"po.graph.compile takes target='llvm' (this machine) or 'llvm -mcpu=NAME "
            f"[-mattr=+f,-g]' (a named CPU), got {target!r}")
    if not isinstance(g, Graph):
        raise InvalidArgumentError(f"compile needs a po.graph.Graph, got {type(g).__name__}")
    if not isinstance(cache, (bool, str, os.PathLike)):
        raise InvalidArgumentError(f"cache is True, False or a folder, got {cache!r}")
    if db is not None and type(db).__name__ != "RecordsDB":
        raise InvalidArgumentError(f"db is a po.tune.RecordsDB (tuning records), got "
                                   f"{type(db).__name__}")
    start = time.perf_counter()
    check_sizes(g)  # before anything is allocated (constant folding included)
    keep_freed_memory()
    info = TargetInfo.for_target(target)  # the machine the kernels are compiled for
    store = KernelCache(None if cache in (True, False) else os.fspath(cache), target=target,
                        disk=cache is not False)
    # (an offloaded QLinearConv stays one: the device takes it, not the VNNI kernels)
    graph = g if passes is False else optimize(  # (passes: True, or the user's edit)
        g, vnni=not offload and info.has_vnni, target_info=info,
        passes=None if passes is True else passes)
    groups, devices = offload_groups(graph, fuse(graph, enabled=fuse_ops), offload)
    steps = []
    kernels = [grp for grp in groups if grp.kind != "view"]
    for grp in groups:
        if grp.kind == "view":
            steps.append(RunStep(grp, None, grp.inputs, [], "view"))
            continue
        began = time.perf_counter()
        if grp.kind == "opaque":  # LSTM, GRU, RNN: a time loop around kernels
            node = grp.nodes[0]
            runner = (StatesRunner if node.op_type in STATES else LSTMRunner
                      if node.op_type == "LSTM" else RecurrentRunner)(
                graph, node, num_threads, cache=store, target_info=info)
            steps.append(RunStep(grp, runner, runner.inputs, runner.kernel_shapes,
                                 node.op_type.lower(), time.perf_counter() - began))
            continue
        if grp.name in devices:  # on the accelerator
            runner = devices[grp.name]
            steps.append(RunStep(grp, runner, runner.inputs, runner.kernel_shapes, "accel",
                              time.perf_counter() - began))
            continue
        kernel, template, in_place = _group_kernel(graph, grp, num_threads, store, info,
                                                   db, target)
        names, shapes = group_arguments(graph, grp.nodes, grp.output)
        check_kernel(graph, grp, kernel, names, shapes)  # it is called with raw addresses
        steps.append(RunStep(grp, kernel, names, shapes, template, time.perf_counter() - began,
                          in_place))
        if progress:
            _progress(sum(1 for s in steps if s.kernel is not None), len(kernels))
    model = CompiledModel(graph, steps, plan=plan, num_threads=num_threads)
    model.made_for(info)
    model.target, model.cache = target, cache  # (export_library builds its objects so)
    model.compile_seconds = time.perf_counter() - start
    model.cache_stats = {"loaded": store.loaded if store.disk else 0,
                         "built": store.built if store.disk else 0}
    graph.annotations.update(groups=groups, plan=model.plan, steps=steps)
    return model


def _group_kernel(graph: Graph, grp: Group, num_threads: int, store: KernelCache,
                  info, db=None, target: str = "llvm") -> tuple:
    """``(kernel, template name, overwritable inputs)`` of a group: built in this process
    already (the shared in-memory cache), loaded from the disk cache, or lowered,
    scheduled and built now (with its best tuned parameters when ``db`` has some)."""
    knobs = _tuned(graph, grp, info, db, target) if db is not None else None
    signature = group_signature(graph, grp)
    request = store.request(signature if knobs is None else
                            (signature, ("tuned", tuple(sorted(knobs.items())))),
                            num_threads)
    found = store.recall(request) or store.find(
        request, accept=lambda kernel: _fits(graph, grp, kernel))
    # (one found on disk but taking other tensors than the group's: built again)
    if found is not None:
        kernel, meta = found
        return kernel, meta.get("template", "cached"), tuple(meta.get("in_place", ()))
    lowered = lower_group(graph, grp.nodes, grp.output)
    schedule = schedule_group(lowered, grp.kind, grp.nodes, target_info=info, knobs=knobs)
    if knobs is not None:
        lowered.template += "+tuned"
    in_place = overwritable_inputs(lowered.placeholders, lowered.output, schedule)
    kernel = build_group(lowered, schedule, num_threads=num_threads, cache=store,
                         request=request, meta={"in_place": list(in_place)})
    return kernel, lowered.template, in_place


def _tuned(graph: Graph, grp: Group, info, db, target: str) -> dict | None:
    """The best recorded template parameters of a group (None: untuned)."""
    if grp.kind != "complex":
        return None
    lowered = lower_group(graph, grp.nodes, grp.output)
    schedule_group(lowered, grp.kind, grp.nodes, target_info=info)  # (names the template)
    return tuned_knobs(db, graph, grp, lowered.template, target)


def _fits(graph: Graph, grp: Group, kernel) -> bool:
    """Whether a kernel found in the disk cache takes the group's tensors."""
    names, shapes = group_arguments(graph, grp.nodes, grp.output)
    try:
        check_kernel(graph, grp, kernel, names, shapes)
    except KernelSignatureError:
        return False
    return True


def keep_freed_memory() -> None:
    """Ask glibc's malloc to keep freed memory (no ``mmap`` per large block, no trimming).
    A kernel allocates its intermediate buffers (zero padding, a convolution before its
    epilogue) on every call; served by fresh ``mmap`` pages, each call paid their page
    faults (a MobileNetV2 depthwise layer: 5.5 ms instead of 1.5 ms).  Like the caching
    allocators of onnxruntime and PyTorch, the process then reuses that memory.  Set
    ``POLYOPT_KEEP_MALLOC=1`` to leave malloc as it is."""
    if os.environ.get("POLYOPT_KEEP_MALLOC") or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def _progress(done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\rcompiling [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


@public_methods
class CompiledModel:
    """``m.run({name: array}) -> {output name: array}``; ``m.profile(inputs)`` times
    each fused group; ``m.plan`` is the memory plan and ``m.memory_report()`` says it."""

    def __init__(self, graph: Graph, steps: list[RunStep], *, plan: bool = True,
                 num_threads: int = 0):
        self.graph = graph
        self.steps = steps
        self.num_threads = num_threads
        self.compile_seconds = 0.0
        self.cache_stats = {"loaded": 0, "built": 0}
        self.compiled_for: TargetInfo | None = None  # the CPU the kernels were made for
        self.target, self.cache = "llvm", True  # compile's target and cache arguments
        self._foreign: str | None = None  # why this CPU cannot run them (made_for)
        self.in_place: dict[str, str] = {}  # output -> the input whose buffer it takes
        self.root = self._aliases(plan)
        self.plan = self._plan()
        self._check_memory(plan)
        self._lock = threading.Lock()  # one run at a time uses the arena
        self._buffers = self._allocate(plan)
        self._calls = self._bind()
        self._pool_session: tuple | None = None  # see _session_calls

    @property
    def groups(self) -> list[Group]:
        return [s.group for s in self.steps]

    def _aliases(self, planned: bool) -> dict[str, str]:
        """Each intermediate tensor -> the tensor whose buffer holds it: views share
        their input's buffer, and (when ``planned``) a kernel writes its output over an
        input it may overwrite (:mod:`.inplace`) when that input is an intermediate
        tensor of the same size read by no later step.  ``self.in_place`` lists those."""
        g = self.graph
        view_root: dict[str, str] = {}
        for step in self.steps:
            out = step.group.output
            is_view = step.kernel is None and step.inputs
            view_root[out] = view_root.get(step.inputs[0], step.inputs[0]) if is_view else out
        last_read = {}
        for index, step in enumerate(self.steps):
            for name in step.inputs:
                last_read[view_root.get(name, name)] = index
        intermediate = {s.group.output for s in self.steps
                        if s.kernel is not None and s.group.output not in g.outputs}
        root: dict[str, str] = {}
        buffer_last: dict[str, int] = {}  # a shared buffer's last reader so far
        for index, step in enumerate(self.steps):
            out = step.group.output
            if step.kernel is None and step.inputs:
                root[out] = root.get(step.inputs[0], step.inputs[0])
                continue
            root[out] = out
            for position in step.in_place if planned and out in intermediate else ():
                source = root.get(step.inputs[position], step.inputs[position])
                if any(root.get(name, name) == source for k, name in enumerate(step.inputs)
                       if k != position):
                    continue  # also read through another argument (a view of it)
                if source in intermediate and g.tensors[source].nbytes == \
                        g.tensors[out].nbytes and \
                        buffer_last.get(source, last_read.get(source)) == index:
                    root[out] = source
                    buffer_last[source] = last_read.get(out, index)
                    self.in_place[out] = step.inputs[position]
                    break
        return root

    def _plan(self) -> MemoryPlan:
        g = self.graph
        planned = {s.group.output for s in self.steps
                   if s.kernel is not None and s.group.output not in g.outputs}
        first, last = {}, {}
        for index, step in enumerate(self.steps):
            for name in [*step.inputs, step.group.output]:
                r = self.root.get(name, name)
                if r in planned:
                    first.setdefault(r, index)
                    last[r] = index
        return plan_memory([(r, first[r], last[r], g.tensors[r].nbytes) for r in first],
                           in_place=[(name, source, g.tensors[name].nbytes)
                                     for name, source in self.in_place.items()])

    def _check_memory(self, planned: bool) -> None:
        """Refuse a plan (or, unplanned, buffers) larger than the machine's memory."""
        sizes = self.plan.sizes
        total = self.plan.arena_bytes if planned else sum(sizes.values())
        largest = sorted(sizes, key=lambda n: -sizes[n])[:3]
        check_arena(total, [f"'{n}' {self.graph.tensors[n]}" for n in largest])

    def _allocate(self, planned: bool) -> dict[str, np.ndarray]:
        g = self.graph
        buffers = {}
        arena = np.empty(self.plan.arena_bytes if planned else 0, np.uint8)
        self.arena = arena
        for name in self.plan.offsets:
            info = g.tensors[name]
            if planned:
                buffers[name] = np.ndarray(info.shape, info.dtype, buffer=arena,
                                           offset=self.plan.offsets[name])
            else:
                buffers[name] = np.empty(info.shape, info.dtype)
        for name in self.in_place:  # written over the buffer of the tensor it replaces
            info = g.tensors[name]
            buffers[name] = buffers[self.root[name]].view(np.uint8).reshape(-1)[
                :info.nbytes].view(info.dtype).reshape(info.shape)
        return buffers

    def _inputs(self, feeds: dict) -> dict[str, np.ndarray]:
        self._check_machine()
        g = self.graph
        if not isinstance(feeds, dict):
            raise InvalidArgumentError("run needs a dict {input name: numpy array}")
        if len(feeds) != len(g.inputs) or not all(n in feeds for n in g.inputs):
            missing = [n for n in g.inputs if n not in feeds]
            unknown = [n for n in feeds if n not in g.inputs]
            raise InvalidArgumentError(
                f"the model's inputs are {g.inputs}; missing {missing}, unknown {unknown}")
        values = {}
        for name in g.inputs:
            info, array = g.tensors[name], feeds[name]
            if type(array) is not np.ndarray or not array.flags.c_contiguous:
                array = np.asarray(array, order="C")  # (ascontiguousarray makes 0-d 1-D)
            if array.shape != info.shape or array.dtype != info.dtype:
                raise InvalidArgumentError(
                    f"input '{name}' must be {info}, got {array.dtype}{list(array.shape)}")
            values[name] = array
        return values

    def made_for(self, info: TargetInfo) -> None:
        """Record that the kernels were made for ``info``: if this CPU lacks some of its
        features, ``run`` refuses (the executor calls kernels by address; they would die
        of an illegal instruction).  Worked out once, not on every run."""
        self.compiled_for = info
        missing = info.missing_on_host()
        self._foreign = None if not missing else (
            f"this model was compiled for {info.name}; its kernels may use "
            f"{', '.join(missing)}, which this CPU ({TargetInfo.host().name}) lacks: "
            "compile it for this machine (target='llvm') to run it here")

    def _check_machine(self) -> None:
        if self._foreign is not None:
            raise BackendError(self._foreign)

    def _bind(self) -> list[tuple]:
        """Per step, what ``run`` does, with the addresses of the arrays that are the same
        in every run (constants, arena buffers, views of them: ``self._fixed``) taken
        once: ``(step, pointers)``, ``pointers`` listing the kernel's arguments, each an
        address or the name of a tensor known only at run time (an input, an output, a
        view of one); ``(step, None)`` for a step run as ``_run`` runs it (views of
        run-time tensors, kernels without ``call_pointers``, non-contiguous constants).
        Python costs about 10 us less per kernel (0.5 ms per run of MobileNetV2)."""
        g = self.graph
        fixed = {name: value for name, value in g.constants.items()
                 if isinstance(value, np.ndarray) and value.flags.c_contiguous}
        fixed.update(self._buffers)
        calls = []
        for step in self.steps:
            out_name = step.group.output
            names = [*step.inputs, out_name]
            if step.kernel is None and step.inputs[0] in fixed and out_name not in g.outputs:
                fixed[out_name] = fixed[step.inputs[0]].reshape(g.tensors[out_name].shape)
            elif step.kernel is None or not hasattr(step.kernel, "call_pointers") or any(
                    n not in fixed and n in g.constants for n in names):
                calls.append((step, None))
            else:
                calls.append((step, [data_pointer(fixed[n]) if n in fixed else n
                                     for n in names]))
        self._fixed = fixed
        return calls

    def run(self, feeds: dict) -> dict[str, np.ndarray]:
        """The model's outputs on the inputs ``feeds`` ({name: array}).

        Safe to call from several threads: the runs of one model take turns (they
        share its arena of intermediate tensors); to run a model on several threads
        at once, compile it once per thread (the kernels are compiled once per process
        and shared)."""
        values = self._inputs(feeds)  # the tensors known only at run time
        with self._lock:
            session = self._session_calls()
            if session:
                session[0]()
            try:
                for step, pointers in self._calls:
                    if pointers is None:
                        self._run_step(step, values)
                        continue
                    if any(type(p) is str for p in pointers):
                        pointers = [self._new_address(p, values) if type(p) is str else p
                                    for p in pointers]
                    step.kernel.call_pointers(pointers)
            finally:
                if session:
                    session[1]()
        return {name: self._lookup(name, values) for name in self.graph.outputs}

    def _session_calls(self) -> tuple:
        """``(begin, end)`` of the thread pool's session (:meth:`_session`, without its
        context manager and its look-up of the pool's threads: a few microseconds per
        run) when the kernels may run on several threads, else ``()``; worked out once
        when the model's thread count is fixed."""
        if self._pool_session is not None:
            return self._pool_session
        from ..target.llvm.threadpool import pool_threads, session_calls

        calls = session_calls() if pool_threads(self.num_threads) > 1 else ()
        if self.num_threads > 0:
            self._pool_session = calls
        return calls

    def _session(self):
        """The thread pool's workers stay awake between the kernels of a run (woken by
        the first parallel kernel, not by each: see
        :func:`~polyopt.target.llvm.threadpool.parallel_session`)."""
        from ..target.llvm.threadpool import parallel_session  # (the compiler: on first run)

        return parallel_session(self.num_threads)

    def _lookup(self, name: str, values: dict) -> np.ndarray:
        """The array of tensor ``name``: a run-time one, or a buffer, view or constant."""
        found = values.get(name)
        if found is None:
            found = self._fixed.get(name)
        return found if found is not None else self.graph.constants[name]

    def _new_address(self, name: str, values: dict) -> int:
        """The address of a run-time tensor (a new array for an output not made yet)."""
        if name not in values:
            info = self.graph.tensors[name]
            values[name] = np.empty(info.shape, info.dtype)
        return data_pointer(values[name])

    def _run(self, feeds: dict, times: list | None) -> dict:
        """Every tensor's array after a run (``times``: filled with each step's time)."""
        values = dict(self.graph.constants)
        values.update(self._inputs(feeds))
        with self._lock, self._session():
            for step in self.steps:
                started = time.perf_counter() if times is not None else 0.0
                self._run_step(step, values)
                if times is not None:
                    times.append(time.perf_counter() - started)
        return values

    def _run_step(self, step: RunStep, values: dict) -> None:
        """Run one step, its output stored in ``values``."""
        g = self.graph
        out_name = step.group.output
        info = g.tensors[out_name]
        if step.kernel is None:
            source = self._lookup(step.inputs[0], values).reshape(info.shape)
            values[out_name] = source.copy() if out_name in g.outputs else source
            return
        out = self._buffers.get(out_name)
        if out is None:
            out = np.empty(info.shape, info.dtype)
        args = [self._lookup(n, values).reshape(shape)
                for n, shape in zip(step.inputs, step.kernel_shapes)]
        # the arrays have the kernel's shapes and dtypes by construction: when
        # they are contiguous, call with their addresses (a checked call costs
        # about 20 us, 1 ms per run of a model of 50 kernels); the in-place
        # arguments share memory, as the exact accesses allow
        if hasattr(step.kernel, "call_pointers") and (
                out_name in self.in_place or all(a.flags.c_contiguous for a in args)):
            step.kernel.call_pointers([data_pointer(a) for a in args] + [data_pointer(out)])
        else:
            step.kernel(*map(as_stored, args), as_stored(out.reshape(step.kernel_shapes[-1])))
        values[out_name] = out

    def profile(self, feeds: dict, *, repeat: int = 10) -> list[dict]:
        """The median time of each fused group over ``repeat`` runs, slowest first:
        ``[{"group", "ops", "template", "ms"}, ...]``; ``print(m.profile_text(...))``."""
        samples = []
        for _ in range(repeat):
            times: list[float] = []
            self._run(feeds, times)
            samples.append(times)
        rows = [{"group": s.group.name, "ops": "+".join(s.group.op_types),
                 "template": s.template,
                 "ms": 1e3 * statistics.median(t[k] for t in samples)}
                for k, s in enumerate(self.steps)]
        return sorted(rows, key=lambda r: -r["ms"])

    def profile_text(self, feeds: dict, *, repeat: int = 10) -> str:
        rows = self.profile(feeds, repeat=repeat)
        total = sum(r["ms"] for r in rows)
        lines = [f"{'group':<24} {'ms':>8} {'share':>6}  template          ops"]
        for r in rows:
            lines.append(f"{r['group']:<24} {r['ms']:8.3f} {r['ms'] / total:6.1%}  "
                         f"{r['template']:<17} {r['ops']}")
        lines.append(f"{'total':<24} {total:8.3f}")
        return "\n".join(lines)

    def memory_report(self) -> str:
        return self.plan.report()

    def export_library(self, folder, *, name: str = "model", source=None,
                       weights: str = "file") -> dict:
        """Write the model as a C library into ``folder``: ``lib<name>.so``,
        ``lib<name>.a``, ``<name>.h`` (its C API), ``<name>.weights`` (or, with
        ``weights="embedded"``, the weights inside the library) and ``manifest.json``
        (returned); see :mod:`polyopt.deploy` and docs/deploy.md.  ``source``: the ONNX
        model (path or bytes) the manifest hashes."""
        from ..deploy.export import export_model

        return export_model(self, folder, name=name, source=source, weights=weights)

    def __repr__(self) -> str:
        kernels = sum(1 for s in self.steps if s.kernel is not None)
        return (f"<CompiledModel {self.graph.name}: {len(self.graph.nodes)} operators in "
                f"{kernels} kernels; {self.plan.report()}>")

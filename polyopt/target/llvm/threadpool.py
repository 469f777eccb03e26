"""polyopt's thread pool: the runtime that runs parallel loops, written in LLVM IR.

``polyopt_parallel(fn, data, threads)`` runs ``fn(data)`` on the calling thread and on up
to ``threads - 1`` pool workers, and returns once every thread that entered ``fn`` has
left it; ``fn`` takes its iterations from a counter in ``data`` (:mod:`.parallel`), so
the caller alone may run them all.  That is the difference with libgomp, which it
replaces: the caller never waits for a worker to wake up.  A parallel region that ends
before a sleeping worker is awake does not wait for it (libgomp's team join did, on every
region: about 55 us per region with ``OMP_WAIT_POLICY=PASSIVE``, 2 threads, this machine
kind, against 0.3 ms for an int8 conv layer); a worker that wakes late finds the region
closed and sleeps again.

- Threads: ``polyopt_threads(requested)`` is ``requested`` when positive, else
  ``OMP_NUM_THREADS``, else the online CPUs.  Workers are created on first need and live
  as long as the process (after a ``fork``, the child makes its own).
- Waiting: an idle worker spins a little (none with ``OMP_WAIT_POLICY=PASSIVE``,
  ``POLYOPT_SPIN`` pause instructions if set, else 20,000) and then sleeps on a futex.
- Sessions: between ``polyopt_session_begin()`` and ``polyopt_session_end()`` (a kernel
  that runs several parallel loops per call, a model's run: :func:`parallel_session`)
  a worker woken by a region waits for the next one spinning, whatever the wait
  policy, up to ``POLYOPT_SESSION_SPIN`` pauses (default :data:`SESSION_SPIN`, about
  0.1 ms: the gaps between a model's kernels), then sleeps: on a loaded machine, where
  the process's threads share its slice of the cores, a worker spinning 2 ms after
  each region took them from the caller (ResNet-18 on 2 threads at load 3.5: 88 ms a
  run with 50,000 pauses, 73 ms with 2,000).  Without a session a short kernel's
  second loop would start before a worker woken for its first is awake (about 50 us
  on this machine kind under ``PASSIVE``).  A session wakes nobody itself: in a
  model whose kernels run on one thread (an LSTM's), workers spinning through the
  run took CPU time from the caller on a loaded machine (its latencies' mean twice
  their median).
- Draining: the caller, done with the pieces, waits for the workers still running
  theirs: it spins ``POLYOPT_DRAIN_SPIN`` pauses (default :data:`DRAIN_SPIN`), then
  sleeps on a futex that the last worker to leave wakes.  On a loaded machine a worker
  may lose its core while it runs its last piece: a caller spinning on the other core
  kept that core busy while the worker waited for its own (multi-millisecond stalls
  were measured); a sleeping caller leaves its core idle, and the kernel moves the
  waiting worker there.
- Backing off: when the caller of a region waited for a worker's last piece longer
  than it worked itself (a worker that lost its core: the region took longer than on
  the caller alone), the next regions, for ``POLYOPT_STALL_BACKOFF`` times that wait
  (default :data:`STALL_BACKOFF`; 0: never; doubled for each stall in a row), run on
  their caller alone; then the workers are tried again.  It limits, but does not undo,
  what a loaded machine costs fine-grained regions: with every core busy, a 2-thread
  LSTM time step (a parallel matrix-vector product, 32 regions a call) took 2.1x its
  1-thread time without the back-off, 1.9x with it (and 1.2x with a factor of 1000).
- A region started while the pool is busy (a parallel loop called from a worker, or
  from two Python threads at once) runs on its caller alone.

The JIT links kernels against one copy per process (:func:`load_threadpool`); shared
libraries get the object of :func:`threadpool_object` linked in.

>>> load_threadpool() > 0
True
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import platform

from llvmlite import ir

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
REGION_FN = ir.FunctionType(ir.VoidType(), [PTR]).as_pointer()  # prints as ptr
ENTRY_POINTS = ("polyopt_parallel", "polyopt_threads", "polyopt_session_begin",
                "polyopt_session_end", "polyopt_set_threads")
DEFAULT_SPIN = 20_000
DRAIN_SPIN = 4_000  # pauses (about 45 ns each here) the caller spins before it sleeps
SESSION_SPIN = 2_000  # pauses (about 0.1 ms) a worker spins for the next region in a session
STALL_BACKOFF = 16  # after a stall, regions run alone for this many times its wait
MAX_STALL_LEVEL = 8  # ... doubled for each stall in a row, up to 2^8 times
MIN_STALL = 1 << 12  # cycles (about 1 us): shorter waits are no stall
# the futex system call's number, and its operations on a process-private word
FUTEX_SYSCALL = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98, "riscv64": 98}
FUTEX_WAIT, FUTEX_WAKE = 128, 129
SC_NPROCESSORS_ONLN = 84  # glibc's sysconf name
CLOSED = 1 << 31  # in the state word: no thread may enter the region any more
ACTIVE = CLOSED - 1  # the state word's count of workers inside the region


def runtime_ir() -> str:
    """The runtime's LLVM IR module, as text."""
    return str(_Runtime().module)


@functools.cache
def load_threadpool() -> int:
    """JIT-compile the runtime once and let later JIT-compiled code call it; returns the
    address of ``polyopt_parallel``."""
    import llvmlite.binding as llvm

    from .jit import HOST, parse, target_machine

    engine = llvm.create_mcjit_compiler(parse(runtime_ir()), target_machine(HOST))
    engine.finalize_object()
    addresses = {name: engine.get_function_address(name) for name in ENTRY_POINTS}
    for name, address in addresses.items():
        llvm.add_symbol(name, address)
    _ENGINES.append(engine)  # the pool's code lives as long as the process
    _ADDRESSES.update(addresses)
    return addresses["polyopt_parallel"]


_ENGINES: list = []
_ADDRESSES: dict[str, int] = {}


@functools.cache
def _entry(name: str, restype, *argtypes):
    """The JIT-compiled runtime's function ``name``, callable from Python."""
    load_threadpool()
    return ctypes.CFUNCTYPE(restype, *argtypes)(_ADDRESSES[name])


def pool_threads(requested: int = 0) -> int:
    """The threads a parallel loop built with ``num_threads=requested`` runs on.

    >>> pool_threads(3)
    3
    """
    return _entry("polyopt_threads", ctypes.c_int32, ctypes.c_int32)(requested)


@contextlib.contextmanager
def parallel_session(threads: int = 0):
    """Keep the pool's workers awake across the parallel loops run inside: woken by the
    first, they wait for each next loop spinning (a while) instead of sleeping (see the
    module doc); nothing happens when the loops run on ``pool_threads(threads) == 1``
    thread.

    >>> with parallel_session(2):
    ...     pass
    """
    if pool_threads(threads) <= 1:
        yield
        return
    _entry("polyopt_session_begin", None)()
    try:
        yield
    finally:
        _entry("polyopt_session_end", None)()


def session_calls() -> tuple:
    """``(begin, end)``: :func:`parallel_session`'s two calls, as functions without
    arguments (for a caller that knows that its loops run on several threads)."""
    return _entry("polyopt_session_begin", None), _entry("polyopt_session_end", None)


@functools.cache
def threadpool_object() -> bytes:
    """The runtime as a position-independent object, to link into shared libraries
    (its two entry points are weak: several such objects link into one program).  It
    is compiled for the architecture's generic CPU, so a library built for another CPU
    than this one can load it."""
    from .jit import CPU, object_code, parse

    return object_code(parse(runtime_ir()), CPU("generic"))


def runtime_objects(codes, folder: str) -> list[str]:
    """``[path]`` of the runtime's object written in ``folder`` when one of the object
    ``codes`` (bytes) calls it, else ``[]``: what a library of them must link too."""
    if not any(calls_threadpool(code.decode("latin-1")) for code in codes):
        return []
    path = os.path.join(folder, "polyopt_threadpool.o")
    with open(path, "wb") as file:
        file.write(threadpool_object())
    return [path]


def calls_threadpool(text: str) -> bool:
    """Whether IR (or an object's bytes, decoded) calls the runtime."""
    return ENTRY_POINTS[0] in text


class _Runtime:
    """Builds the module: its state globals, ``polyopt_parallel``, ``polyopt_threads``
    and the worker loop."""

    def __init__(self):
        self.module = ir.Module(name="polyopt_threadpool")
        self.state = self._global("state", I64)  # region << 32 | CLOSED | active workers
        self.futex = self._global("futex", I32)  # the region's low 32 bits, to sleep on
        self.sleepers = self._global("sleepers", I32)
        self.busy = self._global("busy", I32)
        self.fn = self._global("fn", PTR)
        self.data = self._global("data", PTR)
        self.allowed = self._global("allowed", I32)  # workers the region lets in
        self.workers = self._global("workers", I32)
        self.pid = self._global("pid", I32)
        self.spin = self._global("spin", I32, -1)
        self.default_threads = self._global("default_threads", I32)
        self.sessions = self._global("sessions", I32)  # open sessions: workers stay awake
        self.drain_futex = self._global("drain_futex", I32)  # the caller sleeps on it
        self.caller_waits = self._global("caller_waits", I32)  # the caller sleeps: wake it
        self.drain_spin = self._global("drain_spin", I32, -1)
        self.session_spin = self._global("session_spin", I32, -1)
        self.backoff = self._global("backoff", I32, -1)
        self.alone_until = self._global("alone_until", I64)  # a cycle count: see _back_off
        self.stalls = self._global("stalls", I64)  # stalls in a row (see _back_off)
        machine = platform.machine().lower()
        self.futex_call = FUTEX_SYSCALL.get(machine)
        self.x86 = machine in ("x86_64", "amd64")
        self._declare_libc()
        self._threads()
        self._worker()
        self._parallel()
        self._sessions()

    # --- helpers ---------------------------------------------------------------
    def _global(self, name: str, typ, value=0):
        var = ir.GlobalVariable(self.module, typ, name=f"polyopt.pool.{name}")
        var.linkage = "internal"
        var.initializer = ir.Constant(typ, None if typ is PTR else value)
        if name == "state":
            var.align = 64
        return var

    def _declare(self, name, ret, args, var_arg=False):
        return ir.Function(self.module, ir.FunctionType(ret, args, var_arg=var_arg), name=name)

    def _declare_libc(self):
        self.getenv = self._declare("getenv", PTR, [PTR])
        self.atoi = self._declare("atoi", I32, [PTR])
        self.strcmp = self._declare("strcmp", I32, [PTR, PTR])
        self.sysconf = self._declare("sysconf", I64, [I32])
        self.getpid = self._declare("getpid", I32, [])
        self.pthread_create = self._declare("pthread_create", I32, [PTR, PTR, PTR, PTR])
        self.pthread_detach = self._declare("pthread_detach", I32, [I64])
        self.syscall = self._declare("syscall", I64, [I64], var_arg=True)
        self.usleep = self._declare("usleep", I32, [I32])
        if self.x86:
            self.pause = self._declare("llvm.x86.sse2.pause", ir.VoidType(), [])
        # cycles (0 where the machine has no counter: then no back-off)
        self.clock = self._declare("llvm.readcyclecounter", I64, [])

    def _string(self, text: str):
        data = bytearray(text.encode() + b"\0")
        var = ir.GlobalVariable(self.module, ir.ArrayType(I8, len(data)),
                                name=f"polyopt.pool.str.{len(self.module.globals)}")
        var.linkage, var.global_constant = "internal", True
        var.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        return var

    @staticmethod
    def _load(b, var, typ, ordering="seq_cst"):
        return b.load_atomic(var, ordering, typ.width // 8 if hasattr(typ, "width") else 8,
                             typ=typ)

    @staticmethod
    def _store(b, value, var, ordering="seq_cst"):
        """An atomic store (as an exchange: llvmlite's atomic store wants typed pointers)."""
        b.atomic_rmw("xchg", var, value, ordering)

    def _in_session(self, b):
        """Whether a session is open (i1)."""
        return b.icmp_signed(">", self._load(b, self.sessions, I32, "monotonic"),
                             ir.Constant(I32, 0))

    def _relax(self, b):
        """One pause in a spin loop."""
        if self.x86:
            b.call(self.pause, [])

    # --- polyopt_threads --------------------------------------------------------
    def _threads(self):
        fn = self._declare("polyopt_threads", I32, [I32])
        fn.linkage = "weak"
        entry, given, cached, compute = (fn.append_basic_block(n) for n in
                                         ("entry", "given", "cached", "compute"))
        b = ir.IRBuilder(entry)
        requested = fn.args[0]
        b.cbranch(b.icmp_signed(">", requested, ir.Constant(I32, 0)), given, cached)
        b.position_at_end(given)
        b.ret(requested)
        b.position_at_end(cached)
        known = self._load(b, self.default_threads, I32, "monotonic")
        done = fn.append_basic_block("known")
        b.cbranch(b.icmp_signed(">", known, ir.Constant(I32, 0)), done, compute)
        b.position_at_end(done)
        b.ret(known)
        b.position_at_end(compute)
        cpus = b.trunc(b.call(self.sysconf, [ir.Constant(I32, SC_NPROCESSORS_ONLN)]), I32)
        cpus = b.select(b.icmp_signed(">", cpus, ir.Constant(I32, 0)), cpus, ir.Constant(I32, 1))
        text = b.call(self.getenv, [b.bitcast(self._string("OMP_NUM_THREADS"), PTR)])
        from_env = b.select(b.icmp_unsigned("!=", text, ir.Constant(PTR, None)),
                            text, b.bitcast(self._string("0"), PTR))
        wanted = b.call(self.atoi, [from_env])
        threads = b.select(b.icmp_signed(">", wanted, ir.Constant(I32, 0)), wanted, cpus)
        self._store(b, threads, self.default_threads, "monotonic")
        b.ret(threads)
        self.threads_fn = fn
        # polyopt_set_threads(n): the count for loops built without one (n >= 1; an
        # exported model's runtime sets it, see polyopt.deploy)
        setter = self._declare("polyopt_set_threads", ir.VoidType(), [I32])
        setter.linkage = "weak"
        b = ir.IRBuilder(setter.append_basic_block("entry"))
        with b.if_then(b.icmp_signed(">", setter.args[0], ir.Constant(I32, 0))):
            self._store(b, setter.args[0], self.default_threads, "monotonic")
        b.ret_void()

    # --- the worker ------------------------------------------------------------
    def _spin_limit(self, b):
        """The pause instructions an idle worker spins before it sleeps (read once):
        ``POLYOPT_SPIN``, or none when ``OMP_WAIT_POLICY`` is passive."""
        def chosen(b):
            policy = b.call(self.getenv, [b.bitcast(self._string("OMP_WAIT_POLICY"), PTR)])
            has_policy = b.icmp_unsigned("!=", policy, ir.Constant(PTR, None))
            safe = b.select(has_policy, policy, b.bitcast(self._string(""), PTR))
            passive = [b.icmp_signed("==", b.call(self.strcmp, [safe, b.bitcast(
                self._string(text), PTR)]), ir.Constant(I32, 0)) for text in ("PASSIVE", "passive")]
            spin = self._env_count(b, "POLYOPT_SPIN", DEFAULT_SPIN)
            return b.select(b.or_(*passive), ir.Constant(I32, 0), spin)
        return self._read_once(b, self.spin, "spin", chosen)

    def _env_count(self, b, name: str, default: int):
        """The environment variable ``name`` as an i32, ``default`` when it is unset."""
        text = b.call(self.getenv, [b.bitcast(self._string(name), PTR)])
        has = b.icmp_unsigned("!=", text, ir.Constant(PTR, None))
        value = b.call(self.atoi, [b.select(has, text, b.bitcast(self._string("0"), PTR))])
        return b.select(has, value, ir.Constant(I32, default))

    def _count_once(self, b, var, name: str, default: int):
        """The environment variable ``name`` (a count of pauses, at least 0; ``default``
        when unset), read once into the global ``var`` (-1: not read yet)."""
        return self._read_once(b, var, name, lambda b: self._env_count(b, name, default))

    def _read_once(self, b, var, label: str, compute):
        """``compute(b)`` (an i32, at least 0) computed on the first call only and kept
        in the global ``var`` (-1: not computed yet)."""
        known = self._load(b, var, I32, "monotonic")
        fn = b.function
        read, done = fn.append_basic_block(f"{label}.read"), fn.append_basic_block(label)
        start = b.block
        b.cbranch(b.icmp_signed("<", known, ir.Constant(I32, 0)), read, done)
        b.position_at_end(read)
        chosen = compute(b)
        chosen = b.select(b.icmp_signed("<", chosen, ir.Constant(I32, 0)),
                          ir.Constant(I32, 0), chosen)
        self._store(b, chosen, var, "monotonic")
        b.branch(done)
        b.position_at_end(done)
        limit = b.phi(I32)
        limit.add_incoming(known, start)
        limit.add_incoming(chosen, read)
        return limit

    def _sleep(self, b, region):
        """Sleep until the region changes from ``region`` (i64), or a spurious wake."""
        low = b.trunc(region, I32)
        if self.futex_call is None:  # no futex known for this machine: poll
            b.call(self.usleep, [ir.Constant(I32, 50)])
            return
        b.call(self.syscall, [ir.Constant(I64, self.futex_call), self.futex,
                              ir.Constant(I32, FUTEX_WAIT), low, ir.Constant(PTR, None)])

    def _worker(self):
        """``ptr worker(ptr seen)``: forever: wait for a region after ``seen``, enter it if
        it is open and has room, run ``fn(data)``, leave."""
        fn = self._declare("polyopt.pool.worker", PTR, [PTR])
        fn.linkage = "internal"
        blocks = {n: fn.append_basic_block(n) for n in (
            "entry", "wait", "check", "spinning", "asleep", "doze", "arrived", "try", "enter",
            "run")}
        b = ir.IRBuilder(blocks["entry"])
        seen_slot = b.alloca(I64)
        spins_slot = b.alloca(I32)
        b.store(b.ptrtoint(fn.args[0], I64), seen_slot)
        limit = self._spin_limit(b)
        session_limit = self._count_once(b, self.session_spin, "POLYOPT_SESSION_SPIN",
                                         SESSION_SPIN)
        b.branch(blocks["wait"])

        b.position_at_end(blocks["wait"])
        b.store(ir.Constant(I32, 0), spins_slot)
        b.branch(blocks["check"])

        b.position_at_end(blocks["check"])  # a new region?
        word = self._load(b, self.state, I64, "acquire")
        region = b.lshr(word, ir.Constant(I64, 32))
        seen = b.load(seen_slot, typ=I64)
        b.cbranch(b.icmp_unsigned("!=", region, seen), blocks["arrived"], blocks["spinning"])

        b.position_at_end(blocks["spinning"])
        spins = b.load(spins_slot, typ=I32)
        in_session = b.and_(self._in_session(b), b.icmp_signed("<", spins, session_limit))
        b.cbranch(b.or_(b.icmp_signed("<", spins, limit), in_session), blocks["doze"],
                  blocks["asleep"])
        b.position_at_end(blocks["doze"])
        self._relax(b)
        b.store(b.add(spins, ir.Constant(I32, 1)), spins_slot)
        b.branch(blocks["check"])

        b.position_at_end(blocks["asleep"])  # announce the sleep, look again, sleep
        b.atomic_rmw("add", self.sleepers, ir.Constant(I32, 1), "seq_cst")
        again = b.lshr(self._load(b, self.state, I64), ir.Constant(I64, 32))
        with b.if_then(b.icmp_unsigned("==", again, seen)):
            self._sleep(b, seen)
        b.atomic_rmw("sub", self.sleepers, ir.Constant(I32, 1), "seq_cst")
        b.branch(blocks["check"])

        b.position_at_end(blocks["arrived"])  # region changed: it is seen from now on
        b.store(region, seen_slot)
        b.branch(blocks["try"])

        b.position_at_end(blocks["try"])
        current = b.phi(I64)
        current.add_incoming(word, blocks["arrived"])
        allowed = b.zext(self._load(b, self.allowed, I32, "monotonic"), I64)
        active = b.and_(current, ir.Constant(I64, ACTIVE))
        closed = b.icmp_unsigned("!=", b.and_(current, ir.Constant(I64, CLOSED)),
                                 ir.Constant(I64, 0))
        full = b.icmp_unsigned(">=", active, allowed)
        b.cbranch(b.or_(closed, full), blocks["wait"], blocks["enter"])

        b.position_at_end(blocks["enter"])
        swapped = b.cmpxchg(self.state, current, b.add(current, ir.Constant(I64, 1)),
                            "acq_rel", "acquire")
        entered = b.extract_value(swapped, 1)
        observed = b.extract_value(swapped, 0)
        same_region = b.icmp_unsigned("==", b.lshr(observed, ir.Constant(I64, 32)), region)
        retry = fn.append_basic_block("retry")
        b.cbranch(entered, blocks["run"], retry)
        b.position_at_end(retry)  # lost a race: the same region again, else a new one
        b.cbranch(same_region, blocks["try"], blocks["check"])
        current.add_incoming(observed, retry)

        b.position_at_end(blocks["run"])
        body = self._load(b, self.fn, PTR, "monotonic")
        body.type = REGION_FN  # what llvmlite needs to call through it
        data = self._load(b, self.data, PTR, "monotonic")
        b.call(body, [data])
        before = b.atomic_rmw("sub", self.state, ir.Constant(I64, 1), "seq_cst")
        last = b.icmp_unsigned("==", b.and_(before, ir.Constant(I64, ACTIVE)),
                               ir.Constant(I64, 1))
        with b.if_then(b.and_(last, b.icmp_signed(
                "!=", self._load(b, self.caller_waits, I32), ir.Constant(I32, 0)))):
            b.atomic_rmw("add", self.drain_futex, ir.Constant(I32, 1), "seq_cst")
            self._wake(b, self.drain_futex, ir.Constant(I32, 1))
        b.branch(blocks["wait"])
        self.worker_fn = fn

    def _wake(self, b, word, count):
        """Wake up to ``count`` (i32) threads sleeping on the futex ``word``."""
        if self.futex_call is not None:
            b.call(self.syscall, [ir.Constant(I64, self.futex_call), word,
                                  ir.Constant(I32, FUTEX_WAKE), count])

    # --- polyopt_parallel --------------------------------------------------------
    def _parallel(self):
        fn = self._declare("polyopt_parallel", ir.VoidType(), [REGION_FN, PTR, I32])
        fn.linkage = "weak"
        body, data, threads = fn.args
        blocks = {n: fn.append_basic_block(n) for n in (
            "entry", "alone", "claim", "grow", "create", "post", "drain", "drained")}
        b = ir.IRBuilder(blocks["entry"])
        tid = b.alloca(I64)
        threads = b.call(self.threads_fn, [threads])
        backing_off = b.icmp_unsigned("<", b.call(self.clock, []),
                                      self._load(b, self.alone_until, I64, "monotonic"))
        b.cbranch(b.or_(b.icmp_signed("<=", threads, ir.Constant(I32, 1)), backing_off),
                  blocks["alone"], blocks["claim"])

        b.position_at_end(blocks["alone"])  # one thread, the pool busy, or backing off
        b.call(body, [data])
        b.ret_void()

        b.position_at_end(blocks["claim"])
        claimed = b.extract_value(b.cmpxchg(self.busy, ir.Constant(I32, 0),
                                            ir.Constant(I32, 1), "acquire", "monotonic"), 1)
        forked = fn.append_basic_block("forked")
        check_pid = fn.append_basic_block("check_pid")
        b.cbranch(claimed, check_pid, blocks["alone"])
        b.position_at_end(check_pid)  # after a fork, the child has no workers
        pid = b.call(self.getpid, [])
        b.cbranch(b.icmp_signed("!=", pid, b.load(self.pid, typ=I32)), forked, blocks["grow"])
        b.position_at_end(forked)
        b.store(pid, self.pid)
        b.store(ir.Constant(I32, 0), self.workers)
        self._store(b, ir.Constant(I32, 0), self.sleepers)
        old = self._load(b, self.state, I64)  # keep the region number, nobody inside
        self._store(b, b.and_(old, ir.Constant(I64, ~((1 << 32) - 1) & (2 ** 64 - 1))),
                    self.state)
        b.branch(blocks["grow"])

        b.position_at_end(blocks["grow"])  # one worker per missing thread
        wanted = b.sub(threads, ir.Constant(I32, 1))
        have = b.load(self.workers, typ=I32)
        b.cbranch(b.icmp_signed("<", have, wanted), blocks["create"], blocks["post"])
        b.position_at_end(blocks["create"])
        region = b.lshr(self._load(b, self.state, I64), ir.Constant(I64, 32))
        status = b.call(self.pthread_create, [tid, ir.Constant(PTR, None), self.worker_fn,
                                              b.inttoptr(region, PTR)])
        ok = b.icmp_signed("==", status, ir.Constant(I32, 0))
        made = fn.append_basic_block("made")
        b.cbranch(ok, made, blocks["post"])  # no more threads: run with those there are
        b.position_at_end(made)
        b.call(self.pthread_detach, [b.load(tid, typ=I64)])
        b.store(b.add(have, ir.Constant(I32, 1)), self.workers)
        b.branch(blocks["grow"])

        b.position_at_end(blocks["post"])  # publish the region, wake the sleepers
        self._store(b, body, self.fn, "monotonic")
        self._store(b, data, self.data, "monotonic")
        self._store(b, wanted, self.allowed, "monotonic")
        word = self._load(b, self.state, I64)
        region = b.add(b.lshr(word, ir.Constant(I64, 32)), ir.Constant(I64, 1))
        self._store(b, b.shl(region, ir.Constant(I64, 32)), self.state)
        self._store(b, b.trunc(region, I32), self.futex)
        asleep = self._load(b, self.sleepers, I32)
        with b.if_then(b.icmp_signed(">", asleep, ir.Constant(I32, 0))):
            if self.futex_call is not None:
                b.call(self.syscall, [ir.Constant(I64, self.futex_call), self.futex,
                                      ir.Constant(I32, FUTEX_WAKE), wanted])
        started = b.call(self.clock, [])
        b.call(body, [data])  # the caller's share
        finished = b.call(self.clock, [])
        b.atomic_rmw("or", self.state, ir.Constant(I64, CLOSED), "seq_cst")
        with b.goto_entry_block():
            spins = b.alloca(I32)
        b.store(ir.Constant(I32, 0), spins)
        drain_limit = self._count_once(b, self.drain_spin, "POLYOPT_DRAIN_SPIN", DRAIN_SPIN)
        b.branch(blocks["drain"])

        b.position_at_end(blocks["drain"])  # wait for the workers inside to leave
        inside = b.and_(self._load(b, self.state, I64, "acquire"), ir.Constant(I64, ACTIVE))
        spin, doze, sleep = (fn.append_basic_block(n) for n in ("spin", "doze", "sleep"))
        b.cbranch(b.icmp_unsigned("==", inside, ir.Constant(I64, 0)), blocks["drained"], spin)
        b.position_at_end(spin)
        count = b.load(spins, typ=I32)
        b.cbranch(b.icmp_signed("<", count, drain_limit), doze, sleep)
        b.position_at_end(doze)
        self._relax(b)
        b.store(b.add(count, ir.Constant(I32, 1)), spins)
        b.branch(blocks["drain"])
        b.position_at_end(sleep)  # announce the sleep, look again, sleep
        seen = self._load(b, self.drain_futex, I32)
        self._store(b, ir.Constant(I32, 1), self.caller_waits)
        still = b.and_(self._load(b, self.state, I64), ir.Constant(I64, ACTIVE))
        with b.if_then(b.icmp_unsigned("!=", still, ir.Constant(I64, 0))):
            if self.futex_call is None:
                b.call(self.usleep, [ir.Constant(I32, 20)])
            else:
                b.call(self.syscall, [ir.Constant(I64, self.futex_call), self.drain_futex,
                                      ir.Constant(I32, FUTEX_WAIT), seen,
                                      ir.Constant(PTR, None)])
        b.branch(blocks["drain"])

        b.position_at_end(blocks["drained"])
        self._back_off(b, started, finished)
        self._store(b, ir.Constant(I32, 0), self.caller_waits)
        self._store(b, ir.Constant(I32, 0), self.busy, "release")
        b.ret_void()

    def _back_off(self, b, started, finished):
        """After a region whose caller waited for the workers longer than it worked
        itself (and over :data:`MIN_STALL` cycles), regions run on their caller alone
        for ``POLYOPT_STALL_BACKOFF`` (default :data:`STALL_BACKOFF`) times that wait,
        doubled for each stall in a row (up to ``2^MAX_STALL_LEVEL``); a region without
        a stall resets the doubling."""
        now = b.call(self.clock, [])
        waited, worked = b.sub(now, finished), b.sub(finished, started)
        factor = b.zext(self._count_once(b, self.backoff, "POLYOPT_STALL_BACKOFF",
                                         STALL_BACKOFF), I64)
        stalled = b.and_(b.icmp_unsigned(">", waited, worked),
                         b.icmp_unsigned(">", waited, ir.Constant(I64, MIN_STALL)))
        level = self._load(b, self.stalls, I64, "monotonic")
        with b.if_else(b.and_(stalled, b.icmp_unsigned("!=", factor, ir.Constant(I64, 0)))
                       ) as (stall, fine):
            with stall:  # alone for factor * 2^level times the wait, the level one more
                span = b.shl(b.mul(waited, factor), level)
                self._store(b, b.add(now, span), self.alone_until, "monotonic")
                more = b.add(level, ir.Constant(I64, 1))
                self._store(b, b.select(b.icmp_unsigned(">", more, ir.Constant(
                    I64, MAX_STALL_LEVEL)), level, more), self.stalls, "monotonic")
            with fine:
                self._store(b, ir.Constant(I64, 0), self.stalls, "monotonic")

    # --- sessions ---------------------------------------------------------------
    def _sessions(self):
        """``polyopt_session_begin()``: one more open session (no worker is woken: the
        first region does it, so a session without one costs nothing);
        ``polyopt_session_end()``: one fewer."""
        begin = self._declare("polyopt_session_begin", ir.VoidType(), [])
        begin.linkage = "weak"
        b = ir.IRBuilder(begin.append_basic_block("entry"))
        b.atomic_rmw("add", self.sessions, ir.Constant(I32, 1), "seq_cst")
        b.ret_void()
        end = self._declare("polyopt_session_end", ir.VoidType(), [])
        end.linkage = "weak"
        b = ir.IRBuilder(end.append_basic_block("entry"))
        b.atomic_rmw("sub", self.sessions, ir.Constant(I32, 1), "seq_cst")
        b.ret_void()

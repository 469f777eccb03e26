"""Dependence tokens derived from what each instruction reads and writes.

The compiler emits the instructions in an order that computes the schedule (program
order); each one knows the buffer entries it reads and writes (the images of the
statement instances it runs under their access relations).  Two instructions on
different queues that touch one entry, one of them writing it, depend on each other in
that order (flow, anti or output), and the later one must not start before the earlier
one ends.  :func:`derive_tokens` places the fewest tokens that order every such pair:
it follows, with vector clocks, which pairs the queues' own order and the tokens already
placed order, and for a pair left unordered makes the latest instruction of the other
queue that the new one depends on push a token that the new one pops.  Each push is
popped by exactly the instruction that needed it, so the queues never wait on a token
that comes later in program order (no deadlock), and the simulator's hazard detector
(:mod:`.sim`) accepts the stream; removing any one token makes it report the pair.

>>> from .isa import QUEUES
>>> recs = [Record("load", writes={"inp": [0]}), Record("compute", reads={"inp": [0]})]
>>> derive_tokens(recs)
>>> recs[0].tokens, recs[1].tokens
({'push_next'}, {'pop_prev'})
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import BackendError
from .isa import QUEUES


@dataclass
class Record:
    """An instruction being compiled: its queue, the entries it reads and writes per
    buffer, the token flags derived for it, and ``make(tokens)`` building it."""

    queue: str
    reads: dict = field(default_factory=dict)
    writes: dict = field(default_factory=dict)
    make: object = None
    key: tuple = ()
    tokens: set = field(default_factory=set)
    what: str = ""


def _side(queue: str, other: str) -> str:
    step = QUEUES.index(other) - QUEUES.index(queue)
    if abs(step) != 1:
        raise BackendError(f"a {queue} instruction depends on a {other} instruction; the "
                           "queues exchange tokens only with their neighbours")
    return "next" if step > 0 else "prev"


def derive_tokens(records: list[Record]) -> None:
    """Set ``record.tokens`` of every record (see the module)."""
    position = {q: 0 for q in QUEUES}
    where, clocks = [], []
    last_clock = {q: {p: -1 for p in QUEUES} for q in QUEUES}
    last_of_queue = {q: [] for q in QUEUES}       # queue -> record indices in order
    writer: dict = {}                               # buffer -> entry -> record
    readers: dict = {}                              # buffer -> queue -> entry -> record
    for me, rec in enumerate(records):
        needs: dict[str, int] = {}
        for buffer, entries in rec.reads.items():
            _need(needs, writer.get(buffer), entries, where)
        for buffer, entries in rec.writes.items():
            _need(needs, writer.get(buffer), entries, where)
            for queue in QUEUES:
                _need(needs, readers.get(buffer, {}).get(queue), entries, where)
        clock = dict(last_clock[rec.queue])
        for queue, latest in needs.items():
            if queue == rec.queue or clock[queue] >= latest:
                continue
            pusher = last_of_queue[queue][latest]
            records[pusher].tokens.add(f"push_{_side(queue, rec.queue)}")
            rec.tokens.add(f"pop_{_side(rec.queue, queue)}")
            clock = {q: max(clock[q], clocks[pusher][q]) for q in QUEUES}
        clock[rec.queue] = position[rec.queue]
        where.append((rec.queue, position[rec.queue]))
        clocks.append(clock)
        last_of_queue[rec.queue].append(me)
        position[rec.queue] += 1
        last_clock[rec.queue] = clock
        for buffer, entries in rec.reads.items():
            table = readers.setdefault(buffer, {}).setdefault(rec.queue, {})
            for entry in np.unique(np.asarray(entries)).tolist():
                table[entry] = me
        for buffer, entries in rec.writes.items():
            table = writer.setdefault(buffer, {})
            for entry in np.unique(np.asarray(entries)).tolist():
                table[entry] = me
            for queue_table in readers.get(buffer, {}).values():
                for entry in np.unique(np.asarray(entries)).tolist():
                    queue_table.pop(entry, None)


def _need(needs: dict, table: dict | None, entries, where) -> None:
    """Record, per queue, the latest position among the records ``table`` holds for
    ``entries``."""
    if not table:
        return
    for entry in np.unique(np.asarray(entries)).tolist():
        other = table.get(entry)
        if other is not None:
            queue, pos = where[other]
            if pos > needs.get(queue, -1):
                needs[queue] = pos

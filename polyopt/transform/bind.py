"""bind: map loops to OpenCL work-groups and work-items.

``s[C].bind(io, "blockIdx.x")`` runs the iterations of loop ``io`` on different
work-groups, ``s[C].bind(ii, "threadIdx.x")`` on different work-items of one group
(CUDA's names, as in TVM; ``.y`` and ``.z`` give the other NDRange dimensions).  The
loop kind becomes the tag; the ``opencl`` target turns it into ``get_group_id`` /
``get_local_id`` with guards from the loop bounds.  Other targets run bound loops as
ordinary loops.

Binding is checked like ``parallel``: the loop must carry no dependence, and the
refusal names the dependence and a pair of instances.  Two relaxations: a buffer in
``"shared"`` scope (``cache_read(A, "shared", ...)``) has one copy per work-group and a
``"local"`` one a copy per work-item, so overlapping tiles of such a buffer do not race
across what the loop distributes; and a reduction loop may be bound to work-items,
which then reduce across the group (a tree reduction in ``__local`` memory).

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((n,), name="A")
>>> B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> bo, bi = s[B].split(B.op.axis[0], factor=16)
>>> s[B].bind(bo, "blockIdx.x").kind, s[B].bind(bi, "threadIdx.x").kind
('blockIdx.x', 'threadIdx.x')
>>> print(s.script())
s["B"].split("i", factor=16)
s["B"].bind("i.outer", "blockIdx.x")
s["B"].bind("i.inner", "threadIdx.x")
"""

from __future__ import annotations

from ..domain.schedule import BIND_TAGS
from ..errors import InvalidArgumentError

# TVM's virtual threads: iterations interleaved in one thread, i.e. an unrolled loop
VIRTUAL_THREADS = ("vthread", "cthread")


def bind_tag(tag) -> str:
    """``tag`` if it names a work-group or work-item dimension; raises otherwise."""
    if tag not in BIND_TAGS:
        raise InvalidArgumentError(
            f"cannot bind a loop to {tag!r}; use one of {', '.join(BIND_TAGS)} or 'vthread' "
            "(blockIdx: work-groups, threadIdx: work-items of a group)")
    return tag

"""Which inputs a group's kernel may overwrite with its output, decided exactly.

An input ``X`` can share its buffer with the output when they have the same shape and
dtype and, in the scheduled program, every element of ``X`` is read only by the
statement instance that writes the same element of the output (a statement reads
its operands before it stores).  Then no instance reads a value another instance has
overwritten, in any order the schedule runs them -- its parallel loops included.  The
test is on isl's access relations of the scheduled program: the relation "writes the
output element that reads the input element" must be contained in the identity.

An elementwise epilogue qualifies (``relu(conv + residual)`` over the residual); a
convolution's own input (read by many instances), a transpose or a row reduction
does not.

>>> import polyopt as po
>>> A = po.placeholder((4, 8), name="in0"); B = po.placeholder((8,), name="in1")
>>> C = po.compute((4, 8), lambda i, j: A[i, j] * 2.0 + B[j], name="out")
>>> overwritable_inputs([A, B], C, po.create_schedule(C))
(0,)
>>> D = po.compute((4, 8), lambda i, j: A[i, (j + 1) % 8], name="out")
>>> overwritable_inputs([A], D, po.create_schedule(D))
()
"""

from __future__ import annotations

import islpy as isl

from ..domain.affine import parts
from ..domain.program import AccessKind
from ..errors import PolyoptError


def overwritable_inputs(placeholders, output, schedule) -> tuple[int, ...]:
    """The positions of ``placeholders`` whose buffer ``output`` may be written into by
    the kernel of ``schedule`` (see the module's docstring)."""
    program = schedule.program
    try:
        out_array = program.array_of(output)
    except PolyoptError:
        return ()
    writes = program.accesses(AccessKind.WRITE, out_array.name)
    identity = program.domains.identity()
    shape = _extents(output)
    found = []
    for position, tensor in enumerate(placeholders):
        if _extents(tensor) != shape or shape is None or tensor.dtype != output.dtype:
            continue
        try:
            array = program.array_of(tensor)
        except PolyoptError:
            continue  # not read at all
        reads = _renamed(program.accesses(AccessKind.READ, array.name), out_array.name)
        shared = writes.apply_range(reads.reverse())  # writer -> reader of its element
        if shared.is_subset(identity):
            found.append(position)
    return tuple(found)


def _extents(tensor) -> tuple[int, ...] | None:
    values = tuple(getattr(d, "value", None) for d in tensor.shape)
    return None if None in values else values


def _renamed(relation: isl.UnionMap, array: str) -> isl.UnionMap:
    """``relation`` (instances -> elements) with its elements named ``array``."""
    result = isl.UnionMap.empty(relation.get_space())
    for part in parts(relation):
        result = result.union(isl.UnionMap.from_map(part.set_tuple_name(isl.dim_type.out,
                                                                         array)))
    return result

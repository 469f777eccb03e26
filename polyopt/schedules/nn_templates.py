"""Ready-made schedules for neural-network operators: direct convolution, chains of
elementwise computes, and row reductions (softmax, layer norm).

Like :mod:`polyopt.schedules.templates`, each template is plain schedule code: it calls
ordinary primitives (so the schedule it makes is checked against the exact dependences),
takes a few tunable parameters and returns the loops it made.  Read them, copy them,
change them.

>>> import polyopt as po
>>> X = po.placeholder((6, 10), name="X")
>>> Y = po.ops.softmax(X)
>>> s = po.create_schedule(Y)
>>> loops = softmax_template(s, Y, vector=4)
>>> print(po.lower(s, [X, Y]))  # doctest: +ELLIPSIS
void softmax_kernel(float32 X[6][10], float32 softmax[6][10]) {
  float32 softmax_max[1];  // allocated by the kernel, its footprint per iteration of i, ...
  float32 softmax_exp[1][10];  // allocated by the kernel, its footprint per iteration of i, ...
  ...
  #pragma parallel
  for (i = 0; i < 6; i += 1) {
    softmax_max[0] = -inf;
  ...
}
"""

from __future__ import annotations

from ..errors import InvalidArgumentError, public
from ..machine import TargetInfo
from ..te.tensor import ComputeOp, Tensor


def producers(T: Tensor) -> list[Tensor]:
    """The computed tensors that ``T`` reads, directly or not, producers first.

    >>> import polyopt as po
    >>> A = po.placeholder((4,), name="A")
    >>> B = po.compute((4,), lambda i: A[i] + 1, name="B")
    >>> C = po.compute((4,), lambda i: B[i] * 2, name="C")
    >>> [t.name for t in producers(C)]
    ['B']
    """
    order: list[Tensor] = []
    seen: set[int] = set()

    def visit(tensor: Tensor) -> None:
        for source in tensor.op.inputs:
            if isinstance(source.op, ComputeOp) and id(source) not in seen:
                seen.add(id(source))
                visit(source)
                order.append(source)

    visit(T)
    return order


@public
def target_facts(target_info: TargetInfo | None) -> TargetInfo:
    """The target a template schedules for: ``target_info``, or the host by default
    (its vector width and registers size the tiles; see :mod:`polyopt.machine`)."""
    if target_info is None:
        return TargetInfo.host()
    if not isinstance(target_info, TargetInfo):
        raise InvalidArgumentError(
            f"target_info must be a po.TargetInfo (TargetInfo.host() or "
            f"TargetInfo.for_cpu(name, features)), got {target_info!r}")
    return target_info


def vector_lanes(vector: int | None, target_info: TargetInfo | None) -> int:
    """The split factor of a vectorized loop: ``vector``, else one vector of float32
    lanes of the target (16 with AVX-512; the same for other types)."""
    return target_facts(target_info).lanes("float32") if vector is None else vector


def positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{what} must be a positive integer, got {value!r}")
    return value


@public
def vectorize_and_parallelize(s, T, *, vector: int | None = None, parallel: bool = True,
                              check: bool = True,
                              target_info: TargetInfo | None = None) -> dict:
    """The loops of an injective stage: all but the innermost fused into one loop run in
    parallel, the innermost split by ``vector`` (default: the float32 lanes of
    ``target_info``, the host by default) and vectorized (a batch-1 ``N, C, H, W``
    stage is parallel over ``N * C`` and ``H``, not over ``N`` alone).

    >>> import polyopt as po
    >>> A = po.placeholder((1, 3, 5), name="A")
    >>> B = po.compute((1, 3, 5), lambda n, c, w: A[n, c, w] * 2, name="B")
    >>> s = po.create_schedule(B)
    >>> sorted(vectorize_and_parallelize(s, B, vector=4))
    ['outer', 'vector']
    >>> [(a.name, a.kind) for a in s[B].axes]
    [('n.c.fused', 'parallel'), ('w.outer', 'serial'), ('w.inner', 'vectorized')]
    """
    vector = positive_int(vector_lanes(vector, target_info), "vector")
    stage = s[T]
    axes = list(stage.axes)
    while len(axes) > 2:
        axes[:2] = [stage.fuse(axes[0], axes[1], check=check)]
    outer, inner = stage.split(axes[-1], factor=vector, check=check)
    stage.vectorize(inner, check=check)
    first = axes[0] if len(axes) == 2 else outer
    if parallel:
        first = stage.parallel(first, check=check)
    return {"outer": first, "vector": inner}


@public
def injective_chain_template(s, out: Tensor, *, vector: int | None = None,
                             parallel: bool = True,
                             target_info: TargetInfo | None = None) -> dict:
    """Fuse a chain of elementwise computes into one loop nest: every computed producer
    of ``out`` is inlined into it (no temporaries are written), then ``out``'s loops are
    vectorized and run in parallel (:func:`vectorize_and_parallelize`).

    >>> import polyopt as po
    >>> a = po.placeholder((100,), name="a")
    >>> t = po.compute((100,), lambda i: a[i] * 2.0, name="t")
    >>> out = po.compute((100,), lambda i: po.maximum(t[i] - 1.0, 0.0), name="out")
    >>> s = po.create_schedule(out)
    >>> _ = injective_chain_template(s, out, vector=8)
    >>> print(po.lower(s, [a, out]))
    void out_kernel(float32 a[100], float32 out[100]) {
      #pragma parallel
      for (i_outer = 0; i_outer < 13; i_outer += 1)
        if (7 <= 99 - 8 * i_outer)
          #pragma vectorized
          for (i_inner = 0; i_inner <= 7; i_inner += 1)
            out[(8 * i_outer + i_inner)] = maximum(a[(8 * i_outer + i_inner)] * 2.0 - 1.0, 0.0);
        else
          #pragma vectorized
          for (i_inner = 0; i_inner <= min(7, 99 - 8 * i_outer); i_inner += 1)
            out[(8 * i_outer + i_inner)] = maximum(a[(8 * i_outer + i_inner)] * 2.0 - 1.0, 0.0);
    }
    """
    for tensor in reversed(producers(out)):
        if tensor.op.reduce_axis:
            raise InvalidArgumentError(
                f"injective_chain_template: '{tensor.name}' is a reduction, not an "
                "elementwise compute; use row_reduction_template for chains with reductions")
        s[tensor].compute_inline()
    return vectorize_and_parallelize(s, out, vector=vector, parallel=parallel,
                                     target_info=target_info)


@public
def row_reduction_template(s, out: Tensor, *, vector: int | None = None, parallel: bool = True,
                           target_info: TargetInfo | None = None) -> dict:
    """One pass over the rows for a chain of row-wise stages (row reductions and
    elementwise computes over ``[rows, cols]``): every computed producer of ``out``
    shares ``out``'s row loop (``compute_with``, producers in definition order inside
    it, so a row's intermediates stay in cache), the row loop runs in parallel and the
    column loops of elementwise stages are split by ``vector`` and vectorized.
    Reductions over the columns are left to LLVM, which vectorizes them (they combine
    with reassociation allowed).  ``vector``: the float32 lanes of ``target_info`` by
    default.

    Returns ``{"rows": ..., "vector": ...}`` (``out``'s loops).

    >>> import polyopt as po
    >>> X = po.placeholder((4, 8), name="X"); k = po.reduce_axis((0, 8), name="k")
    >>> M = po.compute((4,), lambda i: po.max(X[i, k], axis=k), name="M")
    >>> Y = po.compute((4, 8), lambda i, j: X[i, j] - M[i], name="Y")
    >>> s = po.create_schedule(Y)
    >>> row_reduction_template(s, Y, vector=4)["rows"].kind
    'parallel'
    """
    vector = positive_int(vector_lanes(vector, target_info), "vector")
    if len(out.shape) != 2:
        raise InvalidArgumentError(
            f"row_reduction_template needs a 2-D output [rows, cols]; '{out.name}' has "
            f"{len(out.shape)} dimension(s)")
    rows = s[out].axes[0]
    # consumers first: a producer joins the row loop once its readers are in it
    for tensor in reversed(producers(out)):
        s[tensor].compute_with(s[out], rows)
        if not tensor.op.reduce_axis and len(tensor.shape) == 2:
            _, inner = s[tensor].split(s[tensor].axes[-1], factor=vector)
            s[tensor].vectorize(inner)
    _, inner = s[out].split(s[out].axes[-1], factor=vector)
    s[out].vectorize(inner)
    if parallel:
        rows = s[out].parallel(rows)
    return {"rows": rows, "vector": inner}


@public
def softmax_template(s, out: Tensor, *, vector: int | None = None, parallel: bool = True,
                    target_info: TargetInfo | None = None) -> dict:
    """Softmax over rows (``po.ops.softmax``): the row maximum, ``exp(x - max)`` (kept, so
    ``exp`` runs once per element), the row sum and the quotient in one parallel pass over
    the rows (:func:`row_reduction_template`)."""
    return row_reduction_template(s, out, vector=vector, parallel=parallel,
                                  target_info=target_info)


@public
def layer_norm_template(s, out: Tensor, *, vector: int | None = None, parallel: bool = True,
                    target_info: TargetInfo | None = None) -> dict:
    """Layer norm over rows (``po.ops.layer_norm``): the row sum, the sum of squared
    deviations and the normalized, scaled row in one parallel pass over the rows
    (:func:`row_reduction_template`)."""
    return row_reduction_template(s, out, vector=vector, parallel=parallel,
                                  target_info=target_info)

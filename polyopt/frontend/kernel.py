"""``po.kernel``: an in-place affine loop nest, written in Python, as a :class:`Program`.

Each assignment to an array element becomes a statement (``S0``, ``S1``, ... in
textual order) whose domain is the set of iterations of its enclosing loops where its
``if`` guards hold.  Arrays are the function's parameters, annotated with their dtype
and shape; one that the body writes has role "inout".  The default schedule runs the
statements in source order.

>>> import polyopt as po
>>> N = po.var("N")
>>> @po.kernel
... def prefix_sum(A: po.f64[N]):
...     for i in range(1, N):
...         A[i] += A[i - 1]
>>> s = po.create_schedule(prefix_sum)
>>> print(s.program.statement("S0").domain)
[N] -> { S0[i] : 0 < i < N }
>>> print(po.lower(s))
void prefix_sum(float64 A[N]) {
  for (i = 1; i < N; i += 1)
    A[i] = A[i] + A[i - 1];
}
"""

from __future__ import annotations

import ast

from ..domain.accesses import array_bounds, check_in_bounds, statement_accesses
from ..domain.affine import AffineSpace
from ..domain.from_te import size_context
from ..domain.program import Array, Program, Statement
from ..domain.schedule import Attach, StageRecord, identity_axes
from ..errors import InvalidArgumentError, public
from ..names import NameGenerator
from ..te.expr import Var
from ..te.tensor import Tensor, placeholder, walk
from .exprs import Translator
from .parse import Assignment, Parser, iteration_domain, outer_vars
from .scope import Scopes, function_namespace
from .source import Source, parse_function
from .types import ArraySpec, ElementType

_BOUNDS_HINT = ("Tighten the loop bounds, use the same po.var for sizes that must agree, "
                "or guard the statement with an 'if'")


class Kernel:
    """A parsed kernel: ``program`` (default schedule) and ``args``, the placeholder
    tensors of its parameters in order (the default argument list of lower/build)."""

    def __init__(self, name: str, program: Program, args: tuple[Tensor, ...]):
        self.name = name
        self.program = program
        self.args = args

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """The parameters the kernel writes (in place)."""
        return tuple(a.tensor for a in self.program.arrays if a.role == "inout")

    def __call__(self, *args, **kwargs):
        raise InvalidArgumentError(
            f"kernel '{self.name}' is compiled before it runs: "
            f"f = po.build(po.create_schedule({self.name})); f(arrays..., vars=...)"
        )

    def __repr__(self) -> str:
        params = ", ".join(f"{t.name}: {t.dtype}[{', '.join(map(str, t.shape))}]"
                           for t in self.args)
        return f"<po.kernel {self.name}({params})>"


@public
def kernel(fn) -> Kernel:
    """Parse the Python function ``fn`` into a :class:`Kernel` (use as ``@po.kernel``)."""
    tree, source = parse_function(fn)
    globals_, closure = function_namespace(fn)
    return kernel_from_tree(tree, source, globals_, closure)


def kernel_from_tree(tree: ast.FunctionDef, source: Source, globals_: dict, closure: dict, *,
                     temporaries: frozenset[str] = frozenset(),
                     infer_sizes: bool = False) -> Kernel:
    """The :class:`Kernel` of a parsed function: the one path from a loop nest to a Program.

    ``temporaries`` are parameters that are the kernel's own scratch arrays (role
    "compute", not in ``args``; the C front end's scalars).  With ``infer_sizes`` the
    sizes' valid range is narrowed to where every access is inside its array (as pet
    does for C, where an access outside is undefined behaviour) instead of refusing.
    """
    outer = Translator(source, Scopes(globals_, closure, {}))  # names as seen at 'def'
    specs = _parameter_specs(tree, source, outer)
    params = _collect_vars([e for spec in specs.values() for e in spec.shape]
                           + outer_vars(tree, outer.scopes), source, tree)
    param_names = tuple(p.name for p in params)
    array_names = NameGenerator(reserved=param_names)
    tensors = {name: placeholder(spec.shape, name=array_names.fresh(name), dtype=spec.dtype)
               for name, spec in specs.items()}
    parser = Parser(tree, source, Scopes(globals_, closure, tensors), param_names)
    assignments = parser.parse()
    if not assignments:
        raise source.error(tree, "the kernel assigns no array element, so it computes nothing")
    program = _program(source, tensors, params, assignments, temporaries, infer_sizes)
    return Kernel(source.kernel, program,
                  tuple(t for name, t in tensors.items() if name not in temporaries))


def _parameter_specs(tree: ast.FunctionDef, source: Source,
                     outer: Translator) -> dict[str, ArraySpec]:
    args = tree.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults:
        raise source.error(tree, "kernel parameters must be plain, annotated array "
                                 "parameters (no defaults, *args, keyword-only or **kwargs)")
    specs = {}
    for arg in args.args:
        if arg.annotation is None:
            raise source.error(arg, f"parameter '{arg.arg}' needs an array annotation such as "
                                    f"{arg.arg}: po.f64[N, N]")
        specs[arg.arg] = _annotation(arg.annotation, arg.arg, source, outer)
    return specs


def _annotation(node: ast.expr, name: str, source: Source, outer: Translator) -> ArraySpec:
    try:
        if isinstance(node, ast.Subscript):
            base = outer.outer_object(node.value)
            if isinstance(base, ElementType):
                elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                return base[tuple(outer.expr(e) for e in elts)]
        else:
            value = outer.outer_object(node)
            if isinstance(value, ArraySpec):
                return value
            if isinstance(value, ElementType):
                raise source.error(node, f"parameter '{name}' is annotated {value!r} without a "
                                         f"shape; write {value!r}[N, ...] (scalar parameters "
                                         f"are not supported; use a 0-d array {value!r}[()])")
    except InvalidArgumentError as err:
        if str(err).startswith('File "'):
            raise
        raise source.error(node, str(err), type(err)) from err
    raise source.error(node, f"the annotation of parameter '{name}' must be an array type "
                             f"such as po.f64[N, N], not '{ast.unparse(node)}'")


def _collect_vars(roots, source: Source, tree: ast.FunctionDef) -> tuple[Var, ...]:
    found: dict[str, Var] = {}
    for root in roots:
        for node in walk(root):
            if isinstance(node, Var) and found.setdefault(node.name, node) is not node:
                raise source.error(tree, f"two different po.var are named '{node.name}'; "
                                         "create each size once and reuse the same object",
                                   InvalidArgumentError)
    return tuple(found.values())


def _program(source: Source, tensors: dict[str, Tensor], params: tuple[Var, ...],
             assignments: list[Assignment], temporaries: frozenset[str] = frozenset(),
             infer_sizes: bool = False) -> Program:
    param_names = tuple(p.name for p in params)
    written = {id(a.target.tensor) for a in assignments}
    arrays = tuple(Array(t.name, t.shape, t.dtype, t,
                         "compute" if name in temporaries else
                         "inout" if id(t) in written else "placeholder")
                   for name, t in tensors.items())
    array_of = {id(a.tensor): a for a in arrays}
    context = size_context(arrays, params)
    names = NameGenerator(reserved=param_names + tuple(a.name for a in arrays))
    statements = [_statement(names.fresh(f"S{k}"), assignment, array_of, param_names, source)
                  for k, assignment in enumerate(assignments)]
    if infer_sizes:
        context = _sizes_in_bounds(statements, array_of, param_names, context, source)
    for stmt, assignment in zip(statements, assignments):
        check_in_bounds(stmt, array_of, param_names, context, writes=True,
                        origin=source.at_line(assignment.line),
                        hint=_BOUNDS_HINT)
    program = Program(tuple(statements), arrays, params, context, schedule=None)
    return program.with_stages(source_order_stages(statements, assignments))


def _sizes_in_bounds(statements, array_of: dict, params: tuple[str, ...], context, source):
    """``context`` without the sizes for which some access leaves its array."""
    arrays = {a.name: a for a in array_of.values()}
    for stmt in statements:
        for access in stmt.accesses:
            bounds = array_bounds(arrays[access.array], params)
            context = context.subtract(access.relation.subtract_range(bounds).params())
    if context.is_empty():
        raise source.error(None, "for no sizes do all accesses stay inside their arrays; "
                                 "check the array sizes and the loop bounds")
    return context.coalesce()


def _statement(name: str, assignment: Assignment, array_of: dict,
               params: tuple[str, ...], source: Source) -> Statement:
    iter_vars = tuple(loop.var for loop in assignment.loops)
    space = AffineSpace(name, iter_vars, tuple(v.name for v in iter_vars), params)
    space.context = source.at_line(assignment.line)
    domain = iteration_domain(space, assignment.loops, assignment.guards)
    accesses = statement_accesses(name, domain, assignment.target, assignment.value,
                                  array_of, space)
    return Statement(name, domain, iter_vars, assignment.target, assignment.value, accesses,
                     source.kernel)


def source_order_stages(statements, assignments: list[Assignment]) -> tuple[StageRecord, ...]:
    """One stage per statement, sharing loops so that the schedule is the source order.

    Statement k shares the largest number ``d >= 1`` of enclosing loops (the same loop
    objects) that it has in common with any earlier statement, and is attached to the
    *first* statement inside those ``d`` loops (at the root when ``d == 0``).  That
    partner is itself attached at a depth below ``d``, which is the shape
    :func:`~polyopt.domain.schedule.build_schedule` orders correctly.
    """
    stages: list[StageRecord] = []
    for k, (stmt, assignment) in enumerate(zip(statements, assignments)):
        shared = [_common_prefix(assignment.loops, earlier.loops)
                  for earlier in assignments[:k]]
        depth = max(shared, default=0)
        attach = Attach("with", stages[shared.index(depth)].name, depth) if depth else Attach()
        stages.append(StageRecord(stmt.name, stmt.name, identity_axes(stmt.domain), attach=attach))
    return tuple(stages)


def _common_prefix(a, b) -> int:
    count = 0
    for x, y in zip(a, b):
        if x is not y:
            break
        count += 1
    return count


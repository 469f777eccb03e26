"""Every public function and method is guarded (``errors.public``): no exception other
than a ``PolyoptError`` leaves it, whatever the input."""

import inspect

import pytest

import polyopt as po
from polyopt.errors import InternalError, InvalidArgumentError, PolyoptError

NAMESPACES = [po, po.graph, po.tvm, po.ops, po.templates, po.tensorize, po.tune]


def _public_callables():
    found, seen = [], set()
    for space in NAMESPACES:
        for name in dir(space):
            value = getattr(space, name)
            if name.startswith("_") or not str(getattr(value, "__module__", "")).startswith(
                    "polyopt") or value in (po.templates.walk, po.errors.public):
                continue  # (helpers that a module imports for itself)
            if inspect.isfunction(value):
                found.append((f"{space.__name__}.{name}", value))
            elif inspect.isclass(value) and not issubclass(value, BaseException) \
                    and value not in seen:
                seen.add(value)
                found += [(f"{value.__name__}.{attr}", method)
                          for attr, method in vars(value).items()
                          if not attr.startswith("_") and inspect.isfunction(method)]
    return found


def test_every_public_function_and_method_is_guarded():
    callables = _public_callables()
    assert len(callables) > 150
    unguarded = [name for name, fn in callables if not hasattr(fn, "__wrapped__")]
    assert unguarded == []


@pytest.mark.parametrize("call", [
    lambda: po.auto_schedule(123),
    lambda: po.from_c(None),
    lambda: po.compute_dependences("not a program"),
    lambda: po.ops.matmul(1, 2),
    lambda: po.graph.fuse(None),
    lambda: po.templates.matmul_template(None),
])
def test_bad_input_raises_a_polyopt_error(call):
    with pytest.raises(PolyoptError):
        call()


@pytest.mark.parametrize("name", ["floor", "max", "int", "n.x", "a b"])
def test_a_var_named_like_an_isl_or_c_keyword_is_refused(name):
    with pytest.raises(InvalidArgumentError, match="another name"):
        po.var(name)


def test_guarded_errors_are_internal_errors_not_raw_exceptions():
    with pytest.raises(PolyoptError) as info:
        po.compute_dependences(object())
    assert isinstance(info.value, (InvalidArgumentError, InternalError))

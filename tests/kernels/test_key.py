"""The kernel key is structural: programs built separately with the same structure share
it; a different dtype, shape, schedule, target CPU or feature, or option changes it."""

import dataclasses

import islpy as isl
import pytest

import polyopt as po
from polyopt.kernels.key import kernel_key, structural_hash
from polyopt.target.base import get_target, target_key


def _scale(n=16, dtype="float32", factor=2, split=None, name="B"):
    A = po.placeholder((n,), name="A", dtype=dtype)
    B = po.compute((n,), lambda i: A[i] * factor, name=name)
    s = po.create_schedule(B)
    if split:
        s[B].split(B.op.axis[0], factor=split)
    return po.lower(s, [A, B], target="llvm")


def _key(func, target="llvm -mcpu=znver3", **options):
    return kernel_key(func, target_key(get_target(target)), options or {"num_threads": 1})


def test_programs_built_separately_with_one_structure_share_the_key():
    assert _scale() is not _scale()
    assert structural_hash(_scale()) == structural_hash(_scale())
    assert _key(_scale()) == _key(_scale())
    def symbolic():
        n = po.var("n")
        A = po.placeholder((n,), name="A")
        B = po.compute((n,), lambda i: A[i] + 1.0, name="B")
        return po.lower(po.create_schedule(B), [A, B], target="llvm")

    symbolic = [symbolic(), symbolic()]
    assert _key(symbolic[0]) == _key(symbolic[1])


@pytest.mark.parametrize("change", [
    {"dtype": "float64"}, {"dtype": "int32"}, {"n": 17}, {"factor": 3}, {"split": 4},
    {"name": "C"}])
def test_a_different_program_has_another_key(change):
    assert _key(_scale(**change)) != _key(_scale())
    assert structural_hash(_scale(**change)) != structural_hash(_scale())


def test_a_different_loop_kind_changes_the_key():
    func = _scale(split=4)
    loop = func.body
    changed = dataclasses.replace(func, body=dataclasses.replace(loop, kind="parallel"))
    assert loop.kind != "parallel"
    assert _key(changed) != _key(func)
    assert _key(dataclasses.replace(func)) == _key(func)  # a copy: the same structure


@pytest.mark.parametrize("other", ["llvm -mcpu=znver4", "llvm -mcpu=haswell",
                                   "llvm -mcpu=znver3 -mattr=-avx2",
                                   "llvm -mcpu=znver3 -mattr=+avx512f"])
def test_the_target_cpu_and_features_are_part_of_the_key(other):
    func = _scale()
    assert _key(func, other) != _key(func, "llvm -mcpu=znver3")
    assert _key(func, other) == _key(_scale(), other)


def test_the_options_are_part_of_the_key():
    func = _scale()
    base = _key(func, num_threads=1)
    assert _key(func, num_threads=2) != base
    assert _key(func, num_threads=1, parallel_min_work=64) != base
    assert kernel_key(func, "llvm", {"a": 1, "b": 2}) == kernel_key(func, "llvm", {"b": 2, "a": 1})


def test_values_hash_by_structure_not_by_identity_or_container():
    space = "[n] -> { S[i] : 0 <= i < n }"
    assert structural_hash(isl.Set(space)) == structural_hash(isl.Set(space))
    wider = isl.Set("[n] -> { S[i] : 0 <= i <= n }")
    assert structural_hash(isl.Set(space)) != structural_hash(wider)
    assert structural_hash((1, 2)) != structural_hash([1, 2])
    assert structural_hash(1) != structural_hash(1.0) != structural_hash(True)
    assert structural_hash({1, 2}) == structural_hash({2, 1})
    looped: list = [1]
    looped.append(looped)  # a cycle ends the walk
    assert structural_hash(looped) == structural_hash(looped)


def test_functions_hash_by_code_and_captured_values():
    def maker(k):
        return lambda x: x * k

    assert structural_hash(maker(2)) == structural_hash(maker(2))
    assert structural_hash(maker(2)) != structural_hash(maker(3))


def test_a_deep_expression_hashes_without_exhausting_the_stack():
    A = po.placeholder((4,), name="A")

    def body(i, terms):
        value = A[i]
        for k in range(terms):
            value = value + float(k)
        return value

    def lowered(terms):
        B = po.compute((4,), lambda i: body(i, terms), name="B")
        return po.lower(po.create_schedule(B), [A, B], target="llvm")

    funcs = [lowered(terms) for terms in (3000, 3000, 3001)]
    keys = [structural_hash(f) for f in funcs]
    assert keys[0] == keys[1] != keys[2]

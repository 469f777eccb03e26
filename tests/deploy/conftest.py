"""The deploy tests keep compiled kernels in a disk cache of their own (not the user's)."""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_kernel_cache(tmp_path_factory):
    previous = os.environ.get("POLYOPT_CACHE")
    os.environ["POLYOPT_CACHE"] = str(tmp_path_factory.mktemp("kernel-cache"))
    yield
    if previous is None:
        os.environ.pop("POLYOPT_CACHE", None)
    else:
        os.environ["POLYOPT_CACHE"] = previous

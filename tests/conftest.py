"""Fixtures shared across test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def one_torch_thread():
    """The torch tests' tensors are tiny: intra-op threads only add contention on a busy machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session", autouse=True)
def pretrained_cache_of_the_session(tmp_path_factory):
    """Pretrained networks go to a folder of the test session, never the user's cache; the
    ``clusterbench`` subprocesses the tests start inherit it. A test may set its own."""
    import os

    from clusterbench.methods.deep.cache import ENVIRONMENT_VARIABLE

    before = os.environ.get(ENVIRONMENT_VARIABLE)
    os.environ[ENVIRONMENT_VARIABLE] = str(tmp_path_factory.mktemp("pretrained"))
    yield
    if before is None:
        os.environ.pop(ENVIRONMENT_VARIABLE, None)
    else:
        os.environ[ENVIRONMENT_VARIABLE] = before

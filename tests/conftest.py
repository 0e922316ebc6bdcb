"""Fixtures shared across test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def one_torch_thread():
    """The torch tests' tensors are tiny: intra-op threads only add contention on a busy machine."""
    from clusterbench.validation import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread_per_worker():
    """Under pytest-xdist (``make test``: a worker per core) each worker's torch runs one CPU
    thread. The deep estimators default to torch's count, a thread per core, so a worker per core
    oversubscribed the machine: on a 16-core GPU machine (ten workers) the CPU reference fits of
    test_cuda's convolutional networks took 7-8 s an epoch for 256 points and timed out, and on 2
    cores a small DCEC fit takes 20 s at two threads beside another job against 3 s at one. (Each
    worker loads torch for it, which nearly every test module does anyway.)"""
    import os

    from clusterbench.validation import torch_threads

    with torch_threads(1 if "PYTEST_XDIST_WORKER" in os.environ else None):
        yield


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


@pytest.fixture(scope="session", autouse=True)
def data_folder_of_the_tests():
    """The library reads the folder the tests look in: without $CLUSTERBENCH_DATA, a checkout beside
    ``../shared`` uses its datasets (tests/helpers.DATA_FOLDER), so a test that finds its data there
    does not then fail to load it (the Makefile and CI set the variable; a bare ``pytest`` did not)."""
    import os

    from clusterbench.data.sources import DATA_ENV
    from tests.helpers import DATA_FOLDER

    if os.environ.get(DATA_ENV) or not DATA_FOLDER.is_dir():
        yield
        return
    os.environ[DATA_ENV] = str(DATA_FOLDER)
    yield
    os.environ.pop(DATA_ENV, None)


@pytest.fixture(scope="session", autouse=True)
def no_config_folders_of_the_user():
    """The tests see conf/ alone: a developer's own $CLUSTERBENCH_CONFIG_DIR would add options to
    every list they check (the subprocesses inherit the environment). A test may set its own."""
    import os

    from clusterbench.catalog import CONFIG_DIR_ENV

    before = os.environ.pop(CONFIG_DIR_ENV, None)
    yield
    if before is not None:
        os.environ[CONFIG_DIR_ENV] = before


@pytest.fixture(autouse=True)
def config_names_read_afresh():
    """The method and dataset names a process reads once (catalog.method_names, dataset_names)
    are read again by each test: one that added a config folder of its own would otherwise leave
    its names to the next, whose name checks would then pass where they should refuse."""
    from clusterbench import catalog

    catalog.method_names.cache_clear()
    catalog.dataset_names.cache_clear()

"""The torch estimators' ``n_threads``: torch's thread count during fit and predict, restored after,
set by the harness from its ``threads`` setting, and absent from the names of records at one thread."""

from __future__ import annotations

import json

import pytest
import torch

from clusterbench.errors import HyperparameterError
from clusterbench.methods import CLAM
from clusterbench.methods.deep.base import AutoencoderClusterer
from clusterbench.results import read_record
from clusterbench.runner import prepare_job, run_job
from clusterbench.validation import torch_threads
from tests.helpers import compose_config
from tests.test_estimators import ESTIMATORS, X

# What torch runs at outside the estimators in these tests: neither 1 (the default n_threads) nor
# the 2 the tests ask for, so a fit that ignores n_threads, or one that sets 1 whatever it is
# asked, shows.
OUTSIDE = 3
# The name (config_hash) of the record of `clusterbench run method=clam dataset=iris profile=smoke
# device=cpu` before CLAM took n_threads: records fitted at one thread keep it. A change to the
# configs it is composed from (iris, smoke, clam, the default metrics) renames it too.
CLAM_IRIS_SMOKE_RECORD = "396f4392939de7d442b4"


@pytest.fixture
def torch_at_outside_count():
    before = torch.get_num_threads()
    torch.set_num_threads(OUTSIDE)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def threads_seen(monkeypatch):
    """The torch thread count at each ``torch.as_tensor`` call: every estimator turns its input
    into a tensor inside fit and predict."""
    seen = []
    as_tensor = torch.as_tensor

    def noting(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return as_tensor(*args, **kwargs)

    monkeypatch.setattr(torch, "as_tensor", noting)
    return seen


@pytest.mark.parametrize("name", ESTIMATORS)
def test_fit_and_predict_run_torch_at_n_threads_and_restore_its_count(
    name, torch_at_outside_count, threads_seen
):
    model = ESTIMATORS[name](random_state=0, n_threads=2).fit(X)
    assert threads_seen and set(threads_seen) == {2}
    assert torch.get_num_threads() == OUTSIDE
    threads_seen.clear()
    model.predict(X)
    assert threads_seen and set(threads_seen) == {2}
    assert torch.get_num_threads() == OUTSIDE


@pytest.mark.parametrize("name", ESTIMATORS)
def test_n_threads_none_leaves_torchs_count_alone(name, torch_at_outside_count, threads_seen):
    ESTIMATORS[name](random_state=0, n_threads=None).fit(X).predict(X)
    assert threads_seen and set(threads_seen) == {OUTSIDE}
    assert torch.get_num_threads() == OUTSIDE


@pytest.mark.parametrize("name", ESTIMATORS)
def test_the_default_n_threads_is_one_and_leaves_record_names_alone(name):
    model = ESTIMATORS[name]()
    if isinstance(model, AutoencoderClusterer):
        # An autoencoder's products are large enough for every core; it came with n_threads.
        assert model.n_threads is None
        assert "n_threads" not in getattr(type(model), "_params_added_later", {})
        return
    assert model.n_threads == 1
    assert type(model)._params_added_later["n_threads"] == 1  # runner.named_by leaves it out


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("n_threads", [0, -1, 1.5, True, "2"])
def test_an_invalid_n_threads_is_a_one_line_hyperparameter_error(name, n_threads):
    with pytest.raises(HyperparameterError) as raised:
        ESTIMATORS[name](random_state=0, n_threads=n_threads).fit(X)
    message = str(raised.value)
    assert message == f"{name} n_threads must be None or an integer ≥ 1, got {n_threads!r}"


def test_torch_threads_restores_the_count_when_the_block_raises(torch_at_outside_count):
    with pytest.raises(RuntimeError, match="inside"), torch_threads(2):
        assert torch.get_num_threads() == 2
        raise RuntimeError("inside")
    assert torch.get_num_threads() == OUTSIDE


def test_a_fit_that_fails_inside_restores_torchs_count(torch_at_outside_count):
    with pytest.raises(HyperparameterError, match="n_clusters must be at most the number of points"):
        ESTIMATORS["DEC"](random_state=0, n_threads=2).set_params(n_clusters=len(X) + 1).fit(X)
    assert torch.get_num_threads() == OUTSIDE


def clam_on_iris(tmp_path, *overrides):
    """The config of a CLAM job on iris under the smoke profile."""
    return compose_config(tmp_path, "method=clam", "dataset=iris", "profile=smoke", *overrides)


def built(tmp_path, *overrides):
    """The estimator a CLAM job on iris builds for its (only) grid point."""
    return prepare_job(clam_on_iris(tmp_path, *overrides), "adhoc").estimator({})


@pytest.mark.parametrize(
    ("overrides", "n_threads"),
    [
        ((), 1),
        (("threads=2",), 2),
        (("threads=null",), None),  # torch's default, as limit_threads leaves it
        (("threads=2", "+method.estimator.n_threads=3"), 3),  # the method config's own value wins
    ],
)
def test_the_runner_passes_its_threads_setting_as_n_threads(tmp_path, overrides, n_threads):
    assert built(tmp_path, *overrides).n_threads == n_threads


def test_a_method_without_n_threads_is_built_without_it(tmp_path):
    job = prepare_job(compose_config(tmp_path, "method=kmeans", "dataset=iris", "threads=2"), "adhoc")
    assert "n_threads" not in job.estimator({}).get_params()


class CountsTorchThreads(CLAM):
    """CLAM that notes torch's thread count while it trains."""

    seen = ()

    def _train(self, data, seeds):
        type(self).seen = (torch.get_num_threads(),)
        return super()._train(data, seeds)


@pytest.mark.parametrize(
    ("overrides", "n_threads"),
    [
        ((), 1),
        (("threads=2",), 2),
        (("threads=2", "+method.estimator.n_threads=1"), 1),  # over limit_threads' count
    ],
)
def test_a_jobs_clam_fit_runs_at_its_n_threads_and_the_job_restores_torchs_count(
    tmp_path, torch_at_outside_count, overrides, n_threads
):
    counting = "method.estimator._target_=tests.test_threads.CountsTorchThreads"
    quick = ("method.estimator.epochs=1", "method.estimator.restarts=1")
    [outcome] = run_job(clam_on_iris(tmp_path, counting, *quick, *overrides))
    assert outcome.status == "ok" and CountsTorchThreads.seen == (n_threads,)
    assert torch.get_num_threads() == OUTSIDE


def test_a_clam_record_at_one_thread_keeps_its_name(tmp_path):
    [outcome] = run_job(clam_on_iris(tmp_path, "device=cpu"))
    record = read_record(outcome.path)
    assert outcome.status == "ok" and outcome.path.stem == CLAM_IRIS_SMOKE_RECORD
    assert set(record["config_hash"]) == {CLAM_IRIS_SMOKE_RECORD}
    assert "n_threads" not in json.loads(record["params"].iloc[0])
    # Another count is another point (its sums may differ): named by it.
    job = prepare_job(clam_on_iris(tmp_path, "device=cpu", "threads=2"), "adhoc")
    assert job.record_of(job.point(job.estimator({}))[1]).stem != CLAM_IRIS_SMOKE_RECORD

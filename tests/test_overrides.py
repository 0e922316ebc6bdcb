"""Overrides never accepted and ignored: ``method.K=V`` sets hyperparameter K; an added key that
nothing reads, a source argument its function does not take, ``device=cuda`` without a GPU and a
results folder that cannot be made are one-line errors (exit 2) before any record."""

from __future__ import annotations

import json

import pytest

from clusterbench.overrides import rewrite_overrides, unread_key_hint
from clusterbench.results import load_records
from tests.helpers import run_cli
from tests.test_cli import assert_one_line_error

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("word", "rewritten"),
    [
        ("method.beta=3", "++method.estimator.beta=3"),
        ("+method.beta=3", "++method.estimator.beta=3"),
        ("++method.beta=3", "++method.estimator.beta=3"),
        ("method.estimator.beta=3", "++method.estimator.beta=3"),
        ("+method.estimator.h=[2,3]", "++method.estimator.h=[2,3]"),
        ("method.n_init=1,3", "++method.estimator.n_init=1,3"),
        ("~method.beta", "~method.estimator.beta"),
        # what a method file holds itself is left to Hydra
        ("method.name=mine", "method.name=mine"),
        ("method.max_samples=100", "method.max_samples=100"),
        ("method.estimator._target_=x.Y", "++method.estimator._target_=x.Y"),
        ("method=clam", "method=clam"),
        ("-m", "-m"),
    ],
)
def test_method_keys_become_hyperparameters_of_the_estimator(word, rewritten):
    assert rewrite_overrides([word]) == [rewritten]


@pytest.mark.parametrize(
    ("key", "read"),
    [
        ("grids.kmeans", True),
        ("metrics.nmi.average_method", True),
        ("method.estimator.beta", True),
        ("dataset.source.name", True),
        ("dataset.impute", True),
        ("profile.epochs", True),
        ("hydra.launcher.n_jobs", True),
        ("experiment", True),
        ("beta", False),
        ("dataset.beta", False),
        ("profile.epoch", False),
        ("seed.x", False),
    ],
)
def test_an_added_key_is_allowed_only_where_something_reads_it(key, read):
    assert (unread_key_hint(key, "3", [f"+{key}=3"]) is None) is read


def test_a_variable_another_override_reads_may_be_added():
    assert unread_key_hint("base", "/tmp", ["+base=/tmp", "results_dir=${base}/r"]) is None


@pytest.mark.parametrize("word", ["method.beta=3", "+method.beta=3"])
def test_the_hydra_spelling_of_a_hyperparameter_changes_the_fit(tmp_path, word):
    result = run_cli("run", "method=clam", "dataset=iris", "profile=smoke", f"results_dir={tmp_path}", word)
    assert result.returncode == 0, result.stderr
    assert "beta=3 |" in result.stdout  # the summary line names the value fitted
    (params,) = set(load_records(tmp_path, "smoke")["params"])
    assert json.loads(params)["beta"] == 3


@pytest.mark.parametrize(
    ("words", "fragments"),
    [
        (["+beta=3"], ["'beta' is not a setting", "method.beta=3", "seed"]),
        (["++beta=3"], ["'beta' is not a setting", "method.beta=3"]),
        (["nope=3"], ["'nope' is not a setting", "method.nope=3"]),
        (["+dataset.beta=3"], ["no dataset config has a key 'beta'", "n_clusters", "dataset.source.beta"]),
        (["+profile.epoch=3"], ["no profile has a key 'epoch'", "epochs"]),
        (["method.bta=3"], ["method 'clam' has no hyperparameter 'bta'", "beta"]),
        (
            [
                "dataset=wine",
                "dataset.source._target_=clusterbench.data.sources.cached",
                "+dataset.source.name=wine",
            ],
            ["dataset 'wine': source clusterbench.data.sources.cached", "'loader'", "~dataset.source.loader"],
        ),
        (["+dataset.source.frobnicate=1"], ["unexpected keyword argument 'frobnicate'"]),
        (["results_dir=/proc/clusterbench"], ["results_dir '/proc/clusterbench' is not a writable folder"]),
    ],
)
def test_an_override_nothing_would_read_exits_2_in_one_line(tmp_path, words, fragments):
    result = run_cli(
        "run", "method=clam", "dataset=iris", "profile=smoke", f"results_dir={tmp_path}", *words, cwd=tmp_path
    )
    assert_one_line_error(result, *fragments)
    assert not any(tmp_path.rglob("*.csv"))


@pytest.mark.parametrize("method", ["kmeans", "clam"])
def test_device_cuda_without_a_gpu_exits_2_for_every_method(tmp_path, method):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    result = run_cli("run", f"method={method}", "dataset=iris", "device=cuda", f"results_dir={tmp_path}")
    assert_one_line_error(result, "device='cuda' but no CUDA GPU is visible", "device=cpu")
    assert not any(tmp_path.rglob("*.csv"))

"""The runner on composed configs: paper values, caching, failures, grids and user errors."""

from __future__ import annotations

import collections
import csv
import dataclasses
import json
import math
import re
import signal
import sys
import time
from datetime import datetime, timedelta, timezone
from typing import ClassVar

import numpy as np
import pytest
import sklearn.cluster
from omegaconf import OmegaConf, open_dict
from sklearn.metrics import adjusted_rand_score

import clusterbench.metrics
from clusterbench import runner
from clusterbench.catalog import locate
from clusterbench.data import data_digest, load_dataset
from clusterbench.data.sources import DATA_ENV
from clusterbench.errors import HyperparameterError, UserError
from clusterbench.methods.kmeans_cprime import _TruncatedEM
from clusterbench.results import (
    JOURNAL_ENV,
    code_version,
    finished_record,
    load_records,
    processor,
    read_journal,
    read_record,
    read_trace,
    write_record,
)
from clusterbench.resume import _stored_fit
from clusterbench.runner import PointResult, dataset_config, fit_timeout, method_label, run_job, summary_line
from clusterbench.runs import wide_runs
from clusterbench.summary import summarize
from clusterbench.validation import resolve_device
from tests.helpers import DATA_FOLDER, Exploding, KMeansLike, compose_config, record_files, require_cached

DEFAULT_SUITE = ["sc", "nmi", "ari", "acc", "purity", "inertia", "n_found"]


@pytest.fixture(autouse=True)
def data_env(monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(DATA_FOLDER))


@pytest.fixture
def kmeans_fits(monkeypatch):
    return count_kmeans_fits(monkeypatch)


def count_kmeans_fits(monkeypatch) -> list[int]:
    """Count KMeans.fit calls and the number of rows each saw."""
    calls = []
    original = sklearn.cluster.KMeans.fit

    def counting(self, X, *args, **kwargs):
        calls.append(len(X))
        return original(self, X, *args, **kwargs)

    monkeypatch.setattr(sklearn.cluster.KMeans, "fit", counting)
    return calls


def iris(tmp_path, *overrides):
    """Scikit-learn's bundled iris (no cache file needed) with k-means under the smoke profile."""
    return compose_config(tmp_path, "dataset=iris", "method=kmeans", "profile=smoke", *overrides)


def test_kmeans_on_zoo_under_the_paper_profile_matches_clam_table_1(tmp_path):
    require_cached("zoo")
    cfg = compose_config(tmp_path, "method=kmeans", "dataset=zoo")
    assert cfg.profile.name == "paper" and cfg.method.estimator.n_init == 1000
    (outcome,) = run_job(cfg)
    assert outcome.status == "ok"
    assert outcome.scores["sc"] == pytest.approx(0.374, abs=0.003)  # CLAM Table 1, k-means on Zoo
    assert outcome.scores["nmi"] == pytest.approx(0.833, abs=0.01)
    assert outcome.scores["n_found"] == 7.0
    assert outcome.fit_seconds > 0

    frame = read_record(outcome.path)
    assert outcome.path.parent == tmp_path / "runs" / "paper" / "adhoc" / "zoo" / "kmeans"
    assert list(frame["metric"]) == DEFAULT_SUITE
    assert dict(zip(frame["metric"], frame["value"], strict=True)) == pytest.approx(outcome.scores)
    assert set(frame["status"]) == {"ok"} and set(frame["seed"]) == {0}
    assert set(frame["config_hash"]) == {outcome.path.stem}
    params = json.loads(frame["params"].iloc[0])
    assert params["n_init"] == 1000 and params["n_clusters"] == 7 and params["random_state"] == 0
    nmi_options = json.loads(frame.loc[frame["metric"] == "nmi", "metric_params"].iloc[0])
    assert nmi_options == {"average_method": "arithmetic"}


def test_a_second_run_is_cached_without_refitting_and_force_refits(tmp_path, kmeans_fits):
    (first,) = run_job(iris(tmp_path))
    assert first.status == "ok" and len(kmeans_fits) == 1
    content = first.path.read_bytes()

    (second,) = run_job(iris(tmp_path))
    assert second.status == "cached"
    assert len(kmeans_fits) == 1  # no refit
    assert second.path == first.path and first.path.read_bytes() == content
    assert second.scores == pytest.approx(first.scores)
    assert second.fit_seconds == pytest.approx(first.fit_seconds)

    (forced,) = run_job(iris(tmp_path, "force=true"))
    assert forced.status == "ok" and len(kmeans_fits) == 2
    assert forced.scores == pytest.approx(first.scores)
    assert record_files(tmp_path) == [first.path]
    assert set(read_record(first.path)["clusterbench_version"]) == {code_version()}
    assert set(read_record(first.path)["processor"]) == {processor("cpu")} != {""}


def test_a_number_given_as_int_or_float_is_one_point_and_one_record(tmp_path, kmeans_fits):
    (first,) = run_job(iris(tmp_path, "+method.estimator.tol=1"))
    (again,) = run_job(iris(tmp_path, "+method.estimator.tol=1.0"))
    assert first.status == "ok" and again.status == "cached" and len(kmeans_fits) == 1
    assert record_files(tmp_path) == [first.path]
    (other,) = run_job(iris(tmp_path, "+method.estimator.tol=1.5"))
    assert other.status == "ok" and len(record_files(tmp_path)) == 2


def test_an_estimator_that_raises_writes_a_failed_record_kept_until_retry_failed(tmp_path, monkeypatch):
    monkeypatch.setattr(Exploding, "fits", 0)
    cfg = iris(tmp_path, "method.estimator._target_=tests.helpers.Exploding")
    (outcome,) = run_job(cfg)
    assert outcome.status == "failed"
    assert "RuntimeError: boom in fit" in outcome.error and "helpers.py:" in outcome.error
    assert outcome.scores == {}

    with outcome.path.open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["status"] == "failed" and row["value"] == "" and row["metric"] == ""
    assert "boom in fit" in row["error"]
    assert math.isnan(read_record(outcome.path)["value"].iloc[0])
    assert finished_record(outcome.path, retry_failed=True) is None
    written = outcome.path.read_bytes()

    # A failure is recorded once: a rerun reports it without fitting or rewriting its record.
    (again,) = run_job(cfg)
    assert again.status == "failed" and again.earlier and Exploding.fits == 1
    assert "boom in fit" in again.error and outcome.path.read_bytes() == written
    assert "recorded earlier; retry_failed=true" in summary_line("iris", "kmeans", 0, again)

    with open_dict(cfg):
        cfg.retry_failed = True
    (retried,) = run_job(cfg)  # fitted again, and failed again
    assert retried.status == "failed" and not retried.earlier and Exploding.fits == 2
    assert record_files(tmp_path) == [outcome.path]


def test_grid_expansion_writes_one_record_per_grid_point(tmp_path, kmeans_fits):
    cfg = iris(
        tmp_path,
        "+grids.kmeans.init=[k-means++,random]",
        "+grids.kmeans.max_iter=[5,50]",
        "+grids.spectral.gamma=[1,2,3]",
    )  # another method's grid is not this job's
    outcomes = run_job(cfg)
    points = sorted((o.params["init"], o.params["max_iter"]) for o in outcomes)
    assert points == [("k-means++", 5), ("k-means++", 50), ("random", 5), ("random", 50)]
    assert all(o.status == "ok" for o in outcomes) and len(kmeans_fits) == 4
    files = record_files(tmp_path)
    assert len(files) == 4 and sorted(files) == sorted(o.path for o in outcomes)
    for outcome in outcomes:
        params = json.loads(read_record(outcome.path)["params"].iloc[0])
        assert (params["init"], params["max_iter"]) == (outcome.params["init"], outcome.params["max_iter"])


def test_a_list_of_grids_is_their_union(tmp_path):
    cfg = iris(tmp_path)
    with open_dict(cfg):
        cfg.grids = OmegaConf.create(
            {"kmeans": [{"init": ["random"]}, {"init": ["k-means++"], "max_iter": [5, 50]}]}
        )
    outcomes = run_job(cfg)
    assert sorted(json.dumps(o.params, sort_keys=True) for o in outcomes) == sorted(
        json.dumps(p, sort_keys=True)
        for p in (
            {"init": "random"},
            {"init": "k-means++", "max_iter": 5},
            {"init": "k-means++", "max_iter": 50},
        )
    )
    assert len(record_files(tmp_path)) == 3


def test_unknown_hyperparameter_is_a_user_error_naming_the_valid_ones(tmp_path):
    cfg = iris(tmp_path)
    with open_dict(cfg):
        cfg.method.estimator.n_iter = 5
    with pytest.raises(UserError, match="'n_iter'") as caught:
        run_job(cfg)
    for valid in ("init", "max_iter", "n_init", "tol", "random_state"):
        assert valid in str(caught.value)

    grid = iris(tmp_path, "+grids.kmeans.linkage=[ward]")
    with pytest.raises(UserError, match="'linkage'"):
        run_job(grid)
    assert record_files(tmp_path) == []


@pytest.mark.parametrize("k", [1, 0, 151])
def test_n_clusters_outside_2_to_n_is_a_hyperparameter_error(tmp_path, k, kmeans_fits):
    cfg = iris(tmp_path, f"+method.estimator.n_clusters={k}")
    with pytest.raises(HyperparameterError, match="n_clusters") as caught:
        run_job(cfg)
    assert isinstance(caught.value, UserError) and "150" in str(caught.value) and str(k) in str(caught.value)
    assert kmeans_fits == [] and record_files(tmp_path) == []


@pytest.mark.parametrize(
    ("method", "sizes"),
    [("kr_kmeans", "[1]"), ("kr_kmeans", "[1,1]"), ("kr_kmeans", "[20,10]"), ("kr_naive", "[20,10]")],
)
def test_khatri_rao_sizes_outside_2_to_n_centroids_are_a_hyperparameter_error(tmp_path, method, sizes):
    cfg = iris(tmp_path, f"method={method}", f"+method.estimator.h={sizes}")
    shown = re.escape(sizes.replace(",", ", "))
    with pytest.raises(
        HyperparameterError, match=rf"h {shown} gives \d+ centroids; it must lie between 2 and .* \(150\)"
    ):
        run_job(cfg)
    assert record_files(tmp_path) == []


def test_khatri_rao_n_clusters_is_checked_even_where_set_sizes_decide_the_count(tmp_path):
    """h replaces n_clusters in the fit, but tables read a record's n_clusters as the count asked."""
    cfg = iris(tmp_path, "method=kr_kmeans", "+method.estimator.h=[2,3]", "+method.estimator.n_clusters=1000")
    with pytest.raises(HyperparameterError, match=r"n_clusters must be .* \(150\) .* got 1000"):
        run_job(cfg)
    assert record_files(tmp_path) == []


def test_an_invalid_scikit_learn_value_is_a_hyperparameter_error_naming_it(tmp_path):
    with pytest.raises(HyperparameterError, match="'init'"):
        run_job(iris(tmp_path, "method.estimator.init=bogus"))
    assert record_files(tmp_path) == []


@pytest.mark.parametrize(
    ("method", "grid", "culprit"),
    [
        ("kmeans", "+grids.kmeans.init=[random,k-means++,bogus]", "'init'"),
        ("clam", "+grids.clam.beta=[1.0,2.0,-1.0]", "CLAM beta must be a number > 0"),
        ("kr_kmeans", "+grids.kr_kmeans.tol=[0.1,-1]", "KhatriRaoKMeans tol must be a number ≥ 0"),
        ("kr_naive", "+grids.kr_naive.als_tol=[0.1,-1]", "KhatriRaoNaive als_tol must be a number ≥ 0"),
    ],
)
def test_an_invalid_value_at_the_last_grid_point_stops_the_job_before_its_first_fit(
    tmp_path, monkeypatch, method, grid, culprit
):
    fits = []
    estimator = locate(compose_config(tmp_path, f"method={method}").method.estimator._target_)
    monkeypatch.setattr(estimator, "fit", lambda self, X, y=None: fits.append(self))
    with pytest.raises(HyperparameterError, match=culprit):
        run_job(iris(tmp_path, f"method={method}", grid))
    assert fits == [] and record_files(tmp_path) == []


class ChecksAfterFit(KMeansLike):
    """A user's estimator whose _validate_params reads what fit sets: not a value a grid can hold."""

    def _validate_params(self):
        if self.n_features_in_ < 1:
            raise ValueError("no features")

    def fit(self, X, y=None):
        self.n_features_in_ = X.shape[1]
        self._validate_params()
        self.labels_ = np.arange(len(X)) % self.n_clusters
        return self


def test_a_check_that_fails_for_another_reason_than_a_value_is_left_to_fit(tmp_path):
    cfg = iris(
        tmp_path, "method.estimator._target_=tests.test_runner.ChecksAfterFit", "+grids.kmeans.n_init=[1,2]"
    )
    assert [outcome.status for outcome in run_job(cfg)] == ["ok", "ok"]


def test_method_max_samples_below_n_skips_the_point(tmp_path, kmeans_fits):
    cfg = iris(tmp_path, "method.max_samples=100")
    (outcome,) = run_job(cfg)
    assert outcome.status == "skipped"
    assert "n=150" in outcome.error and "max_samples=100" in outcome.error
    assert kmeans_fits == []
    frame = read_record(outcome.path)
    assert list(frame["status"]) == ["skipped"] and math.isnan(frame["value"].iloc[0])
    (again,) = run_job(cfg)  # a skip is final under the same cap: not refitted, still skipped
    assert again.status == "skipped" and kmeans_fits == []
    assert "SKIPPED" in summary_line("iris", "kmeans", 0, again)
    (raised,) = run_job(iris(tmp_path, "method.max_samples=150"))  # the cap no longer applies
    assert raised.status == "ok" and raised.path == outcome.path and kmeans_fits == [150]
    assert list(read_record(outcome.path)["status"].unique()) == ["ok"]


def test_dataset_overrides_and_profile_cap_change_the_data_and_the_record(tmp_path, kmeans_fits):
    (plain,) = run_job(iris(tmp_path))
    cfg = iris(tmp_path)
    with open_dict(cfg):
        cfg.dataset_overrides = {"iris": {"subsample": 60}, "zoo": {"subsample": 10}}
    (sub,) = run_job(cfg)
    capped = iris(tmp_path, "profile.max_samples=90")
    (cap,) = run_job(capped)
    assert kmeans_fits == [150, 60, 90]
    assert len({plain.path, sub.path, cap.path}) == 3  # each is its own record


def test_seed_and_metric_suite_are_part_of_the_record_identity(tmp_path):
    (zero,) = run_job(iris(tmp_path, "seed=0"))
    (one,) = run_job(iris(tmp_path, "seed=1"))
    (external,) = run_job(iris(tmp_path, "metrics=external"))
    assert len({zero.path, one.path, external.path}) == 3
    assert set(external.scores) == {"nmi", "ari", "acc", "purity"}
    assert list(read_record(one.path)["seed"].unique()) == [1]


def test_a_new_metric_suite_rescores_the_stored_labels_and_tables_count_the_fit_once(tmp_path, kmeans_fits):
    (default,) = run_job(iris(tmp_path))
    (external,) = run_job(iris(tmp_path, "metrics=external"))
    assert external.status == "rescored" and len(kmeans_fits) == 1
    assert external.scores == pytest.approx({k: default.scores[k] for k in external.scores})
    assert read_record(external.path)["fit_seconds"].iloc[0] == pytest.approx(default.fit_seconds)
    assert "(rescored from its stored labels)" in summary_line("iris", "kmeans", 0, external)
    runs = wide_runs(load_records(tmp_path, "smoke"))
    assert len(runs) == 1  # one fit, two suites: one run, with every metric of both
    assert runs["sc"].iloc[0] == pytest.approx(default.scores["sc"])
    assert runs["purity"].iloc[0] == pytest.approx(external.scores["purity"])
    for suite in ([], ["metrics=external"], []):  # each suite's record stays: alternating resumes
        (again,) = run_job(iris(tmp_path, *suite))
        assert again.status == "cached" and len(kmeans_fits) == 1
    assert len(record_files(tmp_path)) == 2


def test_a_fit_another_experiment_recorded_is_rescored_there_not_fitted_again(tmp_path, kmeans_fits):
    # Two tables that share a configuration (SR-K-means' Tables 2 and 3 both fit MI-ADM) fit it once.
    (first,) = run_job(iris(tmp_path, "+method.trace=[cluster_centers_]"), experiment="table_a")
    (shared,) = run_job(iris(tmp_path, "metrics=external"), experiment="table_b")
    assert shared.status == "rescored" and len(kmeans_fits) == 1
    assert shared.path.parts[-4] == "table_b" and first.path.parts[-4] == "table_a"
    assert shared.scores["nmi"] == pytest.approx(first.scores["nmi"])
    assert read_record(shared.path)["experiment"].iloc[0] == "table_b"
    (again,) = run_job(iris(tmp_path, "metrics=external"), experiment="table_b")
    assert again.status == "cached" and len(kmeans_fits) == 1
    # The fit's trace comes with its labels (SR-K-means' Fig. 1 draws Table 3's records' traces).
    centres = read_trace(shared.path)["cluster_centers_"]
    np.testing.assert_array_equal(centres, first.trace["cluster_centers_"])
    # Where the labels were computed: the lender's record, not this run.
    lender = read_record(first.path).iloc[0]
    assert read_record(shared.path)[["device", "processor"]].iloc[0].tolist() == [
        lender["device"],
        lender["processor"],
    ]
    # Only a fit this job would have run is lent: not one its max_samples would skip, nor one
    # without the trace its method config asks for.
    (limited,) = run_job(iris(tmp_path, "+method.max_samples=10"), experiment="table_d")
    (traced,) = run_job(iris(tmp_path, "+method.trace=[n_iter_]"), experiment="table_e")
    assert limited.status == "skipped" and traced.status == "ok" and len(kmeans_fits) == 2
    # Another point, seed or data setting is another fit: fitted.
    (other_point,) = run_job(iris(tmp_path, "+method.estimator.tol=0.5"), experiment="table_c")
    (other_seed,) = run_job(iris(tmp_path, "seed=1"), experiment="table_c")
    (other_data,) = run_job(iris(tmp_path, "dataset.subsample=100"), experiment="table_c")
    assert {other_point.status, other_seed.status, other_data.status} == {"ok"} and len(kmeans_fits) == 5


def test_a_suite_with_a_metric_of_the_fitted_estimator_fits_again(tmp_path, kmeans_fits):
    run_job(iris(tmp_path, "metrics=external"))
    size = "+metrics.size._target_=clusterbench.metrics.n_params"
    (refit,) = run_job(iris(tmp_path, "metrics=external", size))
    assert refit.status == "ok" and len(kmeans_fits) == 2  # n_params reads the estimator
    runs = wide_runs(load_records(tmp_path, "smoke"))
    assert len(runs) == 1 and runs["size"].iloc[0] == 12 and runs["purity"].notna().all()


def test_a_metric_without_a_value_in_any_record_stays_a_column_of_the_runs(tmp_path, kmeans_fits):
    # k-means has no free energy: NaN in every record of suite kcprime. Beside a second suite of
    # the same fit, the runs named it and the summary raised KeyError.
    run_job(iris(tmp_path, "metrics=kcprime"))
    run_job(iris(tmp_path))
    runs = wide_runs(load_records(tmp_path, "smoke"))
    assert len(runs) == 1 and runs["free_energy"].isna().all() and runs["sc"].notna().all()
    assert summarize(load_records(tmp_path, "smoke"))["sc_n"].tolist() == [1]


def test_a_point_skipped_under_another_suite_is_not_tried_again(tmp_path, kmeans_fits):
    (skipped,) = run_job(iris(tmp_path, "+method.max_samples=10"))
    (again,) = run_job(iris(tmp_path, "+method.max_samples=10", "metrics=external"))
    assert skipped.status == again.status == "skipped" and again.path == skipped.path
    assert len(record_files(tmp_path)) == 1 and kmeans_fits == []


def test_labels_of_other_data_are_not_rescored(tmp_path, kmeans_fits, monkeypatch):
    run_job(iris(tmp_path))
    monkeypatch.setattr(runner, "load_dataset", shifted_data)
    (external,) = run_job(iris(tmp_path, "metrics=external"))
    assert external.status == "ok" and len(kmeans_fits) == 2


def shifted_data(cfg, max_samples=None):
    """The dataset as the config loads it, every feature shifted: the same config, other data."""
    data = load_dataset(cfg, max_samples)
    X = data.X + 1.0
    return dataclasses.replace(data, X=X, digest=data_digest(X, data.y))


def test_a_record_fitted_on_other_data_is_fitted_again(tmp_path, kmeans_fits, monkeypatch):
    (first,) = run_job(iris(tmp_path))
    monkeypatch.setattr(runner, "load_dataset", shifted_data)  # the same config, another file behind it
    (again,) = run_job(iris(tmp_path))
    assert again.status == "ok" and len(kmeans_fits) == 2 and again.path == first.path
    assert again.warnings[0] == "the data changed since this point's record: fitted again"
    assert record_files(tmp_path) == [first.path]
    (cached,) = run_job(iris(tmp_path))
    assert cached.status == "cached" and len(kmeans_fits) == 2


@pytest.mark.parametrize(
    ("override", "fragments"),
    [
        ("seed=abc", ["seed must be an integer ≥ 0", "'abc'"]),
        ("seed=1.5", ["seed must be an integer ≥ 0", "1.5"]),
        ("seed=-1", ["seed must be an integer ≥ 0", "-1"]),
        ("+method.estimator.n_clusters=abc", ["n_clusters must be an integer", "'abc'"]),
        ("+grids.kmeans.init=random", ["grids.kmeans", "'init'", "list"]),
        ("profile.max_samples=2", ["stratified subsample of 2 of 150", "from 3 to 147"]),
        ("profile.max_samples=149", ["stratified subsample of 149 of 150"]),
        ("profile.max_samples=abc", ["profile.max_samples must be an integer ≥ 1", "'abc'"]),
        ("+metrics.sc.max_sample=5", ["metric 'sc' has no option 'max_sample'", "max_samples"]),
        ("metrics.nmi.average_method=foo", ["metric 'nmi'", "average_method"]),
        ("metrics.sc.max_samples=-1", ["metric 'sc'", "max_samples must be null or an integer ≥ 2", "-1"]),
        ("force=maybe", ["force must be true or false", "'maybe'"]),
        ("+grids.kmeans.init=[]", ["grids.kmeans", "'init'", "non-empty"]),
        ("+metrics.foo=3", ["metric 'foo' needs _target_"]),
        (
            "+metrics.seed._target_=clusterbench.metrics.nmi",
            ["metric 'seed' takes the name of a record column"],
        ),
        (
            "+metrics.foo._target_=clusterbench.metrics.POINTWISE",
            ["metric 'foo': _target_ 'clusterbench.metrics.POINTWISE' is not an importable function"],
        ),
        ("method.estimator._target_=.sklearn.cluster.KMeans", ["cannot import .sklearn.cluster.KMeans"]),
        ("method.estimator._target_=sklearn.cluster.k_means", ["sklearn.cluster.k_means is not a class"]),
        (
            "+metrics.foo._target_=clusterbench.metrics.nope",
            ["_target_ 'clusterbench.metrics.nope'", "module 'clusterbench.metrics' has no attribute 'nope'"],
        ),
        ("~method.estimator._target_", ["method 'kmeans' gives no estimator._target_", "conf/method/"]),
    ],
)
def test_invalid_job_settings_are_user_errors_before_any_record(tmp_path, override, fragments, kmeans_fits):
    with pytest.raises(UserError) as caught:
        run_job(iris(tmp_path, override))
    for fragment in fragments:
        assert fragment in str(caught.value)
    assert record_files(tmp_path) == [] and kmeans_fits == []  # found before any fit


def test_locate_finds_what_hydra_finds_and_names_the_missing_module(tmp_path, monkeypatch):
    assert locate("sklearn.cluster.KMeans") is sklearn.cluster.KMeans
    assert locate("collections.OrderedDict.fromkeys") == collections.OrderedDict.fromkeys  # a class's method
    with pytest.raises(ImportError, match="No module named 'nopkg'"):
        locate("nopkg.Foo")
    with pytest.raises(ImportError, match="No module named 'KMeans'"):  # a bare name is a module
        locate("KMeans")
    with pytest.raises(ImportError, match=r"module 'sklearn\.cluster' has no attribute 'KMeansX'"):
        locate("sklearn.cluster.KMeansX")
    (tmp_path / "needs_a_missing_package.py").write_text("import missing_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ImportError, match="No module named 'missing_dependency_xyz'"
    ):  # not the module's own name
        locate("needs_a_missing_package.Clusterer")


def test_a_metric_taking_keywords_accepts_any_option_but_those_the_runner_passes(tmp_path):
    target = "+metrics.fwd._target_=tests.helpers.forwarding_silhouette"
    ok = iris(tmp_path, target, "+metrics.fwd.random_state=3", "+metrics.fwd.sample_size=50")
    (point,) = run_job(ok)
    assert point.status == "ok" and 0.3 < point.scores["fwd"] < 0.9
    with pytest.raises(UserError, match=r"no option 'labels' \(the runner passes it\).*\(\*\*kwargs\)"):
        run_job(iris(tmp_path / "clash", target, "+metrics.fwd.labels=3"))


def test_an_empty_metric_suite_is_a_user_error(tmp_path):
    cfg = iris(tmp_path)
    cfg.metrics = {}
    with pytest.raises(UserError, match="metric suite is empty"):
        run_job(cfg)


def test_an_error_inside_a_metric_is_a_failed_point_naming_the_metric(tmp_path, monkeypatch):
    def broken(labels):
        raise RuntimeError("cannot score")

    monkeypatch.setattr(clusterbench.metrics, "n_found", broken)
    (outcome,) = run_job(iris(tmp_path))
    assert outcome.status == "failed"
    assert outcome.error.startswith("metric 'n_found': RuntimeError: cannot score at test_runner.py:")


def test_an_unknown_device_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="device"):
        run_job(iris(tmp_path, "device=gpu"))


def test_summary_line_shows_scores_fit_time_and_cache_state():
    scores = {"sc": 0.37352, "nmi": 0.8331, "ari": 0.7374, "acc": 0.8218, "inertia": 519.5}
    ok = PointResult({"init": "random"}, "ok", scores=scores, fit_seconds=2.345)
    line = summary_line("zoo", "kmeans", 0, ok)
    assert (
        line
        == "zoo  kmeans  seed=0  init=random | SC 0.3735  NMI 0.8331  ARI 0.7374  ACC 0.8218 | fit 2.35 s"
    )
    ok.hyperparameters = {"init": "random", "tol": 0.1, "n_init": 10}
    given = summary_line("zoo", "kmeans", 0, ok, ["tol", "init", "_target_"])
    assert given.startswith("zoo  kmeans  seed=0  tol=0.1 init=random | ")  # the values fitted
    cached = PointResult({}, "cached", scores=scores, fit_seconds=1.0)
    assert summary_line("zoo", "kmeans", 1, cached).endswith("fit 1.00 s (cached)")
    failed = PointResult({}, "failed", error="RuntimeError: boom")
    assert summary_line("zoo", "kmeans", 0, failed) == "zoo  kmeans  seed=0 | FAILED: RuntimeError: boom"


def test_summary_line_shows_a_suites_own_metrics_after_the_four():
    # PRCut's ratio cut and a user's new metric are shown; what every suite holds beside the four is not.
    scores = {
        "acc": 0.5,
        "ratio_cut": 142.345,
        "purity": 0.6,
        "n_found": 10.0,
        "nmi": 0.25,
        "mine": -1234567.5,
    }
    line = summary_line("mnist", "prcut", 0, PointResult({}, "ok", scores=scores, fit_seconds=1.0))
    assert (
        line == "mnist  prcut  seed=0 | NMI 0.2500  ACC 0.5000  RATIO_CUT 142.3  MINE -1.235e+06 | fit 1.00 s"
    )
    # A count is shown whole (Khatri-Rao's n_params); what is no number, not at all (not a crash).
    scores = {"ari": 0.5, "n_params": 123456.0, "mine": None, "label": "x", "flag": True}
    line = summary_line("r15", "kr_kmeans", 0, PointResult({}, "ok", scores=scores, fit_seconds=1.0))
    assert line == "r15  kr_kmeans  seed=0 | ARI 0.5000  N_PARAMS 123456 | fit 1.00 s"


class Sleeper(KMeansLike):
    """Takes 5 s to fit."""

    def fit(self, X, y=None):
        time.sleep(5)
        self.labels_ = np.zeros(len(X), dtype=int)
        return self


def test_a_fit_past_timeout_s_is_recorded_as_timeout_and_not_retried(tmp_path):
    sleeper = "method.estimator._target_=tests.test_runner.Sleeper"
    cfg = compose_config(tmp_path, "dataset=iris", "timeout_s=0.5", sleeper)
    start = time.perf_counter()
    [outcome] = run_job(cfg)
    assert time.perf_counter() - start < 4
    assert outcome.status == "timeout" and "timeout_s=0.5" in outcome.error
    frame = read_record(outcome.path)
    assert list(frame["status"]) == ["timeout"] and frame["value"].isna().all()
    assert frame["fit_seconds"].tolist() == [0.5]  # the limit it ran under
    assert [o.status for o in run_job(cfg)] == ["timeout"]  # kept on a rerun, not refitted
    assert [
        o.status for o in run_job(compose_config(tmp_path, "dataset=iris", "timeout_s=0.4", sleeper))
    ] == ["timeout"]
    # A larger limit (or none) fits the point again: it may finish now.
    longer = compose_config(tmp_path, "dataset=iris", "timeout_s=0.6", sleeper)
    [retried] = run_job(longer)
    assert retried.status == "timeout" and "timeout_s=0.6" in retried.error
    assert read_record(outcome.path)["fit_seconds"].tolist() == [0.6]


class CountsThreads(KMeansLike):
    """Notes the CPU threads each thread pool (BLAS, OpenMP) offers while it fits."""

    pools = ()

    def fit(self, X, y=None):
        from threadpoolctl import threadpool_info

        type(self).pools = [pool["num_threads"] for pool in threadpool_info()]
        self.labels_ = np.arange(len(X)) % 2
        return self


def test_threads_limits_the_blas_and_openmp_pools_during_a_fit(tmp_path):
    """threads=1 (the default) runs BLAS and OpenMP at one thread, whose sums records are
    reproducible at; null leaves them at their defaults; either way they are restored after."""
    import sklearn.cluster  # noqa: F401  (loads scikit-learn's OpenMP pool)
    from threadpoolctl import threadpool_info

    outside = [pool["num_threads"] for pool in threadpool_info()]
    counts = "method.estimator._target_=tests.test_runner.CountsThreads"
    run_job(compose_config(tmp_path, "dataset=iris", counts))
    assert CountsThreads.pools and set(CountsThreads.pools) == {1}
    run_job(compose_config(tmp_path, "dataset=iris", counts, "threads=null", "method.estimator.max_iter=299"))
    assert CountsThreads.pools == outside
    assert [pool["num_threads"] for pool in threadpool_info()] == outside


class OnDevice(KMeansLike):
    """Takes a device, as the torch estimators do; counts its fits."""

    fits = 0

    def __init__(
        self, n_clusters=8, init="k-means++", n_init=1, max_iter=300, random_state=None, device="auto"
    ):
        super().__init__(n_clusters, init, n_init, max_iter, random_state)
        self.device = device

    def fit(self, X, y=None):
        type(self).fits += 1
        self.labels_ = np.arange(len(X)) % self.n_clusters
        return self


class Unevolved(KMeansLike):
    """``Evolving`` as it was before it had its option; counts the fits of both."""

    fits = 0

    def fit(self, X, y=None):
        Unevolved.fits += 1
        self.labels_ = np.arange(len(X)) % self.n_clusters
        return self


class Evolving(Unevolved):
    """``Unevolved`` with an option added later; ``option="before"`` does what it did before."""

    _params_added_later: ClassVar[dict] = {"option": "before"}

    def __init__(
        self, n_clusters=8, init="k-means++", n_init=1, max_iter=300, random_state=None, option="before"
    ):
        super().__init__(n_clusters, init, n_init, max_iter, random_state)
        self.option = option


def test_an_option_added_later_leaves_the_earlier_records_found(tmp_path, monkeypatch):
    monkeypatch.setattr(Unevolved, "fits", 0)
    on = "method.estimator._target_=tests.test_runner.Evolving"
    with monkeypatch.context() as before:  # the class as it was: no option
        before.setattr(sys.modules[__name__], "Evolving", Unevolved)
        (earlier,) = run_job(iris(tmp_path, on))
    (again,) = run_job(iris(tmp_path, on))
    assert (again.status, again.path, again.hyperparameters["option"]) == ("cached", earlier.path, "before")
    (other,) = run_job(iris(tmp_path, on, "+method.estimator.option=after"))
    assert other.status == "ok" and other.path != earlier.path
    assert json.loads(read_record(other.path)["params"].iloc[0])["option"] == "after"
    earlier_params = read_record(earlier.path)["params"].iloc[0]
    (refitted,) = run_job(iris(tmp_path, on, "force=true"))  # today's record at the former value:
    assert refitted.path == earlier.path  # its params are the earlier record's: one grid point
    assert read_record(refitted.path)["params"].iloc[0] == earlier_params
    assert Unevolved.fits == 3


def test_a_point_finished_on_the_other_device_is_reused_and_a_forced_twin_counts_once(tmp_path, monkeypatch):
    monkeypatch.setattr(OnDevice, "fits", 0)
    on = "method.estimator._target_=tests.test_runner.OnDevice"
    (cpu,) = run_job(iris(tmp_path, on, "+method.estimator.device=cpu"))
    (cuda,) = run_job(iris(tmp_path, on, "+method.estimator.device=cuda"))  # as on a GPU machine
    assert cuda.status == "cached" and cuda.path == cpu.path and OnDevice.fits == 1
    (forced,) = run_job(iris(tmp_path, on, "+method.estimator.device=cuda", "force=true"))
    assert forced.status == "ok" and forced.path != cpu.path and OnDevice.fits == 2
    records = load_records(tmp_path, "smoke")
    records.loc[records["config_hash"] == forced.path.stem, "timestamp"] = "9999"  # the later record
    runs = wide_runs(records)
    assert list(runs["config_hash"]) == [forced.path.stem]  # a point fitted on both devices counts once
    records.loc[records["config_hash"] == cpu.path.stem, "seed"] = 1  # not twins: both count
    assert len(wide_runs(records)) == 2
    records.loc[records["config_hash"] == cpu.path.stem, "seed"] = 0
    records["timestamp"] = ""  # a tie: still one run
    assert len(wide_runs(records)) == 1
    records.loc[records["config_hash"] == forced.path.stem, "status"] = "failed"  # the later one failed:
    records.loc[records["config_hash"] == forced.path.stem, "timestamp"] = "9999"  # the successful one counts
    assert list(wide_runs(records)["config_hash"]) == [cpu.path.stem]


def test_a_point_rerun_after_an_edit_of_its_dataset_config_counts_once_by_its_latest_record(tmp_path):
    """A dataset's config is hashed into its records' names: edited (its description, then its
    preprocessing), it has the points fitted again beside their earlier records. Each seed counts
    once, by its latest record, in tables and the summary alike: not twice, nor averaged over the
    two configurations."""
    (first,) = run_job(iris(tmp_path))
    (described,) = run_job(iris(tmp_path, "dataset.description=edited"))
    (raw,) = run_job(iris(tmp_path, "dataset.description=edited", "dataset.preprocess=null"))
    (other_seed,) = run_job(iris(tmp_path, "dataset.description=edited", "dataset.preprocess=null", "seed=1"))
    assert len({first.path, described.path, raw.path, other_seed.path}) == 4
    assert first.scores["acc"] == described.scores["acc"] != raw.scores["acc"]  # standardised or not
    records = load_records(tmp_path, "smoke")
    order = [first.path.stem, described.path.stem, raw.path.stem, other_seed.path.stem]
    written = {stem: f"2026-01-0{day}" for day, stem in enumerate(order, start=1)}  # in that order
    records["timestamp"] = records["config_hash"].map(written)
    runs = wide_runs(records)
    assert sorted(runs["config_hash"]) == sorted([raw.path.stem, other_seed.path.stem])
    row = summarize(records).iloc[0]
    assert (row["runs"], row["acc_mean"]) == (2, np.mean([raw.scores["acc"], other_seed.scores["acc"]]))
    records.loc[records["config_hash"] == raw.path.stem, "status"] = "failed"  # the latest failed:
    assert set(wide_runs(records)["config_hash"]) == {described.path.stem, other_seed.path.stem}


def test_a_point_rescored_elsewhere_under_another_suite_keeps_the_first_suites_metrics(tmp_path, monkeypatch):
    """Fitted on CPU under the default suite, then rescored on the GPU machine from those labels
    under the external suite: one fit, which the tables and summary hold with both suites'
    metrics (the later record alone had lost SC)."""
    monkeypatch.setattr(OnDevice, "fits", 0)
    on = "method.estimator._target_=tests.test_runner.OnDevice"
    (cpu,) = run_job(iris(tmp_path, on, "+method.estimator.device=cpu"))
    (external,) = run_job(iris(tmp_path, on, "+method.estimator.device=cuda", "metrics=external"))
    assert (external.status, OnDevice.fits) == ("rescored", 1) and "sc" not in external.scores
    records = load_records(tmp_path, "smoke")
    records["timestamp"] = records["config_hash"].map(
        {cpu.path.stem: "2026-01-01", external.path.stem: "2026-01-02"}
    )
    (run,) = wide_runs(records).to_dict("records")
    assert (run["config_hash"], run["sc"], run["purity"]) == (
        external.path.stem,
        cpu.scores["sc"],
        external.scores["purity"],
    )
    assert summarize(records)["sc_n"].tolist() == [1]


def test_a_metric_name_given_to_other_options_for_a_recorded_fit_is_refused(tmp_path):
    """NMI averaged geometrically under the default suite's name, for a fit recorded with the
    arithmetic NMI: tables read one value per metric name and fit, so the later record's NMI would
    have stood for both (the summary showed the geometric one after the default suite's rerun)."""
    (default,) = run_job(iris(tmp_path, "metrics=default"))
    for words in (
        ["metrics.nmi.average_method=geometric"],
        ["metrics.nmi.average_method=geometric", "force=true"],
    ):
        with pytest.raises(
            UserError, match=r"metric 'nmi' is scored with options \{\"average_method\": \"geometric\"\}"
        ):
            run_job(iris(tmp_path, "metrics=default", *words))
    assert sorted(path.name for path in default.path.parent.glob("*.csv")) == [default.path.name]
    (apart,) = run_job(
        iris(
            tmp_path,
            "metrics=default",
            "+metrics.nmi_geometric={_target_: clusterbench.metrics.nmi, average_method: geometric}",
        )
    )
    (same,) = run_job(iris(tmp_path, "metrics=default", "metrics.nmi.average_method=arithmetic"))
    assert (apart.status, same.status) == ("rescored", "cached")
    assert apart.scores["nmi"] == default.scores["nmi"] != apart.scores["nmi_geometric"]


class OnThreads(OnDevice):
    """Takes a device and a thread count, as the torch estimators do."""

    def __init__(
        self,
        n_clusters=8,
        init="k-means++",
        n_init=1,
        max_iter=300,
        random_state=None,
        device="auto",
        n_threads=None,
    ):
        super().__init__(n_clusters, init, n_init, max_iter, random_state, device)
        self.n_threads = n_threads


def test_a_point_fitted_with_another_thread_count_or_device_is_reused_and_counts_once(tmp_path, monkeypatch):
    """Records made on a GPU machine with threads=2 stand for the same points at threads=1 on a
    CPU machine (and back); a forced second fit elsewhere is one run in the tables."""
    monkeypatch.setattr(OnThreads, "fits", 0)
    on = "method.estimator._target_=tests.test_runner.OnThreads"
    (gpu,) = run_job(iris(tmp_path, on, "+method.estimator.device=cuda", "threads=2"))
    assert json.loads(read_record(gpu.path)["params"].iloc[0])["n_threads"] == 2
    (cpu,) = run_job(iris(tmp_path, on, "+method.estimator.device=cpu", "threads=1"))
    (same_device,) = run_job(iris(tmp_path, on, "+method.estimator.device=cuda", "threads=null"))
    assert cpu.status == same_device.status == "cached" and cpu.path == same_device.path == gpu.path
    assert OnThreads.fits == 1
    (other_seed,) = run_job(iris(tmp_path, on, "+method.estimator.device=cpu", "threads=1", "seed=1"))
    assert other_seed.status == "ok" and OnThreads.fits == 2  # not a twin: another fit
    (forced,) = run_job(iris(tmp_path, on, "+method.estimator.device=cpu", "threads=1", "force=true"))
    assert forced.status == "ok" and forced.path != gpu.path and OnThreads.fits == 3
    runs = wide_runs(load_records(tmp_path, "smoke"))
    assert sorted(runs["seed"]) == [0, 1]  # seed 0 fitted twice, counted once


@pytest.mark.parametrize(("first", "then"), [("threads=2", "threads=1"), ("threads=1", "threads=2")])
def test_a_point_named_without_its_former_thread_count_is_found_at_another(
    tmp_path, monkeypatch, first, then
):
    """Lazy k-means (as CLAM, DEC, k-means-C′ and Khatri-Rao k-means) names a record at
    n_threads=1 without it, a parameter added later (runner.named_by): its twin at another thread
    count is looked up under that name too, and found, from either side."""
    fits = []
    fit = _TruncatedEM.fit
    monkeypatch.setattr(_TruncatedEM, "fit", lambda self, X, y=None: fits.append(len(X)) or fit(self, X, y))
    (one,) = run_job(iris(tmp_path, "method=lazy_kmeans", first))
    (two,) = run_job(iris(tmp_path, "method=lazy_kmeans", then))
    assert (one.status, two.status, two.path, len(fits)) == ("ok", "cached", one.path, 1)


def test_twins_are_looked_for_only_where_the_folders_records_ran(tmp_path, monkeypatch):
    """The ledger names a point's twins from the devices and thread counts its folder's records
    were fitted with, not from every pair of DEVICES_RUN x THREADS_RUN (258 hashes a point)."""
    from clusterbench import resume
    from clusterbench.results import first_rows

    on = "method.estimator._target_=tests.test_runner.OnThreads"
    (gpu,) = run_job(iris(tmp_path, on, "+method.estimator.device=cuda", "threads=2"))
    where = resume.places_run(first_rows(gpu.path.parent))
    assert where == resume.Places(frozenset({"cuda"}), frozenset({2}))
    named = []
    original = resume._elsewhere

    def spy(point, places):
        found = list(original(point, places))
        named.extend((each["params"]["device"], each["params"]["n_threads"]) for each in found)
        return iter(found)

    monkeypatch.setattr(resume, "_elsewhere", spy)
    (cpu,) = run_job(iris(tmp_path, on, "+method.estimator.device=cpu", "threads=1"))
    assert cpu.status == "cached" and cpu.path == gpu.path
    assert set(named) == {("cpu", 2), ("cuda", 1), ("cuda", 2)}  # never (cpu, 3), (cuda, None), ...


def test_a_timeout_on_the_other_device_does_not_stand_for_this_one(tmp_path, monkeypatch):
    monkeypatch.setattr(OnDevice, "fits", 0)
    monkeypatch.setattr(OnDevice, "fit", Sleeper.fit)
    on = ["method.estimator._target_=tests.test_runner.OnDevice", "timeout_s=0.3"]
    (cpu,) = run_job(compose_config(tmp_path, "dataset=iris", *on, "+method.estimator.device=cpu"))
    (cuda,) = run_job(compose_config(tmp_path, "dataset=iris", *on, "+method.estimator.device=cuda"))
    assert cpu.status == cuda.status == "timeout" and cuda.path != cpu.path  # tried on cuda too


def test_a_timeout_map_limits_only_the_methods_it_names(tmp_path):
    sleeper = "method.estimator._target_=tests.test_runner.Sleeper"
    cfg = compose_config(tmp_path, "dataset=iris", "timeout_s={kmeans: 0.5, spectral: 1000}", sleeper)
    [outcome] = run_job(cfg)  # the job's method is named kmeans (its estimator is the sleeper)
    assert outcome.status == "timeout" and "timeout_s=0.5" in outcome.error
    assert fit_timeout(cfg.timeout_s, "spectral") == 1000
    assert fit_timeout(cfg.timeout_s, "clam") is None  # a method the map leaves out runs unbounded
    assert fit_timeout(30, "clam") == 30 and fit_timeout(None, "clam") is None


@pytest.mark.parametrize("timeout_s", [0, -1, "1h", True, {"kmeans": "soon"}])
def test_an_invalid_timeout_is_a_user_error_naming_the_method(timeout_s):
    with pytest.raises(UserError, match="timeout_s for method 'kmeans' must be seconds > 0 or null"):
        fit_timeout(timeout_s, "kmeans")


def test_method_overrides_set_a_datasets_tuned_hyperparameters_under_the_grid(tmp_path):
    cfg = compose_config(
        tmp_path,
        "dataset=iris",
        "profile=smoke",
        "+method_overrides.kmeans.iris={max_iter: 7, init: random}",
        "+method_overrides.kmeans.zoo={max_iter: 99}",
        "+grids.kmeans.init=[k-means++]",
    )
    [outcome] = run_job(cfg)
    params = json.loads(read_record(outcome.path)["params"].iloc[0])
    assert params["max_iter"] == 7  # iris's tuned value, not zoo's, not the profile's 300
    assert params["init"] == "k-means++"  # the grid point wins over the tuned value


class Chatty(KMeansLike):
    """Prints the same line three times while fitting, as scikit-learn's discretize does."""

    def fit(self, X, y=None):
        for _ in range(3):
            print("SVD did not converge, randomizing and trying again")
        self.labels_ = (np.arange(len(X)) % 2).astype(int)
        return self


def test_what_a_fit_prints_is_summarised_not_streamed(tmp_path, capsys):
    cfg = compose_config(tmp_path, "dataset=iris", "method.estimator._target_=tests.test_runner.Chatty")
    [outcome] = run_job(cfg)
    assert capsys.readouterr().out == ""
    assert outcome.warnings == ["printed 3x: SVD did not converge, randomizing and trying again"]
    assert "[warning: printed 3x: SVD did not converge" in summary_line("iris", "chatty", 0, outcome)


# Every method config that asks for k clusters (dbscan finds its own number).
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(
    "method",
    [
        *("kmeans", "spectral", "agglomerative", "clam", "clam_eq8", "clam_weighted", "dec", "dec_random"),
        *("kr_kmeans", "kr_kmeans_product", "kr_naive", "kmeans_kr", "kmeans_kr_budget"),
    ],
)
def test_every_method_config_fits_zoo_under_the_smoke_profile(tmp_path, method):
    require_cached("zoo")
    (outcome,) = run_job(compose_config(tmp_path, f"method={method}", "dataset=zoo", "profile=smoke"))
    assert outcome.status == "ok", outcome.error
    assert math.isfinite(outcome.scores["sc"]) and -1 <= outcome.scores["sc"] <= 1
    assert outcome.scores["n_found"] >= 2


def test_a_summary_line_names_a_methods_variant_unless_it_is_the_default():
    assert method_label(OmegaConf.create({"name": "clam", "variant": "eq8"})) == "clam[eq8]"
    assert method_label(OmegaConf.create({"name": "clam", "variant": "default"})) == "clam"
    assert method_label(OmegaConf.create({"name": "kmeans"})) == "kmeans"


def test_kmeans_with_the_protocentroid_budget_takes_h1_plus_h2_centroids(tmp_path):
    # Zoo's k = 7 is prime: Khatri-Rao k-means uses 2 + 4 protocentroids, so this baseline takes 6.
    require_cached("zoo")
    cfg = compose_config(tmp_path, "method=kmeans_kr_budget", "dataset=zoo", "profile=smoke")
    (outcome,) = run_job(cfg)
    record = read_record(outcome.path)
    assert json.loads(record["params"].iloc[0])["n_clusters"] == 6
    assert outcome.scores["n_found"] == 6


def test_list_hyperparameters_reach_the_estimator_and_the_record_as_lists(tmp_path):
    require_cached("zoo")
    cfg = compose_config(
        tmp_path, "method=kr_kmeans", "method.estimator.h=[3,3]", "dataset=zoo", "profile=smoke"
    )
    (outcome,) = run_job(cfg)
    assert outcome.status == "ok", outcome.error
    assert json.loads(read_record(outcome.path)["params"].iloc[0])["h"] == [3, 3]
    assert outcome.scores["n_found"] <= 9


def test_method_seeds_run_a_method_at_the_listed_seeds_only(tmp_path, kmeans_fits):
    # An experiment sweeps seeds 0-99 for k-means-C′; DBSCAN ignores the seed and runs once.
    assert run_job(iris(tmp_path, "seed=3", "+method_seeds.kmeans=[0]")) == []
    assert kmeans_fits == [] and record_files(tmp_path) == []
    outcomes = run_job(iris(tmp_path, "seed=0", "+method_seeds.kmeans=[0]", "+method_seeds.dbscan=[0]"))
    assert [o.status for o in outcomes] == ["ok"] and len(record_files(tmp_path)) == 1


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+method_seeds.kmeans=3", "method_seeds.kmeans must be a list of seeds (integers ≥ 0), got 3"),
        ("+method_seeds.kmeans=[-1]", "method_seeds.kmeans must be a list of seeds (integers ≥ 0), got [-1]"),
        ("method_seeds=5", "method_seeds must be a map {method name: ...}, got 5"),
        ("grids=5", "grids must be a map {method name: ...}, got 5"),
        ("+grids.kmeans=[]", "grids.kmeans is empty; give it values"),
        ("+grids.kmeans={}", "grids.kmeans is empty; give it values"),
        ("+dataset_overrides.iris=3", "dataset_overrides.iris must be a map {dataset key: value}, got 3"),
        (
            "+dataset_overrides.iris.subsampel=50",
            "dataset_overrides.iris.subsampel: dataset 'iris' has no key",
        ),
        ("+dataset_overrides.irsi.subsample=50", "dataset_overrides.irsi names no dataset"),
        ("+method_overrides.kmenas.iris.n_init=3", "method_overrides.kmenas names no method"),
        ("+method_overrides.kmeans.irsi.n_init=3", "method_overrides.kmeans.irsi names no dataset"),
        (
            "+method_overrides.kmeans.iris=3",
            "method_overrides.kmeans.iris must be a map {hyperparameter: value}",
        ),
        ("method.max_samples=abc", "method.max_samples must be an integer ≥ 1 or null, got 'abc'"),
        ("method.max_samples=-1", "method.max_samples must be an integer ≥ 1 or null, got -1"),
    ],
)
def test_a_map_keyed_by_name_of_the_wrong_shape_or_key_is_a_user_error(
    tmp_path, override, message, kmeans_fits
):
    """Each was a traceback (a TypeError, an OmegaConf merge error) or, for a misspelt name, an
    override accepted and ignored; max_samples=-1 was recorded as a skip."""
    with pytest.raises(UserError) as raised:
        run_job(iris(tmp_path, override))
    assert message in str(raised.value)
    assert kmeans_fits == [] and record_files(tmp_path) == []


def test_a_grid_over_random_state_sized_by_the_profile_fits_one_restart_per_seed(tmp_path):
    # Experiment kr_restart_odds: ${seeds:${profile.restart_odds_runs}} = 0..39 under smoke.
    require_cached("zoo")
    cfg = compose_config(
        tmp_path, "experiment=kr_restart_odds", "method=kmeans_kr", "dataset=zoo", "profile=smoke"
    )
    outcomes = run_job(cfg)
    states = [json.loads(read_record(o.path)["params"].iloc[0])["random_state"] for o in outcomes]
    assert states == list(range(40))
    assert len({o.scores["inertia"] for o in outcomes}) > 1  # restarts differ


def test_an_estimator_without_labels_is_scored_by_its_predict_and_one_without_either_is_a_user_error(
    tmp_path,
):
    cfg = iris(tmp_path, "method.estimator._target_=tests.helpers.PredictsOnly")
    (outcome,) = run_job(cfg)
    y = load_dataset(dataset_config(cfg), max_samples=cfg.profile.max_samples).y
    labels = np.load(outcome.path.with_suffix(".labels.npy"))
    assert labels.tolist() == (np.arange(len(y)) % 2).tolist()
    assert outcome.status == "ok" and outcome.scores["ari"] == pytest.approx(adjusted_rand_score(y, labels))
    with pytest.raises(
        UserError, match="method 'kmeans': the fitted NoLabels sets no labels_ and has no predict"
    ):
        run_job(iris(tmp_path, "method.estimator._target_=tests.helpers.NoLabels"))


def test_labels_that_are_not_one_finite_value_per_point_fail_the_point(tmp_path):
    (outcome,) = run_job(iris(tmp_path, "method.estimator._target_=tests.helpers.NaNLabels"))
    assert outcome.status == "failed" and "1 labels are NaN or infinite" in outcome.error


def test_a_fit_on_the_other_device_is_rescored_under_a_new_suite(tmp_path, monkeypatch):
    monkeypatch.setattr(OnDevice, "fits", 0)
    on = "method.estimator._target_=tests.test_runner.OnDevice"
    run_job(iris(tmp_path, on, "+method.estimator.device=cpu"))
    (cuda,) = run_job(iris(tmp_path, on, "+method.estimator.device=cuda", "metrics=external"))
    assert cuda.status == "rescored" and OnDevice.fits == 1


def test_a_stored_fit_is_the_latest_successful_record_of_the_fit(tmp_path):
    """One fit's records under other suites lend their labels to a point that would fit it again:
    the latest successful record's, whatever the order the folder lists them in (lending the
    oldest passed every other test: none had two successful records of one fit), and never
    labels of another number of points."""

    def record(name, timestamp, labels, status="ok"):
        path = tmp_path / f"{name}.csv"
        row = {"status": status, "timestamp": timestamp, "fit_seconds": 1.0, "device": "cpu"}
        write_record(path, [{**row, "processor": "x", "metric": "sc", "value": 0.5}], labels=labels)
        return path

    old = record("old", "2024-01-01T00:00:01", np.array([0, 0, 1]))
    new = record("new", "2024-01-02T00:00:01", np.array([1, 1, 0]))
    failed = record("failed", "2024-01-03T00:00:01", None, status="failed")
    for order in ([old, new, failed], [new, failed, old]):
        assert _stored_fit(order, n_points=3).labels.tolist() == [1, 1, 0]
    assert _stored_fit([old], n_points=4) is None


def test_a_mixture_that_counts_its_clusters_as_n_components_is_given_the_datasets_k():
    # docs/extending.md names GaussianMixture; without this it fitted its default, one component
    from types import SimpleNamespace

    data = SimpleNamespace(n_clusters=3)
    gmm = OmegaConf.create({"name": "gmm", "estimator": {"_target_": "sklearn.mixture.GaussianMixture"}})
    assert runner.build_estimator(gmm, {}, data, 0, "cpu").n_components == 3
    own = OmegaConf.merge(gmm, {"estimator": {"n_components": 5}})
    assert runner.build_estimator(own, {}, data, 0, "cpu").n_components == 5  # the config's value kept
    assert runner.build_estimator(gmm, {"n_components": 4}, data, 0, "cpu").n_components == 4  # a grid's
    # one that takes n_clusters keeps its own n_components (SpectralClustering's embedding size)
    spectral = OmegaConf.create(
        {"name": "sc", "estimator": {"_target_": "sklearn.cluster.SpectralClustering"}}
    )
    built = runner.build_estimator(spectral, {}, data, 0, "cpu")
    assert (built.n_clusters, built.n_components) == (3, None)


# From a third mutation audit of the suite: each test below failed with one plausible bug in
# place and passed without it.


def test_n_clusters_may_equal_the_number_of_points_but_not_exceed_it():
    from types import SimpleNamespace

    from clusterbench.checks import check_n_clusters

    data = SimpleNamespace(name="four", y=np.zeros(4))
    check_n_clusters(SimpleNamespace(n_clusters=4), data)  # k = n: allowed (docstring: between 2 and n)
    check_n_clusters(SimpleNamespace(n_clusters=2), data)
    with pytest.raises(HyperparameterError, match=r"between 2 and the number of points \(4\)"):
        check_n_clusters(SimpleNamespace(n_clusters=5), data)


@pytest.mark.parametrize(
    ("overrides", "setting"),
    [
        ((), "method.n_neighbors=..."),
        (
            ("+method_overrides.spectral_knn.iris.n_neighbors=150",),
            "method_overrides.spectral_knn.iris.n_neighbors=...",
        ),
        (
            (
                "+method_overrides.spectral_knn.iris.n_neighbors=5",
                "+grids.spectral_knn.n_neighbors=[10,150]",
            ),
            "grids.spectral_knn.n_neighbors=[...]",
        ),
    ],
)
def test_a_knn_graph_larger_than_the_data_names_the_override_that_sets_it(tmp_path, overrides, setting):
    # What wins names the fix: the grid's value over the experiment's per-dataset one over the method's.
    cfg = compose_config(tmp_path, "method=spectral_knn", "dataset=iris", *overrides)
    with pytest.raises(HyperparameterError) as raised:
        runner.checked_grid(runner.prepare_job(cfg, "adhoc"))
    assert str(raised.value).endswith(f"got 150: lower n_neighbors ({setting})")


def test_a_method_that_takes_no_seed_gets_a_record_per_seed(tmp_path):
    # Agglomerative takes no random_state: the job's seed alone tells its seeds' records apart
    # (a metric may still read it), so seed=1 must not be served seed 0's record.
    (zero,) = run_job(iris(tmp_path, "method=agglomerative"))
    (one,) = run_job(iris(tmp_path, "method=agglomerative", "seed=1"))
    assert (zero.status, one.status) == ("ok", "ok") and one.path != zero.path
    assert list(read_record(one.path)["seed"].unique()) == [1]


def test_the_jobs_seed_reaches_the_estimator_as_random_state(tmp_path):
    (one,) = run_job(iris(tmp_path, "seed=1"))
    assert one.hyperparameters["random_state"] == 1
    assert json.loads(read_record(one.path)["params"].iloc[0])["random_state"] == 1


def test_a_device_left_to_the_job_reaches_the_estimator_resolved(tmp_path):
    # device=auto (the default) is resolved before the estimator is built: its record says
    # where it ran, which "auto" does not.
    on = "method.estimator._target_=tests.test_runner.OnDevice"
    (outcome,) = run_job(iris(tmp_path, on))
    resolved = resolve_device("auto")
    assert outcome.hyperparameters["device"] == resolved != "auto"
    assert read_record(outcome.path)["device"].iloc[0] == resolved


def test_a_rescored_record_names_the_device_its_stored_labels_were_fitted_on(tmp_path, monkeypatch):
    monkeypatch.setattr(OnDevice, "fits", 0)
    on = "method.estimator._target_=tests.test_runner.OnDevice"
    run_job(iris(tmp_path, on, "+method.estimator.device=cuda"))  # as on a GPU machine
    (cpu,) = run_job(iris(tmp_path, on, "+method.estimator.device=cpu", "metrics=external"))
    assert cpu.status == "rescored" and OnDevice.fits == 1
    assert read_record(cpu.path)["device"].iloc[0] == "cuda"  # not where it was scored


def test_a_record_is_stamped_with_the_utc_time_it_was_written(tmp_path):
    # The latest record of a fit is the one lent and the one tables count: by this stamp.
    before = datetime.now(timezone.utc).replace(microsecond=0)
    (outcome,) = run_job(iris(tmp_path))
    stamp = datetime.fromisoformat(read_record(outcome.path)["timestamp"].iloc[0])
    assert stamp.utcoffset() == timedelta(0) and before <= stamp <= datetime.now(timezone.utc)


def test_a_failure_read_from_its_record_is_journalled_as_recorded_earlier(tmp_path, monkeypatch):
    # What `clusterbench run` says of a launched job's failures: "(1 recorded earlier; ...)".
    monkeypatch.setenv(JOURNAL_ENV, str(tmp_path / "journal"))
    monkeypatch.setattr(Exploding, "fits", 0)
    cfg = iris(tmp_path, "method.estimator._target_=tests.helpers.Exploding")
    (first,) = run_job(cfg)
    assert read_journal(tmp_path / "journal") == [("failed", False, first.path)]
    run_job(cfg)
    assert read_journal(tmp_path / "journal") == [("failed", True, first.path)]


def quick_fit(self, X, y=None):
    """A fit that ends at once (set as Sleeper's: the same point, no longer slow)."""
    self.labels_ = np.arange(len(X)) % 2
    return self


def test_a_timeout_stands_under_the_same_limit_and_a_lifted_limit_fits_the_point(tmp_path, monkeypatch):
    sleeper = "method.estimator._target_=tests.test_runner.Sleeper"
    (stopped,) = run_job(compose_config(tmp_path, "dataset=iris", "timeout_s=0.3", sleeper))
    written = stopped.path.read_bytes()
    (again,) = run_job(compose_config(tmp_path, "dataset=iris", "timeout_s=0.3", sleeper))
    assert (again.status, again.earlier) == ("timeout", True) and stopped.path.read_bytes() == written
    monkeypatch.setattr(Sleeper, "fit", quick_fit)
    (lifted,) = run_job(compose_config(tmp_path, "dataset=iris", sleeper))  # timeout_s=null: no limit
    assert (lifted.status, lifted.path) == ("ok", stopped.path)


def test_a_skipped_point_is_fitted_once_its_cap_is_lifted(tmp_path, kmeans_fits):
    (skipped,) = run_job(iris(tmp_path, "method.max_samples=100"))
    (lifted,) = run_job(iris(tmp_path, "method.max_samples=null"))
    assert (skipped.status, lifted.status, lifted.path) == ("skipped", "ok", skipped.path)
    assert kmeans_fits == [150]


def test_a_point_skipped_under_another_suite_is_fitted_once_its_cap_allows_it(tmp_path, kmeans_fits):
    (skipped,) = run_job(iris(tmp_path, "method.max_samples=100"))
    (raised,) = run_job(iris(tmp_path, "method.max_samples=150", "metrics=external"))
    assert (skipped.status, raised.status) == ("skipped", "ok") and kmeans_fits == [150]


def test_a_point_that_failed_under_another_suite_is_fitted_under_this_one(tmp_path, kmeans_fits, monkeypatch):
    # Only a skip or a timeout would recur under any suite; a metric the other suite alone has
    # may be what failed there.
    def broken(labels):
        raise RuntimeError("cannot score")

    with monkeypatch.context() as scoring:
        scoring.setattr(clusterbench.metrics, "n_found", broken)  # in the default suite, not external
        (failed,) = run_job(iris(tmp_path))
    (external,) = run_job(iris(tmp_path, "metrics=external"))
    assert (failed.status, external.status, external.earlier) == ("failed", "ok", False)
    assert len(kmeans_fits) == 2


def test_a_fit_longer_than_this_jobs_timeout_is_not_lent_by_another_experiment(tmp_path, kmeans_fits):
    (lender,) = run_job(iris(tmp_path), experiment="table_a")
    slow = read_record(lender.path).assign(fit_seconds=100.0)  # as if the fit had taken 100 s
    slow.to_csv(lender.path, index=False)
    (limited,) = run_job(iris(tmp_path, "metrics=external", "timeout_s=50"), experiment="table_b")
    assert limited.status == "ok" and len(kmeans_fits) == 2  # it would have timed out here
    (within,) = run_job(iris(tmp_path, "metrics=external", "timeout_s=200"), experiment="table_c")
    assert within.status == "rescored" and len(kmeans_fits) == 2


def test_a_point_recorded_on_other_data_keeps_a_sweep_from_skipping_its_job(tmp_path):
    (first,) = run_job(iris(tmp_path))
    assert runner.recorded_outcomes(iris(tmp_path), "adhoc") == [("cached", True, first.path)]
    assert runner.recorded_outcomes(iris(tmp_path), "adhoc", load=shifted_data) is None


def test_a_fit_within_its_timeout_leaves_no_alarm_behind_and_the_handler_as_it_was(tmp_path):
    # The timer is cleared and SIGALRM's handler put back: a later alarm would interrupt whatever
    # runs then (the next fit, a metric), or kill a process whose handler is the default.
    alarms = []

    def note(signum, frame):
        alarms.append(signum)

    previous = signal.signal(signal.SIGALRM, note)
    try:
        (outcome,) = run_job(iris(tmp_path, "timeout_s=0.5"))
        assert outcome.status == "ok" and signal.getsignal(signal.SIGALRM) is note
        time.sleep(0.7)
        assert alarms == []
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_a_failed_record_lends_no_labels_even_with_a_labels_file_beside_it(tmp_path):
    # A force=true rerun killed between its two writes leaves labels beside a failed record: no
    # fit time or device of theirs is recorded, so they are not scored as a fit.
    path = tmp_path / "failed.csv"
    row = {"status": "failed", "timestamp": "2024-01-02T00:00:00", "fit_seconds": "", "device": "cpu"}
    write_record(path, [{**row, "processor": "x", "error": "E: x"}], labels=np.array([0, 1, 1]))
    assert _stored_fit([path], n_points=3) is None


def seed_given(labels, random_state):
    """A metric that reports the random_state it was given (silhouette's subsample takes one)."""
    return float(random_state)


def test_metrics_draw_with_the_jobs_seed_when_fitted_and_when_rescored(tmp_path):
    drawn = "+metrics.drawn._target_=tests.test_runner.seed_given"
    (fitted,) = run_job(iris(tmp_path, "seed=3", drawn))
    (rescored,) = run_job(iris(tmp_path, "seed=3", "metrics=external", drawn))
    assert (fitted.status, rescored.status) == ("ok", "rescored")
    assert fitted.scores["drawn"] == rescored.scores["drawn"] == 3.0


def test_a_metric_that_fails_on_rescored_labels_fails_the_point_naming_the_metric(
    tmp_path, kmeans_fits, monkeypatch
):
    def broken(labels):
        raise RuntimeError("cannot score")

    run_job(iris(tmp_path, "metrics=external"))
    monkeypatch.setattr(clusterbench.metrics, "n_found", broken)
    (outcome,) = run_job(iris(tmp_path))  # the default suite: rescores the external suite's labels
    assert outcome.status == "failed" and len(kmeans_fits) == 1
    assert outcome.error.startswith("metric 'n_found': RuntimeError: cannot score at test_runner.py:")

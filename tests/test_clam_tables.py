"""CLAM Tables 3, 8 and 10: labels stored beside records, agreement cells, fit times, inlier-only scores."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from omegaconf import OmegaConf
from sklearn.cluster import KMeans

from clusterbench.catalog import options
from clusterbench.data import load_dataset
from clusterbench.data.sources import DATA_ENV
from clusterbench.errors import UserError
from clusterbench.metrics import ari, call_metric, nmi, silhouette
from clusterbench.results import (
    COLUMNS,
    labels_path,
    load_records,
    read_labels,
    read_record,
    record_path,
    write_record,
)
from clusterbench.runner import dataset_config, run_job
from clusterbench.runs import wide_runs
from clusterbench.tables import agreement_cell, build_table, table_spec
from tests.helpers import DATA_FOLDER, Halves, compose_config


@pytest.fixture(autouse=True)
def data_env(monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(DATA_FOLDER))


def write_run(results_dir, experiment, dataset, method, key, scores, labels=None, fit_seconds=1.0, **params):
    """One successful record as the runner writes it (smoke profile), with its labels file if given."""
    path = record_path(results_dir, "smoke", experiment, dataset, method, key)
    base = dict.fromkeys(COLUMNS, "") | {
        "experiment": experiment,
        "profile": "smoke",
        "dataset": dataset,
        "method": method,
        "variant": "default",
        "seed": 0,
        "params": json.dumps({**params, "random_state": 0}, sort_keys=True),
        "fit_seconds": fit_seconds,
        "config_hash": key,
    }
    rows = [base | {"metric": name, "value": value, "status": "ok"} for name, value in scores.items()]
    write_record(path, rows, labels=None if labels is None else np.asarray(labels))
    return path


def test_the_runner_stores_each_grid_points_labels_beside_its_record(tmp_path):
    cfg = compose_config(
        tmp_path, "dataset=iris", "method=kmeans", "profile=smoke", "+grids.kmeans.init=[random]"
    )
    (outcome,) = run_job(cfg)
    stored = read_labels(outcome.path)
    assert labels_path(outcome.path) == outcome.path.with_name(f"{outcome.path.stem}.labels.npy")
    # Refit by hand with the record's hyperparameters: the file holds that estimator's labels_.
    params = json.loads(read_record(outcome.path)["params"].iloc[0])
    by_hand = KMeans(**params).fit(load_dataset(dataset_config(cfg)).X).labels_
    assert np.array_equal(stored, by_hand) and np.array_equal(stored, outcome.labels)
    assert stored.dtype == np.uint8  # labels 0..2: the smallest type that holds them
    assert sorted(p.name for p in outcome.path.parent.iterdir()) == [
        outcome.path.name,
        labels_path(outcome.path).name,
    ]  # no temporary files left


def test_a_rerun_keeps_the_labels_force_rewrites_them_and_a_failed_run_removes_them(tmp_path, monkeypatch):
    monkeypatch.setattr(Halves, "fits", 0)
    cfg = compose_config(tmp_path, "dataset=iris", "method.estimator._target_=tests.helpers.Halves")
    (first,) = run_job(cfg)
    halves = (np.arange(150) >= 75).astype(int)
    assert np.array_equal(read_labels(first.path), halves)
    stored = labels_path(first.path).read_bytes()

    (cached,) = run_job(cfg)
    assert cached.status == "cached" and Halves.fits == 1
    assert labels_path(first.path).read_bytes() == stored

    labels_path(first.path).unlink()  # a record written before the runner stored labels
    (old,) = run_job(cfg)
    assert old.status == "cached" and Halves.fits == 1  # not refitted for its labels
    assert read_labels(first.path) is None

    (forced,) = run_job(compose_config(tmp_path, "dataset=iris", "force=true", *cfg_overrides(cfg)))
    assert forced.status == "ok" and Halves.fits == 2
    assert np.array_equal(read_labels(first.path), halves)

    def broken_fit(self, X, y=None):
        raise RuntimeError("boom")

    monkeypatch.setattr(Halves, "fit", broken_fit)
    (failed,) = run_job(compose_config(tmp_path, "dataset=iris", "force=true", *cfg_overrides(cfg)))
    assert failed.status == "failed" and failed.path == first.path
    assert not labels_path(first.path).exists()  # the labels of the earlier run went with its record


def cfg_overrides(cfg) -> list[str]:
    return [f"method.estimator._target_={cfg.method.estimator._target_}"]


# CLAM's partition and k-means' have the contingency [[2, 1, 0], [0, 1, 2]]: mutual information
# (2/3) ln 2, entropies ln 2 and ln 3, so arithmetic NMI = (2/3) ln 2 / ((ln 2 + ln 3) / 2);
# ARI = 8/33 (pair counts: index 2, expected 3 * 3 / 15 = 0.6, max (3 + 6) / 2 = 4.5).
CLAM_LABELS = [0, 0, 0, 1, 1, 1]
KMEANS_LABELS = [0, 0, 1, 1, 2, 2]


def test_agreement_cells_compare_the_partitions_of_the_runs_table_1_selects(tmp_path):
    clam_scores = {"sc": 0.41, "n_found": 2}
    write_run(tmp_path, "clam_table1", "zoo", "clam", "c1", clam_scores, CLAM_LABELS, n_clusters=2)
    best, worse = {"sc": 0.40, "n_found": 3}, {"sc": 0.30, "n_found": 3}
    write_run(
        tmp_path, "clam_baselines", "zoo", "kmeans", "k1", best, KMEANS_LABELS, n_clusters=3, init="random"
    )
    write_run(
        tmp_path, "clam_baselines", "zoo", "kmeans", "k2", worse, CLAM_LABELS, n_clusters=3, init="k-means++"
    )
    write_run(tmp_path, "clam_baselines", "zoo", "spectral", "s1", best, None, n_clusters=3)  # an old record
    write_run(tmp_path, "clam_table1", "ecoli", "clam", "c2", clam_scores, [0, 0, 1, 1], n_clusters=2)
    write_run(tmp_path, "clam_baselines", "ecoli", "kmeans", "k3", best, KMEANS_LABELS, n_clusters=3)
    write_run(tmp_path, "clam_baselines", "ctg", "kmeans", "k4", best, KMEANS_LABELS, n_clusters=3)

    outputs = build_table("clam_table8", tmp_path, "smoke")
    cells = outputs.cells.set_index(["dataset", "metric", "column"])
    kmeans_nmi = cells.loc[("zoo", "nmi", "kmeans")]
    assert kmeans_nmi["ours"] == pytest.approx((2 / 3) * math.log(2) / (math.log(6) / 2), abs=1e-12)
    assert kmeans_nmi["paper"] == 0.8808 and kmeans_nmi["selected_params"] == "init=random"
    assert cells.loc[("zoo", "ari", "kmeans"), "ours"] == pytest.approx(8 / 33, abs=1e-12)
    assert cells.loc[("zoo", "ari", "kmeans"), "paper"] == 0.7736
    assert cells.loc[("zoo", "nmi", "spectral"), "status"] == "labels missing"
    assert cells.loc[("zoo", "nmi", "agglomerative"), "status"] == "missing"
    assert cells.loc[("ecoli", "ari", "kmeans"), "status"] == "different data"
    assert cells.loc[("ctg", "nmi", "kmeans"), "status"] == "reference missing"
    zoo_ari = next(
        line for line in outputs.markdown.splitlines() if line.startswith("| Zoo ") and "| ARI" in line
    )
    assert "0.2424" in zoo_ari and "0.7736" in zoo_ari and "labels missing" in zoo_ari

    # `by` as a per-metric map selects as `by: sc` does; an agreement protocol without `by` is an error.
    runs = wide_runs(load_records(tmp_path, "smoke"))
    zoo = runs[runs["dataset"] == "zoo"]
    clam, kmeans = zoo[zoo["method"] == "clam"], zoo[zoo["method"] == "kmeans"]
    protocol = table_spec("clam_table8").protocol
    mapped = OmegaConf.merge(protocol, {"by": {"nmi": "sc", "ari": "sc"}})
    assert agreement_cell(kmeans, clam, mapped, "ari", tmp_path)["ours"] == pytest.approx(8 / 33, abs=1e-12)
    unranked = OmegaConf.create({k: v for k, v in OmegaConf.to_container(protocol).items() if k != "by"})
    with pytest.raises(UserError, match="protocol agreement needs `by`"):
        agreement_cell(kmeans, clam, unranked, "ari", tmp_path)
    nmi_only = OmegaConf.merge(unranked, {"by": {"nmi": "sc"}})  # would rank ARI cells by ARI
    with pytest.raises(UserError, match=r"protocol agreement needs `by` \(for ari\)"):
        agreement_cell(kmeans, clam, nmi_only, "ari", tmp_path)


def test_fit_seconds_is_the_training_time_of_the_run_whose_sc_is_shown(tmp_path):
    runs = [  # k-means at two grid points, the better one slower
        ("clam_baselines", "kmeans", "k1", 0.40, 2.5, "k-means++"),
        ("clam_baselines", "kmeans", "k2", 0.30, 0.5, "random"),
        ("clam_table1", "clam", "c1", 0.41, 20.0, None),
    ]
    for experiment, method, key, sc, seconds, init in runs:
        write_run(
            tmp_path,
            experiment,
            "zoo",
            method,
            key,
            {"sc": sc, "n_found": 7},
            n_clusters=7,
            fit_seconds=seconds,
            **({"init": init} if init else {}),
        )

    outputs = build_table("clam_table3", tmp_path, "smoke")
    cells = outputs.cells.set_index(["dataset", "metric", "column"])
    assert cells.loc[("zoo", "fit_seconds", "kmeans"), "ours"] == 2.5  # not the faster, worse-SC run
    assert cells.loc[("zoo", "fit_seconds", "kmeans"), "paper"] == 2
    assert cells.loc[("zoo", "fit_seconds", "clam"), "ours"] == 20.0
    assert cells.loc[("zoo", "sc", "clam"), "ours"] == 0.41
    time_row = next(line for line in outputs.markdown.splitlines() if "| Time (s)" in line)
    assert "**2.5**" in time_row and "| 20.0 " in time_row  # less time is better: bold goes to k-means


def test_ignore_label_scores_each_metric_on_the_other_points_only():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.repeat([0, 1, 2, 0], 10)  # label 2: the outliers
    labels = rng.integers(0, 3, 40)
    keep = y != 2
    available = {"X": X, "y": y, "labels": labels, "random_state": 0}
    assert call_metric(silhouette, available, {"ignore_label": 2}) == silhouette(X[keep], labels[keep])
    assert call_metric(nmi, available, {"ignore_label": 2, "average_method": "max"}) == nmi(
        y[keep], labels[keep], average_method="max"
    )
    assert call_metric(ari, available, {"ignore_label": 2}) == ari(y[keep], labels[keep])
    assert call_metric(ari, available, {}) == ari(y, labels) != ari(y[keep], labels[keep])


def test_clam_table10_runs_score_the_inliers_of_the_noisy_toy(tmp_path):
    cfg = compose_config(
        tmp_path, "experiment=clam_table10", "dataset=clam_outliers", "method=kmeans", "profile=smoke"
    )
    (outcome,) = run_job(cfg, "clam_table10")
    data = load_dataset(dataset_config(cfg))
    labels, inliers = read_labels(outcome.path), data.y != 2
    assert len(labels) == 803 and inliers.sum() == 800
    assert outcome.scores["sc"] == silhouette(data.X[inliers], labels[inliers])
    assert outcome.scores["nmi"] == nmi(data.y[inliers], labels[inliers])
    assert outcome.scores["ari"] == ari(data.y[inliers], labels[inliers])
    record = read_record(outcome.path).set_index("metric")
    assert json.loads(record.loc["ari", "metric_params"]) == {"ignore_label": 2}

    clean_cfg = compose_config(tmp_path, "experiment=clam_table10", "dataset=clam_elongated")
    clean = load_dataset(dataset_config(clean_cfg))
    assert clean.n_clusters == 2  # the clean toy is the noisy toy's inliers, point for point
    assert np.array_equal(clean.X, data.X[inliers]) and np.array_equal(clean.y, data.y[inliers])


@pytest.mark.parametrize("name", options("table"))
def test_every_paper_value_of_a_table_spec_has_its_metric_row_and_column(name):
    """A misspelt key would leave the paper's value out of the table without a word."""
    spec = table_spec(name)
    for metric, by_dataset in spec.paper.items():
        assert metric in spec.metrics, metric
        for dataset, by_column in by_dataset.items():
            assert dataset in spec.rows, dataset
            assert set(by_column) <= set(spec.columns), set(by_column) - set(spec.columns)

"""Metrics against brute force and hand-computed values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hydra.utils import get_method
from omegaconf import OmegaConf
from sklearn import metrics as skm
from sklearn.cluster import KMeans

from clusterbench import metrics
from clusterbench.catalog import CONF_DIR, options
from clusterbench.methods import KhatriRaoKMeans
from clusterbench.metrics import (
    acc,
    agreement,
    ari,
    call_metric,
    inertia,
    n_found,
    n_params,
    nmi,
    objective,
    purity,
    silhouette,
)


def brute_force_acc(y: np.ndarray, labels: np.ndarray) -> float:
    """Best one-to-one matching of clusters to classes, by trying every injective assignment."""
    classes, clusters = list(np.unique(y)), list(np.unique(labels))
    best = 0
    if len(clusters) >= len(classes):
        for chosen in itertools.permutations(clusters, len(classes)):
            hits = sum(int(np.sum((y == c) & (labels == k))) for c, k in zip(classes, chosen, strict=True))
            best = max(best, hits)
    else:
        for chosen in itertools.permutations(classes, len(clusters)):
            hits = sum(int(np.sum((y == c) & (labels == k))) for c, k in zip(chosen, clusters, strict=True))
            best = max(best, hits)
    return best / len(y)


@pytest.mark.parametrize(
    ("n", "n_classes", "n_clusters", "seed"),
    [
        (12, 3, 3, 0),
        (20, 3, 5, 1),  # more clusters than classes: unmatched clusters count as errors
        (30, 4, 6, 2),
        (25, 5, 2, 3),  # fewer clusters than classes
        (40, 4, 4, 4),
        (9, 2, 7, 5),
    ],
)
def test_acc_equals_brute_force_maximum_over_assignments(n, n_classes, n_clusters, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    # non-contiguous cluster ids, as DBSCAN (-1) or a relabelling produce
    labels = np.array([-1, 3, 7, 10, 11, 40, 41])[rng.integers(0, n_clusters, n)]
    assert acc(y, labels) == pytest.approx(brute_force_acc(y, labels), abs=1e-12)


def test_acc_is_one_for_a_relabelled_perfect_clustering_and_counts_unmatched_clusters():
    y = np.array([0, 0, 1, 1, 2, 2])
    assert acc(y, np.array([5, 5, 9, 9, 1, 1])) == 1.0
    # 3 classes, 2 clusters: at most 2 classes can be matched -> 4 / 6
    assert acc(y, np.array([0, 0, 1, 1, 1, 1])) == pytest.approx(4 / 6)
    # 2 classes, 3 clusters: cluster 1 is split off and unmatched -> 4 / 6 (purity would say 5 / 6)
    y2, labels2 = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 1, 2, 2])
    assert acc(y2, labels2) == pytest.approx(4 / 6)


# y = [0,0,0,1,1,1] vs labels = [0,0,1,1,2,2]: contingency [[2,1,0],[0,1,2]]
Y6 = np.array([0, 0, 0, 1, 1, 1])
L6 = np.array([0, 0, 1, 1, 2, 2])


def hand_nmi_terms():
    """Mutual information and entropies (nats) of the Y6/L6 contingency, written out by hand."""
    n = 6
    joint = {(0, 0): 2, (0, 1): 1, (1, 1): 1, (1, 2): 2}
    row = {0: 3, 1: 3}
    col = {0: 2, 1: 2, 2: 2}
    mi = sum(c / n * math.log((c / n) / ((row[i] / n) * (col[j] / n))) for (i, j), c in joint.items())
    h_y = -2 * (0.5 * math.log(0.5))
    h_l = -3 * (1 / 3 * math.log(1 / 3))
    return mi, h_y, h_l


def test_nmi_on_a_hand_computed_contingency_for_each_average_method():
    mi, h_y, h_l = hand_nmi_terms()
    # MI = 2/3 ln 2 here: 4 cells, (2/6) ln 2 twice and (1/6) ln 1 twice
    assert mi == pytest.approx(2 / 3 * math.log(2))
    expected = {
        "arithmetic": mi / ((h_y + h_l) / 2),
        "geometric": mi / math.sqrt(h_y * h_l),
        "min": mi / min(h_y, h_l),
        "max": mi / max(h_y, h_l),
    }
    for method, value in expected.items():
        assert nmi(Y6, L6, average_method=method) == pytest.approx(value, abs=1e-12), method
    # the default is arithmetic, and the methods really differ on this case
    assert nmi(Y6, L6) == pytest.approx(expected["arithmetic"])
    assert expected["geometric"] - expected["arithmetic"] > 0.01


def test_perfect_and_relabelled_clusterings_score_one():
    y = np.array([0, 0, 1, 1, 2, 2, 2])
    relabelled = np.array([7, 7, 3, 3, 0, 0, 0])
    assert nmi(y, relabelled) == pytest.approx(1.0)
    assert ari(y, relabelled) == pytest.approx(1.0)
    assert acc(y, relabelled) == 1.0
    assert purity(y, relabelled) == 1.0


def test_ari_on_hand_computed_pair_counts():
    # sum C(n_ij, 2) = 2; rows C(3,2)*2 = 6; cols C(2,2)*3 = 3; C(6,2) = 15
    # expected = 6 * 3 / 15 = 1.2; max = (6 + 3) / 2 = 4.5; ARI = (2 - 1.2) / (4.5 - 1.2) = 8 / 33
    assert ari(Y6, L6) == pytest.approx(8 / 33, abs=1e-12)
    # independent-looking split: index 0 exactly
    assert ari(np.array([0, 0, 1, 1]), np.array([0, 0, 0, 1])) == pytest.approx(0.0, abs=1e-12)


def test_purity_takes_each_clusters_majority_class():
    # clusters: {0,0} -> 2, {0,1} -> 1, {1,1} -> 2: 5 of 6
    assert purity(Y6, L6) == pytest.approx(5 / 6)
    # every point its own cluster is trivially pure, while ACC can match only 2 clusters
    singletons = np.arange(6)
    assert purity(Y6, singletons) == 1.0
    assert acc(Y6, singletons) == pytest.approx(2 / 6)


def test_inertia_is_the_hand_computed_within_cluster_sum_of_squares():
    X = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [0.0, 5.0]])
    labels = np.array([4, 4, 9, 9, 9])
    # cluster 4: mean (1, 0) -> 1 + 1; cluster 9: mean (0, 3) -> 4 + 0 + 4
    assert inertia(X, labels) == pytest.approx(10.0)


def test_inertia_matches_kmeans_objective():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.3, (20, 3)) for c in (0.0, 3.0, 6.0)])
    model = KMeans(n_clusters=3, n_init=3, random_state=0).fit(X)
    assert inertia(X, model.labels_) == pytest.approx(model.inertia_, rel=1e-6)


def test_silhouette_is_nan_for_one_cluster_and_for_all_singletons():
    X = np.arange(10, dtype=float).reshape(5, 2)
    assert math.isnan(silhouette(X, np.zeros(5, dtype=int)))
    assert math.isnan(silhouette(X, np.arange(5)))


def test_silhouette_on_hand_computed_points():
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    labels = np.array([0, 0, 1, 1])
    # outer points: a = 1, b = 10.5; inner points: a = 1, b = 9.5
    expected = ((10.5 - 1) / 10.5 + (9.5 - 1) / 9.5) / 2
    assert silhouette(X, labels) == pytest.approx(expected, abs=1e-12)
    # a singleton cluster scores 0: (0.8 + 0.75 + 0) / 3
    X3, labels3 = np.array([[0.0], [1.0], [5.0]]), np.array([0, 0, 1])
    assert silhouette(X3, labels3) == pytest.approx((1 - 1 / 5 + 1 - 1 / 4 + 0) / 3, abs=1e-12)


def test_silhouette_subsample_is_seeded_and_exact_below_the_cap():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    labels = rng.integers(0, 4, 300)
    exact = silhouette(X, labels, max_samples=None)
    assert silhouette(X, labels, max_samples=300) == exact  # cap >= n: exact
    first = silhouette(X, labels, max_samples=50, random_state=7)
    again = silhouette(X, labels, max_samples=50, random_state=7)
    other = silhouette(X, labels, max_samples=50, random_state=8)
    assert first == again
    assert first != exact
    assert first != other


def test_silhouette_subsample_is_scikit_learns_and_nan_when_it_holds_one_cluster():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 3))
    labels = rng.integers(0, 3, 3000)
    expected = skm.silhouette_score(X, labels, sample_size=200, random_state=5)
    assert silhouette(X, labels, max_samples=200, random_state=5) == expected  # records stay comparable
    state = np.random.RandomState(5)  # a RandomState, as scikit-learn also takes
    assert silhouette(X, labels, max_samples=200, random_state=state) == expected
    # Two points in a second cluster: the full labeling has 2 clusters, a 100-point sample has one.
    lopsided = np.zeros(3000, dtype=int)
    lopsided[:2] = 1
    assert math.isnan(silhouette(X, lopsided, max_samples=100, random_state=0))


def test_n_found_counts_distinct_labels_including_noise():
    assert n_found(np.array([5, 5, -1, 3, 3])) == 3.0
    assert isinstance(n_found(np.array([0, 1])), float)


def test_agreement_reports_nmi_and_ari_between_two_clusterings():
    assert agreement(Y6, L6) == pytest.approx({"nmi": nmi(Y6, L6), "ari": 8 / 33})
    geometric = agreement(Y6, L6, average_method="geometric")
    assert geometric["nmi"] == pytest.approx(nmi(Y6, L6, average_method="geometric"))
    assert geometric["nmi"] != pytest.approx(agreement(Y6, L6)["nmi"])
    assert agreement(L6, (L6 + 1) * 3) == pytest.approx({"nmi": 1.0, "ari": 1.0})


def test_call_metric_binds_arrays_by_name_and_passes_options():
    seen = {}

    def metric(labels, y, scale=1.0):  # asks for labels and y, in the other order, not X
        seen.update(labels=labels, y=y, scale=scale)
        return float(scale * len(labels))

    X, y, labels = np.zeros((3, 2)), np.array([0, 1, 1]), np.array([2, 2, 2])
    available = {"X": X, "y": y, "labels": labels, "random_state": 0}
    assert call_metric(metric, available, {"scale": 2.0}) == 6.0
    assert seen["labels"] is labels and seen["y"] is y and seen["scale"] == 2.0
    # the real silhouette gets X, labels, random_state and the suite's max_samples
    Xr = np.random.default_rng(2).normal(size=(40, 2))
    lr = np.repeat([0, 1], 20)
    bound = call_metric(
        silhouette, {"X": Xr, "y": None, "labels": lr, "random_state": 3}, {"max_samples": 10}
    )
    assert bound == silhouette(Xr, lr, max_samples=10, random_state=3)
    # y and labels are not swapped: purity is asymmetric (5/6 as bound, 4/6 swapped)
    assert purity(L6, Y6) == pytest.approx(4 / 6)
    assert call_metric(purity, {"X": X, "y": Y6, "labels": L6, "random_state": 0}, {}) == pytest.approx(5 / 6)


@pytest.mark.parametrize("suite", options("metrics"))
def test_every_metric_suite_entry_is_callable_with_the_runner_arrays(suite):
    spec = OmegaConf.load(CONF_DIR / "metrics" / f"{suite}.yaml")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.repeat([0, 1, 2], 10)
    fitted = KMeans(3, n_init=1, random_state=0).fit(X)
    available = {"X": X, "y": y, "labels": y, "estimator": fitted, "random_state": 0}
    for name, entry in spec.items():
        function = get_method(entry._target_)
        assert function.__module__ == metrics.__name__, name
        value = call_metric(function, available, {k: v for k, v in entry.items() if k != "_target_"})
        assert isinstance(value, float), name
        if name in {"nmi", "ari", "acc", "purity"}:
            assert value == pytest.approx(1.0), name  # labels == y
        if name == "n_found":
            assert value == 3.0


def test_objective_and_n_params_read_the_fitted_model():
    X = np.random.default_rng(0).normal(size=(40, 3))
    fitted = KMeans(4, n_init=1, random_state=0).fit(X)
    assert objective(fitted) == fitted.inertia_
    assert n_params(fitted) == 12.0  # k·d centroid coordinates
    structured = KhatriRaoKMeans(n_clusters=9, n_init=2, random_state=0, device="cpu").fit(X)
    assert n_params(structured) == 6 * 3  # (3 + 3) protocentroids
    assert objective(structured) == structured.inertia_
    # the structured centroids are not the cluster means: the means' inertia undercuts the model's
    assert inertia(X, structured.labels_) < objective(structured)
    assert math.isnan(objective(object()))

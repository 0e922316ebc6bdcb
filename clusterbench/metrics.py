"""Clustering metrics. Each is a plain function of the arrays it needs.

The runner binds arguments by name (``X``, ``y``, ``labels``, ``random_state``, and ``estimator``,
the fitted model) plus the options of the metric suite (``conf/metrics/*.yaml``), so a new metric
is one function and one YAML entry.
One option applies to every metric: ``ignore_label: L`` scores only the points whose true label
is not ``L`` (CLAM Table 10 scores the inliers of a data set with outliers labelled 2).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import logsumexp
from sklearn import metrics as skm
from sklearn.metrics.cluster import contingency_matrix
from sklearn.utils import check_random_state

from clusterbench.errors import HyperparameterError
from clusterbench.validation import is_int


def silhouette(X: np.ndarray, labels: np.ndarray, max_samples: int | None = 20000, random_state=0) -> float:
    """Mean silhouette coefficient (Euclidean) on the preprocessed input, as CLAM reports SC.

    Above ``max_samples`` points it is estimated on a seeded uniform subsample of that size
    (exact silhouette costs O(n^2)), drawn as scikit-learn's ``sample_size`` draws it;
    ``max_samples=None`` always computes it exactly. Undefined (NaN) when the labeling scored, the
    subsample's where there is one, has fewer than 2 or more than n - 1 clusters (a labeling with
    a few tiny clusters can leave a subsample with one).
    """
    if max_samples is not None and not (is_int(max_samples) and max_samples >= 2):
        raise HyperparameterError(f"max_samples must be null or an integer ≥ 2, got {max_samples!r}")
    X, labels = np.asarray(X), np.asarray(labels)
    if max_samples is not None and len(labels) > max_samples:
        sample = check_random_state(random_state).permutation(len(labels))[:max_samples]
        X, labels = X[sample], labels[sample]
    if not 2 <= len(np.unique(labels)) <= len(labels) - 1:
        return float("nan")
    return float(skm.silhouette_score(X, labels))


def nmi(y: np.ndarray, labels: np.ndarray, average_method: str = "arithmetic") -> float:
    """Normalized mutual information; ``average_method`` is recorded with the value (papers differ)."""
    return float(skm.normalized_mutual_info_score(y, labels, average_method=average_method))


def ari(y: np.ndarray, labels: np.ndarray) -> float:
    """Adjusted Rand index."""
    return float(skm.adjusted_rand_score(y, labels))


def acc(y: np.ndarray, labels: np.ndarray) -> float:
    """Clustering accuracy: the best one-to-one matching of clusters to classes (Hungarian).

    With more clusters than classes the unmatched clusters count as errors.
    """
    table = contingency_matrix(y, labels)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / len(y))


def purity(y: np.ndarray, labels: np.ndarray) -> float:
    """Share of points whose cluster's majority class is their class (PRCut's code calls it accuracy)."""
    return float(contingency_matrix(y, labels).max(axis=0).sum() / len(y))


def inertia(X: np.ndarray, labels: np.ndarray) -> float:
    """Sum of squared distances of points to the mean of their cluster (the k-means objective)."""
    total = 0.0
    for label in np.unique(labels):
        members = X[labels == label]
        total += float(((members - members.mean(axis=0)) ** 2).sum())
    return total


def embedding_inertia(estimator, labels: np.ndarray) -> float:
    """The k-means objective of the labelling in a deep method's embedding (``embedding_``): the
    Khatri-Rao paper's code keeps, of its 20 deep runs, the one of least such inertia (notes, A4);
    NaN for a method without an embedding."""
    embedding = getattr(estimator, "embedding_", None)
    return math.nan if embedding is None else inertia(embedding, labels)


def objective(estimator) -> float:
    """The fitted model's own objective, ``inertia_``: for Khatri-Rao k-means the squared distances
    to its structured centroids (eq. 1), which the cluster means of its labels would undercut."""
    return float(getattr(estimator, "inertia_", math.nan))


def free_energy(estimator) -> float:
    """The fitted model's own free energy ``free_energy_`` (k-means-C′ eq. 7), else NaN."""
    return float(getattr(estimator, "free_energy_", math.nan))


def n_params(estimator) -> float:
    """Numbers the model stores to summarise the data: ``n_params_`` if it says, else the size of
    ``cluster_centers_`` (k·d for k-means; Khatri-Rao k-means stores Σh·d)."""
    if hasattr(estimator, "n_params_"):
        return float(estimator.n_params_)
    centers = getattr(estimator, "cluster_centers_", None)
    return math.nan if centers is None else float(np.asarray(centers).size)


def _centres_and_distances(X: np.ndarray, estimator) -> tuple[np.ndarray, np.ndarray] | None:
    """The model's ``cluster_centers_`` and the squared distances (n, C) of X to them, or None."""
    centres = getattr(estimator, "cluster_centers_", None)
    if centres is None:
        return None
    centres = np.asarray(centres, dtype=np.float64)
    return centres, skm.pairwise.euclidean_distances(np.asarray(X, dtype=np.float64), centres, squared=True)


def quantization_error(X: np.ndarray, estimator) -> float:
    """φ of Lücke & Forster eq. 1: Σₙ ‖yₙ − μ_c‖² to the nearest of the model's centres (NaN
    for a model without centres, e.g. DBSCAN)."""
    found = _centres_and_distances(X, estimator)
    return math.nan if found is None else float(found[1].min(1).sum())


def gmm_log_likelihood(X: np.ndarray, estimator) -> float:
    """ℒ of Lücke & Forster eq. 3: the mean log-density of X under the isotropic, equal-prior GMM
    with the model's centres and variance.

    σ² is the model's ``sigma2_`` when it has one (k-means-C′, lazy-k-means, isotropic GMM),
    else eq. 12: the mean squared distance to the nearest centre over D, as the paper scores
    k-means. NaN for a model without centres; +inf when σ² is 0 (every point on a centre).
    """
    found = _centres_and_distances(X, estimator)
    if found is None:
        return math.nan
    centres, distances = found
    n_features = np.asarray(X).shape[1]
    sigma2 = getattr(estimator, "sigma2_", None)
    if sigma2 is None:
        sigma2 = distances.min(1).mean() / n_features
    if not sigma2 > 0:  # every point on a centre: the density there, and ℒ, is unbounded
        return math.inf
    log_joint = -distances / (2.0 * sigma2) - 0.5 * n_features * math.log(2 * math.pi * sigma2)
    return float(logsumexp(log_joint, axis=1).mean() - math.log(len(centres)))


def n_found(labels: np.ndarray) -> float:
    """Number of distinct clusters in the labeling (degenerate solutions find fewer than asked)."""
    return float(len(np.unique(labels)))


def agreement(labels_a: np.ndarray, labels_b: np.ndarray, average_method: str = "arithmetic") -> dict:
    """NMI and ARI between two clusterings of the same points (CLAM Table 8)."""
    return {
        "nmi": nmi(labels_a, labels_b, average_method=average_method),
        "ari": ari(labels_a, labels_b),
    }


# The arrays with one entry per point: what ``ignore_label`` filters.
POINTWISE = ("X", "y", "labels")


def without_label(available: Mapping, label: int) -> dict:
    """``available`` restricted to the points whose true label ``y`` is not ``label``."""
    keep = np.asarray(available["y"]) != label
    return {name: value[keep] if name in POINTWISE else value for name, value in available.items()}


def call_metric(function: Callable, available: Mapping, options: Mapping) -> float:
    """Call ``function`` with the arrays it names from ``available`` plus the suite's ``options``.

    The option ``ignore_label`` is applied here, for any metric: the points of that true label are
    dropped from every array first (the fit itself saw them).
    """
    options = dict(options)
    ignore_label = options.pop("ignore_label", None)
    if ignore_label is not None:
        available = without_label(available, ignore_label)
    wanted = inspect.signature(function).parameters
    arguments = {name: value for name, value in available.items() if name in wanted}
    return function(**arguments, **options)


def ratio_cut(
    X: np.ndarray, labels: np.ndarray, n_neighbors: int = 150, graph: str = "symmetric", half: bool = True
) -> float:
    """PRCut's ratio cut (eq. 1) of the labelling on the binary kNN graph of the preprocessed input
    (cached on disk, :mod:`clusterbench.graphs`). Defaults: the paper's Table 2 text, k = 150, the
    OR-symmetrised graph, with the ½; ``graph: directed, half: false`` is the authors' code.
    Lower is better; undefined (NaN) with no more points than ``n_neighbors``."""
    from clusterbench.graphs import GRAPHS, knn_ratio_cut  # scikit-learn's neighbours only where asked for

    if not (is_int(n_neighbors) and n_neighbors >= 1):
        raise HyperparameterError(f"n_neighbors must be an integer ≥ 1, got {n_neighbors!r}")
    if graph not in GRAPHS:
        raise HyperparameterError(f"graph must be one of {', '.join(GRAPHS)}, got {graph!r}")
    if not isinstance(half, bool):
        raise HyperparameterError(f"half must be true or false, got {half!r}")
    if len(labels) <= n_neighbors:
        return math.nan
    return knn_ratio_cut(X, labels, n_neighbors=n_neighbors, graph=graph, half=half)

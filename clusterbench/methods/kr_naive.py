"""Naive two-phase Khatri-Rao clustering (Ciaperoni et al., §5 and Appendix B).

Phase 1 runs k-means (scikit-learn, random initialisation) with k = h1·…·hp centroids. Phase 2
fits protocentroids to those centroids by alternating least squares: each set in turn takes the
closed form that minimises Σ_(j1..jp) ‖μ_(j1..jp) − θ¹_j1 ⊕ … ⊕ θᵖ_jp‖² given the others (eq. 8 for
the product; the mean of μ − Σ others for the sum), starting from N(0, 1) protocentroids, until
that reconstruction error is below ``als_tol`` (1e-4) or after ``als_max_iter`` (5000) sweeps.
Every point is then assigned to the nearest reconstructed centroid. The paper runs it with the
product aggregator; the k-means phase is where the structure is lost (§5, "Limitations").

The least-squares sweep is :func:`~clusterbench.methods.kr_kmeans.update_protocentroids` with the
k centroids as the points, each assigned to its own index tuple.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import torch
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans

from clusterbench.methods._seeding import resolve_seed
from clusterbench.methods.kr_kmeans import (
    KhatriRaoCentroids,
    aggregate,
    assign,
    centred_norms,
    centroid_layout,
    update_protocentroids,
)
from clusterbench.validation import (
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    Constraint,
    check_enough_points,
    check_fit_input,
    resolve_device,
    torch_threads,
)


class KhatriRaoNaive(KhatriRaoCentroids, ClusterMixin, BaseEstimator):
    """k-means with h1·…·hp centroids, then alternating least squares to p protocentroid sets.

    Parameters
    ----------
    n_clusters, n_sets, h, aggregator : as :class:`~clusterbench.methods.KhatriRaoKMeans`
        (``aggregator`` defaults to the paper's ``"product"``).
    n_init, max_iter : the k-means phase (scikit-learn ``KMeans(init="random")``).
    als_max_iter, als_tol : the least-squares phase (the authors' 5000 and 1e-4).
    random_state : int, NumPy RandomState or Generator, or None; seeds both phases.
    device : ``"auto"``, ``"cpu"`` or ``"cuda"`` (the least-squares phase and the assignment).
    n_threads : torch's CPU threads in the least-squares phase and predict (int ≥ 1), or None for
        torch's default (one per core). 1 by default: its kernels are small (Πh centroids), and on a
        busy machine more threads wait on each other; the harness sets it from its ``threads``.

    Attributes
    ----------
    protocentroids_, labels_, inertia_ (eq. 1 with the reconstructed centroids), n_params_ (Σh·d),
    sizes_, kmeans_inertia_ and n_iter_ (phase 1), reconstruction_error_ (phase 2), als_iter_,
    cluster_centers_ (the reconstructed centroids).
    """

    # Records written before n_threads existed were fitted at the harness's one thread: named
    # without it (runner.named_by).
    _params_added_later: ClassVar[dict] = {"n_threads": 1}

    def __init__(
        self,
        n_clusters: int = 8,
        n_sets: int = 2,
        h: Sequence[int] | None = None,
        aggregator: str = "product",
        n_init: int = 20,
        max_iter: int = 300,
        als_max_iter: int = 5000,
        als_tol: float = 1e-4,
        random_state=None,
        device: str = "auto",
        n_threads: int | None = 1,
    ):
        self.n_clusters = n_clusters
        self.n_sets = n_sets
        self.h = h
        self.aggregator = aggregator
        self.n_init = n_init
        self.max_iter = max_iter
        self.als_max_iter = als_max_iter
        self.als_tol = als_tol
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            *super()._checks(),
            ("n_init", POSITIVE_INT),
            ("max_iter", POSITIVE_INT),
            ("als_max_iter", POSITIVE_INT),
            ("als_tol", NON_NEGATIVE_REAL),
        ]

    def fit(self, X, y=None):
        self._validate_params()
        X = check_fit_input(self, X)
        self.sizes_, self.n_centroids_ = centroid_layout(self.n_clusters, self.n_sets, self.h)
        check_enough_points(self, len(X), self.n_centroids_)
        seed = resolve_seed(self.random_state)
        kmeans = KMeans(
            self.n_centroids_,
            init="random",
            n_init=self.n_init,
            max_iter=self.max_iter,
            random_state=seed % 2**32,
        ).fit(X)
        self.kmeans_inertia_ = float(kmeans.inertia_)
        self.n_iter_ = int(kmeans.n_iter_)
        with torch_threads(self.n_threads):
            self.device_ = resolve_device(self.device)
            points = torch.as_tensor(X, device=self.device_)
            centroids = torch.as_tensor(kmeans.cluster_centers_, dtype=points.dtype, device=self.device_)
            protocentroids = self._least_squares(centroids, seed)
            labels, distances = assign(
                points, centred_norms(points), protocentroids, self.aggregator, self.n_centroids_
            )
            self.protocentroids_ = [theta[0].cpu().numpy() for theta in protocentroids]
            self.labels_ = labels[0].cpu().numpy()
            self.inertia_ = float(distances.sum())
            self.n_params_ = sum(self.sizes_) * self.n_features_in_
            return self

    def _least_squares(self, centroids: torch.Tensor, seed: int) -> list[torch.Tensor]:
        """Alternating closed-form updates of the protocentroids towards the k-means centroids."""
        generator = torch.Generator(device=centroids.device).manual_seed(seed)
        protocentroids = [
            torch.randn(
                (1, size, centroids.shape[1]),
                generator=generator,
                dtype=centroids.dtype,
                device=centroids.device,
            )
            for size in self.sizes_
        ]
        own_tuple = torch.arange(len(centroids), device=centroids.device)[None]
        self.als_iter_ = 0
        for _ in range(self.als_max_iter):
            protocentroids = update_protocentroids(
                centroids, own_tuple, protocentroids, self.aggregator, [generator]
            )
            self.als_iter_ += 1
            error = ((aggregate(protocentroids, self.aggregator)[0, : len(centroids)] - centroids) ** 2).sum()
            if error < self.als_tol:
                break
        self.reconstruction_error_ = float(error)
        return protocentroids

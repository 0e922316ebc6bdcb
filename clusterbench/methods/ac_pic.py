"""AC-PIC: agglomerative clustering via maximum incremental path integral (Zhang, Zhao & Wang,
ECCV 2012 / TPAMI 2013), the initial clustering of the SR-K-means code on USPS, MNIST-test and
CMU-PIE (notes, deep-and-prcut.md A3: K = 20 neighbours, a = 1, z = 0.01, squared Euclidean
distances).

- Graph: each point's ``n_neighbors`` nearest neighbours, w_ij = exp(−d²_ij/σ²) with
  σ² = a · mean of those d² (the paper's §4.1); P = D⁻¹W, the random walk's transitions.
- Path integral of a cluster C: S_C = 1ᵀ(I − zP_C)⁻¹1 / |C|², the sum over all paths inside C,
  weighted by z^length (Zhang et al., eq. 4–6).
- Affinity of clusters a, b: the incremental path integral
  (S_{a|a∪b} − S_a) + (S_{b|a∪b} − S_b), S_{a|a∪b} = 1_aᵀ(I − zP_{a∪b})⁻¹1_a / |a|² (eq. 8).
- Start from the connected components of the nearest-neighbour links (each point with its first
  neighbour); merge the pair of largest affinity until ``n_clusters`` remain. Only clusters joined
  by a graph edge are compared: others have affinity 0 (the walk cannot cross).

Each affinity is two sparse linear solves on the union's sub-graph, so the cost grows with the
clusters' sizes; on 10⁴ points the merges take minutes. The authors' code (the gactoolbox, in
MATLAB and in DEPICT's Python port) solves the same systems densely over a table of all pairs, on
a graph with self-loops (w_ii = 1) and σ² doubled while some point's nearest-neighbour weight is
below 1e-5; none here. Measured on MNIST-test's pretrained SR embedding, that graph gives the
same start as this one (NMI 0.836 against 0.843, the same two 2-point clusters and two merged
pairs of digits; NMI 0.966 between the two labellings; no σ² doubling). On DEPICT's published
pretrained MNIST-test network this AC-PIC reproduces the start stored beside it (ACC 0.936 against
0.933; NMI 0.982 between the labellings).
"""

from __future__ import annotations

import heapq

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.neighbors import NearestNeighbors

from clusterbench.progress import progress_bar
from clusterbench.validation import (
    AT_LEAST_TWO,
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    check_enough_points,
    check_fit_input,
    check_hyperparameters,
    in_interval,
)


class ACPIC(ClusterMixin, BaseEstimator):
    """Agglomerative clustering via path integral (module docstring).

    Parameters
    ----------
    n_clusters : clusters to stop at (≥ 2).
    n_neighbors : K of the K-nearest-neighbour graph (20, the SR-K-means code).
    a : σ² = a · mean squared neighbour distance (1).
    z : the path-length weight, 0 < z < 1 (0.01).

    Attributes: ``labels_`` (0..k−1), ``n_initial_clusters_`` (the components merging started from).
    """

    def __init__(self, n_clusters=8, n_neighbors=20, a=1.0, z=0.01):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.a = a
        self.z = z

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            ("n_clusters", AT_LEAST_TWO),
            ("n_neighbors", POSITIVE_INT),
            ("a", POSITIVE_REAL),
            ("z", in_interval(0, 1)),
        ]

    def fit(self, X, y=None):
        check_hyperparameters(self, self._checks())
        X = check_fit_input(self, X)
        check_enough_points(self, len(X))
        n = len(X)
        k = min(self.n_neighbors, n - 1)
        distances, neighbours = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
        # Drop each point itself (column 0 unless duplicates tie with it; then drop its own index).
        own = neighbours == np.arange(n)[:, None]
        keep = ~own
        keep[~own.any(1), -1] = False
        neighbours = neighbours[keep].reshape(n, k)
        squared = distances[keep].reshape(n, k) ** 2
        sigma2 = self.a * squared.mean()
        weights = np.exp(-squared / sigma2) if sigma2 > 0 else np.ones_like(squared)
        rows = np.repeat(np.arange(n), k)
        W = sparse.csr_matrix((weights.ravel(), (rows, neighbours.ravel())), shape=(n, n))
        self._transitions = sparse.diags(1.0 / np.maximum(W.sum(1).A1, 1e-300)) @ W
        first = sparse.csr_matrix((np.ones(n), (np.arange(n), neighbours[:, 0])), shape=(n, n))
        count, start = connected_components(first, directed=False)
        if count < self.n_clusters:  # too few components to merge from: start from single points
            count, start = n, np.arange(n)
        self.n_initial_clusters_ = count
        self.labels_ = self._merge(start, count, W + W.T)
        del self._transitions
        return self

    def _integral(self, members: np.ndarray, parts: list[np.ndarray]) -> list[float]:
        """1_pᵀ(I − zP_members)⁻¹1_p / |p|² for each part p (positions within ``members``)."""
        sub = self._transitions[members][:, members]
        system = (sparse.identity(len(members), format="csc") - self.z * sub).tocsc()
        rhs = np.zeros((len(members), len(parts)))
        for j, part in enumerate(parts):
            rhs[part, j] = 1.0
        solution = splu(system).solve(rhs)
        return [float(solution[part, j].sum()) / len(part) ** 2 for j, part in enumerate(parts)]

    def _affinity(self, clusters: dict, self_integral: dict, a: int, b: int) -> float:
        union = np.concatenate([clusters[a], clusters[b]])
        na = len(clusters[a])
        s_a, s_b = self._integral(union, [np.arange(na), np.arange(na, len(union))])
        return (s_a - self_integral[a]) + (s_b - self_integral[b])

    def _merge(self, start: np.ndarray, count: int, adjacency: sparse.csr_matrix) -> np.ndarray:
        clusters = {c: np.flatnonzero(start == c) for c in range(count)}
        self_integral = {c: self._integral(m, [np.arange(len(m))])[0] for c, m in clusters.items()}
        membership = sparse.csr_matrix((np.ones(len(start)), (np.arange(len(start)), start)))
        linked = (membership.T @ adjacency @ membership).tocoo()
        neighbours = {c: set() for c in clusters}
        for a, b in zip(linked.row, linked.col, strict=True):
            if a != b:
                neighbours[a].add(b)
                neighbours[b].add(a)
        heap = [
            (-self._affinity(clusters, self_integral, a, b), a, b)
            for a in clusters
            for b in neighbours[a]
            if a < b
        ]
        heapq.heapify(heap)
        new_id = count
        # On 10⁴ points the merges take minutes (module docstring): a bar, and lines off a terminal.
        with progress_bar(total=count - self.n_clusters, desc="AC-PIC", unit="merge", leave=False) as merges:
            while len(clusters) > self.n_clusters:
                while heap and (heap[0][1] not in clusters or heap[0][2] not in clusters):
                    heapq.heappop(heap)  # a pair whose cluster was merged away
                if heap:
                    _, a, b = heapq.heappop(heap)
                else:  # disconnected components: affinity 0 everywhere, join the two smallest
                    a, b = sorted(clusters, key=lambda c: len(clusters[c]))[:2]
                merged = np.concatenate([clusters.pop(a), clusters.pop(b)])
                clusters[new_id] = merged
                self_integral[new_id] = self._integral(merged, [np.arange(len(merged))])[0]
                neighbours[new_id] = (neighbours.pop(a) | neighbours.pop(b)) - {a, b}
                for c in neighbours[new_id]:
                    neighbours[c] -= {a, b}
                    neighbours[c].add(new_id)
                    heapq.heappush(
                        heap,
                        (-self._affinity(clusters, self_integral, new_id, c), min(c, new_id), max(c, new_id)),
                    )
                new_id += 1
                merges.update()
        labels = np.empty(len(start), dtype=np.int64)
        for label, members in enumerate(clusters.values()):
            labels[members] = label
        return labels

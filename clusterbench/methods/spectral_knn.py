"""Spectral clustering on the binary kNN graph: PRCut Table 2's "SC (Best)" baseline.

The ratio cut's spectral relaxation (PRCut §2, eq. 4; von Luxburg 2007): the eigenvectors of the
k smallest eigenvalues of the unnormalised Laplacian L = D − W of the OR-symmetrised binary kNN
graph (:mod:`clusterbench.graphs`, the same cached neighbour lists PRCut uses), then k-means on
the rows of that (n, k) embedding. Since the result depends on the k-means initialisation, the
paper reports the best run: here ``n_init`` single-start k-means runs (seeded from
``random_state``), and the labelling with the lowest ratio cut (eq. 1, ½, on the same graph) is
kept, as "best" is measured by the objective both methods minimise, not by the labels.

``laplacian='normalized'`` gives the symmetric normalised Laplacian I − D^-½ W D^-½ and Ng et al.'s
row-normalised embedding instead (scikit-learn's ``SpectralClustering`` default).

The eigenvectors come from scipy's sparse solvers (the graph is never dense): ``eigen_solver=
'lobpcg'`` (the default; block LOBPCG with a Jacobi preconditioner, from a seeded random block)
or ``'arpack'`` (shift-invert Lanczos around a small negative shift, which factorises L).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse import linalg as splinalg
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state

from clusterbench import graphs
from clusterbench.errors import HyperparameterError
from clusterbench.methods._seeding import numpy_random_state
from clusterbench.validation import (
    AT_LEAST_TWO,
    NUMPY_RANDOM_STATE,
    POSITIVE_INT,
    POSITIVE_REAL,
    check_fit_input,
    check_hyperparameters,
    one_of,
)

LAPLACIANS = ("unnormalized", "normalized")
EIGEN_SOLVERS = ("lobpcg", "arpack")


def laplacian(W: sparse.csr_matrix, kind: str = "unnormalized") -> sparse.csr_matrix:
    """L = D − W, or I − D^-½ W D^-½ (isolated points: a zero row, as scikit-learn's)."""
    degrees = np.asarray(W.sum(axis=1)).reshape(-1)
    if kind == "unnormalized":
        return (sparse.diags(degrees) - W).tocsr()
    connected = degrees > 0
    scale = np.where(connected, 1.0 / np.sqrt(np.where(connected, degrees, 1.0)), 0.0)
    return (sparse.diags(connected.astype(float)) - sparse.diags(scale) @ W @ sparse.diags(scale)).tocsr()


def smallest_eigenvectors(
    L: sparse.csr_matrix, k: int, solver: str, seed: int, tol: float = 1e-6, max_iter: int = 1000
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest eigenvalues (ascending) of the symmetric positive semi-definite ``L`` and
    their eigenvectors (n, k)."""
    n = L.shape[0]
    if solver == "arpack" or n < 5 * (k + 1):
        if n <= 5 * (k + 1):  # a tiny graph: dense is exact and instant
            values, vectors = np.linalg.eigh(L.toarray())
            return values[:k], vectors[:, :k]
        shift = -1e-3 * float(L.diagonal().max())
        values, vectors = splinalg.eigsh(L, k=k, sigma=shift, which="LM", tol=tol * 1e-2)
    else:
        block = check_random_state(seed).normal(size=(n, k + 1))
        block[:, 0] = 1.0  # the constant vector spans L's null space (up to components)
        diagonal = L.diagonal()
        preconditioner = sparse.diags(1.0 / np.where(diagonal > 0, diagonal, 1.0))
        values, vectors = splinalg.lobpcg(
            L, block, M=preconditioner, largest=False, tol=tol, maxiter=max_iter, verbosityLevel=0
        )
    order = np.argsort(values)[:k]
    return values[order], vectors[:, order]


class SpectralKNN(ClusterMixin, BaseEstimator):
    """Spectral clustering on the OR-symmetrised binary kNN graph, best k-means run by ratio cut
    (PRCut Table 2's "SC (Best)"); see the module docstring.

    Parameters
    ----------
    n_clusters : k (≥ 2).
    n_neighbors : of the kNN graph (Table 2's text: 150); below the number of points.
    laplacian : 'unnormalized' (the ratio cut's relaxation, default) or 'normalized'.
    eigen_solver : 'lobpcg' or 'arpack' (scipy, sparse).
    n_init : single-start k-means runs on the embedding; the one with the lowest ratio cut is kept.
    tol : the eigensolver's tolerance.
    random_state : int, NumPy RandomState or Generator, or None; seeds the eigensolver's start and the
        k-means runs.

    Attributes
    ----------
    labels_ : the kept run's clusters.
    ratio_cut_ : eq. 1 (½) of ``labels_`` on the graph; ratio_cuts_ : every run's.
    embedding_ : (n, k) the eigenvectors (row-normalised for 'normalized'); eigenvalues_ : (k,).
    """

    def __init__(
        self,
        n_clusters=8,
        n_neighbors=150,
        laplacian="unnormalized",
        eigen_solver="lobpcg",
        n_init=10,
        tol=1e-6,
        random_state=None,
    ):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.laplacian = laplacian
        self.eigen_solver = eigen_solver
        self.n_init = n_init
        self.tol = tol
        self.random_state = random_state

    def _validate_params(self) -> None:
        check_hyperparameters(
            self,
            [
                ("n_clusters", AT_LEAST_TWO),
                ("n_neighbors", POSITIVE_INT),
                ("laplacian", one_of(LAPLACIANS)),
                ("eigen_solver", one_of(EIGEN_SOLVERS)),
                ("n_init", POSITIVE_INT),
                ("tol", POSITIVE_REAL),
                ("random_state", NUMPY_RANDOM_STATE),
            ],
        )

    def _check_n_points(self, n_points: int) -> None:
        """What the data's size bounds (k < n, n_neighbors < n): checked by fit and, before a
        sweep's first fit, by the runner (:func:`clusterbench.checks.check_point`)."""
        name = type(self).__name__
        graphs.check_n_neighbors(self.n_neighbors, n_points, name)
        if self.n_clusters >= n_points:
            raise HyperparameterError(
                f"{name} n_clusters must be below the number of points ({n_points}): lower n_clusters"
            )

    def fit(self, X, y=None):
        cuts, best = [], None
        for cut, labels in self.iter_runs(X):
            cuts.append(cut)
            if best is None or cut < best[0]:  # the first of equal cuts, as argmin
                best = (cut, labels)
        self.ratio_cuts_ = np.array(cuts)
        self.ratio_cut_, self.labels_ = best
        return self

    def iter_runs(self, X):
        """Embed ``X`` (sets ``eigenvalues_``, ``embedding_``), then yield (ratio cut, labels) of
        each of the ``n_init`` k-means runs, in :meth:`fit`'s order and with its seeds: what
        ``fit`` chooses from, for a look at runs it does not keep (``scripts/sc_selection.py``)."""
        self._validate_params()
        name = type(self).__name__
        X = graphs.check_finite(check_fit_input(self, X, ensure_all_finite=False), name)
        self._check_n_points(len(X))
        random = numpy_random_state(self.random_state)
        W = graphs.knn_graph(X, self.n_neighbors, "symmetric")
        values, vectors = smallest_eigenvectors(
            laplacian(W, self.laplacian), self.n_clusters, self.eigen_solver, random.randint(2**31), self.tol
        )
        if self.laplacian == "normalized":
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms > 0, norms, 1.0)
        self.eigenvalues_, self.embedding_ = values, vectors
        ratio_cut = graphs.RatioCut(W)
        for seed in random.randint(2**31, size=self.n_init):
            labels = KMeans(self.n_clusters, n_init=1, random_state=int(seed)).fit(vectors).labels_
            yield ratio_cut(labels), labels

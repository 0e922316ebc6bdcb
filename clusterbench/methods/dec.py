"""DEC's soft clustering (Xie, Girshick & Farhadi, ICML 2016), as CLAM (Saha et al., ICML 2023) uses it.

DEC clusters with k centroids μ_j and a Student-t soft assignment of each point z_i (eq. 1 of
Xie et al.), sharpens it into an auxiliary target distribution (eq. 3), and moves the centroids by
SGD on KL(P‖Q) (eq. 2; autograd gives the centroid gradient of eq. 5). A point's cluster is argmax_j q_ij.

What CLAM changed (§4, Appendix A.3, B.2, Table 7): it runs only the soft-clustering part of DEC,
with **no autoencoder**: the points z_i are the standardized input itself and the centroids are the
only parameters. "DEC" seeds the centroids with Lloyd's k-means solution, as DEC does; "DEC^r"
seeds them randomly. Table 7 gives Student-t degree of freedom α = 1, batches of 256, at most
2·10⁴ iterations and tol = 0.1%, and CLAM sweeps ``update_interval`` over its values. The
optimizer is not in the paper: the authors' code (s_kmeans.py) uses Keras' Adam at its default
rate 1e-3 (``optimizer='adam'``, what conf/method/dec.yaml sets); DEC-keras uses SGD with
learning rate 0.01 and momentum 0.9 (``optimizer='sgd'``, the estimator's default).

Procedure (DEC-keras, described in the notes; implemented here from that description):

- One **iteration** is one SGD step on one mini-batch of ``batch_size`` points; ``max_iter`` and
  ``update_interval`` count iterations. Batches walk through a seeded random permutation of the
  data, drawn afresh at each pass; the last batch of a pass holds the remainder (so with
  n ≤ batch_size every iteration is a full-batch step). DEC-keras walks the data in file order;
  we shuffle, since several datasets are stored sorted by class.
- Every ``update_interval`` iterations (from iteration 0) the target P is recomputed from Q on the
  full data, and the labels argmax q are compared with those at the previous update (at
  iteration 0: with the seeding's labels). From the second update on, if fewer than a fraction
  ``tol`` of the labels changed, training stops before the next step. Otherwise it stops after
  ``max_iter`` iterations.
- The batch loss is the mean over the batch's points of Σ_j p_ij log(p_ij / q_ij) (Keras' ``kld``).

DEC^r seeding: CLAM says only that DEC^r uses "random-initialized cluster centers"; the
authors' code draws every coordinate from N(0.1, 0.1²) (``init="gaussian"``, what
conf/method/dec_random.yaml sets). ``init="random"`` is DEC-keras' draw: its clustering layer
initializes the centroid matrix (k, d) with Glorot uniform, U(−√(6/(k+d)), √(6/(k+d))), before DEC
overwrites it with the k-means centers. Both put all centroids near the origin of the
standardized space, well inside the data, consistent with CLAM's finding that DEC^r is worse than
k-means on every dataset.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.utils.validation import check_array

from clusterbench.methods._seeding import gaussian_prototypes, resolve_seed
from clusterbench.validation import (
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    TorchHyperparameters,
    check_enough_points,
    check_predict_input,
    in_interval,
    one_of,
    resolve_device,
    torch_threads,
)

INITS = ("kmeans", "random", "gaussian")
OPTIMIZERS = ("sgd", "adam")


# k-means seedings kept for reuse: (digest of X, k, n_init, seed) -> centers; the oldest goes first.
_SEEDINGS: OrderedDict[tuple, np.ndarray] = OrderedDict()
SEEDINGS_KEPT = 4


def kmeans_seeding(X: np.ndarray, k: int, n_init: int, seed: int) -> np.ndarray:
    """scikit-learn's KMeans centers on ``X``, remembered for the last few (X, k, n_init, seed).

    Why: the seeding does not depend on DEC's own hyperparameters, and a grid over
    update_interval (CLAM Table 7: 16 points) would otherwise rerun the same k-means, with the
    CLAM code's 1000 restarts, once per point.
    """
    key = (hashlib.sha1(np.ascontiguousarray(X).view(np.uint8)).hexdigest(), X.shape, k, n_init, seed)
    if key not in _SEEDINGS:
        _SEEDINGS[key] = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(X).cluster_centers_
        while len(_SEEDINGS) > SEEDINGS_KEPT:
            _SEEDINGS.popitem(last=False)
    return _SEEDINGS[key]


def log_soft_assignment(x: torch.Tensor, centers: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """log Q: the log of the Student-t soft assignment of points ``x`` (n, d) to ``centers`` (k, d)
    (eq. 1, Xie et al.).

    q_ij = (1 + ‖z_i − μ_j‖²/α)^(−(α+1)/2) / Σ_j' (1 + ‖z_i − μ_j'‖²/α)^(−(α+1)/2).
    Computed as a log-softmax of the log-kernels, so far-away points cannot underflow to 0/0 and
    log q stays finite where q underflows; Q itself is its ``exp()``.
    """
    return torch.log_softmax(_log_kernel(x, centers, alpha), dim=1)


def squared_distances(x: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    """‖z_i − μ_j‖² (n, k), as ‖z‖² − 2⟨z, μ⟩ + ‖μ‖² (one matrix product; clamped at 0 against rounding)."""
    cross = x @ centers.T
    return (x.square().sum(1, keepdim=True) - 2.0 * cross + centers.square().sum(1)).clamp(min=0.0)


def _log_kernel(x: torch.Tensor, centers: torch.Tensor, alpha: float) -> torch.Tensor:
    squared = squared_distances(x, centers)
    return -(alpha + 1.0) / 2.0 * torch.log1p(squared / alpha)


def target_distribution(q: torch.Tensor) -> torch.Tensor:
    """P: DEC's auxiliary target (eq. 3, Xie et al.): p_ij = (q_ij² / f_j) / Σ_j' (q_ij'² / f_j').

    f_j = Σ_i q_ij is cluster j's soft frequency; squaring sharpens the assignments, dividing by
    f_j keeps large clusters from taking over. A cluster whose q underflowed to 0 at every point
    (f_j = 0: a centroid far from all data under a large α) gets p_ij = 0, not 0/0.
    """
    frequency = q.sum(0, keepdim=True)
    weight = torch.where(frequency > 0, q.square() / frequency, 0.0)
    return weight / weight.sum(1, keepdim=True)


def kl_divergence(p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """Mean over points of KL(P_i‖Q_i) = Σ_j p_ij (log p_ij − log q_ij) (eq. 2, per point), 0 log 0 = 0."""
    return (torch.xlogy(p, p) - p * log_q).sum(1).mean()


class DEC(TorchHyperparameters, ClusterMixin, BaseEstimator):
    """DEC soft clustering on the input space (no autoencoder), as CLAM's DEC and DEC^r baselines.

    See the module docstring for the procedure, what CLAM changed, and the DEC^r seeding.

    Parameters
    ----------
    n_clusters : number of centroids k (≥ 1).
    init : 'kmeans' (DEC: scikit-learn's KMeans on X, ``n_init`` restarts, seeded by
        ``random_state``), 'random' (DEC^r: Glorot-uniform centroids, as DEC-keras' clustering
        layer draws them before DEC overwrites them with the k-means centers) or 'gaussian'
        (DEC^r as the CLAM authors' code draws it: every coordinate N(0.1, 0.1²)).
    n_init : k-means restarts for the seeding (≥ 1; DEC-keras uses 20).
    alpha : degree of freedom α > 0 of the Student-t kernel (eq. 1; DEC and CLAM Table 7: 1).
    optimizer : 'sgd' (DEC-keras: SGD with ``momentum``) or 'adam' (the CLAM authors' code: Adam,
        Keras' default rate 1e-3; ``momentum`` unused).
    lr, momentum : learning rate (> 0) and SGD momentum (in [0, 1)).
    batch_size : points per SGD step (≥ 1).
    update_interval : iterations between recomputations of the target P on the full data (≥ 1).
    max_iter : most SGD iterations (≥ 1; DEC: 2·10⁴).
    tol : stop at a target update where fewer than this fraction of labels changed since the
        previous update (in [0, 1]; 0 never stops early).
    device : 'auto', 'cpu' or 'cuda'. Runs are deterministic on CPU.
    random_state : int ≥ 0 or None; seeds k-means, the random centroids and the batch order.
    n_threads : torch's CPU threads during fit and predict (int ≥ 1), or None for torch's default
        (one per core). 1 by default: the kernels are small (k centroids, batches of 256), and on a
        busy machine more threads wait on each other; the harness sets it from its ``threads``.

    Attributes
    ----------
    labels_ : argmax_j q_ij with the final centroids.
    cluster_centers_ : (k, d) final centroids.
    init_centers_ : (k, d) centroids the optimization started from.
    n_iter_ : SGD iterations run.
    history_ : per target update, dict of arrays: ``iteration`` (SGD steps before the update),
        ``kl`` (full-data mean KL(P‖Q) right after P was recomputed), ``changed`` (fraction of
        labels changed since the previous update; at iteration 0, since the seeding's labels).
    converged_ : True when training stopped on ``tol``, False when it ran ``max_iter`` iterations.
    device_ : the device used.
    """

    # Records written before n_threads existed were fitted at the harness's one thread: named
    # without it (runner.named_by).
    _params_added_later: ClassVar[dict] = {"n_threads": 1}

    def __init__(
        self,
        n_clusters=8,
        init="kmeans",
        n_init=20,
        alpha=1.0,
        optimizer="sgd",
        lr=0.01,
        momentum=0.9,
        batch_size=256,
        update_interval=140,
        max_iter=20000,
        tol=1e-3,
        device="auto",
        random_state=None,
        n_threads=1,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.alpha = alpha
        self.optimizer = optimizer
        self.lr = lr
        self.momentum = momentum
        self.batch_size = batch_size
        self.update_interval = update_interval
        self.max_iter = max_iter
        self.tol = tol
        self.device = device
        self.random_state = random_state
        self.n_threads = n_threads

    def fit(self, X, y=None):
        self._validate_params()
        with torch_threads(self.n_threads):
            X = check_array(X, dtype=[np.float64, np.float32], force_writeable=True)
            check_enough_points(self, len(X))
            self.n_features_in_ = X.shape[1]
            self.device_ = resolve_device(self.device)
            seed = resolve_seed(self.random_state)
            generator = torch.Generator(device=self.device_).manual_seed(seed)
            # Distances are taken from the data's mean: the GEMM identity of squared_distances loses
            # every digit in float32 far from the origin (uncentred data shifted by 1e4 mislabelled a
            # fifth of its points). Standardized inputs (CLAM's) have mean 0 and are unchanged.
            self._data_mean = X.mean(0, dtype=np.float64)
            data = self._centred(X)

            initial = self._initial_centers(X, data, generator, seed)
            self.init_centers_ = initial.double().cpu().numpy()
            centers = self._centred(self.init_centers_).requires_grad_()
            if self.optimizer == "adam":
                optimizer = torch.optim.Adam([centers], lr=self.lr)
            else:
                optimizer = torch.optim.SGD([centers], lr=self.lr, momentum=self.momentum)

            n = len(data)
            labels = self._labels(data, centers.detach())
            history = {"iteration": [], "kl": [], "changed": []}
            target = None
            order = torch.empty(0, dtype=torch.long, device=self.device_)
            position = n  # start of the next batch in ``order``; n = draw a new permutation
            self.converged_ = False
            iteration = 0
            while iteration < self.max_iter:
                if iteration % self.update_interval == 0:
                    with torch.no_grad():
                        log_q = log_soft_assignment(data, centers, self.alpha)
                        q = log_q.exp()
                        target = target_distribution(q)
                        current = q.argmax(1)
                        changed = float((current != labels).float().mean())
                        history["iteration"].append(iteration)
                        history["kl"].append(float(kl_divergence(target, log_q)))
                        history["changed"].append(changed)
                        labels = current
                    if iteration > 0 and changed < self.tol:
                        self.converged_ = True
                        break
                if position >= n:
                    order = torch.randperm(n, generator=generator, device=self.device_)
                    position = 0
                batch = order[position : position + self.batch_size]
                position += self.batch_size
                loss = kl_divergence(target[batch], log_soft_assignment(data[batch], centers, self.alpha))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                iteration += 1

            final = centers.detach()
            self.n_iter_ = iteration
            self.history_ = {key: np.asarray(values) for key, values in history.items()}
            self.cluster_centers_ = final.double().cpu().numpy() + self._data_mean
            self.labels_ = self._labels(data, final).cpu().numpy()
            return self

    def predict(self, X):
        """argmax_j q_ij of each point of ``X`` with the fitted centroids (= the nearest centroid)."""
        X = check_predict_input(self, X, "cluster_centers_")
        with torch_threads(self.n_threads):
            return self._labels(self._centred(X), self._centred(self.cluster_centers_)).cpu().numpy()

    def _centred(self, points: np.ndarray) -> torch.Tensor:
        """``points`` less the training data's mean, as float32 on the fitted device."""
        return torch.as_tensor(points - self._data_mean, dtype=torch.float32, device=self.device_)

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            ("n_clusters", POSITIVE_INT),
            ("init", one_of(INITS)),
            ("n_init", POSITIVE_INT),
            ("alpha", POSITIVE_REAL),
            ("optimizer", one_of(OPTIMIZERS)),
            ("lr", POSITIVE_REAL),
            ("momentum", in_interval(0, 1, closed="left")),
            ("batch_size", POSITIVE_INT),
            ("update_interval", POSITIVE_INT),
            ("max_iter", POSITIVE_INT),
            ("tol", in_interval(0, 1, closed="both")),
        ]

    def _initial_centers(
        self, X: np.ndarray, data: torch.Tensor, generator: torch.Generator, seed: int
    ) -> torch.Tensor:
        """k-means centers (DEC), or a Glorot-uniform or N(0.1, 0.1²) draw (DEC^r): module docstring."""
        k, d = self.n_clusters, data.shape[1]
        if self.init == "kmeans":
            centers = kmeans_seeding(X, k, self.n_init, seed % 2**32)
            return torch.as_tensor(centers, dtype=torch.float32, device=data.device)
        if self.init == "gaussian":
            return gaussian_prototypes(k, d, generator)  # as the CLAM authors' DEC^r draws them
        limit = math.sqrt(6.0 / (k + d))
        uniform = torch.rand(k, d, generator=generator, device=data.device)
        return (2.0 * uniform - 1.0) * limit

    @torch.no_grad()
    def _labels(self, data: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
        """argmax_j q_ij, i.e. the nearest centroid (q decreases with the distance)."""
        return squared_distances(data, centers).argmin(1)

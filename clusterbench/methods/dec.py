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

The procedure is the identity-encoder case of the deep family's one loop
(:class:`clusterbench.methods.deep.base.DeepClusterer`): no network and no pretraining, the
centroids the only parameters; IDEC, DCEC and DEC with its autoencoder (``method=dec_ae``) are the
same loop with a network.

DEC^r seeding: CLAM says only that DEC^r uses "random-initialized cluster centers"; the
authors' code draws every coordinate from N(0.1, 0.1²) (``init="gaussian"``, what
conf/method/dec_random.yaml sets). ``init="random"`` is DEC-keras' draw: its clustering layer
initializes the centroid matrix (k, d) with Glorot uniform, U(−√(6/(k+d)), √(6/(k+d))), before DEC
overwrites it with the k-means centers. Both put all centroids near the origin of the
standardized space, well inside the data, consistent with CLAM's finding that DEC^r is worse than
k-means on every dataset.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from clusterbench.methods._seeding import gaussian_prototypes
from clusterbench.methods.deep.base import (
    OPTIMIZERS,
    Centroids,
    DeepClusterer,
    StudentTClustering,
    kmeans_seeding,
)
from clusterbench.validation import (
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    in_interval,
    one_of,
)

INITS = ("kmeans", "random", "gaussian")


class DEC(StudentTClustering, DeepClusterer):
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
    random_state : int, NumPy RandomState or Generator, or None; seeds k-means, the random centroids and the
        batch order.
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
    loss_history_ : the mean batch loss of each pass over the data.
    converged_ : True when training stopped on ``tol``, False when it ran ``max_iter`` iterations.
    n_params_ : k·d, the centroids.
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

    def _network(self, n_features: int) -> None:
        return None  # the identity encoder: the centroids live in the input space

    def _learn_input(self, X: np.ndarray) -> None:
        # Distances are taken from the data's mean: the GEMM identity of squared_distances loses
        # every digit in float32 far from the origin (uncentred data shifted by 1e4 mislabelled a
        # fifth of its points). Standardized inputs (CLAM's) have mean 0 and are unchanged.
        self._data_mean = X.mean(0, dtype=np.float64)

    def _input(self, X: np.ndarray) -> torch.Tensor:
        return self._centred(X)

    def _centred(self, points: np.ndarray) -> torch.Tensor:
        """``points`` less the training data's mean, as float32 on the fitted device."""
        return torch.as_tensor(points - self._data_mean, dtype=torch.float32, device=self.device_)

    def _output_centres(self, centres: torch.Tensor) -> np.ndarray:
        return centres.detach().double().cpu().numpy() + self._data_mean

    def _seed_head(
        self, X: np.ndarray, embedding: torch.Tensor, generator: torch.Generator, seed: int
    ) -> nn.Module:
        """k-means centers (DEC), or a Glorot-uniform or N(0.1, 0.1²) draw (DEC^r): module docstring.
        The draw is in the input's coordinates, then centred as the data is."""
        k, d = self.n_clusters, X.shape[1]
        if self.init == "kmeans":
            initial = torch.as_tensor(kmeans_seeding(X, k, self.n_init, seed % 2**32), dtype=torch.float32)
        elif self.init == "gaussian":
            initial = gaussian_prototypes(k, d, generator)  # as the CLAM authors' DEC^r draws them
        else:
            limit = math.sqrt(6.0 / (k + d))
            initial = (2.0 * torch.rand(k, d, generator=generator, device=generator.device) - 1.0) * limit
        return Centroids(self._centred(initial.double().cpu().numpy()))

"""DKM, Deep k-Means (Moradi Fard, Thonet & Gaussier, Pattern Recognition Letters 2020).

DKM makes k-means differentiable: each embedded point z_i is softly assigned to the centroids
μ_k by a softmax of its negative squared distances sharpened by an inverse temperature α,

    p_ik = exp(−α (‖z_i − μ_k‖² − m_i)) / Σ_k' exp(−α (‖z_i − μ_k'‖² − m_i)),   m_i = min_k ‖z_i − μ_k‖²,

(the shift by m_i changes nothing but keeps the exponentials finite), and the clustering loss is
the soft k-means objective mean_i Σ_k p_ik f(z_i, μ_k), trained with the reconstruction loss:
L = reconstruction_weight · L_r + clustering_weight · L_c. The gradient flows through p too.
f is ``distance``: 'euclidean', ‖z − μ‖ (ClustPy's DKM, ``squared_diffs.sqrt() * probs``, which the
Khatri-Rao paper's DKM column runs), or 'squared', ‖z − μ‖² (the Khatri-Rao authors' own KR-DKM
module). At α = 1000 the two pull a point to its centroid with a unit-length and with a
2(z − μ) gradient, against a reconstruction loss of weight 1.

α is either one constant (the Khatri-Rao code: α = 1000, which is nearly hard k-means), or the DKM
paper's annealing (``alpha='annealed'``): α₁ = 0.1, α_i = 2^{1/ln(i)²}·α_{i−1} for i = 2…40 (0.1,
0.423, 0.752, … 28.1), ``epochs`` epochs at each α, so 40× the epochs (ClustPy's
``_get_default_alphas`` and its loop). Labels: argmax_k p_ik, the nearest centroid.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from clusterbench.methods.deep.base import AutoencoderClusterer, squared_distances
from clusterbench.validation import POSITIVE_REAL, Constraint, is_real, one_of

ANNEALED_STEPS = 40
DISTANCES = ("euclidean", "squared")
SQRT_FLOOR = 1e-12


def annealed_alphas(steps: int = ANNEALED_STEPS) -> list[float]:
    """The DKM paper's α schedule: α₁ = 0.1, α_i = 2^{1/ln(i)²}·α_{i−1} (i = 2…steps)."""
    alphas = [0.1]
    for i in range(2, steps + 1):
        alphas.append(2.0 ** (1.0 / math.log(i) ** 2) * alphas[-1])
    return alphas


def dkm_loss(z: torch.Tensor, centres: torch.Tensor, alpha: float, distance: str = "squared") -> torch.Tensor:
    """mean_i Σ_k p_ik f(z_i, μ_k), p = softmax(−α (d² − min_k d²)), f = d² or d (module docstring)."""
    squared = squared_distances(z, centres)
    shifted = squared - squared.min(1, keepdim=True).values.detach()
    # d = √d², kept off 0 where its gradient is infinite (a point on its centroid).
    cost = squared if distance == "squared" else squared.clamp_min(SQRT_FLOOR).sqrt()
    return (torch.softmax(-alpha * shifted, dim=1) * cost).sum(1).mean()


class DKM(AutoencoderClusterer):
    """Deep k-means: soft k-means on a jointly trained autoencoder's embedding (module docstring).

    Parameters are IDEC's (:class:`~clusterbench.methods.IDEC`) less its target schedule
    (``alpha``, ``update_interval``, ``tol``), with DKM's inverse temperature:

    alpha : a number > 0 (constant; the Khatri-Rao code's 1000) or 'annealed' (the DKM paper's 40
        values, ``epochs`` epochs each; needs ``epochs``).
    distance : 'euclidean' (ClustPy's DKM) or 'squared' (module docstring).

    Defaults: ClustPy's DKM (100 pretraining epochs, weights 0.1 and 1, 150 epochs at lr 1e-4, α =
    1000) on DEC's d-500-500-2000-10 autoencoder, the default of every autoencoder here; the
    Khatri-Rao protocol's layers, activation and weights are in conf/method/dkm.yaml.
    """

    has_target: ClassVar[bool] = False

    def __init__(
        self,
        n_clusters=8,
        layers=(500, 500, 2000, 10),
        activation="relu",
        allow_wider_embedding=False,
        pretrain_epochs=100,
        pretrain_lr=1e-3,
        pretrain_batch_size=256,
        pretrain_seed=None,
        reconstruction_reduction="mean",
        clustering_weight=0.1,
        reconstruction_weight=1.0,
        alpha=1000.0,
        distance="euclidean",
        n_init=20,
        optimizer="adam",
        lr=1e-4,
        momentum=0.9,
        batch_size=256,
        epochs=150,
        max_iter=None,
        labels_by="assignment",
        device="auto",
        random_state=None,
        n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.layers = layers
        self.activation = activation
        self.allow_wider_embedding = allow_wider_embedding
        self.pretrain_epochs = pretrain_epochs
        self.pretrain_lr = pretrain_lr
        self.pretrain_batch_size = pretrain_batch_size
        self.pretrain_seed = pretrain_seed
        self.reconstruction_reduction = reconstruction_reduction
        self.clustering_weight = clustering_weight
        self.reconstruction_weight = reconstruction_weight
        self.alpha = alpha
        self.distance = distance
        self.n_init = n_init
        self.optimizer = optimizer
        self.lr = lr
        self.momentum = momentum
        self.batch_size = batch_size
        self.epochs = epochs
        self.max_iter = max_iter
        self.labels_by = labels_by
        self.device = device
        self.random_state = random_state
        self.n_threads = n_threads

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            *super()._checks(),
            (
                "alpha",
                Constraint(
                    lambda v: v == "annealed" or (is_real(v) and POSITIVE_REAL.valid(v)),
                    "a number > 0 or annealed",
                ),
            ),
            (
                "alpha",
                Constraint(
                    lambda v: v != "annealed" or self.epochs is not None, "a number where epochs is null"
                ),
            ),
            ("distance", one_of(DISTANCES)),
        ]

    def _alphas(self) -> list[float]:
        return annealed_alphas() if self.alpha == "annealed" else [float(self.alpha)]

    def _n_stages(self) -> int:
        return len(self._alphas())

    def _clustering_loss(self, z, centres, target, epoch: int) -> torch.Tensor:
        alphas = self._alphas()
        stage = min(epoch // self.epochs, len(alphas) - 1) if self.epochs else 0  # epochs epochs per α
        return dkm_loss(z, centres, alphas[stage], self.distance)

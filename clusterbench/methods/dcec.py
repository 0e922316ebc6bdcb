"""DCEC, Deep Convolutional Embedded Clustering (Guo, Liu, Zhu & Yin, ICONIP 2017).

IDEC's loss (reconstruction + γ·KL(P‖Q), γ = 0.1) on a convolutional autoencoder: three stride-2
convolutions (32 5×5, 64 5×5, 128 3×3, the third ``valid`` where the image size is not divisible by
8), a linear 10-unit embedding, and the mirrored decoder
(:class:`~clusterbench.methods.deep.networks.ConvAutoencoder`). The reference (XifengGuo/DCEC)
pretrains 200 epochs with Adam (batch 256, MSE), seeds the centroids with k-means (20 restarts),
then trains with Adam, recomputing P on the full data every ``update_interval`` steps, stopping when
fewer than ``tol`` = 0.1% of the labels change or after 2·10⁴ steps; labels are argmax q.

CLAM (Tables 1, 2, 9) ran DCEC on its three image datasets (Yale 32×32, USPS 16×16,
Fashion-MNIST 28×28) with update_interval chosen by silhouette from its Table 7 grid.

Rows of X are images flattened in row-major (C, H, W) order; ``image_shape`` gives (C, H, W), or
None for one channel of a square image (d must then be a square).

As for IDEC (:mod:`clusterbench.methods.idec`), batches walk a seeded permutation per pass, where
DCEC's code takes sequential slices, and the labels come from the final embedding, where it keeps
argmax q at the last target update.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from clusterbench.errors import HyperparameterError
from clusterbench.methods.deep.base import AutoencoderClusterer, DECTargetChecks, StudentTClustering
from clusterbench.methods.deep.networks import ConvAutoencoder
from clusterbench.validation import POSITIVE_INT, Constraint, is_int, optional


def _valid_shape(shape, length: int) -> bool:
    return (
        isinstance(shape, Sequence)
        and not isinstance(shape, str)
        and len(shape) == length
        and all(is_int(v) and v >= 1 for v in shape)
    )


class DCEC(DECTargetChecks, StudentTClustering, AutoencoderClusterer):
    """DCEC: IDEC's loss on DCEC's convolutional autoencoder (module docstring).

    Parameters are IDEC's (:class:`~clusterbench.methods.IDEC`) with the convolutional network in
    place of ``layers`` and ``activation``:

    image_shape : (C, H, W) of each row, or None for a square single-channel image.
    channels : the three convolutions' channels (32, 64, 128).
    embedding_dim : the embedding's width (10).
    """

    def __init__(
        self,
        n_clusters=8,
        image_shape=None,
        channels=(32, 64, 128),
        embedding_dim=10,
        pretrain_epochs=200,
        pretrain_lr=1e-3,
        pretrain_batch_size=256,
        pretrain_seed=None,
        reconstruction_reduction="mean",
        clustering_weight=0.1,
        reconstruction_weight=1.0,
        alpha=1.0,
        n_init=20,
        optimizer="adam",
        lr=1e-3,
        momentum=0.9,
        batch_size=256,
        update_interval=140,
        tol=1e-3,
        epochs=None,
        max_iter=20000,
        labels_by="assignment",
        device="auto",
        random_state=None,
        n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.image_shape = image_shape
        self.channels = channels
        self.embedding_dim = embedding_dim
        self.pretrain_epochs = pretrain_epochs
        self.pretrain_lr = pretrain_lr
        self.pretrain_batch_size = pretrain_batch_size
        self.pretrain_seed = pretrain_seed
        self.reconstruction_reduction = reconstruction_reduction
        self.clustering_weight = clustering_weight
        self.reconstruction_weight = reconstruction_weight
        self.alpha = alpha
        self.n_init = n_init
        self.optimizer = optimizer
        self.lr = lr
        self.momentum = momentum
        self.batch_size = batch_size
        self.update_interval = update_interval
        self.tol = tol
        self.epochs = epochs
        self.max_iter = max_iter
        self.labels_by = labels_by
        self.device = device
        self.random_state = random_state
        self.n_threads = n_threads

    def _network_checks(self) -> list[tuple[str, Constraint]]:
        return [
            (
                "image_shape",
                optional(
                    Constraint(lambda v: _valid_shape(v, 3), "a list of 3 integers ≥ 1 (C, H, W)"), "null"
                ),
            ),
            ("channels", Constraint(lambda v: _valid_shape(v, 3), "a list of 3 integers ≥ 1")),
            ("embedding_dim", POSITIVE_INT),
        ]

    def _shape(self, n_features: int) -> tuple[int, int, int]:
        if self.image_shape is not None:
            shape = tuple(int(v) for v in self.image_shape)
            if math.prod(shape) != n_features:
                raise HyperparameterError(
                    f"DCEC image_shape {list(shape)} holds {math.prod(shape)} values but the data has "
                    f"{n_features} features: set method.image_shape to the images' (C, H, W)"
                )
            return shape
        side = math.isqrt(n_features)
        if side * side != n_features:
            raise HyperparameterError(
                f"DCEC needs images: {n_features} features are not a square image; "
                "set method.image_shape=[C,H,W]"
            )
        return (1, side, side)

    def _network(self, n_features: int) -> nn.Module:
        self._check_embedding_width(self.embedding_dim, n_features)
        try:
            return ConvAutoencoder(self._shape(n_features), tuple(self.channels), self.embedding_dim)
        except ValueError as exc:  # an image size DCEC's network cannot take
            raise HyperparameterError(f"DCEC: {exc}") from None

    def _input(self, X: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(X, dtype=torch.float32, device=self.device_).reshape(
            -1, *self._shape(X.shape[1])
        )

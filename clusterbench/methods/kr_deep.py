"""Deep Khatri-Rao clustering (Ciaperoni et al., Khatri-Rao paper §7): IDEC and DKM whose k
centroids are sums θ¹_i + θ²_j of two small sets of protocentroids (h1 + h2 vectors for h1·h2
centroids, eq. 5 with the sum aggregator), on an autoencoder whose inner layers are
Hadamard-factored (eq. 9, :class:`~clusterbench.methods.deep.networks.HadamardLinear`).

What the paper and its code do (§7, §9.1; notes, A4):

- The compressed autoencoder keeps the first and last layers of the encoder and decoder dense and
  gives each inner layer the rank max{10, min{⌊√in⌋, ⌊√out⌋}}·m. m starts at 1; while the compressed
  AE reconstructs worse than the full (dense) one, m grows by one and a fresh network is trained for
  1000 + 500(m − 1) epochs (m ≤ 10): ``hadamard_multiplier='auto'``. Table 3's params column shows
  the m each dataset reached (3 for MNIST, 2 for Double MNIST and HAR, 1 elsewhere), so an integer
  ``hadamard_multiplier`` reproduces it without the retraining.
- The protocentroids are seeded by Khatri-Rao k-means (sum aggregator) on the pretrained
  embedding, the best of 30 runs (KR-IDEC: up to 1000 iterations; KR-DKM: 100), and trained by
  their own Adam at 10× the network's rate (``centroid_lr``).
- The clustering losses are IDEC's and DKM's, with the centroids built from the protocentroids at
  each step (h1·h2 × e, never batch-sized).

Labels are the method's own (the nearest centroid); the paper's code scores a k-means
re-clustering of the embedding (``labels_by='kmeans'``) and keeps, of 20 runs, the one of least
embedding inertia, which compares inertias across different embeddings (notes, A4).
"""

from __future__ import annotations

import torch
from torch import nn

from clusterbench.methods.deep.base import (
    AutoencoderClusterer,
    DECTargetChecks,
    StudentTClustering,
)
from clusterbench.methods.deep.networks import MLPAutoencoder
from clusterbench.methods.dkm import DKM
from clusterbench.methods.kr_kmeans import KhatriRaoKMeans, aggregate, centroid_layout
from clusterbench.validation import (
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    is_int,
    optional,
)

KR_LAYERS = (1024, 512, 256, 10)  # the Khatri-Rao paper's autoencoder (§9.1)
MAX_MULTIPLIER = 10  # the code's cap on m


class SumProtocentroids(nn.Module):
    """Two (or more) learnable protocentroid sets; the centroids are all their sums (eq. 5),
    row-major, the first ``n_centroids`` of them used."""

    def __init__(self, protocentroids: list[torch.Tensor], n_centroids: int):
        super().__init__()
        self.sets = nn.ParameterList([nn.Parameter(t.detach().clone()) for t in protocentroids])
        self.n_centroids = n_centroids

    def centres(self) -> torch.Tensor:
        return aggregate(list(self.sets), "sum")[: self.n_centroids]


class KhatriRaoDeep:
    """What KR-IDEC and KR-DKM add to IDEC and DKM (before them in the bases): the compressed
    autoencoder with its rank schedule, and the protocentroid head seeded by Khatri-Rao k-means.

    Fitted, besides the family's attributes: ``hadamard_multiplier_`` (the m used),
    ``reference_pretrain_loss_`` (the full AE's, with ``hadamard_multiplier='auto'``),
    ``protocentroids_`` (the final sets, each (h_l, e)), ``sizes_``.
    """

    def _network(self, n_features: int) -> nn.Module:
        multiplier = self._multiplier
        self._check_embedding_width(self.layers[-1], n_features)
        return MLPAutoencoder((n_features, *self.layers), multiplier, self.activation)

    def _pretrained(self, data: torch.Tensor, n_features: int, seed: int) -> nn.Module:
        """With an integer m, one compressed AE trained ``pretrain_epochs + pretrain_epochs_step·(m−1)``
        epochs; with 'auto', the paper's schedule against the full AE (module docstring), each
        network's reconstruction error taken on the full data as the code's ``F.mse_loss``."""
        self.reference_pretrain_loss_ = None
        if self.hadamard_multiplier != "auto":
            self._multiplier = self.hadamard_multiplier
            self.hadamard_multiplier_ = self._multiplier
            return super()._pretrained(data, n_features, seed)
        pretrain_seed = self._pretrain_seed(seed)
        self._multiplier = None
        reference = self._seeded_network(n_features, pretrain_seed)
        # From the cache only if every network the schedule needed was, the reference too.
        self.reference_pretrain_loss_, from_cache = self._load_or_pretrain(
            reference, data, self.reference_pretrain_epochs, pretrain_seed
        )
        for multiplier in range(1, MAX_MULTIPLIER + 1):
            self._multiplier = multiplier
            network = self._seeded_network(n_features, pretrain_seed)
            loss, hit = self._load_or_pretrain(
                network, data, self._compressed_epochs(multiplier), pretrain_seed
            )
            from_cache = from_cache and hit
            if loss <= self.reference_pretrain_loss_:
                break
        self.hadamard_multiplier_ = multiplier
        self.pretrain_loss_, self.pretrained_from_cache_ = loss, from_cache
        return network

    def _seeded_network(self, n_features: int, pretrain_seed: int) -> nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(pretrain_seed)
            return self._network(n_features)

    def _compressed_epochs(self, multiplier: int) -> int:
        return self.pretrain_epochs + self.pretrain_epochs_step * (multiplier - 1)

    def _pretraining_epochs(self) -> int:
        """The compressed AE's epochs for its m; a dense one (m None) trains as the full AE does."""
        if self._multiplier is None:
            return self.reference_pretrain_epochs
        return self._compressed_epochs(self._multiplier)

    def _seed_head(self, X, embedding: torch.Tensor, generator, seed: int) -> nn.Module:
        self.sizes_, n_centroids = centroid_layout(self.n_clusters, 2, self.h)
        kr = KhatriRaoKMeans(
            n_clusters=self.n_clusters,
            h=self.h,
            aggregator="sum",
            init="random",
            n_init=self.kr_n_init,
            max_iter=self.kr_max_iter,
            tol=1e-4,
            random_state=seed,
            device=str(embedding.device.type),
            n_threads=None,  # the caller's torch_threads block holds
        ).fit(embedding.double().cpu().numpy())
        sets = [torch.as_tensor(t, dtype=torch.float32, device=embedding.device) for t in kr.protocentroids_]
        return SumProtocentroids(sets, n_centroids)

    def fit(self, X, y=None):
        super().fit(X, y)
        self.protocentroids_ = [t.detach().double().cpu().numpy() for t in self._head_.sets]
        return self

    def _kr_checks(self) -> list[tuple[str, Constraint]]:
        return [
            (
                "h",
                optional(
                    Constraint(
                        lambda v: (
                            isinstance(v, (list, tuple))
                            and len(v) == 2
                            and all(is_int(x) and x >= 1 for x in v)
                        ),
                        "a list of 2 integers ≥ 1",
                    ),
                    "null",
                ),
            ),
            (
                "hadamard_multiplier",
                Constraint(
                    lambda v: v is None or v == "auto" or (is_int(v) and 1 <= v <= MAX_MULTIPLIER),
                    f"null (a dense AE), auto, or an integer in [1, {MAX_MULTIPLIER}]",
                ),
            ),
            ("pretrain_epochs_step", NON_NEGATIVE_INT),
            ("reference_pretrain_epochs", NON_NEGATIVE_INT),
            ("kr_n_init", POSITIVE_INT),
            ("kr_max_iter", POSITIVE_INT),
            ("centroid_lr", optional(POSITIVE_REAL, "null")),
        ]

    def _clusters_asked(self):
        """h's centroid count, for the runner's check against the dataset before a sweep fits."""
        if self.h is None:
            return None
        _, n_centroids = centroid_layout(self.n_clusters, 2, self.h)
        return f"h {list(self.h)} gives {n_centroids} centroids", n_centroids


class KhatriRaoIDEC(KhatriRaoDeep, DECTargetChecks, StudentTClustering, AutoencoderClusterer):
    """KR-IDEC: IDEC with protocentroids and a compressed autoencoder (module docstring).

    Parameters are :class:`~clusterbench.methods.IDEC`'s, with the Khatri-Rao paper's protocol as
    defaults (d-1024-512-256-10 LeakyReLU AE; Adam 1e-4 for 150 epochs, per-batch targets, both
    loss weights 1), and:

    h : the two set sizes, or None for the two closest factors of k (§9.1).
    hadamard_multiplier : m, an integer in [1, 10]; 'auto' for the paper's retraining schedule;
        None for a dense autoencoder.
    pretrain_epochs, pretrain_epochs_step : the compressed AE trains pretrain_epochs +
        pretrain_epochs_step·(m − 1) epochs (the code: 1000 + 500(m − 1)).
    reference_pretrain_epochs : the full AE's epochs: the one 'auto' compares against, and a dense
        (``hadamard_multiplier=None``) network's (150).
    kr_n_init, kr_max_iter : Khatri-Rao k-means seeding: restarts (30) and iterations (1000); the
        protocentroids are seeded by it, so ``n_init`` serves only ``labels_by='kmeans'``.
    batch_size : 512, the Khatri-Rao script's for both phases.
    centroid_lr : the protocentroids' Adam rate (1e-3, 10× the network's), or None for ``lr``.
    """

    def __init__(
        self,
        n_clusters=8,
        h=None,
        layers=KR_LAYERS,
        activation="leaky_relu",
        allow_wider_embedding=False,
        hadamard_multiplier=1,
        pretrain_epochs=1000,
        pretrain_epochs_step=500,
        reference_pretrain_epochs=150,
        pretrain_lr=1e-3,
        pretrain_batch_size=512,
        pretrain_seed=None,
        reconstruction_reduction="sum_per_sample",
        clustering_weight=1.0,
        reconstruction_weight=1.0,
        alpha=1.0,
        n_init=20,
        kr_n_init=30,
        kr_max_iter=1000,
        optimizer="adam",
        lr=1e-4,
        centroid_lr=1e-3,
        momentum=0.9,
        batch_size=512,
        update_interval=None,
        tol=1e-3,
        epochs=150,
        max_iter=None,
        labels_by="assignment",
        device="auto",
        random_state=None,
        n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.h = h
        self.layers = layers
        self.activation = activation
        self.allow_wider_embedding = allow_wider_embedding
        self.hadamard_multiplier = hadamard_multiplier
        self.pretrain_epochs = pretrain_epochs
        self.pretrain_epochs_step = pretrain_epochs_step
        self.reference_pretrain_epochs = reference_pretrain_epochs
        self.pretrain_lr = pretrain_lr
        self.pretrain_batch_size = pretrain_batch_size
        self.pretrain_seed = pretrain_seed
        self.reconstruction_reduction = reconstruction_reduction
        self.clustering_weight = clustering_weight
        self.reconstruction_weight = reconstruction_weight
        self.alpha = alpha
        self.n_init = n_init
        self.kr_n_init = kr_n_init
        self.kr_max_iter = kr_max_iter
        self.optimizer = optimizer
        self.lr = lr
        self.centroid_lr = centroid_lr
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

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [*super()._checks(), *self._kr_checks()]


class KhatriRaoDKM(KhatriRaoDeep, DKM):
    """KR-DKM: DKM with protocentroids and a compressed autoencoder (module docstring).

    Parameters are :class:`~clusterbench.methods.DKM`'s with KR-IDEC's Khatri-Rao ones
    (:class:`KhatriRaoIDEC`); the seeding's Khatri-Rao k-means runs at most 100 iterations. The
    loss takes squared distances (``distance='squared'``), as the authors' ``_KR_DKM_Module`` does,
    where ClustPy's DKM (the paper's DKM column) takes them unsquared.
    """

    def __init__(
        self,
        n_clusters=8,
        h=None,
        layers=KR_LAYERS,
        activation="leaky_relu",
        allow_wider_embedding=False,
        hadamard_multiplier=1,
        pretrain_epochs=1000,
        pretrain_epochs_step=500,
        reference_pretrain_epochs=150,
        pretrain_lr=1e-3,
        pretrain_batch_size=512,
        pretrain_seed=None,
        reconstruction_reduction="sum_per_sample",
        clustering_weight=1.0,
        reconstruction_weight=1.0,
        alpha=1000.0,
        distance="squared",
        n_init=20,
        kr_n_init=30,
        kr_max_iter=100,
        optimizer="adam",
        lr=1e-4,
        centroid_lr=1e-3,
        momentum=0.9,
        batch_size=512,
        epochs=150,
        max_iter=None,
        labels_by="assignment",
        device="auto",
        random_state=None,
        n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.h = h
        self.layers = layers
        self.activation = activation
        self.allow_wider_embedding = allow_wider_embedding
        self.hadamard_multiplier = hadamard_multiplier
        self.pretrain_epochs = pretrain_epochs
        self.pretrain_epochs_step = pretrain_epochs_step
        self.reference_pretrain_epochs = reference_pretrain_epochs
        self.pretrain_lr = pretrain_lr
        self.pretrain_batch_size = pretrain_batch_size
        self.pretrain_seed = pretrain_seed
        self.reconstruction_reduction = reconstruction_reduction
        self.clustering_weight = clustering_weight
        self.reconstruction_weight = reconstruction_weight
        self.alpha = alpha
        self.distance = distance
        self.n_init = n_init
        self.kr_n_init = kr_n_init
        self.kr_max_iter = kr_max_iter
        self.optimizer = optimizer
        self.lr = lr
        self.centroid_lr = centroid_lr
        self.momentum = momentum
        self.batch_size = batch_size
        self.epochs = epochs
        self.max_iter = max_iter
        self.labels_by = labels_by
        self.device = device
        self.random_state = random_state
        self.n_threads = n_threads

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [*super()._checks(), *self._kr_checks()]

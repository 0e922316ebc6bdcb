"""IDEC (Guo, Gao, Liu & Yin, IJCAI 2017), and DEC with its autoencoder (Xie et al., ICML 2016).

IDEC keeps DEC's clustering loss L_c = KL(P‖Q) (Student-t Q, eq. 1 of Xie et al.; sharpened
target P, eq. 3) but trains it together with the autoencoder's reconstruction loss L_r, so that the
embedding keeps the data's local structure: L = L_r + γ·L_c (Guo et al., eq. 5; γ = 0.1). DEC
itself is the case without reconstruction: the decoder is dropped after pretraining and only the
encoder and the centroids are trained on L_c (``method=dec_ae``: ``reconstruction_weight=0``,
``clustering_weight=1``).

Procedure (the deep family's one loop, :mod:`clusterbench.methods.deep.base`): pretrain the
autoencoder on reconstruction (cached on disk), seed the centroids with k-means on the embedding
(``n_init`` restarts), then mini-batch steps. Two target schedules, both in the references:

- ``update_interval`` = T (DEC-keras, IDEC's code, DCEC): P is recomputed from Q on the full data
  every T steps, and training stops at an update where fewer than a fraction ``tol`` of the labels
  changed, or after ``max_iter`` steps (2·10⁴). IDEC: T = 140 on MNIST, 30 on USPS.
- ``update_interval=None`` (ClustPy, which the Khatri-Rao paper runs): P is each batch's own
  sharpened Q, detached, and training runs ``epochs`` passes (150).

The labels are the method's own assignment argmax_j q_ij (``labels_by='assignment'``); ClustPy
and the Khatri-Rao code report a k-means re-clustering of the final embedding instead, which is
the named variant ``labels_by='kmeans'``.

The reconstruction loss's reduction is an option because the references disagree by a factor of
d (784 on MNIST): Keras' per-element mean (IDEC, DCEC) against ClustPy's per-sample sum since
2025 (notes, B: "Loss-scale trap"); the weight γ means something different under each.

Where we differ from the references, on purpose: batches walk a fresh seeded permutation each pass
(the Keras code takes sequential slices, and several datasets are stored sorted by class), and the
labels are the nearest centroid of the final embedding (the code's argmax q at the last target
update, at most ``update_interval`` steps earlier).
"""

from __future__ import annotations

from clusterbench.methods.deep.base import AutoencoderClusterer, DECTargetChecks, StudentTClustering

DEC_LAYERS = (500, 500, 2000, 10)  # Xie et al. §3.2: d-500-500-2000-10


class IDEC(DECTargetChecks, StudentTClustering, AutoencoderClusterer):
    """IDEC: DEC's KL clustering loss plus the autoencoder's reconstruction (module docstring).

    Parameters
    ----------
    n_clusters : k (≥ 2).
    layers : the encoder's hidden widths then the embedding's (DEC/IDEC: 500, 500, 2000, 10); the
        decoder mirrors it. The embedding may not be wider than the input.
    activation : 'relu' (DEC, IDEC) or 'leaky_relu' (ClustPy's default).
    allow_wider_embedding : False refuses an embedding wider than the input (an autoencoder that
        does not compress); the Khatri-Rao paper's one architecture does so on its 2-d datasets.
    pretrain_epochs, pretrain_lr, pretrain_batch_size : the autoencoder's pretraining with Adam
        (IDEC: 200 epochs at Keras' 1e-3, batches of 256). 0 epochs clusters on the random network.
    pretrain_seed : seeds the network's initial weights and the pretraining batches; None: the
        fit's seed. A fixed value shares one pretrained autoencoder between runs of several seeds
        (the Khatri-Rao protocol: 20 runs from one network); the cache keys on it.
    reconstruction_reduction : 'mean' (per element; Keras, IDEC) or 'sum_per_sample' (ClustPy).
    clustering_weight : γ, the weight of KL(P‖Q) (IDEC: 0.1).
    reconstruction_weight : the weight of the reconstruction loss (IDEC: 1; 0 gives DEC).
    alpha : the Student-t degree of freedom (1).
    n_init : k-means restarts that seed the centroids on the embedding (20).
    optimizer, lr, momentum : the clustering phase's optimizer: 'adam' (IDEC on MNIST, at 1e-3)
        or 'sgd' with momentum (DEC: 0.01, 0.9; IDEC on USPS: 0.1, 0.99).
    batch_size : points per step (256).
    update_interval : steps between full-data target updates, or None for per-batch targets.
    tol : the stopping rule's fraction of changed labels (with update_interval).
    epochs : passes over the data, or None to run ``max_iter`` steps.
    max_iter : most steps (with epochs: the fewer of the two).
    labels_by : 'assignment' (argmax q) or 'kmeans' (a k-means re-clustering of the embedding).
    device, random_state : as every torch estimator; runs are deterministic on CPU.
    n_threads : torch's CPU threads (None: one per core, the default here because the
        autoencoder's products are large enough to use them); the harness sets it.

    Attributes: those of :class:`~clusterbench.methods.deep.base.DeepClusterer`.
    """

    def __init__(
        self,
        n_clusters=8,
        layers=DEC_LAYERS,
        activation="relu",
        allow_wider_embedding=False,
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

"""The deep clustering family's one training loop (``DeepClusterer``), its cluster heads and its losses.

A deep clusterer is a network (an autoencoder of :mod:`.networks`, or none: the identity encoder
of CLAM's input-space DEC), pretrained on reconstruction through the disk cache of :mod:`.cache`;
cluster parameters (a *head*: k centroids, or the Khatri-Rao paper's protocentroid sets) seeded on
the pretrained embedding; then one clustering phase of mini-batch steps on

    loss = clustering_weight · L_c(z_b, μ, P_b) + reconstruction_weight · L_r(x_b, x̂_b)

where L_c is the method's clustering loss (DEC's KL(P‖Q), eq. 2 of Xie et al.; DKM's soft
k-means) and L_r the autoencoder's reconstruction error (IDEC, Guo et al. 2017, eq. 5; DCEC).
DEC's target P is recomputed on the full data every ``update_interval`` steps, with the ``tol``
stopping rule (DEC-keras, IDEC, DCEC), or, with ``update_interval=None``, from each batch's own Q
(ClustPy, which the Khatri-Rao paper's runs use).

A subclass gives only its hyperparameters (``__init__`` and ``_checks``), its network
(``_network``), how its head is seeded (``_seed_head``) and its clustering loss
(``_clustering_loss``); the loop, the pretraining and its cache, the device, the seeding, the
progress bars and the fitted attributes are here.

Steps walk through a seeded random permutation of the data, drawn afresh at each pass (an *epoch*);
the last batch of a pass holds the remainder. Everything stays on the estimator's device: the data
is moved there once, batches are index gathers, and the loss is read back once per epoch.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import ClassVar, NamedTuple

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from torch import nn

from clusterbench.errors import HyperparameterError
from clusterbench.methods._seeding import repeatable, resolve_seed
from clusterbench.methods.deep.cache import array_digest, pretrained_state
from clusterbench.methods.deep.networks import ACTIVATIONS, REDUCTIONS, MLPAutoencoder, reconstruction_loss
from clusterbench.progress import progress_bar
from clusterbench.validation import (
    AT_LEAST_TWO,
    BOOLEAN,
    NON_NEGATIVE_INT,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    TorchHyperparameters,
    check_enough_points,
    check_fit_input,
    check_predict_input,
    flush_denormals,
    in_interval,
    is_int,
    loading_device,
    one_of,
    optional,
    resolve_device,
    torch_threads,
)

OPTIMIZERS = ("sgd", "adam")
LABELS_BY = ("assignment", "kmeans")
# Rows embedded at once outside training (full-data targets, the embedding, predict): bounds the
# memory of a 70000-row pass through a 2000-unit layer.
EMBED_CHUNK = 8192
# The cache's record of how well the autoencoder reconstructs, stored beside its weights.
RECONSTRUCTION_KEY = "__reconstruction_error__"
CACHE_FORMAT = 2  # part of every key: a change of what pretraining does (or stores) bumps it


# ------------------------------------------------------------------------------------ losses


def squared_distances(x: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    """‖z_i − μ_j‖² (n, k), as ‖z‖² − 2⟨z, μ⟩ + ‖μ‖² (one matrix product; clamped at 0 against rounding)."""
    cross = x @ centers.T
    return (x.square().sum(1, keepdim=True) - 2.0 * cross + centers.square().sum(1)).clamp(min=0.0)


def log_soft_assignment(x: torch.Tensor, centers: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """log Q: the log of the Student-t soft assignment of points ``x`` (n, d) to ``centers`` (k, d)
    (eq. 1, Xie et al.).

    q_ij = (1 + ‖z_i − μ_j‖²/α)^(−(α+1)/2) / Σ_j' (1 + ‖z_i − μ_j'‖²/α)^(−(α+1)/2).
    Computed as a log-softmax of the log-kernels, so far-away points cannot underflow to 0/0 and
    log q stays finite where q underflows; Q itself is its ``exp()``.
    """
    log_kernel = -(alpha + 1.0) / 2.0 * torch.log1p(squared_distances(x, centers) / alpha)
    return torch.log_softmax(log_kernel, dim=1)


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


@torch.no_grad()
def nearest_centre(z: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """argmin_j ‖z_i − μ_j‖²: DEC's argmax_j q_ij and DKM's argmax of its softmax alike."""
    return squared_distances(z, centres).argmin(1)


# ------------------------------------------------------------------------------------ heads


class Centroids(nn.Module):
    """k learnable centroids (k, e): the head of DEC, IDEC, DKM and DCEC."""

    def __init__(self, centres: torch.Tensor):
        super().__init__()
        self.weight = nn.Parameter(centres.detach().clone())

    def centres(self) -> torch.Tensor:
        return self.weight


# k-means seedings kept for reuse: (digest of X, k, n_init, seed) -> centers; the oldest goes first.
_SEEDINGS: OrderedDict[tuple, np.ndarray] = OrderedDict()
SEEDINGS_KEPT = 4


def kmeans_seeding(X: np.ndarray, k: int, n_init: int, seed: int) -> np.ndarray:
    """scikit-learn's KMeans centers on ``X``, remembered for the last few (X, k, n_init, seed).

    Why: the seeding does not depend on the clustering phase's hyperparameters, and a grid over
    update_interval (CLAM Table 7: 16 points) would otherwise rerun the same k-means, with the
    CLAM code's 1000 restarts, once per point.
    """
    key = (hashlib.sha1(np.ascontiguousarray(X).view(np.uint8)).hexdigest(), X.shape, k, n_init, seed)
    if key not in _SEEDINGS:
        _SEEDINGS[key] = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(X).cluster_centers_
        while len(_SEEDINGS) > SEEDINGS_KEPT:
            _SEEDINGS.popitem(last=False)
    return _SEEDINGS[key]


# ------------------------------------------------------------------------------------ pretraining


def pretrain(
    network: nn.Module,
    data: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    reduction: str,
    generator: torch.Generator,
    desc: str = "pretraining",
) -> float:
    """Train ``network`` (an autoencoder) on reconstruction with Adam; the last epoch's mean loss.

    Adam at ``lr`` is what DCEC, IDEC's MNIST runs and the Khatri-Rao code (ClustPy) pretrain with
    (DEC-keras' MNIST SGD(1, 0.9) is not offered). Batches: a fresh seeded permutation per epoch.
    """
    optimizer = torch.optim.Adam(network.parameters(), lr=lr)
    n = len(data)
    mean = float("nan")
    with progress_bar(total=epochs, desc=desc, unit="epoch", leave=False) as bar:
        for _ in range(epochs):
            order = torch.randperm(n, generator=generator, device=data.device)
            total = torch.zeros((), device=data.device)
            for start in range(0, n, batch_size):
                x = data[order[start : start + batch_size]]
                loss = reconstruction_loss(x, network(x)[1], reduction)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                total += loss.detach() * len(x)
            mean = float(total) / n
            bar.set_postfix(loss=f"{mean:.4g}", refresh=False)
            bar.update()
    return mean


@torch.no_grad()
def reconstruction_error(network: nn.Module, data: torch.Tensor, reduction: str) -> float:
    """The trained network's reconstruction loss on the full data, in row chunks (weighted so that
    it equals the loss of one batch of every row): what the Khatri-Rao code compares to choose the
    compressed autoencoder's rank (``F.mse_loss`` of each final network on all of X)."""
    total = 0.0
    for start in range(0, len(data), EMBED_CHUNK):
        x = data[start : start + EMBED_CHUNK]
        total += float(reconstruction_loss(x, network(x)[1], reduction)) * len(x)
    return total / len(data)


# ------------------------------------------------------------------------------------ the loop


class StudentTClustering:
    """DEC's clustering loss (before ``DeepClusterer`` in the bases): KL(P‖Q) of the Student-t
    assignment Q (eq. 1) with degree of freedom ``alpha``, against the full-data target P the loop
    passes, or, without one (``update_interval=None``), the target of the batch's own Q."""

    has_target: ClassVar[bool] = True

    def _clustering_loss(
        self, z: torch.Tensor, centres: torch.Tensor, target: torch.Tensor | None, epoch: int
    ) -> torch.Tensor:
        log_q = log_soft_assignment(z, centres, self.alpha)
        if target is None:
            target = target_distribution(log_q.detach().exp())
        return kl_divergence(target, log_q)


class FitStart(NamedTuple):
    """What :meth:`DeepClusterer._prepare_fit` gives the rest of a fit."""

    X: np.ndarray  # checked
    data: torch.Tensor  # the network's input, on the device
    network: nn.Module | None  # pretrained
    generator: torch.Generator  # of the clustering phase, on the device
    seed: int


# The key of a pickled deep clusterer's torch blob (DeepClusterer.__getstate__).
_TORCH_BLOB = "_torch_state"


class DeepClusterer(TorchHyperparameters, ClusterMixin, BaseEstimator):
    """The loop every deep clusterer shares (module docstring); not an estimator by itself.

    Fitted attributes, for every subclass: ``labels_`` (the method's own assignment, the nearest
    centroid of the final embedding, or a k-means re-clustering of it with
    ``labels_by='kmeans'``), ``cluster_centers_``, ``init_centers_``, ``embedding_`` (where there
    is a network), ``n_iter_`` (clustering steps), ``loss_history_`` (mean loss per epoch),
    ``history_`` (per full-data target update: ``iteration``, ``kl``, ``changed``), ``converged_``
    (stopped on ``tol``), ``n_params_`` (every parameter of the model, network (decoder included,
    as the Khatri-Rao params column counts it) and head), ``pretrain_loss_`` (the pretrained
    network's reconstruction loss on the full data), ``pretrained_from_cache_``, ``kmeans_`` (with
    ``labels_by='kmeans'``: the re-clustering, which ``predict`` uses), ``device_``.
    """

    # The runner shows its own elapsed-time bar for a slow fit; these show their epochs instead.
    reports_progress: ClassVar[bool] = True
    # What a subclass without the hyperparameter means (sklearn reads only __init__'s names).
    epochs = None
    clustering_weight = 1.0
    reconstruction_weight = 0.0
    reconstruction_reduction = "mean"
    centroid_lr = None
    labels_by = "assignment"
    pretrain_seed = None

    # ---------------------------------------------------------------- pickling

    def __getstate__(self):
        """Picklable wherever it loads: the fitted state (network, head, a prior, and whatever
        holds tensors at any depth) travels as one ``torch.save`` blob beside ``device_``, and
        :meth:`__setstate__` maps it to the device the model was fitted on, or to the CPU where
        that is a GPU this machine lacks (pickle's own form of a CUDA tensor loads only where
        CUDA is)."""
        state = dict(super().__getstate__())
        blob = io.BytesIO()
        torch.save(state, blob)
        return {_TORCH_BLOB: blob.getvalue(), **({"device_": state["device_"]} if "device_" in state else {})}

    def __setstate__(self, state):
        if _TORCH_BLOB not in state:  # pickled before the blob
            super().__setstate__(state)
            return
        device = loading_device(state["device_"]) if "device_" in state else "cpu"
        fitted = torch.load(io.BytesIO(state[_TORCH_BLOB]), map_location=device, weights_only=False)
        if "device_" in fitted:
            fitted["device_"] = device  # resolved once: the mixin's check then passes it as it is
        super().__setstate__(fitted)

    # ---------------------------------------------------------------- subclass contract

    def _network(self, n_features: int) -> nn.Module | None:
        """The autoencoder (built from torch's global generator, seeded by the caller), or None."""
        raise NotImplementedError

    def _seed_head(
        self, X: np.ndarray, embedding: torch.Tensor, generator: torch.Generator, seed: int
    ) -> nn.Module:
        """The head, seeded on the pretrained embedding; default: k-means centroids (DEC §3.1)."""
        centres = kmeans_seeding(embedding.double().cpu().numpy(), self.n_clusters, self.n_init, seed % 2**32)
        return Centroids(torch.as_tensor(centres, dtype=torch.float32, device=embedding.device))

    def _clustering_loss(
        self, z: torch.Tensor, centres: torch.Tensor, target: torch.Tensor | None, epoch: int
    ) -> torch.Tensor:
        raise NotImplementedError

    # Whether the loss takes DEC's target P (then update_interval and tol apply).
    has_target: ClassVar[bool] = False

    def _learn_input(self, X: np.ndarray) -> None:
        """What the input's preparation learns from the training data (DEC: its mean)."""

    def _input(self, X: np.ndarray) -> torch.Tensor:
        """The network's input: X as float32 on the device (DCEC reshapes it to images)."""
        return torch.as_tensor(X, dtype=torch.float32, device=self.device_)

    def _output_centres(self, centres: torch.Tensor) -> np.ndarray:
        """Centroids as the fitted attributes hold them (DEC's in the input's own coordinates)."""
        return centres.detach().double().cpu().numpy()

    def _n_stages(self) -> int:
        """Clustering phases of ``epochs`` epochs each (DKM's α schedule runs one per α)."""
        return 1

    # ---------------------------------------------------------------- fit / predict

    @contextlib.contextmanager
    def _prepare_fit(self, X) -> Iterator[FitStart]:
        """The start every fit of the family shares, and the block the fit runs in: its
        hyperparameters checked, torch's CPU threads set and denormals flushed (both restored
        after the block), ``X`` checked, ``n_features_in_`` and ``device_`` set, the seed
        resolved, the input learnt and prepared on the device, the network pretrained (or read
        from the cache), and the generator of the clustering phase seeded."""
        self._validate_params()
        with torch_threads(self.n_threads), flush_denormals():
            X = check_fit_input(self, X)
            check_enough_points(self, len(X))
            self.device_ = resolve_device(self.device)
            seed = resolve_seed(self.random_state)
            self._learn_input(X)
            data = self._input(X)
            network = self._pretrained(data, X.shape[1], seed)
            generator = torch.Generator(device=self.device_).manual_seed(seed)
            yield FitStart(X, data, network, generator, seed)

    def fit(self, X, y=None):
        with self._prepare_fit(X) as (X, data, network, generator, seed):
            embedding = data if network is None else self._embed(network, data)
            head = self._seed_head(X, embedding, generator, seed).to(self.device_)
            self.init_centers_ = self._output_centres(head.centres())
            self._train(network, head, data, generator)
            self._network_, self._head_ = network, head
            final = head.centres().detach()
            embedding = data if network is None else self._embed(network, data)
            self.cluster_centers_ = self._output_centres(final)
            self.n_params_ = sum(p.numel() for p in head.parameters()) + (
                0 if network is None else sum(p.numel() for p in network.parameters())
            )
            if network is not None:
                self.embedding_ = embedding.double().cpu().numpy()
            if self.labels_by == "kmeans":
                # As many clusters as the head has centroids (a Khatri-Rao h gives Πh).
                self.kmeans_ = KMeans(len(final), n_init=self.n_init, random_state=seed % 2**32)
                self.labels_ = self.kmeans_.fit(embedding.double().cpu().numpy()).labels_
            else:
                self.labels_ = nearest_centre(embedding, final).cpu().numpy()
            return self

    def predict(self, X):
        """Each point's cluster as ``labels_`` gives it: the nearest centroid of its embedding (the
        method's own assignment), or with ``labels_by='kmeans'`` the re-clustering's nearest centre."""
        X = check_predict_input(self, X, "cluster_centers_")
        with torch_threads(self.n_threads):
            data = self._input(X)
            embedding = data if self._network_ is None else self._embed(self._network_, data)
            if self.labels_by == "kmeans":
                return self.kmeans_.predict(embedding.double().cpu().numpy())
            return nearest_centre(embedding, self._head_.centres().detach()).cpu().numpy()

    # ---------------------------------------------------------------- the phases

    def _pretrained(self, data: torch.Tensor, n_features: int, seed: int) -> nn.Module | None:
        """The network with its pretrained weights (sets pretrain_loss_, pretrained_from_cache_)."""
        self.pretrained_from_cache_, self.pretrain_loss_ = False, None
        pretrain_seed = self._pretrain_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(pretrain_seed)  # the CPU's: networks are built there
            network = self._network(n_features)
        if network is None:
            return None
        self.pretrain_loss_, self.pretrained_from_cache_ = self._load_or_pretrain(
            network, data, self._pretraining_epochs(), pretrain_seed
        )
        return network

    def _pretraining_epochs(self) -> int:
        return self.pretrain_epochs

    def _pretrain_seed(self, seed: int) -> int:
        return seed if self.pretrain_seed is None else self.pretrain_seed

    def _cached(self) -> bool:
        """Whether this fit's pretraining (and what follows from the pretrained network alone)
        goes through the cache: only with a :func:`repeatable` ``random_state`` or a
        ``pretrain_seed``."""
        return repeatable(self.random_state) or self.pretrain_seed is not None

    def _load_or_pretrain(
        self, network: nn.Module, data: torch.Tensor, epochs: int, pretrain_seed: int
    ) -> tuple[float, bool]:
        """Load ``network``'s pretrained weights from the cache, else pretrain it and cache them;
        (its full-data reconstruction error, whether it came from the cache). A fit with neither
        ``random_state`` nor ``pretrain_seed`` pretrains without the cache: its drawn seed would
        key a file no later fit could ask for."""
        network.to(self.device_)
        key = {
            "format": CACHE_FORMAT,
            "network": str(network),
            "input_shape": list(data.shape[1:]),
            "data": array_digest(data.cpu().numpy()),
            "epochs": epochs,
            "batch_size": self.pretrain_batch_size,
            "optimizer": "adam",
            "lr": self.pretrain_lr,
            "reduction": self.reconstruction_reduction,
            "seed": pretrain_seed,
            "device": torch.device(self.device_).type,  # GPU and CPU weights differ in rounding
        }
        built = []

        def build() -> dict[str, torch.Tensor]:
            built.append(True)
            pretrain(
                network,
                data,
                epochs=epochs,
                batch_size=self.pretrain_batch_size,
                lr=self.pretrain_lr,
                reduction=self.reconstruction_reduction,
                generator=torch.Generator(device=self.device_).manual_seed(pretrain_seed),
            )
            error = reconstruction_error(network, data, self.reconstruction_reduction)
            return {**network.state_dict(), RECONSTRUCTION_KEY: torch.tensor(error, dtype=torch.float64)}

        state = pretrained_state(key, build) if self._cached() else build()
        error = float(state.pop(RECONSTRUCTION_KEY))
        network.load_state_dict(state)
        return error, not built

    @torch.no_grad()
    def _embed(self, network: nn.Module, data: torch.Tensor) -> torch.Tensor:
        embedding = torch.cat(
            [network.encode(data[i : i + EMBED_CHUNK]) for i in range(0, len(data), EMBED_CHUNK)]
        )
        if not torch.isfinite(embedding).all():
            # Diverged weights: k-means would blame the input data, and the nearest centre turn NaN
            # into arbitrary labels recorded as a success.
            raise FloatingPointError(
                f"{type(self).__name__}: training diverged (NaN or inf in the network's embedding); "
                f"lower pretrain_lr (now {self.pretrain_lr:g}) or lr (now {self.lr:g})"
            )
        return embedding

    def _optimizer(self, network: nn.Module | None, head: nn.Module) -> torch.optim.Optimizer:
        groups = [{"params": list(head.parameters()), "lr": self.centroid_lr or self.lr}]
        if network is not None:
            # Without reconstruction (DEC) the decoder is dropped, as DEC does after pretraining.
            trained = network if self.reconstruction_weight > 0 else network.encoder
            groups.insert(0, {"params": list(trained.parameters())})
        if self.optimizer == "adam":
            return torch.optim.Adam(groups, lr=self.lr)
        return torch.optim.SGD(groups, lr=self.lr, momentum=self.momentum)

    def _max_iterations(self, n: int) -> int:
        """``max_iter``, or ``epochs`` passes per stage over the data (whichever is fewer)."""
        if self.epochs is None:
            return self.max_iter
        steps = self._n_stages() * self.epochs * math.ceil(n / self.batch_size)
        return steps if self.max_iter is None else min(steps, self.max_iter)

    def _train(self, network, head, data: torch.Tensor, generator: torch.Generator) -> None:
        """The clustering phase (module docstring): sets n_iter_, history_, loss_history_, converged_."""
        optimizer = self._optimizer(network, head)
        n = len(data)
        max_iter = self._max_iterations(n)
        full_targets = self.has_target and self.update_interval is not None
        labels = nearest_centre(
            data if network is None else self._embed(network, data), head.centres().detach()
        )
        history = {"iteration": [], "kl": [], "changed": []}
        losses: list[float] = []
        target = None
        order = torch.empty(0, dtype=torch.long, device=self.device_)
        position = n  # start of the next batch in ``order``; n = draw a new permutation
        epoch, running, steps_in_epoch = -1, torch.zeros((), device=self.device_), 0
        self.converged_ = False
        iteration = 0
        with progress_bar(total=max_iter, desc="clustering", unit="step", leave=False) as bar:
            while iteration < max_iter:
                if full_targets and iteration % self.update_interval == 0:
                    with torch.no_grad():
                        embedding = data if network is None else self._embed(network, data)
                        log_q = log_soft_assignment(embedding, head.centres(), self.alpha)
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
                    if steps_in_epoch:
                        losses.append(float(running) / steps_in_epoch)
                        bar.set_postfix(loss=f"{losses[-1]:.4g}", refresh=False)
                    order = torch.randperm(n, generator=generator, device=self.device_)
                    position, epoch, running, steps_in_epoch = 0, epoch + 1, running.zero_(), 0
                batch = order[position : position + self.batch_size]
                position += self.batch_size
                loss = self._step_loss(
                    network, head, data[batch], None if target is None else target[batch], epoch
                )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                running += loss.detach()
                steps_in_epoch += 1
                iteration += 1
                bar.update()
        if steps_in_epoch:
            losses.append(float(running) / steps_in_epoch)
        self.n_iter_ = iteration
        self.history_ = {key: np.asarray(values) for key, values in history.items()}
        self.loss_history_ = np.asarray(losses)

    def _step_loss(self, network, head, x: torch.Tensor, target, epoch: int) -> torch.Tensor:
        """clustering_weight · L_c + reconstruction_weight · L_r on one batch (module docstring)."""
        if network is None:
            return self._clustering_loss(x, head.centres(), target, epoch)
        if self.reconstruction_weight > 0:
            z, x_hat = network(x)
            reconstruction = reconstruction_loss(x, x_hat, self.reconstruction_reduction)
        else:
            z, reconstruction = network.encode(x), None
        loss = self.clustering_weight * self._clustering_loss(z, head.centres(), target, epoch)
        return loss if reconstruction is None else loss + self.reconstruction_weight * reconstruction


# ------------------------------------------------------------------------------------ autoencoders


def _valid_layers(layers) -> bool:
    return (
        isinstance(layers, Sequence)
        and not isinstance(layers, str)
        and len(layers) >= 1
        and all(is_int(v) and v >= 1 for v in layers)
    )


class AutoencoderClusterer(DeepClusterer):
    """A ``DeepClusterer`` on a pretrained autoencoder: the hyperparameters every such method
    shares are checked here, and the network is the fully connected one of ``layers`` (hidden
    widths then the embedding), ``activation`` and ``hadamard_multiplier`` (None where a method
    has no compressed variant); DCEC overrides ``_network`` with its convolutional one."""

    hadamard_multiplier = None
    allow_wider_embedding = False

    def _network(self, n_features: int) -> nn.Module:
        self._check_embedding_width(self.layers[-1], n_features)
        return MLPAutoencoder((n_features, *self.layers), self.hadamard_multiplier, self.activation)

    def _check_embedding_width(self, width: int, n_features: int) -> None:
        if width > n_features and not self.allow_wider_embedding:
            raise HyperparameterError(
                f"{type(self).__name__} embeds into {width} units but the data has {n_features} "
                "features: set a narrower embedding (the last of layers), or allow_wider_embedding=true"
            )

    def _network_checks(self) -> list[tuple[str, Constraint]]:
        return [
            (
                "layers",
                Constraint(
                    _valid_layers, "a non-empty list of integers ≥ 1 (hidden widths, then the embedding)"
                ),
            ),
            ("activation", one_of(tuple(ACTIVATIONS))),
            ("allow_wider_embedding", BOOLEAN),
        ]

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            ("n_clusters", AT_LEAST_TWO),
            *self._network_checks(),
            ("pretrain_epochs", NON_NEGATIVE_INT),
            ("pretrain_lr", POSITIVE_REAL),
            ("pretrain_batch_size", POSITIVE_INT),
            ("pretrain_seed", optional(NON_NEGATIVE_INT)),
            ("reconstruction_reduction", one_of(REDUCTIONS)),
            ("clustering_weight", NON_NEGATIVE_REAL),
            ("reconstruction_weight", NON_NEGATIVE_REAL),
            ("n_init", POSITIVE_INT),
            ("optimizer", one_of(OPTIMIZERS)),
            ("lr", POSITIVE_REAL),
            ("momentum", in_interval(0, 1, closed="left")),
            ("batch_size", POSITIVE_INT),
            ("epochs", optional(POSITIVE_INT)),
            ("max_iter", optional(POSITIVE_INT)),
            (
                "max_iter",
                Constraint(lambda v: v is not None or self.epochs is not None, "set where epochs is null"),
            ),
            ("labels_by", one_of(LABELS_BY)),
        ]


class DECTargetChecks:
    """The checks of DEC's target hyperparameters (before ``AutoencoderClusterer`` in the bases)."""

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            *super()._checks(),
            ("alpha", POSITIVE_REAL),
            ("update_interval", optional(POSITIVE_INT)),
            ("tol", in_interval(0, 1, closed="both")),
        ]

"""SR-K-means: soft and regularised deep k-means (Jabi, Pedersoli, Mitiche & Ben Ayed, "Deep
clustering: on the link between discriminative models and K-means", TPAMI 2019), and the shared
protocol of its code (MOhammedJAbi/SoftKMeans, notes deep-and-prcut.md A3) that MI-ADM and MI-D
reuse (:class:`DEPICTClusterer`).

Protocol (A3): DEPICT's convolutional denoising autoencoder
(:class:`~clusterbench.methods.deep.networks.DEPICTAutoencoder`, a K-unit tanh embedding) is
pretrained with Adam 1e-4, batch 100, up to 4000 epochs on a 90/10 split, stopping 100 epochs
after the best validation loss and keeping those weights (through the core's cache). The clean
embedding is clustered by AC-PIC (``init='ac_pic'``) or k-means (k-means++, 40 restarts). Then

- phase 1: training on the 90% split against the fixed hard initial labels, early-stopped on
  NMI(validation predictions, initial labels) with patience 5 (at most ``init_epochs``), best
  weights kept;
- phase 2: per epoch, one pass over all X with the assignments Q and the prototypes θ fixed, then
  the closed-form updates on the clean embedding; stop when mean (q − q_prev)² < ``tol`` or after
  ``epochs``.

SR-K-means' updates are eq. 27 (θ_k = Σ_i q_ik z_i / Σ_i q_ik, with the previous Q) and eq. 28
(q_ik ∝ exp(−‖z_i − θ_k‖²/(λK))); the network step minimises eq. 46 on the noisy embedding z̃,
(1/(λK))·mean_i[Σ_k q_ik‖z̃_i − θ_k‖² − ‖z̃_i‖²] + R(Z). Together they decrease eq. 18.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score
from torch import nn

from clusterbench.errors import HyperparameterError
from clusterbench.methods._seeding import repeatable
from clusterbench.methods.ac_pic import ACPIC
from clusterbench.methods.deep.base import DeepClusterer, squared_distances
from clusterbench.methods.deep.cache import FitProgress, array_digest, pretrained_state, progress_key
from clusterbench.methods.deep.networks import DEPICTAutoencoder
from clusterbench.progress import progress_bar
from clusterbench.validation import (
    AT_LEAST_TWO,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    check_predict_input,
    in_interval,
    is_int,
    one_of,
    optional,
    torch_threads,
)

INITS = ("ac_pic", "kmeans")
VALIDATION_FRACTION = 0.1  # the code's 90/10 split


def mutual_information(p: torch.Tensor) -> float:
    """I(X, K) of posteriors P (n, K), eq. 11: (1/N)Σ_i Σ_k p_ik log p_ik − Σ_k p̂_k log p̂_k."""
    prior = p.mean(0)
    return float(torch.xlogy(p, p).sum(1).mean() - torch.xlogy(prior, prior).sum())


def soft_kmeans_loss(z: torch.Tensor, theta: torch.Tensor, q: torch.Tensor, lam: float) -> torch.Tensor:
    """Eq. 18 divided by N: mean_i[Σ_k q_ik‖z_i − θ_k‖² + λK Σ_k q_ik log q_ik − ‖z_i‖²]."""
    k = theta.shape[0]
    return (
        (q * squared_distances(z, theta)).sum(1).mean()
        + lam * k * torch.xlogy(q, q).sum(1).mean()
        - z.square().sum(1).mean()
    )


def soft_kmeans_update(z: torch.Tensor, q: torch.Tensor, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One closed-form round: θ by eq. 27 from the given Q, then Q by eq. 28 from that θ."""
    theta = (q.T @ z) / q.sum(0).clamp(min=torch.finfo(z.dtype).tiny)[:, None]
    return theta, torch.softmax(-squared_distances(z, theta) / (lam * theta.shape[0]), dim=1)


def _valid_ints(value, length: int, low: int) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == length
        and all(is_int(v) and v >= low for v in value)
    )


class DEPICTClusterer(DeepClusterer):
    """The SR-K-means code's protocol (module docstring) on the deep core's pretraining cache,
    seeding and device handling; a subclass gives its head (``_head``), its clustering loss on the
    noisy embedding (``_batch_loss``), its phase-2 update (``_update``: the new targets and the
    assignment distribution whose I(X, K) is recorded) and its labels.

    Fitted attributes: ``labels_``, ``init_labels_`` (the initial clustering), ``embedding_``,
    ``mutual_information_`` (I(X, K), eq. 11, after each phase-2 update: the paper's Fig. 1),
    ``loss_history_`` (mean training loss per epoch, both phases), ``validation_nmi_`` (phase 1's
    early-stopping score, the pretrained network's first, then one per epoch), ``n_init_epochs_``, ``n_iter_``
    (phase-2 epochs), ``converged_``, ``n_params_``, ``pretrain_loss_``, ``pretrain_epochs_run_``,
    ``pretrained_from_cache_``, ``device_``.
    """

    # ---------------------------------------------------------------- hyperparameters

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            ("n_clusters", AT_LEAST_TWO),
            ("image_shape", optional(Constraint(lambda v: _valid_ints(v, 3, 1), "a list [C, H, W]"), "null")),
            ("channels", POSITIVE_INT),
            ("kernels", Constraint(lambda v: _valid_ints(v, 2, 1), "a list of 2 integers ≥ 1")),
            (
                "paddings",
                optional(Constraint(lambda v: _valid_ints(v, 2, 0), "a list of 2 integers ≥ 0"), "null"),
            ),
            ("pretrain_epochs", NON_NEGATIVE_INT),
            ("pretrain_patience", POSITIVE_INT),
            ("pretrain_lr", POSITIVE_REAL),
            ("pretrain_batch_size", POSITIVE_INT),
            ("pretrain_seed", optional(NON_NEGATIVE_INT)),
            ("init", one_of(INITS)),
            ("n_init", POSITIVE_INT),
            ("init_epochs", NON_NEGATIVE_INT),
            ("init_patience", POSITIVE_INT),
            ("lr", POSITIVE_REAL),
            ("batch_size", POSITIVE_INT),
            ("epochs", POSITIVE_INT),
            ("tol", in_interval(0, 1, closed="left")),
        ]

    # ---------------------------------------------------------------- network and input

    def _shape(self, n_features: int) -> tuple[int, int, int]:
        name = type(self).__name__
        if self.image_shape is not None:
            shape = tuple(int(v) for v in self.image_shape)
            if math.prod(shape) != n_features:
                raise HyperparameterError(
                    f"{name} image_shape {list(shape)} holds {math.prod(shape)} values but the data has "
                    f"{n_features} features: set method.estimator.image_shape to the images' [C, H, W]"
                )
            return shape
        side = math.isqrt(n_features)
        if side * side != n_features or side < 8:
            raise HyperparameterError(
                f"{name} needs images for its convolutional autoencoder: {n_features} features are not "
                "a square image of side ≥ 8; give image data and set method.estimator.image_shape=[C, H, W]"
            )
        return (1, side, side)

    def _paddings(self, height: int) -> tuple[int, int]:
        """The code's per-dataset paddings: (2, 2) for the 32×32 faces, (0, 2) for the digits."""
        if self.paddings is not None:
            return tuple(int(v) for v in self.paddings)
        return (2, 2) if height >= 32 else (0, 2)

    def _network(self, n_features: int) -> nn.Module:
        shape = self._shape(n_features)
        try:
            return DEPICTAutoencoder(
                shape, self.n_clusters, self.channels, tuple(self.kernels), (2, 2), self._paddings(shape[1])
            )
        except ValueError as exc:
            raise HyperparameterError(f"{type(self).__name__}: {exc}; set kernels/paddings") from None

    def _input(self, X: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(X, dtype=torch.float32, device=self.device_).reshape(
            -1, *self._shape(X.shape[1])
        )

    # ---------------------------------------------------------------- pretraining

    def _split(self, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The 90/10 split (random: the code stratifies on the true labels, which fit does not see)."""
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).to(self.device_)
        n_val = max(1, round(VALIDATION_FRACTION * n)) if n >= 2 * self.n_clusters else 0
        return order[n_val:], order[:n_val]

    def _load_or_pretrain(self, network, data, epochs, pretrain_seed) -> tuple[float, bool]:
        network.to(self.device_)
        key = {
            "format": 1,
            "network": f"{network}",
            "input_shape": list(data.shape[1:]),
            "data": array_digest(data.cpu().numpy()),
            "epochs": epochs,
            "patience": self.pretrain_patience,
            "batch_size": self.pretrain_batch_size,
            "lr": self.pretrain_lr,
            "seed": pretrain_seed,
            "device": torch.device(self.device_).type,
        }
        built = []

        seeded = self._cached()
        progress = FitProgress(key if seeded else None)

        def build() -> dict[str, torch.Tensor]:
            with self._seeded_dropout(pretrain_seed):
                built.append(self._pretrain(network, data, epochs, pretrain_seed, progress))
            return network.state_dict() | {
                "__epochs__": torch.tensor(built[0][1]),
                "__loss__": torch.tensor(built[0][0]),
            }

        state = dict(pretrained_state(key, build) if seeded else build())
        progress.discard()  # the network is cached (or was not to be): its checkpoint is spent
        self.earlier_seconds_ = progress.earlier_seconds  # the clustering's are added in fit
        self.pretrain_epochs_run_ = int(state.pop("__epochs__"))
        loss = float(state.pop("__loss__"))
        network.load_state_dict(state)
        return loss, not built

    def _pretrain(self, network, data, epochs: int, seed: int, progress: FitProgress) -> tuple[float, int]:
        """Denoising pretraining with early stopping on the validation loss (clean path); returns
        (best validation loss, epochs run). A keyed ``progress`` is saved every
        ``cache.CHECKPOINT_SECONDS`` and an earlier interrupted run of the same key is resumed."""
        generator = torch.Generator(device=self.device_).manual_seed(seed)
        train, val = self._split(len(data), seed)
        monitored = val if len(val) else train
        optimizer = torch.optim.Adam(network.parameters(), lr=self.pretrain_lr)
        best, best_state, waited, epoch = math.inf, copy.deepcopy(network.state_dict()), 0, 0
        saved = progress.load()
        if saved is not None:
            network.load_state_dict(saved["network"])
            optimizer.load_state_dict(saved["optimizer"])
            best_state, best = saved["best_state"], float(saved["best"])
            waited, epoch = int(saved["waited"]), int(saved["epoch"])
            generator.set_state(saved["generator"])
            self._set_dropout_state(saved["dropout"])
        bar = progress_bar(total=epochs, initial=epoch, desc="pretraining", unit="epoch", leave=False)
        with bar:
            while epoch < epochs:
                epoch += 1
                for batch in self._batches(train, self.pretrain_batch_size, generator):
                    loss = network.denoising(data[batch])[1]
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                with torch.no_grad():
                    current = float(network.denoising(data[monitored], noisy=False)[1])
                if current < best:
                    best, best_state, waited = current, copy.deepcopy(network.state_dict()), 0
                else:
                    waited += 1
                bar.set_postfix(val=f"{current:.4g}", refresh=False)
                bar.update()
                if waited >= self.pretrain_patience:
                    break
                if progress.due():
                    content = {"network": network.state_dict(), "optimizer": optimizer.state_dict()}
                    content |= {"best_state": best_state, "best": best, "waited": waited, "epoch": epoch}
                    content |= {"generator": generator.get_state(), "dropout": self._dropout_state()}
                    progress.save(content)
        network.load_state_dict(best_state)
        return (best if math.isfinite(best) else float("nan")), epoch

    @contextlib.contextmanager
    def _seeded_dropout(self, seed: int):
        """The dropout masks come from torch's global generators: seed them for the block and
        restore them after, so that a fit is reproducible and leaves the caller's state alone."""
        devices = [torch.device(self.device_).index or 0] if self.device_ == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            yield

    def _dropout_state(self) -> torch.Tensor:
        """The state of the generator the dropout masks come from (the fit device's default)."""
        return torch.cuda.get_rng_state(self.device_) if self.device_ == "cuda" else torch.get_rng_state()

    def _set_dropout_state(self, state: torch.Tensor) -> None:
        if self.device_ == "cuda":
            torch.cuda.set_rng_state(state, self.device_)
        else:
            torch.set_rng_state(state)

    def _batches(self, rows: torch.Tensor, size: int, generator: torch.Generator):
        order = rows[torch.randperm(len(rows), generator=generator, device=self.device_)]
        return [order[i : i + size] for i in range(0, len(order), size)]

    # ---------------------------------------------------------------- fit

    def _initial_labels(self, embedding: torch.Tensor, seed: int) -> np.ndarray:
        """The initial clustering of the pretrained embedding: k-means (``n_init`` restarts) or
        AC-PIC. Both are functions of the features (k-means of the seed too), so a seeded fit
        keeps them in the pretraining cache, keyed by the features' digest: the fits that share
        one network (MI-ADM's three targets, SR-K-means, MI-D) run AC-PIC, minutes on 10⁴ points,
        once instead of once each."""
        features = embedding.double().cpu().numpy()
        if self.init == "kmeans":
            settings = {"n_init": self.n_init, "seed": seed % 2**32}

            def cluster() -> np.ndarray:
                return (
                    KMeans(self.n_clusters, n_init=self.n_init, random_state=settings["seed"])
                    .fit(features)
                    .labels_
                )

        else:
            settings = {"n_neighbors": 20, "a": 1.0, "z": 0.01}

            def cluster() -> np.ndarray:
                return ACPIC(self.n_clusters, **settings).fit(features).labels_

        if not self._cached():  # a network of its own
            return cluster()
        key = {
            "format": 1,
            "initial_labels": self.init,
            "features": array_digest(features),
            "n_clusters": self.n_clusters,
            **settings,
        }
        return pretrained_state(key, lambda: {"labels": torch.as_tensor(cluster())})["labels"].numpy()

    def fit(self, X, y=None):
        with self._prepare_fit(X) as (X, data, network, generator, seed):
            embedding = self._embed(network, data)
            self.init_labels_ = self._initial_labels(embedding, seed)
            labels = torch.as_tensor(self.init_labels_, dtype=torch.long, device=self.device_)
            q = torch.nn.functional.one_hot(labels, self.n_clusters).float()
            head = self._head((q.T @ embedding) / q.sum(0).clamp(min=1.0)[:, None])  # the initial means
            optimizer = torch.optim.Adam([*network.parameters(), *head.parameters()], lr=self.lr)
            modules = {"network": network, "head": head, "optimizer": optimizer}
            # Only a fit seeded itself: pretrain_seed alone leaves this phase's seed drawn.
            progress = FitProgress(self._progress_key(data, seed) if repeatable(self.random_state) else None)

            def save() -> None:  # after an epoch
                if progress.due():
                    progress.save(self._checkpoint(run, modules, generator))

            with self._seeded_dropout(seed):
                run = self._resumed(progress.load(), modules, generator) or _Run()
                if run.phase == 1:
                    self._hard_phase(network, head, data, q, seed, optimizer, generator, run, save)
                self._soft_phase(network, head, data, optimizer, generator, run, save)
            progress.discard()
            self.earlier_seconds_ += progress.earlier_seconds
            self.loss_history_ = np.asarray(run.losses)
            self.validation_nmi_, self.n_init_epochs_ = run.validation_nmi, run.epoch
            self.n_iter_, self.converged_ = run.n_iter, run.converged
            self.mutual_information_ = run.mutual_information
            self._network_, self._head_ = network, head
            embedding = self._embed(network, data)
            self.embedding_ = embedding.double().cpu().numpy()
            self.n_params_ = sum(p.numel() for p in [*network.parameters(), *head.parameters()])
            self._fitted(head)
            self.labels_ = self._labels(head, embedding).cpu().numpy()
            return self

    # ---------------------------------------------------------------- progress of the clustering

    def _progress_key(self, data: torch.Tensor, seed: int) -> dict:
        """What determines a seeded fit's clustering phases (threads, like the pretraining's key,
        left out): the method, its hyperparameters, the data, the seed and the device type."""
        return progress_key(
            self,
            self.device_,
            seed,
            data=array_digest(data.cpu().numpy()),
            initial_labels=array_digest(self.init_labels_),  # pins the pretrained network's start
        )

    def _checkpoint(self, run: _Run, modules: dict, generator: torch.Generator) -> dict:
        """A checkpoint after an epoch: the modules' states, the random streams, the phases'
        bookkeeping (``run``) and the subclass's own (``_extra_state``)."""
        return {
            **{name: module.state_dict() for name, module in modules.items()},
            "generator": generator.get_state(),
            "dropout": self._dropout_state(),
            "run": dataclasses.asdict(run),
            "extra": self._extra_state(),
        }

    def _resumed(self, saved: dict | None, modules: dict, generator: torch.Generator) -> _Run | None:
        """Restore a checkpoint of :meth:`_checkpoint` (None: there is none, start afresh)."""
        if saved is None:
            return None
        for name, module in modules.items():
            module.load_state_dict(saved[name])
        generator.set_state(saved["generator"])
        self._set_dropout_state(saved["dropout"])
        self._set_extra_state(saved["extra"])
        return _Run.restored(saved["run"], self.device_)

    def _extra_state(self) -> dict:
        """A subclass's own state between epochs, beyond its head (SR-K-means: its prior)."""
        return {}

    def _set_extra_state(self, state: dict) -> None:
        """Restore :meth:`_extra_state`."""

    def predict(self, X):
        X = check_predict_input(self, X, "labels_")
        with torch_threads(self.n_threads):
            return self._labels(self._head_, self._embed(self._network_, self._input(X))).cpu().numpy()

    def _fitted(self, head) -> None:
        """Sets the subclass's own fitted attributes from its final head."""

    def _refresh(self, head, network, data: torch.Tensor, q: torch.Tensor) -> None:
        """Phase 1's per-epoch head update from the fixed hard labels (SR-K-means: θ over all N,
        which needs the clean embedding of all N; the others need nothing)."""

    def _epoch(self, network, head, data, rows, targets, optimizer, generator, hard: bool) -> float:
        """One shuffled pass of Adam steps on the method's loss + R(Z); the mean loss, read back once."""
        total = torch.zeros((), device=self.device_)
        for batch in self._batches(rows, self.batch_size, generator):
            z, reconstruction = network.denoising(data[batch])
            loss = self._batch_loss(head, z, targets[batch], hard) + reconstruction
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(batch)
        return float(total) / max(len(rows), 1)

    def _hard_phase(self, network, head, data, q, seed, optimizer, generator, run, save) -> None:
        """Phase 1: fixed one-hot targets, early-stopped on NMI(validation labels, initial labels).

        The untrained network is the first candidate, as in the code: when no epoch raises the
        validation NMI above the pretrained network's, phase 2 starts from the pretrained one.
        ``run`` holds the phase's bookkeeping (fresh, or restored from a checkpoint after an
        epoch); ``save()`` keeps a checkpoint when ``cache.CHECKPOINT_SECONDS`` have passed."""
        train, val = self._split(len(data), seed)
        initial = self.init_labels_[val.cpu().numpy()]

        def validation_nmi() -> float:
            predicted = self._labels(head, self._embed(network, data[val])).cpu().numpy()
            return normalized_mutual_info_score(initial, predicted)

        def snapshot() -> dict:
            return copy.deepcopy({"network": network.state_dict(), "head": head.state_dict()})

        if run.epoch == 0:
            self._refresh(head, network, data, q)  # the pretrained network's: the baseline's and epoch 1's
            if len(val):
                run.best, run.best_state = validation_nmi(), snapshot()
                run.validation_nmi.append(run.best)
        while run.epoch < self.init_epochs:
            run.epoch += 1
            if run.epoch > 1:
                self._refresh(head, network, data, q)
            run.losses.append(self._epoch(network, head, data, train, q, optimizer, generator, True))
            if len(val):
                score = validation_nmi()
                run.validation_nmi.append(score)
                if score > run.best:
                    run.best, run.best_state, run.waited = score, snapshot(), 0
                else:
                    run.waited += 1
                    if run.waited >= self.init_patience:
                        break
            save()
        if run.best_state is not None:
            network.load_state_dict(run.best_state["network"])
            head.load_state_dict(run.best_state["head"])
        run.phase, run.best_state = 2, None
        run.update(*self._update(head, self._embed(network, data), q))
        save()

    def _soft_phase(self, network, head, data, optimizer, generator, run, save) -> None:
        """Phase 2: a pass with the targets fixed, then the method's full-data update (``_update``)."""
        everything = torch.arange(len(data), device=self.device_)
        with progress_bar(
            total=self.epochs, initial=run.n_iter, desc="clustering", unit="epoch", leave=False
        ) as bar:
            while run.n_iter < self.epochs and not run.converged:
                run.losses.append(
                    self._epoch(network, head, data, everything, run.targets, optimizer, generator, False)
                )
                run.n_iter += 1
                previous = run.targets
                run.update(*self._update(head, self._embed(network, data), previous))
                run.converged = float((run.targets - previous).square().mean()) < self.tol
                bar.update()
                save()


@dataclasses.dataclass
class _Run:
    """The clustering phases' bookkeeping between epochs: what a checkpoint holds besides the
    modules and random streams. Phase 1: its epoch, the best validation NMI so far, the weights
    that had it, epochs without improvement; phase 2: the targets of the last update, its epoch
    count, whether it converged. The lists grow by an entry an epoch (I(X, K): an update)."""

    phase: int = 1
    epoch: int = 0
    best: float = -1.0
    best_state: dict | None = None
    waited: int = 0
    targets: torch.Tensor | None = None
    n_iter: int = 0
    converged: bool = False
    losses: list = dataclasses.field(default_factory=list)
    validation_nmi: list = dataclasses.field(default_factory=list)
    mutual_information: list = dataclasses.field(default_factory=list)

    def update(self, targets: torch.Tensor, assignments: torch.Tensor) -> None:
        """After a target update: the new targets, and I(X, K) (eq. 11) of the assignments."""
        self.targets = targets
        self.mutual_information.append(mutual_information(assignments))

    @classmethod
    def restored(cls, state: dict, device) -> _Run:
        """The run a checkpoint's ``dataclasses.asdict`` entry describes, its targets on ``device``."""
        run = cls(**state)
        if run.targets is not None:
            run.targets = run.targets.to(device)
        return run


class _Prototypes(nn.Module):
    """SR-K-means' head: the prototypes θ, set in closed form (eq. 27), never by SGD."""

    def __init__(self, theta: torch.Tensor):
        super().__init__()
        self.register_buffer("theta", theta)


class SRKMeans(DEPICTClusterer):
    """Soft and regularised deep k-means (module docstring; eq. 18, 27, 28, 46).

    Parameters
    ----------
    n_clusters : K (also the embedding's width, as in the code).
    lam : λ of eq. 18/28/46 (1e-4): the clustering terms are scaled by 1/(λK).
    image_shape : [C, H, W] of the rows, or None for a square single-channel image.
    channels, kernels, paddings : the DEPICT AE (50; (4, 5); None = the code's per-size paddings).
    pretrain_epochs, pretrain_patience, pretrain_lr, pretrain_batch_size, pretrain_seed :
        pretraining (4000, 100, 1e-4, 100; pretrain_seed None = random_state).
    init : 'ac_pic' or 'kmeans' (k-means++ with ``n_init`` = 40 restarts).
    init_epochs, init_patience : phase 1 (500, 5).
    lr, batch_size, epochs, tol : Adam 1e-3, batch 100, at most 500 phase-2 epochs, stop when
        mean (q − q_prev)² < 1e-5.
    labels_by : 'assignment' (argmax q, the paper) or 'prior_corrected' (the code's
        argmax softmax(zθᵀ/(λK) + log √(mean_i q_ik))).
    device, random_state, n_threads : as every torch estimator here.
    """

    def __init__(
        self,
        n_clusters=10,
        lam=1e-4,
        image_shape=None,
        channels=50,
        kernels=(4, 5),
        paddings=None,
        pretrain_epochs=4000,
        pretrain_patience=100,
        pretrain_lr=1e-4,
        pretrain_batch_size=100,
        pretrain_seed=None,
        init="ac_pic",
        n_init=40,
        init_epochs=500,
        init_patience=5,
        lr=1e-3,
        batch_size=100,
        epochs=500,
        tol=1e-5,
        labels_by="assignment",
        device="auto",
        random_state=None,
        n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.lam = lam
        self.image_shape = image_shape
        self.channels = channels
        self.kernels = kernels
        self.paddings = paddings
        self.pretrain_epochs = pretrain_epochs
        self.pretrain_patience = pretrain_patience
        self.pretrain_lr = pretrain_lr
        self.pretrain_batch_size = pretrain_batch_size
        self.pretrain_seed = pretrain_seed
        self.init = init
        self.n_init = n_init
        self.init_epochs = init_epochs
        self.init_patience = init_patience
        self.lr = lr
        self.batch_size = batch_size
        self.epochs = epochs
        self.tol = tol
        self.labels_by = labels_by
        self.device = device
        self.random_state = random_state
        self.n_threads = n_threads

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            *super()._checks(),
            ("lam", POSITIVE_REAL),
            ("labels_by", one_of(("assignment", "prior_corrected"))),
        ]

    def _head(self, theta: torch.Tensor) -> nn.Module:
        self._prior = torch.full((self.n_clusters,), 1.0 / self.n_clusters, device=self.device_)
        return _Prototypes(theta)

    def _fitted(self, head) -> None:
        self.cluster_centers_ = head.theta.double().cpu().numpy()
        self.prior_ = self._prior.double().cpu().numpy()

    def _extra_state(self) -> dict:
        return {"prior": self._prior}

    def _set_extra_state(self, state: dict) -> None:
        self._prior = state["prior"].to(self.device_)

    def _refresh(self, head, network, data: torch.Tensor, q: torch.Tensor) -> None:
        head.theta = soft_kmeans_update(self._embed(network, data), q, self.lam)[0]

    def _batch_loss(self, head, z: torch.Tensor, q: torch.Tensor, hard: bool) -> torch.Tensor:
        """Eq. 46's clustering terms on the noisy embedding z̃ (one-hot q in phase 1)."""
        scale = self.lam * self.n_clusters
        return ((q * squared_distances(z, head.theta)).sum(1) - z.square().sum(1)).mean() / scale

    def _update(self, head, z: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Eq. 27 with the previous Q, then eq. 28: the new Q, as both the targets and the assignments."""
        head.theta, q = soft_kmeans_update(z, q, self.lam)
        self._prior = q.mean(0)  # q̂_k, for the code's labelling rule
        return q, q

    @torch.no_grad()
    def _labels(self, head, z: torch.Tensor) -> torch.Tensor:
        """argmax q (eq. 28: the nearest prototype), or the code's rule: argmax of the logistic
        posterior SR-K-means stands for, θ'_kᵀz/(λK) + b_k with b_k = ½ log q̂_k (eq. 5, 25, 26),
        which, unlike eq. 28, leaves out −‖θ'_k‖²/(2λK) (the approximation of eq. 23)."""
        theta = head.theta
        scale = self.lam * self.n_clusters
        if self.labels_by == "prior_corrected":
            return (z @ theta.T / scale + 0.5 * torch.log(self._prior.clamp(min=1e-30))).argmax(1)
        return squared_distances(z, theta).argmin(1)

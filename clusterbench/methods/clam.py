"""CLAM: clustering with associative memories (Saha, Krotov, Zaki & Ram, ICML 2023).

The k cluster prototypes ρ_μ are the memories of a dense associative memory (AM). A point evolves
for T steps of the AM recursion (eq. 4) and ends near one prototype; the prototypes are learned by
backpropagation through those T steps on the self-supervised masked completion loss (eq. 9,
Algorithm 1 TrainCLAM), and each point is assigned to the prototype nearest its evolved state
(Algorithm 1 InferCLAM).

Where the authors' code (bsaha205/clam, TensorFlow) and the paper differ, and what is done here:

- Softmax scale: the code weighs prototypes by exp(−(β/2)‖ρ−x‖²), the paper by exp(−β‖ρ−x‖²)
  (eq. 2, 4). Default: the paper (``beta_scale=1.0``); ``beta_scale=0.5`` gives the code's. Table 6's
  β were tuned with the code, so ``beta_scale=0.5`` is the faithful pairing for them.
- Softmax stability: the code exponentiates without subtracting the maximum (NaNs abort a
  configuration at large β); here ``torch.softmax`` on the logits (log-sum-exp) stays finite.
- Step size: the code fixes α = dt/τ = 0.1 with T = 10; the paper ties T = 1/α (Table 5). Default
  ``alpha = 1/steps``; set ``alpha`` to decouple them.
- Mask: the code masks ⌊p·d⌋ coordinates drawn with replacement (never the first one) per point,
  and in every third epoch one such draw for a whole mini-batch. Default (``mask_sampling=
  'bernoulli'``): each coordinate of each point independently with probability p, redrawn every
  epoch (Algorithm 1, line 7); ``mask_sampling='code'`` gives the code's.
- Restarts: the code runs one per configuration and ranks all runs by silhouette; the paper runs
  10 and keeps the least training loss (Table 5, §B.1). ``restart_selection='loss'`` (default) or
  ``'silhouette'``: the latter reproduces how the paper's Table 1 numbers were chosen.
- Learning-rate floor: the code stops when lr < 1e-6; the paper's minimum lr is 1e-5 (Table 5).
  Default ``min_lr=1e-5``.
- Weighted clustering (eq. 10–11) is commented out in the code and spherical clustering (eq. 12)
  is absent; both are implemented from the paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import kmeans_plusplus

from clusterbench.methods._seeding import gaussian_prototypes, restart_seeds
from clusterbench.metrics import silhouette
from clusterbench.validation import (
    BOOLEAN,
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    TorchHyperparameters,
    check_enough_points,
    check_fit_input,
    check_predict_input,
    in_interval,
    is_int,
    one_of,
    optional,
    resolve_device,
    torch_threads,
)

MASK_VALUES = ("mean", "min", "max")
MASK_SAMPLINGS = ("bernoulli", "code")
INITS = ("gaussian", "random", "k-means++")
RESTART_SELECTIONS = ("loss", "silhouette")
# restart_selection='silhouette' scores each restart's labels on at most this many points.
SELECTION_MAX_SAMPLES = 20000
# Plateau schedule (CLAM Table 5's factor, patience, threshold and minimum lr; App. B.1: "reduce
# the learning rate by a factor of 0.8 if the training loss does not ameliorate"): from epoch
# PLATEAU_WINDOW on, the mean of the last PLATEAU_WINDOW epoch losses must improve on its best by
# LR_THRESHOLD (absolute) within LR_PATIENCE epochs, else the learning rate is multiplied by
# LR_FACTOR. The authors' code compares with the previous epoch's mean instead of the best, on its
# epoch loss (a sum of batch means over all B·d entries, about n·p/B times ours), so its rate
# decays less often; docs/reproduction/clam.md ("Causes of the CTG and Segment misses") gives the
# measured effect.
PLATEAU_WINDOW = 10
LR_FACTOR = 0.8
LR_PATIENCE = 5
LR_THRESHOLD = 1e-3
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
# Inference evolves points in chunks holding at most this many state and logit entries.
INFERENCE_CHUNK_ELEMENTS = 1 << 24
# mask_sampling='code': every this many epochs, one mask is shared by each mini-batch.
CODE_SHARED_MASK_PERIOD = 3


def am_recursion(
    x: torch.Tensor,
    prototypes: torch.Tensor,
    *,
    beta: float,
    steps: int,
    alpha: float,
    log_weights: torch.Tensor | None = None,
    free: torch.Tensor | None = None,
    spherical: bool = False,
) -> torch.Tensor:
    """``steps`` steps of the AM recursion from ``x`` (eq. 4; weighted eq. 11; spherical eq. 12).

    Euclidean: x ← x + α Σ_μ (ρ_μ − x) softmax_μ(−β‖ρ_μ − x‖² + log ε_μ).
    Spherical (eq. 12, points on the unit sphere): with ρ̃_μ = ρ_μ/‖ρ_μ‖,
    x ← normalize(x + α Σ_μ ρ̃_μ softmax_μ(β⟨ρ̃_μ, x⟩ + log ε_μ)).

    Shapes: ``x`` (R, B, d) for R restarts of B points, ``prototypes`` (R, k, d), ``log_weights``
    (R, k) or None (all ε_μ = 1), ``free`` (R, B, d) bool or None: the coordinates that may move
    (Algorithm 1, line 11: only masked coordinates evolve; the others stay at their values).

    Computed with matrix products, never an (R, B, k, d) tensor: ‖ρ_μ − x‖² = ‖ρ_μ‖² − 2⟨ρ_μ, x⟩ +
    ‖x‖², and ‖x‖² is the same for every μ, so it cancels in the softmax; since the weights sum
    to 1, Σ_μ (ρ_μ − x) w_μ = Σ_μ w_μ ρ_μ − x. The softmax is taken on the logits by
    ``torch.softmax``, which subtracts their maximum, so a large β cannot overflow or divide 0 by 0.
    Spherical with ``free``: the free coordinates take their values from the projected point, the
    clamped ones keep theirs.
    """
    if spherical:
        prototypes = F.normalize(prototypes, dim=-1)
        offsets = torch.zeros(prototypes.shape[:2], device=x.device, dtype=x.dtype).unsqueeze(1)
        scale = beta
    else:
        offsets = -beta * prototypes.square().sum(-1).unsqueeze(1)  # (R, 1, k): −β‖ρ_μ‖²
        scale = 2 * beta
    if log_weights is not None:
        offsets = offsets + log_weights.unsqueeze(1)
    transposed = prototypes.transpose(1, 2)
    # Per-coordinate step: α where a coordinate is free, 0 where it is clamped.
    step = alpha if free is None else alpha * free.to(x.dtype)
    for _ in range(steps):
        logits = torch.baddbmm(offsets, x, transposed, alpha=scale)
        pull = torch.bmm(torch.softmax(logits, dim=-1), prototypes)  # Σ_μ w_μ ρ_μ
        if spherical:
            moved = F.normalize(x + alpha * pull, dim=-1)
            x = moved if free is None else torch.where(free, moved, x)
        else:
            x = torch.lerp(x, pull, step)  # x + α(Σ_μ w_μ ρ_μ − x) on the free coordinates
    return x


class RestartAdam:
    """Adam (Kingma & Ba) on parameters stacked over restarts, with one learning rate per restart.

    Why not ``torch.optim.Adam``: its learning rate belongs to a parameter group, and a group holds
    whole tensors, so per-restart rates would need R separate leaf tensors re-stacked in every
    forward pass. Every Adam operation is elementwise, so Adam on the stacked tensor with the
    rates broadcast along the leading (restart) dimension is exactly R independent Adams. A
    restart that has stopped gets rate 0 and no longer moves.
    """

    def __init__(self, parameters: list[torch.Tensor], lr: torch.Tensor):
        self.parameters = parameters
        self.lr = lr
        self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in parameters]
        self.steps = 0

    @torch.no_grad()
    def step(self, gradients: list[torch.Tensor]) -> None:
        self.steps += 1
        beta1, beta2 = ADAM_BETAS
        first_correction = 1 - beta1**self.steps
        second_correction = 1 - beta2**self.steps
        for parameter, gradient, (mean, square) in zip(self.parameters, gradients, self.moments, strict=True):
            mean.mul_(beta1).add_(gradient, alpha=1 - beta1)
            square.mul_(beta2).addcmul_(gradient, gradient, value=1 - beta2)
            rate = self.lr.view(-1, *[1] * (parameter.dim() - 1))
            update = (mean / first_correction) / ((square / second_correction).sqrt() + ADAM_EPS)
            parameter.sub_(rate * update)


class PlateauSchedule:
    """One restart's learning rate under the plateau rule (see PLATEAU_WINDOW)."""

    def __init__(self, lr: float):
        self.lr = lr
        self.best = np.inf
        self.wait = 0

    def update(self, history: list[float]) -> float:
        """The learning rate for the next epoch, given the epoch losses so far."""
        if len(history) < PLATEAU_WINDOW:
            return self.lr
        moving = float(np.mean(history[-PLATEAU_WINDOW:]))
        if moving < self.best - LR_THRESHOLD:
            self.best, self.wait = moving, 0
        else:
            self.wait += 1
            if self.wait >= LR_PATIENCE:
                self.lr *= LR_FACTOR
                self.wait = 0
        return self.lr


@dataclass
class TrainedRestarts:
    """What TrainCLAM leaves for each restart (leading axis: restart)."""

    losses: np.ndarray  # least epoch loss
    prototypes: torch.Tensor  # (R, k, d) at that epoch
    log_weights: torch.Tensor  # (R, k) log ε at that epoch
    best_epochs: np.ndarray
    histories: list[list[float]]  # epoch losses
    snapshots: dict[int, tuple[torch.Tensor, np.ndarray]]  # epoch: (prototypes, which restarts ran it)


class CLAM(TorchHyperparameters, ClusterMixin, BaseEstimator):
    """CLAM clustering (Saha et al., ICML 2023, Algorithm 1), in torch on CPU or CUDA.

    Defaults follow CLAM Tables 5 and 6: ``beta=0.1`` (the median and most frequent of Table 6's
    per-dataset values), ``steps=10`` (T of the authors' code, Table 6 for Zoo and Yale),
    ``lr=0.1``, ``batch_size=8`` and ``mask_value='mean'`` (each Table 6's most frequent),
    ``mask_prob=0.15`` (Table 6's most frequent; the code uses 0.2), 200 epochs and 10 restarts
    (Table 5). See the module docstring for where the code and the paper differ.

    Parameters
    ----------
    n_clusters : number of prototypes k (≥ 1).
    beta : inverse temperature β > 0 of the softmax in eq. 4.
    beta_scale : multiplies β (1.0 = paper; 0.5 = the authors' code's exp(−(β/2)‖ρ−x‖²)).
    steps : T ≥ 1 recursion steps, in training and inference.
    alpha : step size α = dt/τ in (0, 1]; None = 1/steps (Table 5: T = 1/α).
    lr, min_lr : Adam's initial learning rate, and the floor (0 < min_lr ≤ lr) below which a
        restart stops training.
    batch_size, epochs, restarts : mini-batch size, maximum epochs, independent restarts
        (trained together as one batched computation; the least training loss is kept).
    mask : True = the self-supervised loss of eq. 9 (mean squared error on masked coordinates,
        only masked coordinates evolve); False = eq. 8 (all coordinates evolve from the clean
        point; mean squared error on all coordinates).
    mask_prob : probability in (0, 1) that a coordinate is masked.
    mask_value : what a masked coordinate is set to: the feature's 'mean', 'min' or 'max' over
        the training data.
    mask_sampling : 'bernoulli' (Algorithm 1) or 'code' (the authors' code; module docstring).
    init : starting prototypes: 'gaussian' (N(0.1, 0.1²), the code's), 'random' (k distinct data
        points) or 'k-means++'.
    restart_selection : which restart is kept: 'loss' (least training loss, the paper's text) or
        'silhouette' (best SC of its labels on the training data, on at most 20000 points: the
        code's ranking of runs).
    weighted : learn per-prototype weights ε_μ (eq. 10–11, log ε_μ added to the softmax logits).
    spherical : cosine-similarity clustering (eq. 12): points are scaled to unit norm, the
        prototypes enter normalized, and states are projected back onto the sphere each step.
    prototype_snapshots : epochs (0 = initialization) at which to keep the prototypes of the
        kept restart, in ``prototype_snapshots_`` (Fig. 6); None keeps none.
    random_state : int, NumPy RandomState or Generator, or None; restart seeds per :func:`restart_seeds`.
    device : 'auto', 'cpu' or 'cuda'. Runs are deterministic on CPU.
    n_threads : torch's CPU threads during fit and predict (int ≥ 1), or None for torch's default
        (one per core). 1 by default: the kernels are small (batches of 8 points), and on a busy
        machine more threads wait on each other; the harness sets it from its ``threads`` setting.

    Attributes
    ----------
    labels_ : cluster of each training point (T steps from the clean point, then the nearest
        prototype; Algorithm 1 InferCLAM).
    cluster_centers_ : (k, d) prototypes of the kept restart as they stood at the end of the epoch
        whose training loss (the mean over that epoch's batches, taken while the prototypes were
        being updated) was least, ``best_epoch_`` (unit norm when spherical).
    cluster_weights_ : (k,) ε_μ of the kept restart (all 1 unless ``weighted``).
    loss_ : the kept restart's least epoch training loss; ``restart_losses_``: each restart's.
    restart_scores_ : each restart's silhouette (−1 if it found one cluster) when
        ``restart_selection='silhouette'``, else None; ``kept_restart_``: the kept restart's index.
    restart_seeds_ : the seed of each restart.
    history_ : the kept restart's training loss per epoch.
    best_epoch_ : the epoch whose prototypes were kept; ``n_iter_``: epochs the kept restart ran.
    prototype_snapshots_ : {epoch: (k, d) prototypes} for the requested epochs it reached.
    device_ : the device used.
    """

    # Records written before n_threads existed were fitted at the harness's one thread: named
    # without it (runner.named_by).
    _params_added_later: ClassVar[dict] = {"n_threads": 1}

    def __init__(
        self,
        n_clusters=8,
        beta=0.1,
        beta_scale=1.0,
        steps=10,
        alpha=None,
        lr=0.1,
        min_lr=1e-5,
        batch_size=8,
        epochs=200,
        restarts=10,
        mask=True,
        mask_prob=0.15,
        mask_value="mean",
        mask_sampling="bernoulli",
        init="gaussian",
        restart_selection="loss",
        weighted=False,
        spherical=False,
        prototype_snapshots=None,
        random_state=None,
        device="auto",
        n_threads=1,
    ):
        self.n_clusters = n_clusters
        self.beta = beta
        self.beta_scale = beta_scale
        self.steps = steps
        self.alpha = alpha
        self.lr = lr
        self.min_lr = min_lr
        self.batch_size = batch_size
        self.epochs = epochs
        self.restarts = restarts
        self.mask = mask
        self.mask_prob = mask_prob
        self.mask_value = mask_value
        self.mask_sampling = mask_sampling
        self.init = init
        self.restart_selection = restart_selection
        self.weighted = weighted
        self.spherical = spherical
        self.prototype_snapshots = prototype_snapshots
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads

    def fit(self, X, y=None):
        self._validate_params()
        with torch_threads(self.n_threads):
            X = check_fit_input(self, X)
            if self.init != "gaussian":  # 'random' and 'k-means++' draw k distinct data points
                check_enough_points(self, len(X))
            self.device_ = resolve_device(self.device)
            self.restart_seeds_ = restart_seeds(self.random_state, self.restarts)
            data = self._points(X)
            trained = self._train(data, self.restart_seeds_)
            if not np.isfinite(trained.losses).any():
                raise FloatingPointError("CLAM's training loss was not finite in any epoch of any restart")
            log_weights = trained.log_weights if self.weighted else None
            if self.restart_selection == "loss":
                self.restart_scores_ = None
                kept = int(np.argmin(trained.losses))
                # only the kept restart's labels are needed
                one = slice(kept, kept + 1)
                kept_weights = None if log_weights is None else log_weights[one]
                labels = self._assign(data, trained.prototypes[one], kept_weights)[0].cpu().numpy()
            else:
                every = self._assign(data, trained.prototypes, log_weights).cpu().numpy()
                # scored on X as given (not the unit-norm points of spherical CLAM): the space the
                # reported silhouette uses
                self.restart_scores_ = np.array(
                    [
                        silhouette(X, found, max_samples=SELECTION_MAX_SAMPLES)
                        if len(np.unique(found)) > 1
                        else -1.0
                        for found in every
                    ]
                )
                self.restart_scores_[~np.isfinite(trained.losses)] = -np.inf
                kept = int(np.argmax(self.restart_scores_))
                labels = every[kept]
            self.restart_losses_ = trained.losses
            self.kept_restart_ = kept
            self.loss_ = float(trained.losses[kept])
            self.history_ = np.array(trained.histories[kept])
            self.n_iter_ = len(trained.histories[kept])
            self.best_epoch_ = int(trained.best_epochs[kept])
            self.cluster_centers_ = self._centers(trained.prototypes[kept])
            self.cluster_weights_ = trained.log_weights[kept].exp().double().cpu().numpy()
            self.prototype_snapshots_ = {
                epoch: self._centers(stacked[kept])
                for epoch, (stacked, ran) in trained.snapshots.items()
                if ran[kept]
            }
            self.labels_ = labels
            return self

    def predict(self, X):
        """Cluster of each point of ``X``: T recursion steps from the point, then the nearest prototype."""
        X = check_predict_input(self, X, "cluster_centers_")
        with torch_threads(self.n_threads):
            centers = torch.as_tensor(self.cluster_centers_, dtype=torch.float32, device=self.device_)
            log_weights = None
            if self.weighted:
                log_weights = torch.as_tensor(
                    np.log(self.cluster_weights_), dtype=torch.float32, device=self.device_
                )
                log_weights = log_weights.unsqueeze(0)
            return self._assign(self._points(X), centers.unsqueeze(0), log_weights)[0].cpu().numpy()

    def _checks(self) -> list[tuple[str, Constraint]]:
        """In order, so a check may rely on the ones before it (min_lr on lr, snapshots on epochs)."""
        snapshots = Constraint(
            lambda v: (
                isinstance(v, Sequence)
                and not isinstance(v, str)
                and all(is_int(e) and 0 <= e <= self.epochs for e in v)
            ),
            f"a list of epochs in [0, epochs={self.epochs}]",
        )
        return [
            ("n_clusters", POSITIVE_INT),
            ("beta", POSITIVE_REAL),
            ("beta_scale", POSITIVE_REAL),
            ("steps", POSITIVE_INT),
            ("alpha", optional(in_interval(0, 1, closed="right"))),
            ("lr", POSITIVE_REAL),
            ("min_lr", in_interval(0, self.lr, closed="right", high_name="lr")),
            ("batch_size", POSITIVE_INT),
            ("epochs", POSITIVE_INT),
            ("restarts", POSITIVE_INT),
            ("mask", BOOLEAN),
            ("mask_prob", in_interval(0, 1)),
            ("mask_value", one_of(MASK_VALUES)),
            ("mask_sampling", one_of(MASK_SAMPLINGS)),
            ("init", one_of(INITS)),
            ("restart_selection", one_of(RESTART_SELECTIONS)),
            ("weighted", BOOLEAN),
            ("spherical", BOOLEAN),
            ("prototype_snapshots", optional(snapshots)),
        ]

    def _points(self, X: np.ndarray) -> torch.Tensor:
        points = torch.as_tensor(X, dtype=torch.float32, device=self.device_)
        return F.normalize(points, dim=-1) if self.spherical else points

    def _centers(self, prototypes: torch.Tensor) -> np.ndarray:
        centers = F.normalize(prototypes, dim=-1) if self.spherical else prototypes
        return centers.double().cpu().numpy()

    def _recursion_options(self) -> dict:
        alpha = 1.0 / self.steps if self.alpha is None else self.alpha
        return {
            "beta": self.beta * self.beta_scale,
            "steps": self.steps,
            "alpha": alpha,
            "spherical": self.spherical,
        }

    def _train(self, data: torch.Tensor, seeds: list[int]) -> TrainedRestarts:
        """TrainCLAM (Algorithm 1) for all restarts at once: every tensor has a leading restart axis.

        Each restart draws its initialization, shuffles and masks from its own generator, its loss
        is its own mean, and the restarts' losses are summed before backpropagation, so each
        restart's gradient is exactly its own; with per-restart Adam rates and schedules, restart r
        here is the same computation as a fit with ``restarts=1`` seeded ``seeds[r]``.
        """
        n, d = data.shape
        restarts, k, device = len(seeds), self.n_clusters, data.device
        generators = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]
        prototypes = torch.stack(
            [self._initial_prototypes(data, seed, g) for seed, g in zip(seeds, generators, strict=True)]
        ).requires_grad_()
        log_weights = torch.zeros(restarts, k, device=device, requires_grad=self.weighted)
        parameters = [prototypes, log_weights] if self.weighted else [prototypes]
        recursion_log_weights = log_weights if self.weighted else None
        optimizer = RestartAdam(parameters, torch.full((restarts,), float(self.lr), device=device))
        schedules = [PlateauSchedule(float(self.lr)) for _ in seeds]
        fill = {"mean": data.mean, "min": data.amin, "max": data.amax}[self.mask_value](dim=0)
        options = self._recursion_options()

        running = np.ones(restarts, dtype=bool)
        histories: list[list[float]] = [[] for _ in seeds]
        best_losses = np.full(restarts, np.inf)
        best_epochs = np.zeros(restarts, dtype=int)
        best_prototypes = prototypes.detach().clone()
        best_log_weights = log_weights.detach().clone()
        wanted = set(self.prototype_snapshots or ())
        snapshots = {0: (best_prototypes.clone(), running.copy())} if 0 in wanted else {}
        for epoch in range(1, self.epochs + 1):
            orders = torch.stack([torch.randperm(n, generator=g, device=device) for g in generators])
            if self.mask:
                masks = torch.stack([self._draw_mask(epoch, n, d, g) for g in generators])
            errors = torch.zeros(restarts, device=device)
            counts = torch.zeros(restarts, device=device)
            for start in range(0, n, self.batch_size):
                clean = data[orders[:, start : start + self.batch_size]]  # (R, B, d)
                if self.mask:
                    hidden = masks[:, start : start + self.batch_size]
                    completed = am_recursion(
                        torch.where(hidden, fill, clean),
                        prototypes,
                        log_weights=recursion_log_weights,
                        free=hidden,
                        **options,
                    )
                    squared = (completed - clean).square() * hidden
                    count = hidden.sum((1, 2)).float()
                else:
                    completed = am_recursion(clean, prototypes, log_weights=recursion_log_weights, **options)
                    squared = (completed - clean).square()
                    count = torch.full((restarts,), float(clean[0].numel()), device=device)
                error = squared.sum((1, 2))
                # A batch with no masked coordinate contributes no loss (0 / 1) instead of 0 / 0.
                loss = (error / count.clamp(min=1)).sum()
                optimizer.step(torch.autograd.grad(loss, parameters))
                errors += error.detach()
                counts += count
            epoch_losses = (errors / counts.clamp(min=1)).cpu().numpy()

            improved = running & (epoch_losses < best_losses)
            best_losses[improved] = epoch_losses[improved]
            best_epochs[improved] = epoch
            keep = torch.as_tensor(improved, device=device)
            best_prototypes = torch.where(keep[:, None, None], prototypes.detach(), best_prototypes)
            best_log_weights = torch.where(keep[:, None], log_weights.detach(), best_log_weights)
            if epoch in wanted:
                snapshots[epoch] = (prototypes.detach().clone(), running.copy())
            for r in np.flatnonzero(running):
                histories[r].append(float(epoch_losses[r]))
                if schedules[r].update(histories[r]) < self.min_lr:
                    running[r] = False
            if not running.any():
                break
            rates = [schedule.lr if run else 0.0 for schedule, run in zip(schedules, running, strict=True)]
            optimizer.lr = torch.tensor(rates, device=device)
        return TrainedRestarts(
            best_losses, best_prototypes, best_log_weights, best_epochs, histories, snapshots
        )

    def _initial_prototypes(self, data: torch.Tensor, seed: int, generator: torch.Generator) -> torch.Tensor:
        """One restart's (k, d) starting prototypes.

        'gaussian': every coordinate N(0.1, 0.1²), no data-based seeding (the authors' code and the
        paper's "works well without any special seeding", §2). 'random': k distinct data points.
        'k-means++': the k-means++ seeding (Arthur & Vassilvitskii 2007) of scikit-learn.
        """
        n, d = data.shape
        if self.init == "gaussian":
            return gaussian_prototypes(self.n_clusters, d, generator)
        if self.init == "random":
            chosen = torch.randperm(n, generator=generator, device=data.device)[: self.n_clusters]
            return data[chosen].clone()
        centers, _ = kmeans_plusplus(data.cpu().numpy(), self.n_clusters, random_state=seed % 2**32)
        return torch.as_tensor(centers, device=data.device)

    def _draw_mask(self, epoch: int, n: int, d: int, generator: torch.Generator) -> torch.Tensor:
        """The (n, d) bool mask of one epoch, row i for the i-th point of the epoch's order.

        'bernoulli' (Algorithm 1, line 7): each coordinate of each point independently with
        probability ``mask_prob``. 'code' (the authors' code): ⌊mask_prob·d⌋ coordinates drawn with
        replacement from 1..d−1 (the code never masks coordinate 0), one draw per point, except in
        every third epoch, where each mini-batch shares one draw.
        """
        device = generator.device
        if self.mask_sampling == "bernoulli":
            return torch.rand(n, d, generator=generator, device=device) < self.mask_prob
        draws = max(1, int(self.mask_prob * d))
        shared = epoch % CODE_SHARED_MASK_PERIOD == 0
        rows = -(-n // self.batch_size) if shared else n
        picked = torch.randint(1, max(d, 2), (rows, draws), generator=generator, device=device)
        mask = torch.zeros(rows, d, dtype=torch.bool, device=device).scatter_(1, picked % d, True)
        return mask.repeat_interleave(self.batch_size, dim=0)[:n] if shared else mask

    @torch.no_grad()
    def _assign(
        self, points: torch.Tensor, prototypes: torch.Tensor, log_weights: torch.Tensor | None
    ) -> torch.Tensor:
        """InferCLAM (Algorithm 1) for R prototype sets at once: T steps from each clean point, then
        the nearest prototype. ``prototypes`` (R, k, d), ``log_weights`` (R, k) or None; returns
        (R, n) labels."""
        centers = F.normalize(prototypes, dim=-1) if self.spherical else prototypes
        restarts, k, d = centers.shape
        chunk = max(1, INFERENCE_CHUNK_ELEMENTS // (restarts * (k + d)))
        labels = []
        for start in range(0, len(points), chunk):
            batch = points[start : start + chunk].expand(restarts, -1, -1)
            evolved = am_recursion(batch, centers, log_weights=log_weights, **self._recursion_options())
            labels.append(torch.cdist(evolved, centers).argmin(-1))
        return torch.cat(labels, dim=1)

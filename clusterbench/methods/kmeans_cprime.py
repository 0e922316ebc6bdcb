"""k-means-C′: truncated variational EM for isotropic Gaussian mixtures (Lücke & Forster,
"k-means as a variational EM approximation of Gaussian mixture models").

The model (eq. 2): C clusters with equal priors 1/C and one shared isotropic variance σ². Each
iteration of Algorithm 3 is

- a truncated variational E-step: K⁽ⁿ⁾ = the C′ centres nearest to point n, which maximises the
  free energy (eq. 7) over the sets (Corollary 1), and the truncated responsibilities q (eq. 5);
- an M-step (eq. 6): μ_c = Σₙ q_c⁽ⁿ⁾ y⁽ⁿ⁾ / Σₙ q_c⁽ⁿ⁾ and σ² = (1/DN) Σ q ‖y − μ_new‖².

C′ = 1 moves the centres exactly as Lloyd's k-means (Proposition 2); C′ = C is EM for the GMM
(Algorithm 2), here :class:`IsotropicGMM`. Lazy-k-means (eq. 19) is the same iteration with a
partial E-step: :class:`clusterbench.methods.lazy_kmeans.LazyKMeans`.

``history_`` holds, per iteration t (t = 0 is the seeding, t ≥ 1 after t M-steps), for the
parameters Θ_t: the free energy F(K_t, Θ_t) (eq. 7; at t = 0 F(K_1, Θ_0), the best sets for the
seeds), the GMM log-likelihood ℒ(Θ_t) (eq. 3), the quantization error φ (eq. 1, each point to its
nearest centre) and σ²_t. For hard assignments (C′ = 1 and lazy-k-means) also eq. 13,
−log C − (D/2) log(2πeσ²), and the bound of eq. 17 computed from the k-means objective J of the
assignments; the three agree up to rounding while σ² is above its floor (below). The sequence
of free energies never decreases: F(K_t, Θ_t) ≤ F(K_t+1, Θ_t) (E-step, Prop. 1) ≤
F(K_t+1, Θ_t+1) (M-step). All of them are computed in log space with the maximum shifted out
(log-sum-exp), so far-apart clusters give finite values, never −inf or NaN.

Where the paper leaves a choice open, and what is done here:

- Initial σ²: the mean squared distance of the points to their nearest seed, divided by D (σ² of
  eq. 12 for the seeds), so F(K_1, Θ_0) equals eq. 13 at the start.
- Seeding: k-means++ (the paper's choice) in scikit-learn's greedy form, 2 + ⌊ln C⌋ D²-drawn
  candidates per centre (``n_local_trials``), or C distinct random points, or given centres.
  The greedy form reproduces Table S1's means (BIRCH grid, 100 runs: mean ℒ −6.104 for k-means
  against the paper's −6.127); Arthur & Vassilvitskii's plain D² sampling (``n_local_trials=1``)
  leaves far more runs in poor optima (mean ℒ −6.361).
- A cluster that receives no responsibility keeps its centre (the M-step for it is undetermined).
- σ² is floored at 1e-10 of the data's mean per-dimension variance, and so is J/(nD) in eq. 17:
  a degenerate fit (every point on a centre) keeps finite free energies and bound.
- Stopping: after iteration t when F(K_t, Θ_t) − F(K_t−1, Θ_t−1) ≤ ``tol`` (nats per point), or
  after ``max_iter`` M-steps. The labels are the E-step's at the final parameters: the nearest
  centre, which holds the largest responsibility.
- The data are centred (their mean subtracted) inside ``fit``, as scikit-learn's KMeans does:
  squared distances by ‖y‖² − 2y·μ + ‖μ‖² and σ² by Σ‖y‖² − Σ_c ‖S_c‖²/W_c then lose less to
  cancellation. Computation is in float64.
- Restarts (``n_init``) run as one batched tensor computation, one pass over the data per
  iteration in chunks of points; a converged restart leaves the batch. The restart
  with the highest final free energy is kept (the objective the algorithm increases).
- On the CPU the pass of C′ = 1 (not lazy-k-means's) is compiled
  (:mod:`clusterbench.methods._hard_pass`), its chunks shared out to the caller's threads: its
  iterations give the same bits at any thread count, those of torch's operations at one thread
  (ℒ to rounding; at more threads torch splits its sums over many points, which rounds otherwise).
"""

from __future__ import annotations

import math
import queue
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClusterMixin

from clusterbench.methods._seeding import restart_seeds
from clusterbench.validation import (
    BOOLEAN,
    NON_NEGATIVE_INT,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    Constraint,
    TorchHyperparameters,
    check_enough_points,
    check_fit_input,
    check_predict_input,
    is_int,
    optional,
    resolve_device,
    torch_threads,
)

INITS = ("k-means++", "random")
# Points are processed in chunks of about this many (restarts × clusters × points) scores, at
# least MIN_CHUNK_POINTS points: the chunk's temporaries stay in cache (2 MiB in float64).
CHUNK_ELEMENTS = 1 << 18
MIN_CHUNK_POINTS = 256
# On CPU the score product's rows (restarts × clusters) are padded with zero rows to a multiple of
# this: MKL's double-precision kernel (torch's CPU BLAS) takes rows in fours and a remainder costs
# about a block of its own (100000 x 75 points, one thread: 2 rows 13.6 ms, padded to 4 8.9 ms;
# 7 rows 29.1 ms, to 8 10.5 ms; 25 rows 21.1 ms, to 28 17.6 ms; at two threads 25 rows 12.6 ms,
# 28 rows 10.1 ms). A multiple of four is left as it is, so is its product; a single row too (a
# matrix-vector product: 6.6 ms, padded 8.9 ms). The chunk's point count is set by the unpadded
# rows: the padding's at most three rows come on top of CHUNK_ELEMENTS.
SCORE_ROW_MULTIPLE = 4
SIGMA2_FLOOR = 1e-10
FEW_CLUSTERS = 4
# The hard E-step of C′ = 1 (not lazy-k-means's) runs its chunks through a compiled loop on the
# CPU, in a thread pool at several threads (clusterbench.methods._hard_pass; False: torch's
# operations there too, as tests compare the two). Off the CPU always torch's.
COMPILED_ON_CPU = True
HISTORY_KEYS = ("free_energy", "log_likelihood", "quantization_error", "sigma2")
HARD_HISTORY_KEYS = ("free_energy_eq13", "bound_eq17")


def affinities(points: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """y·μ_c − ‖μ_c‖²/2 = (‖y‖² − ‖y − μ_c‖²)/2 for points (m, D) and centres (R, C, D): (R, C, m).

    Everything the iteration needs is a function of it: the nearest centre is its arg max, and
    log p(c, y | Θ) = log_normaliser + (a_c − ‖y‖²/2)/σ². Clusters along dim 1 keep the
    reductions over c contiguous per point, which torch vectorises.
    """
    return torch.matmul(centres, points.T).sub_(0.5 * (centres * centres).sum(-1, keepdim=True))


def nearest_clusters(
    scores: torch.Tensor, guess: torch.Tensor | None, guessed: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(max, arg max) over the clusters (dim 1) of ``scores`` (R, C, m); ``guessed``: the scores
    of the ``guess`` (R, 1, m), when the caller has gathered them.

    With a ``guess`` (R, m) of the arg max (the last iteration's labels, which mostly still hold)
    only the points whose guessed cluster falls short of the max are searched: torch's max with
    indices over the cluster dimension costs ten times its max alone (0.52 against 0.06 ms for
    25 x 10485 scores, one thread), a quarter of a k-means iteration.
    """
    if guess is None:
        return scores.max(1)
    best = scores.amax(1)
    nearest = guess.clone()
    guessed = scores.gather(1, guess[:, None]) if guessed is None else guessed
    restart, point = (guessed[:, 0] < best).nonzero(as_tuple=True)
    if len(point):
        nearest[restart, point] = scores[restart, :, point].max(-1).indices
    return best, nearest


def nearest_sets(scores: torch.Tensor, nearest: torch.Tensor, c_prime: int) -> torch.Tensor:
    """The clusters of the ``c_prime`` highest ``scores`` (R, C, m) of each point: (R, C′, m).

    Up to ``FEW_CLUSTERS`` a cluster at a time, masking the ones taken (``nearest`` is the
    first): torch's top-k over the cluster dimension costs as much as five such passes (measured
    2.5 ms against 0.7 ms for C′ = 2 on 25 x 10485 scores, one thread).
    """
    if c_prime > FEW_CLUSTERS:
        return torch.topk(scores, c_prime, dim=1, sorted=False).indices
    chosen = [nearest[:, None]]
    masked = scores.clone()
    for _ in range(c_prime - 1):
        masked.scatter_(1, chosen[-1], -math.inf)
        chosen.append(masked.max(1, keepdim=True).indices)
    return torch.cat(chosen, 1)


def log_normaliser(n_clusters: int, n_features: int, sigma2: torch.Tensor) -> torch.Tensor:
    """log((1/C)(2πσ²)^(−D/2)), the data-independent part of log p(c, y | Θ) (eq. 9)."""
    return -math.log(n_clusters) - 0.5 * n_features * (math.log(2 * math.pi) + torch.log(sigma2))


def entropy_limit(n_clusters: int, n_features: int, sigma2: torch.Tensor) -> torch.Tensor:
    """−log C − (D/2) log(2πeσ²): eq. 13, the k-means free energy after a σ² update."""
    return -math.log(n_clusters) - 0.5 * n_features * torch.log(2 * math.pi * math.e * sigma2)


@dataclass
class _Fits:
    """R restarts after training: centres (R, C, D), σ² (R,), labels (R, n), per-restart history."""

    centres: torch.Tensor
    sigma2: torch.Tensor
    labels: torch.Tensor
    n_iter: torch.Tensor
    history: list[dict[str, list[float]]]


class _TruncatedEM(TorchHyperparameters, ClusterMixin, BaseEstimator):
    """Algorithm 3 with the E-step left to subclasses (:meth:`_e_step`); see the module docstring."""

    # Records written before n_threads existed were fitted at the harness's one thread: named
    # without it (runner.named_by).
    _params_added_later: ClassVar[dict] = {"n_threads": 1}

    def _truncation(self) -> int:
        """C′, the number of clusters each point holds after the E-step."""
        return 1

    def _e_step(self, scores: torch.Tensor, nearest: torch.Tensor, held: torch.Tensor | None, norms, sigma2):
        """(K, labels): the new sets (R, C′, m), or None for all C clusters, and the labels (R, m).

        ``scores``: :func:`affinities` divided by σ² (R, C, m); ``nearest``: their arg max over
        clusters (R, m); ``held``: the sets of the previous E-step, or None at the seeding;
        ``norms``: ‖y‖² (m,); ``sigma2``: σ² (R,). A squared distance is ‖y‖² − 2σ²·score.
        """
        raise NotImplementedError

    def _extra_checks(self) -> list[tuple[str, Constraint]]:
        """The checks of a variant's own hyperparameter, after n_clusters (which they may read)."""
        return []

    def _tracks_likelihood(self) -> bool:
        """Whether hard assignments keep ℒ (eq. 3) in ``history_`` (soft ones compute it anyway)."""
        return True

    def _assigns_nearest(self) -> bool:
        """Whether the E-step holds each point's nearest cluster alone (C′ = 1): then the CPU's
        pass is :func:`_hard_pass_compiled`, which makes no call to :meth:`_e_step`. Opt-in: a
        variant with an E-step of its own keeps torch's operations."""
        return False

    # ------------------------------------------------------------------ public API

    def fit(self, X, y=None):
        self._validate_params()
        X = check_fit_input(self, X)
        n, n_features = X.shape
        check_enough_points(self, n)
        self.device_ = resolve_device(self.device)
        with torch_threads(self.n_threads):
            raw = torch.as_tensor(X, dtype=torch.float64, device=self.device_)
            offset = raw.mean(0)
            # The centred points with a column of ones: the scores' per-cluster offset then comes
            # out of the same matrix product (see _train); ``points`` is a view without it.
            extended = torch.ones(n, n_features + 1, dtype=torch.float64, device=self.device_)
            points = extended[:, :n_features]
            torch.sub(raw, offset, out=points)
            norms = torch.linalg.vector_norm(points, dim=1).square_()
            floor = SIGMA2_FLOOR * max(float(norms.mean()) / n_features, torch.finfo(torch.float64).tiny)
            explicit = not isinstance(self.init, str)
            self.restart_seeds_ = restart_seeds(self.random_state, 1 if explicit else self.n_init)
            if explicit:
                centres = self._explicit_init(points, offset)
            else:
                centres = torch.stack([self._seed(points, norms, seed) for seed in self.restart_seeds_])
            fit = self._train(extended, norms, centres, floor)
            final_free = np.array([h["free_energy"][-1] for h in fit.history])
            kept = int(np.argmax(final_free))
            self.restart_free_energies_ = final_free
            self.cluster_centers_ = (fit.centres[kept] + offset).cpu().numpy()
            self.sigma2_ = float(fit.sigma2[kept])
            self.labels_ = fit.labels[kept].cpu().numpy()
            self.n_iter_ = int(fit.n_iter[kept])
            self.history_ = {key: np.array(values) for key, values in fit.history[kept].items()}
            self.free_energy_ = float(self.history_["free_energy"][-1])
            self.log_likelihood_ = float(self.history_.get("log_likelihood", [math.nan])[-1])
            self.quantization_error_ = float(self.history_["quantization_error"][-1])
            return self

    def predict(self, X) -> np.ndarray:
        """The nearest centre of each row of ``X`` (for C′ ≥ 1, the largest responsibility)."""
        X = check_predict_input(self, X, "cluster_centers_")
        with torch_threads(self.n_threads):
            points = torch.as_tensor(X, dtype=torch.float64, device=self.device_)
            centres = torch.as_tensor(self.cluster_centers_, device=self.device_)[None]
            offset = points.mean(0)  # centred as in fit: the affinities cancel far from the origin
            return affinities(points - offset, centres - offset)[0].argmax(0).cpu().numpy()

    # ------------------------------------------------------------------ checks and seeding

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            ("n_clusters", POSITIVE_INT),
            *self._extra_checks(),
            (
                "init",
                Constraint(
                    lambda v: v in INITS if isinstance(v, str) else np.ndim(v) == 2,
                    f"one of {', '.join(INITS)} or an array (n_clusters, n_features)",
                ),
            ),
            ("n_local_trials", optional(POSITIVE_INT, none="null")),
            ("n_init", POSITIVE_INT),
            ("max_iter", NON_NEGATIVE_INT),
            ("tol", NON_NEGATIVE_REAL),
        ]

    def _explicit_init(self, points: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        centres = torch.as_tensor(np.asarray(self.init), dtype=points.dtype, device=points.device)
        expected = (self.n_clusters, points.shape[1])
        if tuple(centres.shape) != expected:
            raise ValueError(f"init must have shape {expected}, got {tuple(centres.shape)}")
        if not torch.isfinite(centres).all():
            raise ValueError("init must hold finite values, got NaN or inf")
        return (centres - offset)[None]

    def _seed(self, points: torch.Tensor, norms: torch.Tensor, seed: int) -> torch.Tensor:
        """C initial centres for one restart: greedy k-means++, or C distinct random points.

        k-means++ as scikit-learn implements it: the first centre a uniformly drawn point, each
        further one the best (least potential Σ min ‖y − μ‖²) of ``n_local_trials`` points drawn
        with probability ∝ squared distance to the centres so far; 1 trial is the plain D²
        sampling of Arthur & Vassilvitskii.
        """
        generator = torch.Generator(device=points.device).manual_seed(seed)
        n = len(points)
        if self.init == "random":
            return points[torch.randperm(n, generator=generator, device=points.device)[: self.n_clusters]]
        trials = self.n_local_trials or 2 + int(math.log(self.n_clusters))
        chosen = [int(torch.randint(n, (1,), generator=generator, device=points.device))]
        nearest = (norms - 2 * affinities(points, points[chosen][None])[0, 0]).clamp_min(0.0)
        for _ in range(self.n_clusters - 1):
            if float(nearest.sum()) > 0:
                candidates = torch.multinomial(nearest, trials, replacement=True, generator=generator)
            else:  # every point sits on a chosen centre: any point will do
                candidates = torch.randint(n, (trials,), generator=generator, device=points.device)
            distances = (norms - 2 * affinities(points, points[candidates][None])[0]).clamp_min(0.0)
            reduced = torch.minimum(nearest, distances)  # (trials, n)
            best = int(reduced.sum(1).argmin())
            chosen.append(int(candidates[best]))
            nearest = reduced[best]
        return points[chosen]

    # ------------------------------------------------------------------ iterations

    def _train(
        self, extended: torch.Tensor, norms: torch.Tensor, centres: torch.Tensor, floor: float
    ) -> _Fits:
        """:meth:`_iterate`, with its pass compiled where it can be (C′ = 1 on the CPU). The
        compiled pass shares its chunks out to the caller's threads; everything else then runs
        at one torch thread, so that no torch worker is left spinning into the pass (at two
        threads the pool's pass gained 1.3x with them, 1.7-1.8x without)."""
        compiled = extended.device.type == "cpu" and COMPILED_ON_CPU and self._assigns_nearest()
        pool_threads = torch.get_num_threads()
        with torch_threads(1 if compiled else None):
            return self._iterate(extended, norms, centres, floor, pool_threads if compiled else None)

    def _iterate(
        self,
        extended: torch.Tensor,
        norms: torch.Tensor,
        centres: torch.Tensor,
        floor: float,
        pool: int | None,
    ) -> _Fits:
        """Algorithm 3 for R restarts at once; a restart leaves the batch once it has converged.

        One pass over the data per iteration, chunk by chunk (the chunk's scores stay in cache):
        the scores a/σ² with a = y·μ − ‖μ‖²/2 (R, C, m) give the statistics of the current
        parameters Θ_t (history), the E-step's sets and labels, and the M-step's Σ q and Σ q y.
        ``pool``: the threads of :func:`_hard_pass_compiled`, or None for torch's operations.
        """
        points = extended[:, :-1]  # ``extended``: the centred points and a column of ones
        n, n_features = points.shape
        n_clusters, restarts = self.n_clusters, centres.shape[0]
        device, dtype = points.device, points.dtype
        chunk = max(MIN_CHUNK_POINTS, CHUNK_ELEMENTS // (restarts * n_clusters))
        bounds = [(lo, min(lo + chunk, n)) for lo in range(0, n, chunk)]
        centres = centres.clone()
        total_norm = norms.sum()
        nearest_total = sum(affinities(points[lo:hi], centres).max(1).values.sum(-1) for lo, hi in bounds)
        sigma2 = ((total_norm - 2 * nearest_total) / (n * n_features)).clamp_min(floor)  # eq. 12 at the seeds
        labels = torch.zeros(restarts, n, dtype=torch.long, device=device)
        c_prime = self._truncation()
        hard = c_prime == 1  # one cluster per point (k-means, lazy-k-means): eq. 13 and 17 apply
        compiled = pool is not None  # the pass by _hard_pass_compiled on ``pool`` threads
        # The chunk's scores and responsibilities are written into blocks allocated once: a fresh
        # 2 MiB tensor per chunk comes from mmap and pays its page faults on first touch, which
        # costs as much as the matrix product that fills it (1.6 ms each, one thread).
        scores_block = torch.empty(
            _padded_rows(restarts * n_clusters, device) * chunk, dtype=dtype, device=device
        )
        soft_block = None if hard else torch.empty_like(scores_block)
        if compiled:  # a scores block per pool thread; the new labels, maxima and held scores
            score_blocks = [
                scores_block,
                *(torch.empty_like(scores_block) for _ in range(min(pool, len(bounds)) - 1)),
            ]
            new_labels = torch.empty(restarts * n, dtype=torch.long, device=device)  # copied into ``labels``
            maxima_storage, held_storage = (
                torch.empty(restarts * n, dtype=dtype),
                torch.empty(restarts * n, dtype=dtype),
            )
        # ℒ (eq. 3) needs every cluster's exp(score): a pass over the scores that hard assignments
        # need for nothing else (a fifth of a Lloyd iteration at one thread, a tenth at two), left
        # out when not asked for.
        likelihood_tracked = not hard or self._tracks_likelihood()
        # The sets K of the last E-step (R, C′, n); none are stored when C′ = C > 1 (all clusters).
        # A hard assignment's set is its label: a view of the labels, written with them.
        sets = None
        if hard:
            sets = labels[:, None, :]
        elif c_prime < n_clusters:
            sets = torch.zeros(restarts, c_prime, n, dtype=torch.long, device=device)
        # Hard assignments: Σ y and the count of each cluster, kept up to date by the points that
        # move (after the first iterations few do) rather than summed anew.
        hard_sums = torch.zeros(restarts, n_clusters, n_features, dtype=dtype, device=device)
        hard_counts = torch.zeros(restarts, n_clusters, dtype=dtype, device=device)
        previous_free = torch.full((restarts,), -math.inf, dtype=dtype, device=device)
        n_iter = torch.zeros(restarts, dtype=torch.long, device=device)
        active = torch.ones(restarts, dtype=torch.bool, device=device)
        keys = HISTORY_KEYS + (HARD_HISTORY_KEYS if hard else ())
        if not likelihood_tracked:
            keys = tuple(key for key in keys if key != "log_likelihood")
        history = [{key: [] for key in keys} for _ in range(restarts)]
        for iteration in range(self.max_iter + 1):
            running = active.nonzero().squeeze(1)
            # Every restart running (always, with one): the per-chunk reads and writes of labels and
            # sets are views, not copies.
            rows = slice(None) if len(running) == restarts else running
            current, s2 = centres[running], sigma2[running]
            # [μ/σ², −‖μ‖²/(2σ²)]: against [y, 1] the scores a/σ² in one product.
            scaled = current / s2[:, None, None]
            scaled = torch.cat([scaled, -0.5 * (scaled * current).sum(-1, keepdim=True)], -1)
            score_rows = len(running) * n_clusters
            factors = score_factors(scaled)
            held_sets = None if iteration == 0 else sets
            # For hard assignments: the held assignment, copied before the pass overwrites it.
            moved_from = held_sets[rows].clone() if hard and held_sets is not None and not compiled else None
            totals = {key: torch.zeros(len(running), dtype=dtype, device=device) for key in _PASS_TOTALS}
            if c_prime > 1:  # soft responsibilities: Σ q and Σ q y summed anew each pass
                weights = torch.zeros(len(running), n_clusters, dtype=dtype, device=device)
                sums = torch.zeros(len(running), n_clusters, n_features, dtype=dtype, device=device)
            if compiled:
                before = None if iteration == 0 else labels[rows]
                after, best, held = (
                    _block(storage, (len(running), n))
                    for storage in (new_labels, maxima_storage, held_storage)
                )
                likelihoods, moves = _hard_pass_compiled(
                    factors,
                    extended,
                    bounds,
                    score_rows,
                    before,
                    after,
                    best,
                    held,
                    likelihood_tracked,
                    score_blocks,
                    pool,
                )
                # each chunk's sums, added in chunk order: the torch path's, to the bit
                for index, (lo, hi) in enumerate(bounds):
                    totals["nearest"] += best[:, lo:hi].sum(-1)
                    held_sum = held[:, lo:hi].sum(-1)
                    totals["free"] += held_sum
                    totals["held"] += held_sum
                    if likelihood_tracked:
                        totals["likelihood"] += torch.from_numpy(likelihoods[index])
                _compiled_moves(hard_sums, hard_counts, running, points, after, moves)
                labels[rows] = after
            else:
                for lo, hi in bounds:
                    block = points[lo:hi]
                    shape = (len(running), n_clusters, hi - lo)
                    # a/σ² = log p(c, y|Θ) + terms free of c
                    product = torch.mm(
                        factors, extended[lo:hi].T, out=_block(scores_block, (len(factors), hi - lo))
                    )
                    scores = product[:score_rows].view(shape)  # the padding's rows dropped
                    guess = None if iteration == 0 else labels[rows, lo:hi]
                    guessed = None if guess is None else scores.gather(1, guess[:, None])
                    best, nearest = nearest_clusters(scores, guess, guessed)
                    before = None if held_sets is None else held_sets[rows, :, lo:hi]
                    new_sets, assigned = self._e_step(scores, nearest, before, norms[lo:hi], s2)
                    # F(K_t, Θ_t) with the sets the last M-step used; at the seeding the new sets K_1.
                    if before is None:
                        held_scores = None if new_sets is None else scores.gather(1, new_sets)
                    elif hard:  # the held set is the last label, whose scores the guess gathered
                        held_scores = guessed
                    else:
                        held_scores = scores.gather(1, before)
                    chosen = None if new_sets is None or hard else scores.gather(1, new_sets)
                    labels[rows, lo:hi] = assigned  # a hard assignment's sets with them
                    if new_sets is not None and not hard:
                        sets[rows, :, lo:hi] = new_sets
                    totals["nearest"] += best.sum(-1)
                    if not likelihood_tracked:  # hard: the free energy is the held scores'
                        totals["free"] += held_scores.sum((-2, -1))
                        totals["held"] += held_scores.sum((-2, -1))
                        continue
                    # From here on the scores are overwritten: exp(a/σ² − max), the terms of eq. 3.
                    spread = _exp_(scores.sub_(best[:, None]))
                    total = spread.sum(1)
                    likelihood = (best + total.log()).sum(-1)
                    totals["likelihood"] += likelihood
                    if held_scores is None:  # every cluster held: eq. 7 is eq. 3
                        totals["free"] += likelihood
                    else:
                        totals["free"] += _log_sum_exp(held_scores, 1).sum(-1)
                    if hard:
                        totals["held"] += held_scores.sum((-2, -1))
                        continue
                    if chosen is None:  # eq. 5 over all clusters is the posterior
                        responsibilities = spread.div_(total[:, None])
                    else:  # eq. 5: normalised on the sets, zero outside them
                        responsibilities = (
                            _block(soft_block, shape).zero_().scatter_(1, new_sets, torch.softmax(chosen, 1))
                        )
                    weights += responsibilities.sum(-1)
                    sums += torch.matmul(responsibilities, block)
            if hard:
                if not compiled:
                    _move_points(hard_sums, hard_counts, running, points, moved_from, sets[rows])
                weights, sums = hard_counts[running], hard_sums[running]
            # ‖y‖²/(2σ²) cancels from q and enters the free energies as a mean over the points.
            offset = log_normaliser(n_clusters, n_features, s2) - total_norm / (2 * n * s2)
            values = {
                "free_energy": totals["free"] / n + offset,
                "log_likelihood": totals["likelihood"] / n + offset,  # not kept unless tracked
                "quantization_error": (total_norm - 2 * s2 * totals["nearest"]).clamp_min(0.0),
                "sigma2": s2,
            }
            if hard:
                objective = total_norm - 2 * s2 * totals["held"]  # J (eq. 1) of the held assignment
                values["free_energy_eq13"] = entropy_limit(n_clusters, n_features, s2)
                # J/(nD) floored as σ² is: J of a degenerate fit cancels to 0 or below (log 0, NaN)
                per_feature = (objective / (n * n_features)).clamp_min(floor)
                values["bound_eq17"] = entropy_limit(n_clusters, n_features, per_feature)
            for key in keys:
                for r, value in zip(running.tolist(), values[key].tolist(), strict=True):
                    history[r][key].append(value)
            free = values["free_energy"]
            done = (free - previous_free[running] <= self.tol) | (iteration == self.max_iter)
            active[running[done]] = False
            stepping = ~done
            if not stepping.any():
                break
            step = running[stepping]
            previous_free[step] = free[stepping]
            centres[step], sigma2[step] = _m_step(
                weights[stepping], sums[stepping], current[stepping], total_norm, n, floor
            )
            n_iter[step] += 1
        return _Fits(centres, sigma2, labels, n_iter, history)


def score_factors(scaled: torch.Tensor) -> torch.Tensor:
    """The score product's left factor: ``scaled`` (R, C, D + 1) as R·C rows, with the zero rows
    of :func:`_padded_rows` below them (their scores are computed and never read)."""
    rows = scaled.reshape(-1, scaled.shape[-1])
    padding = _padded_rows(len(rows), rows.device) - len(rows)
    return torch.cat([rows, rows.new_zeros(padding, rows.shape[1])]) if padding else rows


def _padded_rows(rows: int, device: torch.device) -> int:
    """The score product's row count: on CPU ``rows`` rounded up to a multiple of
    :data:`SCORE_ROW_MULTIPLE` (one row stays one), elsewhere ``rows``."""
    if device.type != "cpu" or rows == 1:
        return rows
    return -(-rows // SCORE_ROW_MULTIPLE) * SCORE_ROW_MULTIPLE


def _block(storage: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """A contiguous tensor of ``shape`` over the start of the flat ``storage``."""
    return storage[: math.prod(shape)].view(shape)


def _hard_pass_compiled(
    factors: torch.Tensor,
    extended: torch.Tensor,
    bounds: list[tuple[int, int]],
    score_rows: int,
    before: torch.Tensor | None,
    after: torch.Tensor,
    best: torch.Tensor,
    held: torch.Tensor,
    likelihood_tracked: bool,
    score_blocks: list[torch.Tensor],
    threads: int,
) -> tuple[list[np.ndarray] | None, list[tuple] | None]:
    """The pass of a hard E-step that holds the nearest cluster (C′ = 1) on the CPU, its chunks
    shared out to ``threads`` threads (:func:`clusterbench.methods._chunk_pool.map_chunks`), each
    thread with a block of ``score_blocks``. Per chunk the score product, then
    :func:`clusterbench.methods._hard_pass.nearest_in_chunk` writes the new labels into ``after``
    (R, n) (``before``: the held labels, None at the seeding), the maximum scores into ``best``
    and the held ones into ``held``. Returns per chunk, in chunk order, ℒ's sum (R,)
    (:func:`~clusterbench.methods._hard_pass.log_likelihood`; None untracked) and the rows of
    its points that moved (:func:`~clusterbench.methods._hard_pass.moved_rows`; None at the
    seeding).

    A chunk makes two torch calls, its product and perhaps the exponential: every torch call
    hands the GIL over, and at two threads the pool's threads waited on each other's hand-overs
    (with a dozen calls a chunk C′ = 1 took 12.8-14.3 ms an iteration on bench_kcprime's data,
    with two 10.2-13.1 ms). The views are made beforehand.
    """
    from clusterbench.methods._chunk_pool import map_chunks
    from clusterbench.methods._hard_pass import log_likelihood, moved_rows, nearest_in_chunk

    restarts = after.shape[0]
    guess = (before if before is not None else after).numpy()  # not read at the seeding
    written = after.numpy(), best.numpy(), held.numpy()
    points = extended[:, :-1].numpy()
    stops = dict(bounds)
    inputs = {lo: extended[lo:hi].T for lo, hi in bounds}
    free_blocks: queue.SimpleQueue = queue.SimpleQueue()
    for block in score_blocks:  # per chunk size: (the product's out, the scores, as NumPy)
        views = {}
        for size in {hi - lo for lo, hi in bounds}:
            product = _block(block, (len(factors), size))
            scores = product[:score_rows].view(restarts, -1, size)  # the padding's rows dropped
            views[size] = product, scores, scores.numpy()
        free_blocks.put(views)

    def chunk(lo: int) -> tuple[np.ndarray | None, tuple | None]:
        hi = stops[lo]
        views = free_blocks.get()
        try:
            product, scores, values = views[hi - lo]
            torch.mm(factors, inputs[lo], out=product)
            labels, maxima, held_scores = (array[:, lo:hi] for array in written)
            nearest_in_chunk(
                values, guess[:, lo:hi], before is not None, labels, maxima, held_scores, likelihood_tracked
            )
            likelihood = None
            if likelihood_tracked:  # the scores are now a/σ² − max, eq. 3's terms: exp in place
                _exp_(scores)
                likelihood = log_likelihood(values, maxima)
        finally:
            free_blocks.put(views)
        # The moved points' rows, gathered here in the pool: their reads wait on memory (1.3 ms
        # an iteration at one thread on bench_kcprime's data), 1.7 ms at two threads after the pass.
        moves = None if before is None else moved_rows(points[lo:hi], guess[:, lo:hi], labels)
        return likelihood, moves

    by_chunk = map_chunks(chunk, [lo for lo, _ in bounds], threads)
    likelihoods, moves = (list(field) for field in zip(*by_chunk, strict=True))
    return (likelihoods if likelihood_tracked else None), (moves if before is not None else None)


def _compiled_moves(
    sums: torch.Tensor,
    counts: torch.Tensor,
    running: torch.Tensor,
    points: torch.Tensor,
    after: torch.Tensor,
    moves: list[tuple] | None,
) -> None:
    """:func:`_move_points` for :func:`_hard_pass_compiled`, the same arithmetic in the same
    order: at the seeding (``moves`` None) every point joins its cluster in ``after`` (r, n),
    else the chunks' moved rows (:func:`clusterbench.methods._hard_pass.moved_rows`) move."""
    from clusterbench.methods._hard_pass import join_points, move_rows

    if moves is None:
        join_points(sums.numpy(), counts.numpy(), running.numpy(), points.numpy(), after.numpy())
        return
    arrays = sums.numpy(), counts.numpy(), running.numpy()
    for sign, field in ((1.0, 2), (-1.0, 3)):  # every arrival, then every departure
        for chunk_moves in moves:
            rows, restart = chunk_moves[:2]
            move_rows(*arrays, rows, restart, chunk_moves[field], sign)


def _exp_(values: torch.Tensor) -> torch.Tensor:
    """``values.exp_()``; on the CPU by NumPy where that is faster (:data:`_NUMPY_EXP`). Each is
    within an ulp of exp."""
    if values.device.type == "cpu" and _NUMPY_EXP:
        array = values.numpy()
        np.exp(array, out=array)
        return values
    return values.exp_()


def _numpy_exp_is_faster(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether NumPy's float64 exp beats torch's here: its AVX-512 loop (NumPy ≥ 2 says which
    loop it runs) on an AMD CPU. For the 2.6 million scores of a pass over bench_kcprime's data,
    one thread: on an AMD EPYC NumPy's AVX-512 loop took 1.5 ms against torch's 3.7 ms (a tenth
    of a Lloyd iteration) and its AVX2 loop 8.2 ms; on an Intel Xeon with AVX-512, 2.0 against
    torch's 1.3 ms."""
    try:
        found = np.lib.introspect.opt_func_info(func_name="^exp$", signature="float64")
        target = next(iter(found["exp"].values()))["current"]
    except (AttributeError, KeyError, StopIteration):  # NumPy < 2: no dispatch introspection
        return False
    try:
        amd = "AuthenticAMD" in cpuinfo.read_text()
    except OSError:  # not Linux: torch's
        return False
    return amd and ("AVX512" in target or target == "X86_V4")


_NUMPY_EXP = _numpy_exp_is_faster()


def _move_points(
    sums: torch.Tensor,
    counts: torch.Tensor,
    running: torch.Tensor,
    points: torch.Tensor,
    before: torch.Tensor | None,
    after: torch.Tensor,
) -> None:
    """Update Σ y (R, C, D) and counts (R, C) of hard assignments in place: the ``points``
    leave their clusters ``before`` (r, 1, m) for ``after``; with ``before`` None they all join.
    The restarts are ``running``, the rows of ``before`` and ``after``."""
    n_clusters, n_features = counts.shape[1], sums.shape[-1]
    moving = torch.ones_like(after[:, 0], dtype=torch.bool) if before is None else before[:, 0] != after[:, 0]
    restart, point = moving.nonzero(as_tuple=True)
    if len(point) == 0:
        return
    rows, ones = points.index_select(0, point), torch.ones(len(point), dtype=sums.dtype, device=sums.device)
    base = running[restart] * n_clusters
    destinations = [(base + after[restart, 0, point], 1.0)]
    if before is not None:
        destinations.append((base + before[restart, 0, point], -1.0))
    for index, sign in destinations:
        sums.view(-1, n_features).index_add_(0, index, rows, alpha=sign)
        counts.view(-1).index_add_(0, index, ones, alpha=sign)


# Per-restart sums over the points in one pass: log Σ_K p (eq. 7), log Σ_c p (eq. 3), the nearest
# and the held scores (for eq. 1 and 17), each before the terms common to all points.
_PASS_TOTALS = ("free", "likelihood", "nearest", "held")


def _m_step(
    weights: torch.Tensor, sums: torch.Tensor, centres: torch.Tensor, total_norm, n: int, floor: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 6 for R restarts from W_c = Σₙ q_c and S_c = Σₙ q_c y: centres (R, C, D) and σ² (R,).

    Σₙ Σ_c q ‖y − S_c/W_c‖² = Σₙ ‖y‖² − Σ_c ‖S_c‖²/W_c (the q of a point sum to 1). A cluster with
    W_c = 0 keeps its centre.
    """
    filled = weights > 0
    safe = torch.where(filled, weights, torch.ones_like(weights))
    new_centres = torch.where(filled[..., None], sums / safe[..., None], centres)
    explained = torch.where(filled, (sums**2).sum(-1) / safe, torch.zeros_like(weights)).sum(-1)
    sigma2 = ((total_norm - explained) / (n * centres.shape[-1])).clamp_min(floor)
    return new_centres, sigma2


def _log_sum_exp(values: torch.Tensor, dim: int) -> torch.Tensor:
    """log Σ exp over ``dim``, max shifted; a dimension of size 1 is returned as it is."""
    return values.squeeze(dim) if values.shape[dim] == 1 else torch.logsumexp(values, dim)


class KMeansCPrime(_TruncatedEM):
    """k-means-C′ (Algorithm 3): each point's C′ nearest clusters share it by eq. 5.

    Parameters
    ----------
    n_clusters : int ≥ 1, C.
    c_prime : int ≥ 1, C′ ≤ C. 1 is Lloyd's k-means with σ² tracked (Prop. 2); C is GMM EM.
    init : ``"k-means++"`` (the paper), ``"random"`` (C distinct points) or an array (C, D).
    n_local_trials : int ≥ 1 or None; k-means++ candidates per centre, the best kept. None:
        2 + ⌊ln C⌋ (scikit-learn's greedy k-means++); 1: plain D² sampling.
    n_init : int ≥ 1, restarts (batched); the highest final free energy is kept.
    max_iter : int ≥ 0, M-steps per restart. tol : float ≥ 0, stop when the free energy gains
        at most this (nats per point) in an iteration.
    track_likelihood : bool; False leaves ℒ (eq. 3) out of ``history_`` for C′ = 1 (then
        ``log_likelihood_`` is NaN), a pass over the scores that Lloyd's iteration does not make
        (a fifth of its time at one thread, a tenth at two); C′ > 1 computes it anyway.
    random_state : int, NumPy RandomState or Generator, or None; restart r uses
        :func:`~clusterbench.methods._seeding.restart_seeds`.
    device : ``"auto"``, ``"cpu"`` or ``"cuda"``.
    n_threads : torch's CPU threads during fit and predict (int ≥ 1), or None for torch's default
        (one per core). 1 by default: the kernels are small (chunks of 2 MiB), and on a busy
        machine more threads wait on each other; the harness sets it from its ``threads`` setting.

    Attributes
    ----------
    cluster_centers_ (C, D), sigma2_, labels_ (nearest centre), n_iter_, history_ (see the
    module docstring), free_energy_ (eq. 7), log_likelihood_ (eq. 3), quantization_error_
    (eq. 1), restart_free_energies_.
    """

    _params_added_later: ClassVar[dict] = {**_TruncatedEM._params_added_later, "track_likelihood": True}

    def __init__(
        self,
        n_clusters: int = 8,
        c_prime: int = 2,
        init="k-means++",
        n_local_trials: int | None = None,
        n_init: int = 1,
        max_iter: int = 300,
        tol: float = 1e-6,
        track_likelihood: bool = True,
        random_state=None,
        device: str = "auto",
        n_threads: int | None = 1,
    ):
        self.n_clusters = n_clusters
        self.c_prime = c_prime
        self.init = init
        self.n_local_trials = n_local_trials
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.track_likelihood = track_likelihood
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads

    def _truncation(self) -> int:
        return self.c_prime

    def _extra_checks(self) -> list[tuple[str, Constraint]]:
        at_most_clusters = Constraint(
            lambda v: is_int(v) and 1 <= v <= self.n_clusters,
            f"an integer between 1 and n_clusters ({self.n_clusters})",
        )
        return [("c_prime", at_most_clusters)]

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [*super()._checks(), ("track_likelihood", BOOLEAN)]

    def _tracks_likelihood(self) -> bool:
        return self.track_likelihood

    def _assigns_nearest(self) -> bool:
        return self.c_prime == 1

    def _e_step(self, scores: torch.Tensor, nearest: torch.Tensor, held: torch.Tensor | None, norms, sigma2):
        """The C′ nearest clusters (Corollary 1); labels: the nearest."""
        c_prime = self._truncation()
        if c_prime == 1:
            return nearest[:, None], nearest
        if c_prime == scores.shape[1]:
            return None, nearest
        return nearest_sets(scores, nearest, c_prime), nearest


class IsotropicGMM(_TruncatedEM):
    """EM for the isotropic, equal-prior GMM of eq. 2 (Algorithm 2): k-means-C′ with C′ = C.

    Same parameters and attributes as :class:`KMeansCPrime`, without ``c_prime`` and
    ``track_likelihood`` (EM's free energy is ℒ, which it computes anyway).
    """

    def __init__(
        self,
        n_clusters: int = 8,
        init="k-means++",
        n_local_trials: int | None = None,
        n_init: int = 1,
        max_iter: int = 300,
        tol: float = 1e-6,
        random_state=None,
        device: str = "auto",
        n_threads: int | None = 1,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_local_trials = n_local_trials
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads

    def _truncation(self) -> int:
        return self.n_clusters

    def _assigns_nearest(self) -> bool:
        return self.n_clusters == 1

    def _e_step(self, scores: torch.Tensor, nearest: torch.Tensor, held: torch.Tensor | None, norms, sigma2):
        """Every cluster holds every point (eq. 5 over all C: the posterior; with C = 1 the one
        cluster is a hard assignment's set, as for C′ = 1); labels: the nearest."""
        return (nearest[:, None] if self.n_clusters == 1 else None), nearest

"""Khatri-Rao k-means (Ciaperoni, Gionis & Mannila, "Khatri-Rao clustering").

The k centroids are not free: each is the aggregation μ_(j1..jp) = θ¹_j1 ⊕ θ²_j2 ⊕ … ⊕ θᵖ_jp of
one protocentroid from each of p small sets (eq. 5), ⊕ the elementwise sum or product, so
h1 + … + hp stored vectors describe up to h1·…·hp centroids. Like Lloyd's algorithm it alternates
assigning each point to its nearest centroid and updating the parameters; the update of one set
given the others is the closed form of Proposition 6.1, applied set after set, each update using
the sets already updated in the same iteration (Algorithm 1, lines 16–19).

Where the paper leaves a choice open, and what is done here:

- A centroid's label is its index tuple read row-major: (j1, …, jp) ↦ j1·h2·…·hp + … + jp
  (the authors' code: i·h2 + j for two sets).
- Set sizes: the two closest factors of k (§9.1), generalised to p sets as the most balanced
  factorisation of k into p factors ≥ 2. A k with no such factorisation (a prime k for p = 2) uses
  the sizes with the fewest stored vectors whose product exceeds k (ties: the smaller product),
  and only the first k index tuples are centroids — k clusters, never more. See
  :func:`protocentroid_sizes`.
- An empty protocentroid (no point assigned to any centroid that uses it) is reseeded with a
  random data point x (the authors' code; ``reseed="point"``). Its centroids x ⊕ θᵐ_j need not
  lie near the data: a sum decomposition holds only up to a shift between its sets (θ¹ + c,
  θ² − c), so centroids built on a point-sized θ¹_j sit a whole θ² away from x. On Stickfigures
  (sum, X / max X) 142 of 300 single restarts never leave that state: they reseed the same
  protocentroid at each of their 200 iterations. ``reseed="centred"`` (ours, not the paper's; sum
  only) makes it x − Σ_(m≠l) mean_j θᵐ_j, as the k-means++ seeding of §6 solves its
  protocentroids against the anchors, so that the mean of its Πh/h_l centroids is x (over every
  index tuple: with a k that does not factorise, some of them are not centroids): 4 of 300
  restarts stay stuck, and a single restart finds the planted 3 x 3 structure 13.7% of the time
  instead of 6.0% (experiment ``kr_restart_odds``). The product's freedom is a scale, not a
  shift, and no division by the other sets' means is safe (they can cancel to 0), so it keeps
  the authors' rule.
- With the product aggregator a coordinate in which all the other factors of a protocentroid's
  points are 0 leaves that coordinate of the objective constant; it keeps its value.
- Assignment: the sum needs no centroid. ‖x − Σ_l θˡ_(j_l)‖² is, up to ‖x‖², a sum of the
  products x·θˡ (one GEMM of n × (h1 + … + hp)) and of a table over the index tuples built from
  the set-pair Gram matrices, so finding the nearest of Πh centroids costs n·Πh additions and no
  factor d (:func:`assign_without_centroids`); its updates come from per-set sums of the points
  and counts of index pairs, and the movement from the protocentroids: no step of an iteration
  does k × d work. The product materialises its centroids (:func:`assign_explicit`). Both keep
  the row-major first nearest centroid on ties (the materialised GEMM can round two identical
  centroids differently; the factored sum computes them alike, so it keeps the first).
- Stopping: the squared movement of all h1·…·hp centroids, Σ‖μ_new − μ_old‖², below ``tol``
  (the authors' criterion, 1e-4), or ``max_iter`` iterations (200). The movement is computed in
  closed form from the protocentroids, so no centroid is materialised for it.
- Restarts: ``n_init`` independent initialisations trained as one batched tensor computation
  (a leading restart dimension; a converged restart leaves the batch); the one with least
  inertia is kept (§9.1: 20 restarts). Restart r is seeded on its own, so a batch gives what its
  restarts give one at a time.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from clusterbench.methods._chunk_pool import map_chunks
from clusterbench.methods._seeding import restart_seeds
from clusterbench.validation import (
    BOOLEAN,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    Constraint,
    TorchHyperparameters,
    check_enough_points,
    check_fit_input,
    check_predict_input,
    is_int,
    one_of,
    resolve_device,
    torch_threads,
)

AGGREGATORS = ("sum", "product")
INITS = ("random", "k-means++")
RESEEDS = ("point", "centred")  # centred: sum aggregator only
# Elements of one temporary (distances of a row chunk to a centroid block, or a chunk of the
# gathered other-set factors): bounds the working memory whatever n and k are; 8 MiB in float64
# measured fastest (larger temporaries fall out of cache: 2^22 took 1.8x as long).
CHUNK_ELEMENTS = 1 << 20
# memory_efficient: small temporaries (512 KiB in float64), centroids built about this many at a
# time (whole runs of the last set): the fit's memory stays near the data's own.
LEAN_CHUNK_ELEMENTS = 1 << 16
BLOCK_CENTROIDS = 256
# The sum's assignment without centroids finds each point's nearest index tuple with a compiled
# loop on the CPU (clusterbench.methods._nearest_tuple; False: torch tiles there too, as tests
# compare the two). Off the CPU it writes its (restarts × rows × centroids) values in tiles of
# TILE_ELEMENTS elements (2 MiB in float64), each reduced while it is in cache: two torch ops
# per tile, so smaller tiles pay more in dispatch than they gain in cache (on the CPU, at k = 2500
# and 10000, 2^16-element tiles took 1.2x and 1.9x as long as 2^18, one thread).
COMPILED_ON_CPU = True
TILE_ELEMENTS = 1 << 18
# Its row chunks: the n × Σh products (and the prefix sums, and the chunk's centred points) hold
# about this many elements each (2 MiB in float64), so that the default mode peaks near
# k-means with Σh centroids; the GEMM is as fast with such chunks as with larger ones.
PRODUCTS_ELEMENTS = 1 << 18
# first_min's groups: the minimum over each is taken without indices.
MIN_GROUP = 64
# k-means++ seeding with the product aggregator divides by the anchor point x₀; its coordinates
# smaller in magnitude than this fraction of the data's mean absolute value are raised to it.
DIVISOR_FLOOR = 0.1


def protocentroid_sizes(n_clusters: int, n_sets: int = 2) -> tuple[int, ...]:
    """How many protocentroids each of ``n_sets`` sets holds to describe ``n_clusters`` centroids.

    The paper's rule (§9.1): the two closest factors of k, e.g. 40 → (5, 8), 100 → (10, 10); for
    p sets, the factorisation of k into p factors ≥ 2 with the least sum (the most balanced).
    When k has none (k prime for p = 2; the authors' code raises), the sizes with the least sum
    whose product exceeds k and whose first k index tuples (row-major, the ones the estimator
    uses) still use every protocentroid, ties broken by the smaller product: 7 → (2, 4),
    13 → (3, 5). Where no sizes ≥ 2 can (k ≤ 2^(p−1): the first k tuples never reach the first
    set's second vector), sets of one vector are allowed: 2 → (1, 2). A never-used vector would
    be reseeded as "empty" at every iteration and the fit would never converge. Sizes ascend.
    ``n_sets=1`` is plain k-means: (k,).
    """
    if n_sets == 1:
        return (n_clusters,)
    exact = [f for f in _factorisations(n_clusters, n_sets, smallest=2) if math.prod(f) == n_clusters]
    if exact:
        return min(exact, key=sum)
    # Sizes ≥ 2 by increasing sum, then sizes ≥ 1; (1, …, 1, k), of sum k + p − 1, always qualifies.
    for smallest in (2, 1):
        for total in range(smallest * n_sets, n_clusters + n_sets):
            fitting = [
                sizes
                for sizes in _tuples_with_sum(total, n_sets, smallest)
                if math.prod(sizes) >= n_clusters and _first_tuples_use_all(sizes, n_clusters)
            ]
            if fitting:
                return min(fitting, key=math.prod)
    raise AssertionError("unreachable: (1, …, 1, k) qualifies")


def _tuples_with_sum(total: int, parts: int, smallest: int) -> list[tuple[int, ...]]:
    """Non-decreasing tuples of ``parts`` integers ≥ ``smallest`` that sum to ``total``."""
    if parts == 1:
        return [(total,)] if total >= smallest else []
    return [
        (first, *rest)
        for first in range(smallest, total // parts + 1)
        for rest in _tuples_with_sum(total - first, parts - 1, first)
    ]


def _first_tuples_use_all(sizes: tuple[int, ...], n_clusters: int) -> bool:
    """Whether the first ``n_clusters`` row-major index tuples over ``sizes`` use every index of
    every set: set j's last index first appears at tuple (h_j − 1)·Π_{m>j} h_m."""
    return all((size - 1) * math.prod(sizes[j + 1 :]) < n_clusters for j, size in enumerate(sizes))


def _factorisations(n: int, parts: int, smallest: int) -> list[tuple[int, ...]]:
    """Non-decreasing tuples of ``parts`` integers ≥ ``smallest`` whose product is ``n``."""
    if parts == 1:
        return [(n,)] if n >= smallest else []
    found = []
    factor = smallest
    while factor**parts <= n:
        if n % factor == 0:
            found += [(factor, *rest) for rest in _factorisations(n // factor, parts - 1, factor)]
        factor += 1
    return found


def centroid_layout(n_clusters: int, n_sets: int, h: Sequence[int] | None) -> tuple[tuple[int, ...], int]:
    """(set sizes, number of centroids used): ``h`` and all Πh of its tuples when given, else
    :func:`protocentroid_sizes` of k and p with the first k tuples."""
    if h is not None:
        sizes = tuple(int(v) for v in h)
        return sizes, math.prod(sizes)
    return protocentroid_sizes(int(n_clusters), int(n_sets)), int(n_clusters)


def _valid_sizes(h) -> bool:
    return h is None or (isinstance(h, Sequence) and len(h) >= 1 and all(is_int(v) and v >= 1 for v in h))


def _valid_init(init) -> bool:
    """A name in INITS, or p ≥ 1 two-dimensional arrays (a list, an ndarray or a tensor of them)."""
    if isinstance(init, str):
        return init in INITS
    try:
        return len(init) >= 1 and all((t.ndim if hasattr(t, "ndim") else np.ndim(t)) == 2 for t in init)
    except (TypeError, ValueError):  # None, a number, ragged rows
        return False


def protocentroid_budget(n_clusters: int, n_sets: int = 2) -> int:
    """h1 + … + hp for k clusters: the centroid count of the paper's baseline "k-means (h1 + h2)"."""
    return sum(protocentroid_sizes(int(n_clusters), int(n_sets)))


def _combine(a: torch.Tensor, b: torch.Tensor, aggregator: str) -> torch.Tensor:
    """a ⊕ b, elementwise (broadcasting)."""
    return a + b if aggregator == "sum" else a * b


def aggregate(protocentroids: Sequence[torch.Tensor], aggregator: str) -> torch.Tensor:
    """All centroids θ¹_j1 ⊕ … ⊕ θᵖ_jp (eq. 5), row-major in (j1, …, jp).

    ``protocentroids``: p tensors (..., h_l, d) with the same leading dims; returns (..., Πh, d).
    """
    combined = protocentroids[0]
    for theta in protocentroids[1:]:
        combined = _combine(combined[..., :, None, :], theta[..., None, :, :], aggregator).flatten(-3, -2)
    return combined


def centroid_movement(
    new: Sequence[torch.Tensor], old: Sequence[torch.Tensor], aggregator: str
) -> torch.Tensor:
    """Σ over all Πh centroids of ‖μ_new − μ_old‖², per restart, from the protocentroids alone.

    Sum: μ_new − μ_old = Σ_l Δ_l[j_l], whose squared norm summed over all index tuples is
    Σ_l (K/h_l) Σ_j ‖Δ_lj‖² + Σ_(l≠m) (K/(h_l h_m)) ⟨Σ_j Δ_lj, Σ_j Δ_mj⟩ with K = Πh.
    Product, per coordinate: Σ (Π_l a_l − Π_l b_l)² = Π_l Σ_j a² − 2 Π_l Σ_j ab + Π_l Σ_j b².
    Tensors are (R, h_l, d); returns (R,). Computed in float64: in float32 the product's three
    terms cancel (a true movement of 1e-6 came out as 6e-3, one of 1e-4 as 0).
    """
    new, old = [t.double() for t in new], [t.double() for t in old]
    if aggregator == "sum":
        n_combinations = math.prod(theta.shape[-2] for theta in new)
        deltas = [a - b for a, b in zip(new, old, strict=True)]
        sums = [delta.sum(-2) for delta in deltas]
        squares = sum(n_combinations / delta.shape[-2] * (delta**2).sum((-2, -1)) for delta in deltas)
        cross = sum(
            n_combinations / (deltas[a].shape[-2] * deltas[b].shape[-2]) * (sums[a] * sums[b]).sum(-1)
            for a in range(len(deltas))
            for b in range(len(deltas))
            if a != b
        )
        return squares + cross
    a2 = math.prod((a**2).sum(-2) for a in new)
    ab = math.prod((a * b).sum(-2) for a, b in zip(new, old, strict=True))
    b2 = math.prod((b**2).sum(-2) for b in old)
    return (a2 - 2 * ab + b2).sum(-1).clamp_min(0.0)


@dataclass
class _Restarts:
    """The state of R restarts trained together: protocentroids (R, h_l, d) per set."""

    protocentroids: list[torch.Tensor]
    labels: torch.Tensor  # (R, n) flat centroid index of each point
    inertia: torch.Tensor  # (R,) at the last assignment
    n_iter: torch.Tensor  # (R,) iterations run
    history: list[list[float]]  # per restart: the inertia after each of its assignment steps


class KhatriRaoCentroids(TorchHyperparameters):
    """``predict``, ``cluster_centers_``, the centroid count and the layout's checks of an
    estimator fitted to a Khatri-Rao layout: it has ``n_clusters``, ``n_sets``, ``h``, an
    ``aggregator`` and ``n_threads``, and fit sets ``protocentroids_`` (one (h_l, d) array per
    set), ``n_centroids_``, ``n_features_in_`` and ``device_``."""

    # Whether predict builds the centroids blockwise; KhatriRaoKMeans's hyperparameter overrides it.
    memory_efficient = False

    def _clusters_asked(self) -> tuple[str, int] | None:
        """What the centroid count comes from and the count, where set sizes h decide it (Πh;
        n_clusters is ignored then), for the runner to check against a dataset before a sweep
        fits; None otherwise (n_clusters, or an h that _validate_params refuses)."""
        if self.h is None or not _valid_sizes(self.h):
            return None
        _, n_centroids = centroid_layout(self.n_clusters, self.n_sets, self.h)
        return f"h {list(self.h)} gives {n_centroids} centroids", n_centroids

    def _checks(self) -> list[tuple[str, Constraint]]:
        """The layout's checks, first of every Khatri-Rao estimator's."""
        return [
            ("n_clusters", POSITIVE_INT),
            ("n_sets", POSITIVE_INT),
            ("h", Constraint(_valid_sizes, "null or a non-empty list of integers ≥ 1")),
            ("aggregator", one_of(AGGREGATORS)),
        ]

    def predict(self, X) -> np.ndarray:
        """The nearest of the aggregated centroids for each row of ``X``."""
        X = check_predict_input(self, X, "protocentroids_")
        with torch_threads(self.n_threads):
            points = torch.as_tensor(X, device=self.device_)
            protocentroids = [
                torch.as_tensor(t, device=self.device_, dtype=points.dtype)[None]
                for t in self.protocentroids_
            ]
            labels, _ = assign(
                points,
                centred_norms(points),
                protocentroids,
                self.aggregator,
                self.n_centroids_,
                self.memory_efficient,
            )
            return labels[0].cpu().numpy()

    @property
    def cluster_centers_(self) -> np.ndarray:
        """The centroids (n_centroids_, d), aggregated from ``protocentroids_`` when asked for."""
        check_is_fitted(self, "protocentroids_")
        centroids = aggregate([torch.as_tensor(t) for t in self.protocentroids_], self.aggregator)
        return centroids[: self.n_centroids_].numpy()


class KhatriRaoKMeans(KhatriRaoCentroids, ClusterMixin, BaseEstimator):
    """Khatri-Rao k-means: k centroids aggregated from p small sets of protocentroids.

    Parameters
    ----------
    n_clusters : int ≥ 1, the number of centroids k (ignored when ``h`` is given).
    n_sets : int ≥ 1, the number of protocentroid sets p (the paper's default 2; 1 is k-means).
    h : sequence of ints ≥ 1 or None; the set sizes (h1, …, hp), giving Πh centroids. None: from
        ``n_clusters`` and ``n_sets`` by :func:`protocentroid_sizes`.
    aggregator : ``"sum"`` or ``"product"`` (⊕ in eq. 5).
    init : ``"random"`` (each protocentroid a random data point, Algorithm 1), ``"k-means++"``
        (§6: Σh − p + 1 centroids sampled by k-means++ D² weighting, each protocentroid solved so
        that one centroid equals a sampled point), or a sequence of p arrays (h_l, d) (one restart).
    n_init : int ≥ 1, restarts (batched); the one with least inertia is kept. The paper: 20.
    max_iter : int ≥ 1, iterations per restart (the paper: 200).
    tol : float ≥ 0, stop a restart when its centroids' squared movement is below it (1e-4).
    reseed : ``"point"`` (an empty protocentroid becomes a random data point x: the authors' code)
        or ``"centred"`` (sum aggregator only: it becomes x − Σ_(m≠l) mean_j θᵐ_j, so that the
        mean of its centroids is x; see the module docstring).
    memory_efficient : bool. With the product aggregator (or p = 1), False materialises the k
        centroids once per iteration (the paper's time-efficient implementation) and True builds
        them block by block inside the assignment, O((n + Σh)·d) memory (Algorithm 1), summing
        its updates point by point rather than cluster by cluster. The sum aggregator of p ≥ 2
        sets builds no centroid in either mode (:func:`assign_without_centroids`, and updates
        from per-set sums): True only shrinks the assignment's row chunks. Both modes give the
        same labels.
    random_state : int, NumPy RandomState or Generator, or None; restart r uses
        :func:`~clusterbench.methods._seeding.restart_seeds`.
    device : ``"auto"``, ``"cpu"`` or ``"cuda"``.
    n_threads : torch's CPU threads during fit and predict (int ≥ 1), or None for torch's default
        (one per core). 1 by default: on the benchmark's datasets the kernels are small, and on a
        busy machine more threads wait on each other; the harness sets it from its ``threads``.

    Attributes
    ----------
    protocentroids_ : list of p arrays (h_l, d) of the kept restart.
    labels_, inertia_ (its objective, eq. 1 with the aggregated centroids), n_iter_,
    inertia_history_ (inertia after each assignment step), restart_inertias_, sizes_ (h),
    n_params_ (stored numbers: Σh·d), cluster_centers_ (the k centroids, built on access).
    """

    # Records written before ``reseed`` and ``n_threads`` existed (fitted at the harness's one
    # thread) are named without them (runner.named_by).
    _params_added_later: ClassVar[dict] = {"reseed": "point", "n_threads": 1}

    def __init__(
        self,
        n_clusters: int = 8,
        n_sets: int = 2,
        h: Sequence[int] | None = None,
        aggregator: str = "sum",
        init="random",
        n_init: int = 20,
        max_iter: int = 200,
        tol: float = 1e-4,
        reseed: str = "point",
        memory_efficient: bool = False,
        random_state=None,
        device: str = "auto",
        n_threads: int | None = 1,
    ):
        self.n_clusters = n_clusters
        self.n_sets = n_sets
        self.h = h
        self.aggregator = aggregator
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.reseed = reseed
        self.memory_efficient = memory_efficient
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads

    # ------------------------------------------------------------------ public API

    def fit(self, X, y=None):
        self._validate_params()
        X = check_fit_input(self, X)
        self.sizes_, self.n_centroids_ = centroid_layout(self.n_clusters, self.n_sets, self.h)
        check_enough_points(self, len(X), self.n_centroids_)
        with torch_threads(self.n_threads):
            self.device_ = resolve_device(self.device)
            points = torch.as_tensor(X, device=self.device_)
            explicit = not isinstance(self.init, str)
            self.restart_seeds_ = restart_seeds(self.random_state, 1 if explicit else self.n_init)
            generators = [torch.Generator(device=self.device_).manual_seed(s) for s in self.restart_seeds_]
            start = self._explicit_init(points) if explicit else self._initial(points, generators)
            state = self._lloyd(points, start, generators)
            kept = int(torch.argmin(state.inertia))
            self.restart_inertias_ = state.inertia.cpu().numpy()
            self.protocentroids_ = [theta[kept].cpu().numpy() for theta in state.protocentroids]
            self.labels_ = state.labels[kept].cpu().numpy()
            self.inertia_ = float(state.inertia[kept])
            self.n_iter_ = int(state.n_iter[kept])
            self.inertia_history_ = np.array(state.history[kept])
            self.n_params_ = sum(self.sizes_) * self.n_features_in_
            return self

    # ------------------------------------------------------------------ checks

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            *super()._checks(),
            (
                "init",
                Constraint(_valid_init, f"one of {', '.join(INITS)} or a list of (h_l, n_features) arrays"),
            ),
            ("n_init", POSITIVE_INT),
            ("max_iter", POSITIVE_INT),
            ("tol", NON_NEGATIVE_REAL),
            ("reseed", one_of(RESEEDS)),
            (
                "reseed",
                Constraint(
                    lambda v: v == "point" or self.aggregator == "sum",
                    "point with the product aggregator (centred solves a sum's shift)",
                ),
            ),
            ("memory_efficient", BOOLEAN),
        ]

    # ------------------------------------------------------------------ initialisation

    def _explicit_init(self, points: torch.Tensor) -> list[torch.Tensor]:
        given = [torch.as_tensor(t, dtype=points.dtype, device=points.device) for t in self.init]
        expected = [(size, points.shape[1]) for size in self.sizes_]
        if [tuple(t.shape) for t in given] != expected:
            raise ValueError(
                f"init arrays must have shapes {expected}, got {[tuple(t.shape) for t in given]}"
            )
        if not all(torch.isfinite(t).all() for t in given):
            raise ValueError("init arrays must hold finite values, got NaN or inf")
        return [t[None].clone() for t in given]

    def _initial(self, points: torch.Tensor, generators: list[torch.Generator]) -> list[torch.Tensor]:
        """(R, h_l, d) per set: random data points, or the k-means++ construction of §6."""
        n = len(points)
        if self.init == "random":
            per_restart = [
                [points[torch.randint(n, (size,), generator=g, device=points.device)] for size in self.sizes_]
                for g in generators
            ]
        else:
            per_restart = [self._kmeans_plusplus(points, g) for g in generators]
        return [
            torch.stack([sets[set_index] for sets in per_restart]) for set_index in range(len(self.sizes_))
        ]

    def _kmeans_plusplus(self, points: torch.Tensor, generator: torch.Generator) -> list[torch.Tensor]:
        """§6's seeding: sample centroids far apart and solve protocentroids that reproduce them.

        The anchor centroid (0, …, 0) is a uniformly drawn point x₀: θ¹₀ = x₀ and the other sets'
        anchors are the aggregator's identity (0 for sum, 1 for product). Every further
        protocentroid θˡ_j (j ≥ 1) is solved so that the centroid (0, …, j, …, 0) equals a point
        drawn with probability ∝ its squared distance to the points drawn so far (k-means++):
        θˡ_j = x − Σ_(m≠l) θᵐ₀ or x ⊘ Π_(m≠l) θᵐ₀. That samples Σh − p + 1 centroids. The other
        sets' anchors combine to x₀ for every set after the first and to the identity for the
        first; the product divides by x₀ with its near-zero coordinates floored (``DIVISOR_FLOOR``,
        kept above 0 so that all-zero data gives no 0/0).
        """
        n = len(points)
        identity = 0.0 if self.aggregator == "sum" else 1.0
        first = points[torch.randint(n, (1,), generator=generator, device=points.device)][0]
        sets = [
            torch.full((size, points.shape[1]), identity, dtype=points.dtype, device=points.device)
            for size in self.sizes_
        ]
        sets[0][0] = first
        nearest = ((points - first) ** 2).sum(1)
        floor = (DIVISOR_FLOOR * points.abs().mean()).clamp_min(torch.finfo(points.dtype).tiny)
        divisor = torch.where(first < 0, -1.0, 1.0).to(first.dtype) * first.abs().clamp_min(floor)
        for set_index, size in enumerate(self.sizes_):
            for j in range(1, size):
                weights = nearest if float(nearest.sum()) > 0 else torch.ones_like(nearest)
                x = points[torch.multinomial(weights, 1, generator=generator)][0]
                if set_index == 0:
                    sets[0][j] = x
                elif self.aggregator == "sum":
                    sets[set_index][j] = x - first
                else:
                    sets[set_index][j] = x / divisor
                nearest = torch.minimum(nearest, ((points - x) ** 2).sum(1))
        return sets

    # ------------------------------------------------------------------ Lloyd-style iterations

    def _lloyd(self, points: torch.Tensor, start: list[torch.Tensor], generators) -> _Restarts:
        """Algorithm 1 for R restarts at once; a restart leaves the batch once it has converged.

        Each iteration computes only the restarts still running, so the batch costs the sum of
        their iterations, not R times the slowest one's.
        """
        frame = centred_norms(points)
        protocentroids = [theta.clone() for theta in start]
        restarts = start[0].shape[0]
        active = torch.ones(restarts, dtype=torch.bool, device=points.device)
        n_iter = torch.zeros(restarts, dtype=torch.long, device=points.device)
        history = [[] for _ in range(restarts)]
        for _ in range(self.max_iter):
            running = active.nonzero().squeeze(1)
            current = [theta[running] for theta in protocentroids]
            labels, distances = assign(
                points, frame, current, self.aggregator, self.n_centroids_, self.memory_efficient
            )
            for r, inertia in zip(running.tolist(), distances.sum(1).tolist(), strict=True):
                history[r].append(inertia)
            updated = update_protocentroids(
                points,
                labels,
                current,
                self.aggregator,
                [generators[r] for r in running.tolist()],
                self.memory_efficient,
                self.reseed,
            )
            moved = centroid_movement(updated, current, self.aggregator)
            for theta, new in zip(protocentroids, updated, strict=True):
                theta[running] = new
            n_iter[running] += 1
            active[running] = moved >= self.tol
            if not active.any():
                break
        labels, distances = assign(
            points, frame, protocentroids, self.aggregator, self.n_centroids_, self.memory_efficient
        )
        inertia = distances.sum(1)
        for r, value in enumerate(inertia.tolist()):
            history[r].append(value)
        return _Restarts(protocentroids, labels, inertia, n_iter, history)


def centred_norms(points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the points' mean m, ‖x − m‖² of each point): the frame :func:`assign` measures in.

    Distances do not change under a shift, but the GEMM identity ‖x‖² − 2x·μ + ‖μ‖² loses to
    cancellation whatever the data's offset from the origin adds to ‖x‖² (float32 pixels in
    0..255 already misplace points), so it is applied to x − m and μ − m (scikit-learn's KMeans
    centres its data for the same reason). Computed in row chunks: no (n, d) temporary.
    """
    mean = points.mean(0)
    rows = max(1, LEAN_CHUNK_ELEMENTS // points.shape[1])  # a one-off pass: small chunks cost nothing
    norms = torch.cat([((points[lo : lo + rows] - mean) ** 2).sum(1) for lo in range(0, len(points), rows)])
    return mean, norms


def assign(points, frame, protocentroids, aggregator, n_centroids, memory_efficient=False):
    """Nearest of the first ``n_centroids`` centroids for every point and restart.

    ``points`` (n, d) with ``frame`` = :func:`centred_norms` of them; ``protocentroids`` p tensors
    (R, h_l, d). Returns labels (R, n) (row-major index tuples, the first nearest centroid on a
    tie) and squared distances (R, n). The sum aggregator of p ≥ 2 sets needs no centroid:
    :func:`assign_without_centroids`; the product builds them, :func:`assign_explicit` (measured
    faster than its factored form, see docs/benchmarks.md), as does p = 1 (plain k-means: the
    protocentroids are the centroids).
    """
    if aggregator == "sum" and len(protocentroids) > 1:
        return assign_without_centroids(points, frame, protocentroids, n_centroids, memory_efficient)
    return assign_explicit(points, frame, protocentroids, aggregator, n_centroids, memory_efficient)


def assign_explicit(points, frame, protocentroids, aggregator, n_centroids, memory_efficient=False):
    """:func:`assign` with the centroids materialised (all at once, or in blocks when
    memory-efficient): distances by the GEMM identity ‖x − m‖² − 2(x − m)·(μ − m) + ‖μ − m‖², in
    row chunks so that no temporary exceeds ``CHUNK_ELEMENTS`` (``LEAN_CHUNK_ELEMENTS`` when
    memory-efficient); the running minimum keeps the first nearest centroid.
    """
    mean, norms = frame
    restarts, n = protocentroids[0].shape[0], len(points)
    best = torch.full((restarts, n), math.inf, dtype=points.dtype, device=points.device)
    labels = torch.zeros((restarts, n), dtype=torch.long, device=points.device)
    for start, centroids in _centroid_blocks(protocentroids, aggregator, n_centroids, memory_efficient):
        centroids = centroids - mean
        squared = (centroids**2).sum(-1)[:, None, :]
        budget = LEAN_CHUNK_ELEMENTS if memory_efficient else CHUNK_ELEMENTS
        rows = max(1, budget // (restarts * centroids.shape[1]))
        for lo in range(0, n, rows):
            chunk = (points[lo : lo + rows] - mean).expand(restarts, -1, -1)
            # ‖μ‖² − 2x·μ: the point's own ‖x‖² does not change which centroid is nearest
            value, index = first_min(torch.baddbmm(squared, chunk, centroids.transpose(1, 2), alpha=-2))
            closer = value < best[:, lo : lo + rows]
            best[:, lo : lo + rows] = torch.where(closer, value, best[:, lo : lo + rows])
            labels[:, lo : lo + rows] = torch.where(closer, index + start, labels[:, lo : lo + rows])
    return labels, (best + norms).clamp_min(0.0)


def first_min(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``values.min(-1)``: the least value and the index of its first occurrence, by a minimum
    without indices over groups of ``MIN_GROUP`` (vectorised: torch's minimum with indices costs
    about four of them), the first least group's values searched for the index."""
    size = values.shape[-1]
    group = min(size, MIN_GROUP)
    whole = size - size % group
    grouped = values[..., :whole].unflatten(-1, (whole // group, group))
    minima = grouped.amin(-1)
    chosen = minima.argmin(-1, keepdim=True)  # the first group holding the least value
    value = minima.gather(-1, chosen)[..., 0]
    within = grouped.gather(-2, chosen[..., None].expand(*chosen.shape, group))[..., 0, :]
    index = chosen[..., 0] * group + within.argmin(-1)
    if whole < size:  # the last size % group values: after every group, so only a lesser one wins
        rest, at = values[..., whole:].min(-1)
        later = rest < value
        value, index = torch.where(later, rest, value), torch.where(later, at + whole, index)
    return value, index


def assign_without_centroids(points, frame, protocentroids, n_centroids, memory_efficient=False):
    """:func:`assign` for the sum aggregator, with no centroid built.

    With θ'ˡ the sets in the centred frame (:func:`_centred_sets`, μ − m = Σ_l θ'ˡ_(j_l)),
    ‖μ − m‖² − 2(x − m)·(μ − m) = T[j1, …, jp] + Σ_l a_l[x, j_l]: the table T = Σ_l ‖θ'ˡ_(j_l)‖²
    + 2 Σ_(l<m) θ'ˡ_(j_l)·θ'ᵐ_(j_m) (:func:`_pair_table`, from the small set-pair Gram matrices)
    and a_l = −2(x − m)·θ'ˡ, the n × (h1 + … + hp) products of one GEMM. What remains is a
    minimum over the index tuples, n·Πh additions with no factor d. The value of a tuple is
    (T + a_p) + (a_1 + … + a_(p−1)): per prefix (j1, …, j_(p−1)) the minimum over the last set,
    plus the prefix sum (rounding is monotone: the minimum of the sums), the first least prefix,
    and its row recomputed with the same arithmetic for the first least last index: the
    row-major first nearest tuple, as :func:`assign_explicit` keeps. On the CPU a compiled loop
    does the minimum (:func:`_nearest_compiled`), elsewhere torch tiles
    (:func:`_nearest_by_tiles`), with the same labels. The products and prefix sums of a row
    chunk hold at most ``PRODUCTS_ELEMENTS`` (``LEAN_CHUNK_ELEMENTS`` when memory-efficient), so
    both modes use O((n + Σh)·d + Πh) memory.
    """
    mean, norms = frame
    sets = _centred_sets(protocentroids, mean)
    restarts, n = sets[0].shape[0], len(points)
    sizes = [theta.shape[1] for theta in sets]
    last, prefixes = sizes[-1], math.prod(sizes[:-1])
    table = _pair_table(sets, n_centroids).reshape(restarts, prefixes, last)
    projector = torch.cat(sets, 1).mul_(-2).transpose(1, 2)  # (R, d, Σh): −2θ', an exact scaling
    budget = LEAN_CHUNK_ELEMENTS if memory_efficient else PRODUCTS_ELEMENTS
    rows = max(1, budget // max(restarts * sum(sizes), restarts * prefixes, points.shape[1]))

    def products(first: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows first..stop − 1: a_p (R, m, h_p) and the prefix sums a_1 + … + a_(p−1)
        (R, m, prefixes; 0 for p = 1)."""
        *heads, tail = torch.matmul(points[first:stop] - mean, projector).split(sizes, -1)
        return tail, _prefix_sums(heads) if heads else tail.new_zeros((*tail.shape[:2], 1))

    labels = torch.empty((restarts, n), dtype=torch.long, device=points.device)
    best = torch.empty((restarts, n), dtype=points.dtype, device=points.device)
    nearest = _nearest_compiled if points.device.type == "cpu" and COMPILED_ON_CPU else _nearest_by_tiles
    nearest(products, rows, table, labels, best)
    return labels, (best + norms).clamp_min(0.0)


def _nearest_compiled(products, rows: int, table, labels, best) -> None:
    """The nearest tuples by :func:`clusterbench.methods._nearest_tuple.nearest_in_rows`, written
    into ``labels`` and ``best``, the row chunks shared out to torch's threads by
    :func:`clusterbench.methods._chunk_pool.map_chunks` (every GEMM at one thread, so the labels
    are the same at any thread count; a problem of one chunk then runs on one thread).
    """
    from clusterbench.methods._nearest_tuple import nearest_in_rows

    table_by_last = table.transpose(1, 2).contiguous().numpy()  # (R, h_p, prefixes)

    def chunk(first: int) -> None:
        tail, head = products(first, first + rows)
        stop = first + tail.shape[1]
        written = labels[:, first:stop].numpy(), best[:, first:stop].numpy()
        nearest_in_rows(tail.numpy(), head.numpy(), table_by_last, *written)

    map_chunks(chunk, range(0, labels.shape[1], rows))


def _nearest_by_tiles(products, rows: int, table, labels, best) -> None:
    """The nearest tuples in torch operations (the path off the CPU): per row chunk, T + a_p is
    written in tiles of ``TILE_ELEMENTS`` (they stay in cache) and reduced over the last set at
    once, the prefix sums added to those minima, the first least prefix taken and its row
    recomputed for the first least last index."""
    restarts, prefixes, last = table.shape
    n = labels.shape[1]
    # Last set's index first: each tile is reduced over its leading axis, elementwise minima of
    # whole contiguous rows, instead of minima over runs of h_p values (vector tails, per-row
    # set-up): the whole assignment 5-15% faster at n = 20000, k = 2500 and 10000, 1 and 2
    # threads, float32 and float64 (CPU, interleaved A/B, labels equal).
    table_by_last = table.transpose(1, 2).contiguous()[:, :, None]  # (R, h_p, 1, prefixes)
    tile_rows = max(1, TILE_ELEMENTS // (restarts * prefixes * last))
    tile_prefixes = prefixes if tile_rows > 1 else max(1, TILE_ELEMENTS // (restarts * last))
    tile = torch.empty(
        (restarts, last, min(tile_rows, rows, n), min(tile_prefixes, prefixes)),
        dtype=best.dtype,
        device=best.device,
    )
    for lo in range(0, n, rows):
        tail, head = products(lo, lo + rows)
        m = tail.shape[1]
        tail_first = tail.transpose(1, 2).contiguous()[..., None]  # (R, h_p, m, 1)
        nearest = torch.empty((restarts, m, prefixes), dtype=best.dtype, device=best.device)
        for first in range(0, m, tile_rows):
            stop = min(m, first + tile_rows)
            for start in range(0, prefixes, tile_prefixes):
                end = min(prefixes, start + tile_prefixes)
                values = tile[:, :, : stop - first, : end - start]
                torch.add(table_by_last[..., start:end], tail_first[:, :, first:stop], out=values)
                torch.amin(values, 1, out=nearest[:, first:stop, start:end])
        nearest += head
        prefix = nearest.argmin(-1)  # (R, m): the first least prefix
        best[:, lo : lo + m] = nearest.gather(-1, prefix[..., None])[..., 0]
        row = table.gather(1, prefix[..., None].expand(-1, -1, last)) + tail
        row += head.gather(-1, prefix[..., None])
        labels[:, lo : lo + m] = prefix * last + row.argmin(-1)


def _centred_sets(protocentroids, mean) -> list[torch.Tensor]:
    """The sum's sets in the centred frame with the least cancellation: each set after the first
    shifted to mean zero and the first by the mean m of the data and the other sets' means, so
    that θ'¹_(j1) + … + θ'ᵖ_(jp) = μ_(j1…jp) − m for every index tuple (a sum is unchanged by
    a shift between its sets; the shifts keep the terms of :func:`_pair_table` small)."""
    shifts = [theta.mean(1, keepdim=True) for theta in protocentroids[1:]]
    first = protocentroids[0] - mean
    for shift in shifts:
        first = first + shift
    return [first, *(theta - shift for theta, shift in zip(protocentroids[1:], shifts, strict=True))]


def _pair_table(sets, n_centroids: int) -> torch.Tensor:
    """‖θ'¹_(j1) + … + θ'ᵖ_(jp)‖² for every index tuple, (R, Πh) row-major, from the norms and the
    set-pair Gram matrices (Πh·p² additions, no factor d); tuples past ``n_centroids`` are +inf,
    so that no point is assigned to them."""
    restarts, p = sets[0].shape[0], len(sets)
    sizes = [theta.shape[1] for theta in sets]

    def spread(tensor, axes):
        shape = [restarts] + [1] * p
        for axis in axes:
            shape[1 + axis] = sizes[axis]
        return tensor.reshape(shape)

    table = sum(spread((theta * theta).sum(-1), [a]) for a, theta in enumerate(sets))
    for a, b in itertools.combinations(range(p), 2):
        table = table + spread(2 * torch.bmm(sets[a], sets[b].transpose(1, 2)), [a, b])
    table = table.expand(restarts, *sizes).reshape(restarts, -1).clone()
    table[:, n_centroids:] = math.inf
    return table


def _prefix_sums(parts) -> torch.Tensor:
    """(R, m, h1·…·h_q) row-major sums a_1[j1] + … + a_q[jq] of ``parts`` (R, m, h_l), q ≥ 1."""
    combined = parts[0]
    for part in parts[1:]:
        combined = (combined[..., :, None] + part[..., None, :]).flatten(-2)
    return combined


def _centroid_blocks(protocentroids, aggregator, n_centroids, memory_efficient):
    """(first centroid index, centroids (R, b, d)) blocks covering the first ``n_centroids``.

    Time-efficient: all at once. Memory-efficient: whole runs of the last set, about
    ``BLOCK_CENTROIDS`` centroids per block, built from the protocentroids on the fly.
    """
    if not memory_efficient:
        yield 0, aggregate(protocentroids, aggregator)[:, :n_centroids]
        return
    last = protocentroids[-1].shape[1]
    prefixes = -(-n_centroids // last)
    per_block = max(1, BLOCK_CENTROIDS // last)
    for first in range(0, prefixes, per_block):
        heads = _prefixes(protocentroids[:-1], first, min(prefixes, first + per_block), aggregator)
        last_set = protocentroids[-1][:, None]
        block = last_set if heads is None else _combine(heads[:, :, None], last_set, aggregator)
        start = first * last
        yield start, block.flatten(1, 2)[:, : n_centroids - start]


def _prefixes(sets, first: int, stop: int, aggregator) -> torch.Tensor | None:
    """(R, stop − first, d): aggregations of ``sets`` (the first p − 1) at prefix indices first..stop − 1."""
    if not sets:
        return None
    index = torch.arange(first, stop, device=sets[0].device)
    parts = _unravel(index, [theta.shape[1] for theta in sets])
    combined = sets[0][:, parts[0]]
    for theta, part in zip(sets[1:], parts[1:], strict=True):
        combined = _combine(combined, theta[:, part], aggregator)
    return combined


def update_protocentroids(
    points, labels, protocentroids, aggregator, generators, memory_efficient=False, reseed="point"
) -> list[torch.Tensor]:
    """Proposition 6.1 for each set in turn, given the other sets' latest values (Algorithm 1, l. 16–19).

    Sum: θˡ_j = mean of (x − Σ_(m≠l) θᵐ_jm) over the points whose l-th index is j.
    Product: θˡ_j = Σ x ⊙ y / Σ y ⊙ y coordinatewise, y = ⊙_(m≠l) θᵐ_jm.
    ``points`` (n, d), ``labels`` (R, n) flat centroid indices, ``protocentroids`` p tensors
    (R, h_l, d), of the restarts still running; an empty protocentroid is reseeded from a data point
    drawn with its restart's generator, as ``reseed`` says (:class:`KhatriRaoKMeans`).

    Sum: :func:`_update_sum` (per-set sums of the points and counts of index pairs: no per-cluster
    array, O(p·n·d + Σ h_l·h_m·d) work, in either mode). Product: the sums over points depend on
    a point only through its cluster, so they are taken once per call over the Πh clusters (sums
    and counts per cluster, as Lloyd's update; O(Πh·d) memory); ``memory_efficient`` sums over
    the points instead, in chunks, set by set: O(n·d) work per set but no per-cluster array.
    """
    if aggregator == "sum":
        return _update_sum(points, labels, protocentroids, generators, reseed)
    sizes = [theta.shape[1] for theta in protocentroids]
    current = list(protocentroids)
    if memory_efficient:
        indices = _unravel(labels, sizes)
    else:
        cluster_sums, cluster_counts = _cluster_sums(points, labels, sizes)
    tiny = torch.finfo(points.dtype).tiny
    for set_index in range(len(sizes)):
        if memory_efficient:
            numerator, denominator, counts = _set_sums_by_point(points, indices, current, set_index)
        else:
            numerator, denominator, counts = _set_sums_by_cluster(
                cluster_sums, cluster_counts, current, set_index
            )
        new = torch.where(denominator > 0, numerator / denominator.clamp_min(tiny), current[set_index])
        current[set_index] = _reseed_empty(new, counts, points, generators)
    return current


def _update_sum(points, labels, protocentroids, generators, reseed) -> list[torch.Tensor]:
    """Proposition 6.1 for the sum, set after set, with no centroid and no per-cluster array.

    Over the points whose l-th index is j, Σ (x − Σ_(m≠l) θᵐ_(j_m)) = S_l[j] − Σ_(m≠l) (N_lm θᵐ)[j]:
    S_l (h_l, d) the sums of those points and N_lm (h_l, h_m) the counts of the index pairs
    (j_l, j_m). Both depend on the labels only, so they are taken once; each set then costs
    products of h_l × h_m counts with the other sets' latest values.
    """
    sizes = [theta.shape[1] for theta in protocentroids]
    restarts, d = labels.shape[0], points.shape[1]
    indices = _unravel(labels, sizes)
    point_sums, counts = [], []
    for index, size in zip(indices, sizes, strict=True):
        sums = torch.zeros((restarts, size, d), dtype=points.dtype, device=points.device)
        for r in range(restarts):
            sums[r].index_add_(0, index[r], points)
        point_sums.append(sums)
        counts.append(torch.stack([torch.bincount(row, minlength=size) for row in index]).to(points.dtype))
    pairs = {}
    for a, b in itertools.combinations(range(len(sizes)), 2):
        flat = indices[a] * sizes[b] + indices[b]
        table = torch.stack([torch.bincount(row, minlength=sizes[a] * sizes[b]) for row in flat])
        pairs[a, b] = table.reshape(restarts, sizes[a], sizes[b]).to(points.dtype)
        pairs[b, a] = pairs[a, b].transpose(1, 2)
    current = list(protocentroids)
    for a in range(len(sizes)):
        numerator = point_sums[a]
        for b in range(len(sizes)):
            if b != a:
                numerator = numerator - torch.bmm(pairs[a, b], current[b])
        new = numerator / counts[a].clamp_min(1)[..., None]
        others = [theta for b, theta in enumerate(current) if b != a] if reseed == "centred" else []
        current[a] = _reseed_empty(new, counts[a], points, generators, others)
    return current


def _cluster_sums(points, labels, sizes) -> tuple[torch.Tensor, torch.Tensor]:
    """Per restart and cluster: the sum of its points (R, h1, …, hp, d) and their count (R, h1, …, hp)."""
    restarts, total = labels.shape[0], math.prod(sizes)
    sums = torch.zeros((restarts, total, points.shape[1]), dtype=points.dtype, device=points.device)
    for r in range(restarts):
        sums[r].index_add_(0, labels[r], points)
    counts = torch.stack([torch.bincount(row, minlength=total) for row in labels]).to(points.dtype)
    return sums.reshape(restarts, *sizes, -1), counts.reshape(restarts, *sizes)


def _set_sums_by_cluster(cluster_sums, cluster_counts, current, set_index):
    """Numerator, denominator and counts of the product's update of set ``set_index``, from
    cluster sums: within a cluster the other sets' product y is one vector, so Σ x ⊙ y = S ⊙ y and
    Σ y ⊙ y = N·y ⊙ y; these are summed over the other sets' indices.
    """
    p, restarts = len(current), cluster_counts.shape[0]
    others = None
    for m, theta in enumerate(current):
        if m != set_index:
            shape = [restarts] + [1] * p + [theta.shape[2]]
            shape[1 + m] = theta.shape[1]
            view = theta.reshape(shape)
            others = view if others is None else others * view
    axes = [1 + m for m in range(p) if m != set_index]

    def over_others(tensor):
        return tensor.sum(axes) if axes else tensor

    counts = cluster_counts[..., None]
    if others is None:
        return cluster_sums, counts.expand_as(cluster_sums), cluster_counts
    return (
        over_others(cluster_sums * others),
        over_others(counts * others * others),
        over_others(cluster_counts),
    )


def _set_sums_by_point(points, indices, current, set_index):
    """Numerator, denominator and counts of the product's update of set ``set_index``, point by point."""
    restarts, n = indices[0].shape
    d, size = points.shape[1], current[set_index].shape[1]
    numerator = torch.zeros((restarts * size, d), dtype=points.dtype, device=points.device)
    denominator = torch.zeros_like(numerator)
    flat = indices[set_index] + torch.arange(restarts, device=points.device)[:, None] * size
    rows = max(1, LEAN_CHUNK_ELEMENTS // (restarts * d))
    for lo in range(0, n, rows):
        chunk = points[lo : lo + rows].expand(restarts, -1, -1)
        others = _others(current, indices, set_index, slice(lo, lo + rows))
        target = flat[:, lo : lo + rows].reshape(-1)
        factor = torch.ones_like(chunk) if others is None else others
        numerator.index_add_(0, target, (chunk * factor).reshape(-1, d))
        denominator.index_add_(0, target, (factor * factor).reshape(-1, d))
    counts = torch.bincount(flat.reshape(-1), minlength=restarts * size).reshape(restarts, size)
    shape = (restarts, size, d)
    return numerator.reshape(shape), denominator.reshape(shape), counts


def _others(current, indices, set_index, rows: slice) -> torch.Tensor | None:
    """(R, rows, d): the product of every set but ``set_index`` at the points' index tuples."""
    combined = None
    for m, theta in enumerate(current):
        if m == set_index:
            continue
        gathered = torch.gather(theta, 1, indices[m][:, rows, None].expand(-1, -1, theta.shape[2]))
        combined = gathered if combined is None else combined * gathered
    return combined


def _reseed_empty(new, counts, points, generators, others=()) -> torch.Tensor:
    """A protocentroid with no points becomes a random data point x, or, given
    the ``others`` sets (R, h_m, d) of ``reseed="centred"`` (sum), x − Σ_m mean_j θᵐ_j of its
    restart, so that the mean of its centroids is x."""
    empty = counts == 0
    if not empty.any():
        return new
    # Only when a protocentroid is empty: most iterations of most fits have none.
    offset = sum(theta.mean(1) for theta in others) if others else None
    new = new.clone()
    for r, j in empty.nonzero().tolist():
        draw = torch.randint(len(points), (1,), generator=generators[r], device=points.device)
        x = points[draw[0]]
        new[r, j] = x if offset is None else x - offset[r]
    return new


def _unravel(labels: torch.Tensor, sizes: list[int]) -> list[torch.Tensor]:
    """Flat centroid indices (any shape) → the index j_l of each set (row-major)."""
    indices = []
    rest = labels
    for size in reversed(sizes):
        indices.append(rest % size)
        rest = rest // size
    return indices[::-1]

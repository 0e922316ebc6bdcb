"""Khatri-Rao k-means and the naive two-phase baseline (Ciaperoni et al.)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from clusterbench.errors import HyperparameterError
from clusterbench.methods import KhatriRaoKMeans, KhatriRaoNaive
from clusterbench.methods._seeding import restart_seeds
from clusterbench.methods.kr_kmeans import (
    aggregate,
    assign_explicit,
    assign_without_centroids,
    centred_norms,
    centroid_movement,
    first_min,
    protocentroid_budget,
    protocentroid_sizes,
    update_protocentroids,
)
from clusterbench.validation import denormals_flushed

AGGREGATORS = ("sum", "product")


@pytest.fixture(params=["compiled", "tiles"])
def sum_path(request, monkeypatch):
    """The sum's assignment on the CPU by its compiled loop, and by the torch tiles other devices use."""
    monkeypatch.setattr("clusterbench.methods.kr_kmeans.COMPILED_ON_CPU", request.param == "compiled")
    return request.param


def planted(aggregator: str, sizes=(2, 3), d=4, per_cluster=40, noise=0.05, seed=0):
    """Points around centroids that truly are θ¹_i ⊕ θ²_j; labels are the row-major tuples."""
    rng = np.random.default_rng(seed)
    if aggregator == "sum":
        sets = [rng.normal(scale=3.0, size=(h, d)) for h in sizes]
    else:
        sets = [rng.uniform(1.0, 3.0, size=(h, d)) * rng.choice([-1, 1], size=(h, d)) for h in sizes]
    centroids = aggregate([torch.as_tensor(s) for s in sets], aggregator).numpy()
    y = np.repeat(np.arange(len(centroids)), per_cluster)
    return centroids[y] + noise * rng.standard_normal((len(y), d)), y, sets


def objective(points, labels, sets, aggregator):
    centroids = aggregate([torch.as_tensor(s) for s in sets], aggregator).numpy()
    return float(((points - centroids[labels]) ** 2).sum())


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("memory_efficient", [False, True])
def test_closed_form_update_is_the_exact_minimiser(aggregator, which, memory_efficient):
    # Fixed assignments to all 3 x 2 centroids; set `which` updated given the other (Prop. 6.1)
    # must reach the minimum a numerical optimiser finds over that set.
    rng = np.random.default_rng(1)
    points = rng.normal(size=(60, 3))
    labels = rng.permutation(np.arange(60) % 6)
    sets = [rng.normal(size=(3, 3)), rng.normal(size=(2, 3))]
    generator = [torch.Generator().manual_seed(0)]
    updated = update_protocentroids(
        torch.as_tensor(points),
        torch.as_tensor(labels)[None],
        [torch.as_tensor(s)[None] for s in sets],
        aggregator,
        generator,
        memory_efficient,
    )
    closed = [t[0].numpy() for t in updated]
    # set 0 is updated given the old set 1; set 1 given the new set 0 (Algorithm 1, l. 16-19)
    fixed = [sets[0], sets[1]] if which == 0 else [closed[0], sets[1]]
    shape = sets[which].shape

    def loss(flat):
        trial = list(fixed)
        trial[which] = flat.reshape(shape)
        return objective(points, labels, trial, aggregator)

    numeric = minimize(loss, rng.normal(size=sets[which].size), method="BFGS", options={"gtol": 1e-10})
    assert loss(closed[which].ravel()) == pytest.approx(numeric.fun, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(closed[which].ravel(), numeric.x, atol=1e-5)


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@pytest.mark.parametrize("memory_efficient", [False, True])
def test_inertia_never_increases(aggregator, memory_efficient):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 5))
    for seed in range(4):
        model = KhatriRaoKMeans(
            n_clusters=12,
            aggregator=aggregator,
            n_init=1,
            max_iter=60,
            tol=0.0,
            memory_efficient=memory_efficient,
            random_state=seed,
            device="cpu",
        ).fit(X)
        steps = np.diff(model.inertia_history_)
        assert len(model.inertia_history_) > 5
        assert (steps <= 1e-9 * model.inertia_history_[0]).all(), steps.max()
        assert model.inertia_ == pytest.approx(model.inertia_history_[-1])


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_one_set_is_lloyds_kmeans(aggregator):
    X, _, _ = planted("sum", sizes=(2, 2), noise=1.0, seed=3)
    start = X[[0, 50, 100, 150]]
    ours = KhatriRaoKMeans(
        n_sets=1, n_clusters=4, aggregator=aggregator, init=[start], max_iter=100, tol=0.0, device="cpu"
    ).fit(X)
    lloyd = KMeans(4, init=start, n_init=1, max_iter=100, tol=0.0, algorithm="lloyd").fit(X)
    np.testing.assert_array_equal(ours.labels_, lloyd.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, lloyd.cluster_centers_, atol=1e-10)
    assert ours.inertia_ == pytest.approx(lloyd.inertia_, rel=1e-10)


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_recovers_a_planted_khatri_rao_structure(aggregator):
    # Khatri-Rao k-means is prone to local minima (§6, "Limitations"): on these data 3-15% of the
    # random restarts find the planted solution, so 100 restarts are asked for.
    X, y, sets = planted(aggregator)
    model = KhatriRaoKMeans(h=[2, 3], aggregator=aggregator, n_init=100, random_state=0, device="cpu").fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    truth = objective(X, y, sets, aggregator)
    assert model.inertia_ <= truth  # the planted protocentroids are one feasible solution
    assert model.inertia_ == pytest.approx(truth, rel=0.05)
    assert model.n_params_ == 5 * X.shape[1]


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@pytest.mark.parametrize("n_sets, n_clusters", [(2, 12), (3, 8), (2, 7)])
def test_memory_efficient_mode_gives_the_same_fit(aggregator, n_sets, n_clusters, monkeypatch):
    # Small blocks so that the memory-efficient path really builds several centroid blocks.
    monkeypatch.setattr("clusterbench.methods.kr_kmeans.BLOCK_CENTROIDS", 3)
    X = np.random.default_rng(4).normal(size=(200, 6))
    settings = dict(n_clusters=n_clusters, n_sets=n_sets, aggregator=aggregator, n_init=3, random_state=7)
    fast = KhatriRaoKMeans(**settings, device="cpu").fit(X)
    lean = KhatriRaoKMeans(**settings, memory_efficient=True, device="cpu").fit(X)
    # the same algorithm, its sums taken per cluster or per point: equal up to rounding
    np.testing.assert_array_equal(fast.labels_, lean.labels_)
    assert fast.inertia_ == pytest.approx(lean.inertia_, rel=1e-10)
    np.testing.assert_array_equal(fast.predict(X[:20]), lean.predict(X[:20]))


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_batched_restarts_equal_the_same_restarts_one_at_a_time(aggregator):
    X = np.random.default_rng(5).normal(size=(150, 4))
    settings = dict(n_clusters=6, aggregator=aggregator, device="cpu")
    batched = KhatriRaoKMeans(**settings, n_init=4, random_state=11).fit(X)
    seeds = restart_seeds(11, 4)
    singles = [KhatriRaoKMeans(**settings, n_init=1, random_state=seed).fit(X) for seed in seeds]
    np.testing.assert_allclose(batched.restart_inertias_, [s.inertia_ for s in singles], rtol=1e-12)
    kept = singles[int(np.argmin([s.inertia_ for s in singles]))]
    np.testing.assert_array_equal(batched.labels_, kept.labels_)
    assert batched.n_iter_ == kept.n_iter_


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_a_zero_tolerance_runs_every_iteration_after_the_centroids_stop_moving(aggregator):
    # Every point on its centroid, small integers throughout: started at the planted sets, each
    # update gives them back exactly, a movement of exactly 0. tol=0 must still run max_iter (the
    # benchmarks' caps rely on it); any positive tol stops after the first iteration.
    rng = np.random.default_rng(12)
    sets = [rng.integers(1, 5, size=(h, 3)) * rng.choice([-1, 1], size=(h, 3)) for h in (2, 3)]
    centroids = aggregate([torch.as_tensor(t) for t in sets], aggregator).numpy()
    X = np.repeat(centroids, 10, axis=0).astype(np.float64)
    settings = dict(h=[2, 3], aggregator=aggregator, init=sets, max_iter=15, device="cpu")
    assert KhatriRaoKMeans(**settings, tol=0.0).fit(X).n_iter_ == 15
    assert KhatriRaoKMeans(**settings, tol=1e-12).fit(X).n_iter_ == 1


def test_the_inertia_history_ends_with_the_final_assignments_inertia():
    # one inertia per assignment: the initial one, one after each of the n_iter_ updates
    X = np.random.default_rng(2).normal(size=(300, 5))
    model = KhatriRaoKMeans(n_clusters=12, n_init=1, max_iter=3, tol=0.0, random_state=0, device="cpu").fit(X)
    assert model.n_iter_ == 3 and len(model.inertia_history_) == 4
    assert model.inertia_history_[-1] == model.inertia_
    assert model.inertia_history_[-2] > model.inertia_  # still improving: the last step counts


def test_a_reseeding_restart_keeps_drawing_from_its_own_generator_after_another_converges():
    # Restart 0 starts at the planted sets and leaves the batch after 2 iterations; restart 1 has
    # a far protocentroid that stays empty (the Stickfigures failure) and is reseeded at each of
    # its iterations: its draws, and so its final protocentroid, are those of its own seed alone.
    rng = np.random.default_rng(3)
    upper, lower = rng.normal(size=(3, 5)), 10.0 + rng.normal(size=(3, 5))
    y = np.repeat(np.arange(9), 30)
    points = torch.as_tensor(upper[y // 3] + lower[y % 3] + 0.05 * rng.standard_normal((len(y), 5)))
    converging = [torch.as_tensor(upper), torch.as_tensor(lower)]
    stuck = [torch.as_tensor(np.vstack([upper[:2], np.full((1, 5), 50.0)])), torch.as_tensor(lower)]
    model = KhatriRaoKMeans(n_clusters=9, max_iter=8)
    model.sizes_, model.n_centroids_ = (3, 3), 9

    def run(starts, seeds):
        start = [torch.stack([sets[m] for sets in starts]) for m in range(2)]
        return model._lloyd(points, start, [torch.Generator().manual_seed(s) for s in seeds])

    batched = run([converging, stuck], [5, 6])
    alone = run([stuck], [6])
    assert batched.n_iter.tolist() == [2, 8]
    torch.testing.assert_close(batched.protocentroids[0][1], alone.protocentroids[0][0], rtol=0, atol=0)


def test_predict_with_a_prime_k_never_names_an_unused_index_tuple():
    # k = 7 uses the first 7 of the (2, 4) tuples; the 8th tuple's own centroid must be predicted
    # as one of the 7, as fit labels it.
    X = np.random.default_rng(7).normal(size=(90, 3))
    model = KhatriRaoKMeans(n_clusters=7, n_init=3, random_state=0, device="cpu").fit(X)
    every = aggregate([torch.as_tensor(t) for t in model.protocentroids_], "sum").numpy()
    assert len(every) == 8
    predicted = model.predict(every)
    np.testing.assert_array_equal(predicted[:7], np.arange(7))
    assert predicted[7] < 7
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_the_memory_efficient_product_fit_builds_neither_all_centroids_nor_per_cluster_sums(monkeypatch):
    # The mode's promise, O((n + Σh)·d) memory: no (k, d) centroid array and no per-cluster sums.
    # The time-efficient mode builds both, so replacing them with failures shows which path ran.
    def refuse(*args, **kwargs):
        raise AssertionError("materialised")

    monkeypatch.setattr("clusterbench.methods.kr_kmeans.aggregate", refuse)
    monkeypatch.setattr("clusterbench.methods.kr_kmeans._cluster_sums", refuse)
    X = np.random.default_rng(4).normal(size=(100, 4))
    settings = dict(n_clusters=6, aggregator="product", n_init=2, max_iter=5, random_state=0, device="cpu")
    lean = KhatriRaoKMeans(**settings, memory_efficient=True).fit(X)
    assert lean.n_iter_ >= 1 and np.isfinite(lean.inertia_)
    with pytest.raises(AssertionError, match="materialised"):
        KhatriRaoKMeans(**settings).fit(X)


def test_same_seed_same_labels_and_restarts_differ():
    X = np.random.default_rng(6).normal(size=(120, 3))
    settings = dict(n_clusters=6, aggregator="product", n_init=5, device="cpu")
    a = KhatriRaoKMeans(**settings, random_state=3).fit(X)
    b = KhatriRaoKMeans(**settings, random_state=3).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert len(set(np.round(a.restart_inertias_, 8))) > 1


@pytest.mark.parametrize(
    "k, n_sets, sizes",
    [(40, 2, (5, 8)), (100, 2, (10, 10)), (15, 2, (3, 5)), (9, 2, (3, 3)), (8, 3, (2, 2, 2)), (6, 1, (6,))],
)
def test_set_sizes_are_the_closest_factors(k, n_sets, sizes):
    assert protocentroid_sizes(k, n_sets) == sizes


@pytest.mark.parametrize("k, sizes", [(7, (2, 4)), (13, (3, 5)), (2, (1, 2)), (3, (2, 2))])
def test_a_prime_k_uses_the_first_k_of_the_fewest_vectors(k, sizes):
    assert protocentroid_sizes(k) == sizes
    assert protocentroid_budget(k) == sum(sizes)
    X = np.random.default_rng(7).normal(size=(90, 3))
    model = KhatriRaoKMeans(n_clusters=k, n_init=3, max_iter=100, random_state=0, device="cpu").fit(X)
    assert model.labels_.max() < k and len(model.cluster_centers_) == k
    assert model.n_params_ == sum(sizes) * 3
    # Every protocentroid is used by the first k tuples, so none is reseeded forever.
    assert model.n_iter_ < 100


def factorisable(k: int, parts: int, smallest: int = 2) -> bool:
    """Whether k is a product of ``parts`` integers ≥ 2."""
    if parts == 1:
        return k >= smallest
    return any(
        k % f == 0 and factorisable(k // f, parts - 1, f) for f in range(smallest, k + 1) if f**parts <= k
    )


@pytest.mark.parametrize("n_sets, largest_k", [(2, 200), (3, 60)])
def test_fallback_sizes_are_the_fewest_vectors_then_the_smallest_product(n_sets, largest_k):
    # brute force over every tuple of sizes up to 30 (beyond any winner's sum for these k):
    # sizes ≥ 2 first, then the least sum, then the least product (31 → (4, 8), not (5, 7))
    every = list(itertools.combinations_with_replacement(range(1, 31), n_sets))
    for k in range(2, largest_k):
        qualifying = [
            sizes
            for sizes in every
            if math.prod(sizes) >= k
            and all((size - 1) * math.prod(sizes[j + 1 :]) < k for j, size in enumerate(sizes))
        ]
        if factorisable(k, n_sets):
            continue  # the closest factors, tested above
        best = min(qualifying, key=lambda sizes: (min(sizes) < 2, sum(sizes), math.prod(sizes)))
        assert protocentroid_sizes(k, n_sets) == best, k


@pytest.mark.parametrize("n_sets", [2, 3, 4])
def test_fallback_sizes_leave_no_protocentroid_unused(n_sets):
    for k in range(2, 200):
        sizes = protocentroid_sizes(k, n_sets)
        assert math.prod(sizes) >= k
        used = np.array(np.unravel_index(np.arange(k), sizes))
        assert all(len(np.unique(used[j])) == size for j, size in enumerate(sizes)), (k, sizes)


def test_movement_in_closed_form_equals_the_materialised_centroids():
    rng = torch.Generator().manual_seed(0)
    new = [torch.randn(2, h, 4, generator=rng, dtype=torch.float64) for h in (3, 2, 4)]
    old = [torch.randn(2, h, 4, generator=rng, dtype=torch.float64) for h in (3, 2, 4)]
    for aggregator in AGGREGATORS:
        direct = ((aggregate(new, aggregator) - aggregate(old, aggregator)) ** 2).sum((1, 2))
        torch.testing.assert_close(centroid_movement(new, old, aggregator), direct)


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@pytest.mark.parametrize("dtype, offset", [(np.float64, 1e8), (np.float32, 1e4)])
def test_distances_stay_exact_far_from_the_origin(aggregator, dtype, offset):
    # ‖x‖² − 2x·μ + ‖μ‖² on uncentred data cancels (float32 pixels in 0..255 are already far):
    # labels, inertia and predict must be those of the explicit differences
    X, _, _ = planted(aggregator)
    X = (X + offset).astype(dtype)
    model = KhatriRaoKMeans(h=[2, 3], aggregator=aggregator, n_init=3, random_state=0, device="cpu").fit(X)
    direct = ((X.astype(np.float64)[:, None] - model.cluster_centers_.astype(np.float64)[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(model.labels_, direct.argmin(1))
    assert model.inertia_ == pytest.approx(direct.min(1).sum(), rel=1e-4)
    np.testing.assert_array_equal(model.predict(X), model.labels_)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("sizes", [(9,), (2, 5), (7, 4), (13, 11), (3, 13), (4, 50), (3, 4, 5), (2, 3, 2, 3)])
@pytest.mark.parametrize("restarts", [1, 3])
@pytest.mark.parametrize("memory_efficient", [False, True])
def test_the_sum_assignment_without_centroids_equals_the_materialised_one(
    dtype, sizes, restarts, memory_efficient, sum_path, monkeypatch
):
    # Small tiles and row chunks, so that several row and prefix tiles are reduced and several
    # chunks go to the compiled loop; off-centre data and a k below Πh (the last tuples are no
    # centroids). Labels equal, distances equal to rounding.
    monkeypatch.setattr("clusterbench.methods.kr_kmeans.TILE_ELEMENTS", 97)
    monkeypatch.setattr("clusterbench.methods.kr_kmeans.PRODUCTS_ELEMENTS", 400 * restarts * sum(sizes))
    rng = torch.Generator().manual_seed(sum(sizes) + restarts)
    points = (3 * torch.randn(1500, 7, generator=rng, dtype=torch.float64) + 20).to(dtype)
    # distinct protocentroids: the explicit GEMM need not round two equal centroids alike
    draws = torch.stack([torch.randperm(1500, generator=rng)[: sum(sizes)] for _ in range(restarts)])
    sets = [0.5 * points[part] for part in draws.split(list(sizes), 1)]
    frame = centred_norms(points)
    for n_centroids in (math.prod(sizes), math.prod(sizes) - sizes[-1] - 1):
        if n_centroids < 1:
            continue
        expected = assign_explicit(points, frame, sets, "sum", n_centroids, memory_efficient)
        labels, distances = assign_without_centroids(points, frame, sets, n_centroids, memory_efficient)
        torch.testing.assert_close(labels, expected[0], rtol=0, atol=0)
        assert int(labels.max()) < n_centroids
        scale = float(expected[1].max())
        torch.testing.assert_close(
            distances, expected[1], rtol=0, atol=scale * (1e-5 if dtype == torch.float32 else 1e-12)
        )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("sizes", [(5, 2), (7, 4), (3, 4, 5)])
@pytest.mark.parametrize("restarts", [1, 3])
@pytest.mark.parametrize("chunk_rows", [None, 64])
def test_the_compiled_sum_assignment_gives_the_tiles_labels_on_any_thread_count(
    dtype, sizes, restarts, chunk_rows, monkeypatch
):
    # Integer points and protocentroids: many distances tie exactly, and which of them rounds
    # least depends on the GEMM's bits, so a row's products must come from the same chunks at
    # every thread count (one chunk of all 1500 rows, or chunks of 64 with a short last one).
    # The compiled path's labels and values at 1, 2 and 3 threads are the tiles' at one, bit for
    # bit; torch's thread count is given back.
    if chunk_rows is not None:
        monkeypatch.setattr("clusterbench.methods.kr_kmeans.PRODUCTS_ELEMENTS", chunk_rows * 7 * restarts)
    rng = np.random.default_rng(sum(sizes) + restarts)
    points = torch.as_tensor(rng.integers(-2, 3, (1500, 7))).to(dtype)
    sets = [torch.as_tensor(rng.integers(-1, 2, (restarts, h, 7))).to(dtype) for h in sizes]
    frame = centred_norms(points)
    n_centroids = math.prod(sizes) - 2
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        monkeypatch.setattr("clusterbench.methods.kr_kmeans.COMPILED_ON_CPU", False)
        tiles = assign_without_centroids(points, frame, sets, n_centroids)
        monkeypatch.setattr("clusterbench.methods.kr_kmeans.COMPILED_ON_CPU", True)
        for count in (1, 2, 3):
            torch.set_num_threads(count)
            labels, distances = assign_without_centroids(points, frame, sets, n_centroids)
            assert torch.get_num_threads() == count
            torch.testing.assert_close(labels, tiles[0], rtol=0, atol=0)
            torch.testing.assert_close(distances, tiles[1], rtol=0, atol=0)
    finally:
        torch.set_num_threads(threads)


def test_the_compiled_sum_assignment_threads_keep_the_callers_denormal_mode():
    # The pool's threads outlive a call and the flush-to-zero mode is per thread: made outside a
    # flush block, they must still flush inside one, as the caller's own GEMMs do. float32
    # points at 1e-20 put the products and the table among the denormals.
    rng = torch.Generator().manual_seed(0)
    points = 1e-20 * torch.randn(2000, 5, generator=rng)
    sets = [points[None, :3].clone(), points[None, 3:7].clone()]
    frame = centred_norms(points)
    threads = torch.get_num_threads()
    flushed = denormals_flushed()
    try:
        torch.set_num_threads(2)
        torch.set_flush_denormal(False)
        assign_without_centroids(points, frame, sets, 12)  # makes the pool, not flushing
        torch.set_flush_denormal(True)
        torch.set_num_threads(1)
        expected = assign_without_centroids(points, frame, sets, 12)  # the caller's thread alone
        torch.set_num_threads(2)
        labels, distances = assign_without_centroids(points, frame, sets, 12)
    finally:
        torch.set_flush_denormal(flushed)
        torch.set_num_threads(threads)
    assert float(distances.max()) < 1e-30  # the test's premise: distances among the denormals
    torch.testing.assert_close(labels, expected[0], rtol=0, atol=0)
    torch.testing.assert_close(distances, expected[1], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("sizes", [(4, 3), (3, 2, 4)])
def test_the_sum_assignment_keeps_the_first_of_tied_centroids(dtype, sizes, sum_path, monkeypatch):
    # Exact ties: integer data and protocentroids whose means are 0 (the centring then shifts
    # nothing), so every distance is exact and many points sit at equal distance from distinct
    # centroids; duplicated protocentroids tie whole rows. Both paths must keep the first nearest
    # in row-major order, as argmin over the exact distances does.
    monkeypatch.setattr("clusterbench.methods.kr_kmeans.TILE_ELEMENTS", 50)
    rng = np.random.default_rng(5)
    half = rng.integers(-3, 4, size=(200, 3))
    points = np.concatenate([half, -half])  # mean exactly 0
    sets = []
    for h in sizes:
        half_set = rng.integers(-2, 3, size=((h + 1) // 2, 3))
        theta = (
            np.concatenate([half_set, -half_set])[:h]
            if h % 2 == 0
            else np.concatenate([half_set[:-1], -half_set[:-1], 0 * half_set[-1:]])
        )
        sets.append(theta)
    sets[0][1] = sets[0][0]  # a duplicated protocentroid: centroids (1, …) tie with (0, …)
    centroids = aggregate([torch.as_tensor(t) for t in sets], "sum").numpy()
    exact = ((points[:, None] - centroids[None]) ** 2).sum(-1)
    first = exact.argmin(1)
    assert (exact == exact.min(1, keepdims=True)).sum(1).max() > 2  # ties do occur
    as_torch = torch.as_tensor(points).to(dtype)
    protocentroids = [torch.as_tensor(t).to(dtype)[None] for t in sets]
    frame = centred_norms(as_torch)
    for assign in (
        lambda: assign_without_centroids(as_torch, frame, protocentroids, len(centroids)),
        lambda: assign_explicit(as_torch, frame, protocentroids, "sum", len(centroids)),
    ):
        labels, distances = assign()
        np.testing.assert_array_equal(labels[0].numpy(), first)
        np.testing.assert_array_equal(distances[0].numpy(), exact.min(1))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("size", [1, 5, 64, 65, 127, 130, 2500])
def test_first_min_is_the_minimum_and_its_first_index(dtype, size):
    # the materialised path's arg min: grouped minima without indices, the first least group searched
    rng = torch.Generator().manual_seed(size)
    for values in (
        torch.randint(0, 4, (3, 17, size), generator=rng).to(dtype),  # many ties
        torch.randn(3, 17, size, generator=rng, dtype=dtype),
    ):
        value, index = first_min(values)
        torch.testing.assert_close(value, values.amin(-1), rtol=0, atol=0)
        first = (values == values.amin(-1, keepdim=True)).to(torch.int8).argmax(-1)  # argmax: first
        torch.testing.assert_close(index, first, rtol=0, atol=0)


@pytest.mark.parametrize("sizes", [(3, 4), (2, 2, 3)])
def test_the_memory_efficient_blocks_keep_the_first_of_tied_centroids(sizes, monkeypatch):
    # One run of the last set per block: a duplicated first-set protocentroid makes the centroids
    # (0, …) and (1, …) tie exactly (integer data, mean 0) in different blocks; the earlier wins.
    monkeypatch.setattr("clusterbench.methods.kr_kmeans.BLOCK_CENTROIDS", sizes[-1])
    rng = np.random.default_rng(8)
    half = rng.integers(-3, 4, size=(150, 3))
    points = np.concatenate([half, -half])
    sets = [rng.integers(-2, 3, size=(h, 3)) for h in sizes]
    sets[0][1] = sets[0][0]
    centroids = aggregate([torch.as_tensor(t) for t in sets], "product").numpy()
    exact = ((points[:, None] - centroids[None]) ** 2).sum(-1)
    first = exact.argmin(1)
    assert (first < len(centroids) // sizes[0]).sum() >= 20  # nearest (0, …): tied with (1, …)
    as_torch = torch.as_tensor(points, dtype=torch.float64)
    protocentroids = [torch.as_tensor(t, dtype=torch.float64)[None] for t in sets]
    labels, distances = assign_explicit(
        as_torch, centred_norms(as_torch), protocentroids, "product", len(centroids), memory_efficient=True
    )
    np.testing.assert_array_equal(labels[0].numpy(), first)
    np.testing.assert_array_equal(distances[0].numpy(), exact.min(1))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("factored", [False, True])
def test_a_point_on_a_centroid_is_at_distance_zero_not_below(dtype, factored):
    # ‖x − m‖² plus the rest rounds a little below 0 for a point on a centroid (−2e-5 in float32,
    # −7e-15 in float64 on these sets): a squared distance is clamped at 0.
    rng = torch.Generator().manual_seed(0)
    sets = [(3 * torch.randn(1, h, 5, generator=rng, dtype=torch.float64) + 7).to(dtype) for h in (3, 4)]
    points = aggregate(sets, "sum")[0]
    frame = centred_norms(points)
    if factored:
        labels, distances = assign_without_centroids(points, frame, sets, 12)
    else:
        labels, distances = assign_explicit(points, frame, sets, "sum", 12)
    assert labels[0].tolist() == list(range(12))
    assert float(distances.min()) >= 0.0
    torch.testing.assert_close(distances, torch.zeros_like(distances), rtol=0, atol=1e-3)


@pytest.mark.parametrize("sizes", [(3, 4), (2, 3, 4)])
@pytest.mark.parametrize("memory_efficient", [False, True])
def test_the_sum_update_solves_each_set_given_the_latest_others(sizes, memory_efficient):
    # Proposition 6.1 set after set, written point by point: θˡ_j = mean of x − Σ_(m≠l) θᵐ over
    # the points whose l-th index is j, with the sets before l already updated.
    rng = np.random.default_rng(6)
    points = rng.normal(size=(300, 5))
    labels = rng.integers(0, math.prod(sizes), size=300)
    sets = [rng.normal(size=(h, 5)) for h in sizes]
    tuples = np.stack(np.unravel_index(labels, sizes), 1)
    expected = [s.copy() for s in sets]
    for a, h in enumerate(sizes):
        others = sum(expected[m][tuples[:, m]] for m in range(len(sizes)) if m != a)
        for j in range(h):
            expected[a][j] = (points - others)[tuples[:, a] == j].mean(0)
    updated = update_protocentroids(
        torch.as_tensor(points),
        torch.as_tensor(labels)[None],
        [torch.as_tensor(s)[None] for s in sets],
        "sum",
        [torch.Generator().manual_seed(0)],
        torch.ones(1, dtype=torch.bool),
        memory_efficient,
    )
    for got, want in zip(updated, expected, strict=True):
        np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-12, atol=1e-12)


def test_movement_is_exact_for_float32_protocentroids():
    # the product's closed form Π Σa² − 2 Π Σab + Π Σb² cancels in float32 when the sets barely move
    rng = torch.Generator().manual_seed(0)
    old = [torch.randn(1, 10, 64, generator=rng, dtype=torch.float64) for _ in range(2)]
    for step in (1e-7, 1e-6, 1e-5):
        new = [t + step * torch.randn(t.shape, generator=rng, dtype=torch.float64) for t in old]
        as32 = [[t.float() for t in sets] for sets in (new, old)]
        exact = [[t.double() for t in sets] for sets in as32]  # the float32 values, multiplied exactly
        moved = aggregate(exact[0], "product") - aggregate(exact[1], "product")
        direct = (moved**2).sum()
        assert float(centroid_movement(*as32, "product")) == pytest.approx(float(direct), rel=1e-6)


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@pytest.mark.parametrize("scale, shift", [(1.0, 0.0), (50.0, 150.0)])
def test_kmeans_plus_plus_seeding_reproduces_the_sampled_points(aggregator, scale, shift):
    # the product's divisor floor (a fraction of the mean |x|) touches only x₀, never set 1's
    # identity divisor, whatever the data's scale
    X, _, _ = planted(aggregator)
    X = X * scale + shift
    model = KhatriRaoKMeans(h=[2, 3], aggregator=aggregator, init="k-means++")
    points = torch.as_tensor(X)
    model.sizes_ = (2, 3)
    sets = model._kmeans_plusplus(points, torch.Generator().manual_seed(0))
    centroids = aggregate([s[None] for s in sets], aggregator)[0].numpy()
    # the anchor and the first protocentroid of each run reproduce data points exactly
    for index in (0, 1, 2, 3):  # (0,0), (0,1), (0,2), (1,0)
        assert np.isclose(X, centroids[index], atol=1e-9).all(axis=1).any()
    fitted = KhatriRaoKMeans(h=[2, 3], aggregator=aggregator, init="k-means++", n_init=10, random_state=0)
    fitted.fit(X)
    assert np.isfinite(fitted.inertia_)
    zeros = KhatriRaoKMeans(h=[2, 3], aggregator=aggregator, init="k-means++", random_state=0)
    assert np.isfinite(zeros.fit(np.zeros((12, 3))).cluster_centers_).all()  # no 0/0


def test_kmeans_plus_plus_draws_each_centroid_far_from_all_the_points_drawn_before():
    # Three tight clumps at the corners of an equilateral triangle, three vectors in set 1: the D²
    # weights, updated after every draw, put one sampled point in each clump (a weighting by the
    # distance to the anchor alone would draw the same far clump twice half the time).
    rng = np.random.default_rng(10)
    corners = np.array([[0.0, 0.0], [10.0, 0.0], [5.0, 5.0 * np.sqrt(3)]])
    X = np.repeat(corners, 20, axis=0) + 1e-3 * rng.standard_normal((60, 2))
    model = KhatriRaoKMeans(h=[3, 1], aggregator="sum", init="k-means++")
    model.sizes_ = (3, 1)
    for seed in range(20):
        sets = model._kmeans_plusplus(torch.as_tensor(X), torch.Generator().manual_seed(seed))
        clumps = np.linalg.norm(sets[0].numpy()[:, None] - corners[None], axis=-1).argmin(1)
        assert sorted(clumps) == [0, 1, 2], seed


def test_product_kmeans_plus_plus_divides_a_zero_anchor_coordinate_by_the_floor_not_by_zero():
    # A coordinate that is 0 in every point is 0 in the anchor x₀: set 2's protocentroids x ⊘ x₀
    # take the floored divisor there (0 / floor = 0), never 0 / 0.
    X, _, _ = planted("product")
    X[:, 1] = 0.0
    model = KhatriRaoKMeans(h=[2, 3], aggregator="product", init="k-means++")
    model.sizes_ = (2, 3)
    sets = model._kmeans_plusplus(torch.as_tensor(X), torch.Generator().manual_seed(0))
    assert all(torch.isfinite(theta).all() for theta in sets)
    np.testing.assert_array_equal(sets[1][1:, 1].numpy(), 0.0)


@pytest.mark.parametrize("reseed", ["point", "centred"])
def test_an_empty_protocentroid_is_reseeded_from_a_drawn_point(reseed):
    # Two restarts with different protocentroids, each with one unused: θ¹_1 in restart 0, θ¹_2 in
    # restart 1. "point" makes it the point x its restart draws; "centred" solves it so that the
    # mean of its centroids θ¹_j + θ²_i, over i, is x: its own restart's set 2 counts, not another's.
    rng = np.random.default_rng(2)
    points = torch.as_tensor(rng.normal(size=(30, 3)))
    labels = torch.as_tensor(np.stack([rng.choice([0, 1, 4, 5], 30), rng.choice([0, 1, 2, 3], 30)]))
    apart = np.array([0.0, 20.0])[:, None, None]  # restart 1's protocentroids far from restart 0's
    sets = [torch.as_tensor(rng.normal(size=(2, h, 3)) + apart) for h in (3, 2)]
    generators = [torch.Generator().manual_seed(5), torch.Generator().manual_seed(6)]
    updated = update_protocentroids(points, labels, sets, "sum", generators, reseed=reseed)
    for r, (seed, empty) in enumerate([(5, 1), (6, 2)]):
        x = points[torch.randint(30, (1,), generator=torch.Generator().manual_seed(seed))[0]]
        reseeded = updated[0][r, empty]
        torch.testing.assert_close(reseeded if reseed == "point" else reseeded + sets[1][r].mean(0), x)


@pytest.mark.parametrize("memory_efficient", [False, True])
def test_a_product_coordinate_whose_other_factors_are_all_zero_keeps_its_value(memory_efficient):
    # θ² is 0 in coordinate 0, so θ¹'s coordinate 0 leaves the objective constant: its update
    # (Σ x·y / Σ y·y = 0/0) keeps the old value, while its other coordinates are solved.
    rng = np.random.default_rng(9)
    points = torch.as_tensor(rng.normal(size=(60, 3)))
    labels = torch.as_tensor(rng.permutation(np.arange(60) % 6))[None]
    first, second = rng.normal(size=(3, 3)) + 5.0, rng.normal(size=(2, 3))
    second[:, 0] = 0.0
    sets = [torch.as_tensor(first)[None], torch.as_tensor(second)[None]]
    generators = [torch.Generator().manual_seed(0)]
    updated = update_protocentroids(points, labels, sets, "product", generators, memory_efficient)
    np.testing.assert_array_equal(updated[0][0, :, 0].numpy(), first[:, 0])
    assert not np.allclose(updated[0][0, :, 1:].numpy(), first[:, 1:])


@pytest.mark.parametrize("reseed, stuck", [("point", True), ("centred", False)])
def test_a_point_sized_sum_protocentroid_stays_empty_and_a_centred_one_is_used(reseed, stuck):
    # Sum structure with a large shift in set 2 (θ² = 10 + pattern): a protocentroid reseeded to a
    # data point builds centroids about 2·10 away from every point and is never used; one solved
    # against set 2's mean lands among the points (the Stickfigures failure, made certain).
    rng = np.random.default_rng(3)
    upper, lower = rng.normal(size=(3, 5)), 10.0 + rng.normal(size=(3, 5))
    y = np.repeat(np.arange(9), 30)
    X = upper[y // 3] + lower[y % 3] + 0.05 * rng.standard_normal((len(y), 5))
    init = [np.vstack([upper[:2], np.full((1, 5), 50.0)]), lower]  # θ¹_2 far: empty at once
    model = KhatriRaoKMeans(n_clusters=9, init=init, reseed=reseed, max_iter=50, random_state=0).fit(X)
    assert (model.n_iter_ == 50) is stuck
    assert (len(np.unique(model.labels_)) == 6) is stuck
    assert model.inertia_ < 1e3 or stuck


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_naive_least_squares_factorises_structured_centroids(aggregator):
    # Phase 2 alone: centroids that have the structure, in row-major tuple order, are recovered.
    _, _, sets = planted(aggregator)
    centroids = aggregate([torch.as_tensor(s) for s in sets], aggregator)
    naive = KhatriRaoNaive(h=[2, 3], aggregator=aggregator, als_tol=1e-10)
    naive.sizes_ = (2, 3)
    fitted = naive._least_squares(centroids, seed=0)
    assert naive.reconstruction_error_ < 1e-9
    torch.testing.assert_close(aggregate(fitted, aggregator)[0], centroids)


def test_one_naive_sum_sweep_from_the_seeds_normal_start_is_the_closed_form_by_hand():
    """One sweep of the sum's least squares from the N(0, 1) start drawn by the seed's generator
    (θ¹ then θ², each (1, h, d)): θ¹_i = mean_j μ_ij − m and θ²_j = mean_i μ_ij − mean μ + m, with m
    the mean of θ²'s start, which is all of the start that survives one sweep. A uniform start, or one
    not drawn from random_state, passed every other test (their fits converge to the same centroids)."""
    centroids = torch.as_tensor(np.random.default_rng(4).normal(size=(6, 3)))
    naive = KhatriRaoNaive(h=[2, 3], aggregator="sum", als_max_iter=1)
    naive.sizes_ = (2, 3)
    fitted = naive._least_squares(centroids, seed=11)
    generator = torch.Generator().manual_seed(11)
    torch.randn((1, 2, 3), generator=generator, dtype=torch.float64)  # θ¹'s start, replaced first
    m = torch.randn((1, 3, 3), generator=generator, dtype=torch.float64)[0].mean(0)
    grid = centroids.reshape(2, 3, 3)  # μ_(j1, j2) in row-major tuple order
    torch.testing.assert_close(fitted[0][0], grid.mean(1) - m)
    torch.testing.assert_close(fitted[1][0], grid.mean(0) - centroids.mean(0) + m)
    assert naive.als_iter_ == 1


def test_naive_least_squares_stops_at_the_first_sweep_below_als_tol_and_reports_that_error():
    """Phase 2 (product) stops after the first sweep whose Σ‖μ − θ¹ ∘ θ²‖², a sum over the k
    centroids and the d coordinates, is below als_tol, and reports that error. Six unstructured
    centroids leave at best 2.9757, approached over sweeps: als_tol=3 stops after several, and as
    many sweeps less one end above it having run all of als_max_iter. A mean in place of the sum,
    a tolerance 1e4 times too loose, or one sweep fewer than als_max_iter passed every other test."""
    centroids = torch.as_tensor(np.random.default_rng(0).normal(size=(6, 3)))
    naive = KhatriRaoNaive(h=[2, 3], aggregator="product", als_tol=3.0)
    naive.sizes_ = (2, 3)
    fitted = naive._least_squares(centroids, seed=0)
    sweeps, error = naive.als_iter_, float(((aggregate(fitted, "product")[0] - centroids) ** 2).sum())
    assert naive.reconstruction_error_ == pytest.approx(error, rel=1e-12)
    assert 2.9756 < error < 3.0 and 3 < sweeps < 5000
    naive.set_params(als_max_iter=sweeps - 1)._least_squares(centroids, seed=0)
    assert naive.als_iter_ == sweeps - 1 and naive.reconstruction_error_ >= 3.0


def test_the_naive_fits_first_phase_numbers_are_scikit_learns():
    """kmeans_inertia_ and n_iter_ are those of the k-means phase, scikit-learn's KMeans with random
    init, n_init, max_iter and the seed; an n_iter_ of max_iter passed every other test."""
    X = np.random.default_rng(0).uniform(size=(300, 2))
    naive = KhatriRaoNaive(
        h=[2, 3], aggregator="sum", n_init=3, max_iter=50, als_max_iter=5, random_state=5, device="cpu"
    ).fit(X)
    kmeans = KMeans(6, init="random", n_init=3, max_iter=50, random_state=5).fit(X)
    assert naive.n_iter_ == kmeans.n_iter_ < 50
    assert naive.kmeans_inertia_ == pytest.approx(kmeans.inertia_, rel=1e-12)


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_naive_two_phase_reports_its_own_structured_fit(aggregator):
    # k-means numbers its centroids arbitrarily, so the pairing into index tuples (and with it the
    # factorisation) is the k-means order's, as in the authors' code: what the paper calls the
    # naive approach destroying the first phase's accuracy. The estimator's numbers must be those
    # of the protocentroids it reports.
    X, _, _ = planted(aggregator, noise=0.01)
    naive = KhatriRaoNaive(h=[2, 3], aggregator=aggregator, n_init=20, random_state=0, device="cpu").fit(X)
    assert naive.inertia_ == pytest.approx(objective(X, naive.labels_, naive.protocentroids_, aggregator))
    assert naive.inertia_ >= naive.kmeans_inertia_ * 0.999
    np.testing.assert_array_equal(naive.predict(X), naive.labels_)
    assert naive.n_params_ == 5 * X.shape[1]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"aggregator": "max"}, "aggregator must be one of sum, product"),
        ({"n_sets": 0}, "n_sets must be an integer ≥ 1"),
        ({"h": [3, "a"]}, "h must be null or a non-empty list"),
        ({"init": "farthest"}, "init must be one of random, k-means"),
        ({"tol": -1.0}, "tol must be a number ≥ 0"),
        ({"reseed": "farthest"}, "reseed must be one of point, centred"),
        ({"reseed": "centred", "aggregator": "product"}, "reseed must be point with the product aggregator"),
    ],
)
def test_invalid_hyperparameters_name_the_problem(params, message):
    with pytest.raises(HyperparameterError, match=message):
        KhatriRaoKMeans(**params).fit(np.zeros((10, 2)))


@pytest.mark.parametrize("estimator", [KhatriRaoKMeans, KhatriRaoNaive])
def test_more_centroids_than_points_is_a_hyperparameter_error(estimator):
    # 25 clusters as 5 x 5 centroids on 10 points (scikit-learn's own error before, for the naive one)
    message = "needs at least as many points as its 25 centroids, got 10"
    with pytest.raises(HyperparameterError, match=message):
        estimator(n_clusters=25).fit(np.arange(20.0).reshape(10, 2))


@pytest.mark.parametrize("seed", [0, 42])
@pytest.mark.parametrize("method", ["kr_kmeans", "kr_kmeans_product", "kmeans_kr", "kmeans_kr_budget"])
def test_committed_paper_records_of_r15_are_what_this_code_computes(method, seed, tmp_path):
    """Table 2's records (profile paper) were written by this code: rerunning one reproduces it."""
    from tests.helpers import assert_refit_reproduces_committed, require_cached

    require_cached("r15")
    overrides = [f"method={method}", "dataset=r15", "metrics=khatri_rao", f"seed={seed}"]
    # Inertia is a large sum, so every metric is compared relative to its size (1e-9 of it).
    assert_refit_reproduces_committed(tmp_path, "kr_table2", *overrides, atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("method", ["kr_kmeans", "kr_kmeans_centred"])
def test_committed_restart_odds_records_whose_start_ties_are_what_this_code_computes(method, tmp_path):
    """Soybean's single restarts that drew one point twice into a protocentroid set (random_state
    10, 25, 141, 162, 193, 197, 229): whole rows of centroids tie exactly, so only the first-nearest
    rule decides their labels; their committed records were refitted under it on 2026-11-26."""
    from tests.helpers import assert_refit_reproduces_committed, require_records_cpu

    require_records_cpu()
    overrides = [
        f"method={method}",
        "dataset=soybean_large",
        "metrics=khatri_rao",
        "seed=0",
        "profile=paper",
        "grids.kr_kmeans.random_state=[10,25,141,162,193,197,229]",
    ]
    refits = assert_refit_reproduces_committed(tmp_path, "kr_restart_odds", *overrides, atol=1e-12, rtol=1e-9)
    assert refits == 7


def test_the_naive_khatri_rao_k_means_phase_is_scikit_learns_random_init():
    """The naive two-phase baseline's first phase is scikit-learn's k-means with random init (the
    paper's baseline): its inertia equals KMeans(6, init="random")'s, 8.307179 here (k-means++
    gives 9.5208 on these points)."""
    X = np.random.default_rng(0).uniform(size=(300, 2))
    naive = KhatriRaoNaive(
        h=[2, 3], aggregator="sum", n_init=1, als_max_iter=5, random_state=0, device="cpu"
    ).fit(X)
    expected = KMeans(6, init="random", n_init=1, random_state=0).fit(X).inertia_
    assert naive.kmeans_inertia_ == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(8.307179, abs=1e-5)

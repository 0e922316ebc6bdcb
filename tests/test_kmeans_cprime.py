"""k-means-C′, lazy-k-means and isotropic GMM EM (Lücke & Forster), and their metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp, softmax
from sklearn.base import clone
from sklearn.cluster import KMeans

from clusterbench.data import generators
from clusterbench.errors import HyperparameterError
from clusterbench.methods import IsotropicGMM, KMeansCPrime, LazyKMeans
from clusterbench.methods._seeding import restart_seeds
from clusterbench.metrics import gmm_log_likelihood, nmi, purity, quantization_error


@pytest.fixture(scope="module")
def birch():
    """BIRCH 25 random (overlapping clusters), a stratified 20 points per cluster."""
    data = generators.birch_random(n_per_cluster=20)
    return data.X, data.y


def mixture(seed=0, n=120, d=3, k=4, spread=4.0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=spread, size=(k, d))
    y = rng.integers(k, size=n)
    return centres[y] + rng.standard_normal((n, d)), y


@pytest.mark.parametrize("c_prime", [1, 2, 3, 5, 25])
def test_free_energy_never_decreases_and_bounds_the_likelihood(birch, c_prime):
    X, _ = birch
    for seed in range(8):
        model = KMeansCPrime(25, c_prime=c_prime, init="random", tol=0.0, max_iter=60, random_state=seed).fit(
            X
        )
        free, likelihood = model.history_["free_energy"], model.history_["log_likelihood"]
        assert np.all(np.diff(free) >= -1e-10), (seed, np.diff(free).min())
        assert np.all(free <= likelihood + 1e-10)  # eq. 7 is a lower bound of eq. 3
        assert np.isfinite(free).all() and np.isfinite(likelihood).all()
        assert len(free) == model.n_iter_ + 1


def test_lazy_kmeans_free_energy_never_decreases(birch):
    X, _ = birch
    for seed in range(8):
        history = LazyKMeans(25, epsilon=0.1, init="random", tol=0.0, random_state=seed).fit(X).history_
        assert np.all(np.diff(history["free_energy"]) >= -1e-10)


@pytest.mark.parametrize("estimator", [KMeansCPrime(25, c_prime=1), LazyKMeans(25, epsilon=0.1)])
def test_eq7_eq13_and_eq17_agree_for_hard_assignments(birch, estimator):
    X, _ = birch
    history = estimator.set_params(random_state=3, tol=0.0).fit(X).history_
    assert len(history["free_energy"]) > 3
    np.testing.assert_allclose(history["free_energy_eq13"], history["free_energy"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(history["bound_eq17"], history["free_energy"], rtol=0, atol=1e-9)


def test_c_prime_one_moves_the_centres_exactly_as_lloyd(birch):
    X, _ = birch
    init = X[np.random.default_rng(1).choice(len(X), 25, replace=False)]
    ours = KMeansCPrime(25, c_prime=1, init=init, tol=0.0, max_iter=300).fit(X)
    lloyd = KMeans(25, init=init, n_init=1, algorithm="lloyd", tol=0.0, max_iter=300).fit(X)
    np.testing.assert_allclose(ours.cluster_centers_, lloyd.cluster_centers_, atol=1e-10)
    assert np.array_equal(ours.labels_, lloyd.labels_)
    assert ours.quantization_error_ == pytest.approx(lloyd.inertia_, rel=1e-12)


@pytest.mark.parametrize("n_clusters", [2, 3, 5, 7])
def test_the_score_products_padding_rows_change_nothing_but_rounding(n_clusters, monkeypatch):
    """On CPU the product's rows (restarts x clusters) are padded with zero rows to a multiple of
    four. Zero rows score 0, more than any real affinity y·μ − ‖μ‖²/2 of a point at the centred
    origin (added here), so a padding row leaking into the scores would take that point. Four
    restarts stop at different iterations, so the running rows shrink and are padded anew. The fit
    must be the unpadded one's: labels and iterations exactly, values to rounding."""
    from clusterbench.methods import kmeans_cprime

    X, _ = mixture(seed=n_clusters, n=300, d=4, k=n_clusters, spread=3.0)
    X = np.vstack([X, X.mean(0)])
    settings = dict(c_prime=min(2, n_clusters), n_init=4, random_state=1, tol=1e-9, init="random")
    padded = KMeansCPrime(n_clusters, **settings).fit(X)
    monkeypatch.setattr(kmeans_cprime, "SCORE_ROW_MULTIPLE", 1)
    plain = KMeansCPrime(n_clusters, **settings).fit(X)
    np.testing.assert_array_equal(padded.labels_, plain.labels_)
    assert padded.n_iter_ == plain.n_iter_
    np.testing.assert_allclose(padded.restart_free_energies_, plain.restart_free_energies_, rtol=1e-12)
    np.testing.assert_allclose(padded.cluster_centers_, plain.cluster_centers_, rtol=0, atol=1e-10)


def test_a_multiple_of_four_score_rows_is_not_padded(monkeypatch):
    """C = 4 with one restart: the very product of the unpadded code, so the very same fit."""
    from clusterbench.methods import kmeans_cprime

    X, _ = mixture(seed=4, n=300, d=5, k=4)
    padded = KMeansCPrime(4, c_prime=2, random_state=0).fit(X)
    monkeypatch.setattr(kmeans_cprime, "SCORE_ROW_MULTIPLE", 1)
    plain = KMeansCPrime(4, c_prime=2, random_state=0).fit(X)
    for key, values in plain.history_.items():
        np.testing.assert_array_equal(padded.history_[key], values)
    np.testing.assert_array_equal(padded.cluster_centers_, plain.cluster_centers_)


def test_leaving_the_likelihood_out_changes_nothing_else(birch):
    """track_likelihood=False skips eq. 3's pass; the fit and every other history entry stay."""
    X, _ = birch
    kept = KMeansCPrime(25, c_prime=1, n_init=2, random_state=3).fit(X)
    lean = KMeansCPrime(25, c_prime=1, n_init=2, random_state=3, track_likelihood=False).fit(X)
    assert np.array_equal(kept.labels_, lean.labels_) and kept.n_iter_ == lean.n_iter_
    np.testing.assert_array_equal(kept.cluster_centers_, lean.cluster_centers_)
    assert sorted(kept.history_) == sorted([*lean.history_, "log_likelihood"])
    for key, values in lean.history_.items():
        np.testing.assert_array_equal(values, kept.history_[key])
    assert math.isnan(lean.log_likelihood_) and kept.log_likelihood_ == pytest.approx(
        gmm_log_likelihood(X, kept), abs=1e-9
    )


@pytest.mark.parametrize("numpy_exp", [True, False])
def test_either_exp_gives_the_same_fits_and_likelihoods_to_rounding(birch, numpy_exp, monkeypatch):
    """ℒ's exp runs in NumPy's loop where that is faster and in torch's elsewhere: both within
    an ulp of exp, in place (the scores block it overwrites is a view), for hard and soft
    assignments; the soft ones' centres, made from those values, move by rounding only."""
    from clusterbench.methods import kmeans_cprime

    values = torch.linspace(-745.0, 0.0, 10001, dtype=torch.float64).reshape(1, 1, -1)
    monkeypatch.setattr(kmeans_cprime, "_NUMPY_EXP", numpy_exp)
    view = values.clone()[..., ::2]
    assert kmeans_cprime._exp_(view) is view
    expected = np.exp(values[..., ::2].numpy().astype(np.longdouble))
    np.testing.assert_array_less(np.abs(view.numpy() - expected), 1.01 * np.spacing(view.numpy()) + 1e-320)
    X, _ = birch
    for model in (KMeansCPrime(25, c_prime=1, random_state=2), IsotropicGMM(25, random_state=2, max_iter=40)):
        fitted = clone(model).fit(X)
        assert fitted.log_likelihood_ == pytest.approx(gmm_log_likelihood(X, fitted), abs=1e-10)
        monkeypatch.setattr(kmeans_cprime, "_NUMPY_EXP", not numpy_exp)
        other = clone(model).fit(X)
        monkeypatch.setattr(kmeans_cprime, "_NUMPY_EXP", numpy_exp)
        assert np.array_equal(fitted.labels_, other.labels_) and fitted.n_iter_ == other.n_iter_
        np.testing.assert_allclose(fitted.cluster_centers_, other.cluster_centers_, rtol=0, atol=1e-10)
        likelihoods = fitted.history_["log_likelihood"], other.history_["log_likelihood"]
        np.testing.assert_allclose(*likelihoods, rtol=0, atol=1e-12)


def test_numpys_exp_is_taken_only_for_its_avx512_loop_on_an_amd_cpu(tmp_path):
    from clusterbench.methods.kmeans_cprime import _numpy_exp_is_faster

    avx512 = False  # NumPy < 2 does not say which loop it runs: torch's then
    if hasattr(np.lib, "introspect"):
        found = np.lib.introspect.opt_func_info(func_name="^exp$", signature="float64")
        target = next(iter(found["exp"].values()))["current"]
        avx512 = "AVX512" in target or target == "X86_V4"
    for vendor, expected in (("AuthenticAMD", avx512), ("GenuineIntel", False)):
        (tmp_path / vendor).write_text(f"processor\t: 0\nvendor_id\t: {vendor}\n")
        assert _numpy_exp_is_faster(tmp_path / vendor) is expected, vendor
    assert _numpy_exp_is_faster(tmp_path / "absent") is False


def test_lazy_kmeans_with_epsilon_zero_is_kmeans(birch):
    X, _ = birch
    lazy = LazyKMeans(25, epsilon=0.0, random_state=5).fit(X)
    kmeans = KMeansCPrime(25, c_prime=1, random_state=5).fit(X)
    np.testing.assert_allclose(lazy.cluster_centers_, kmeans.cluster_centers_, atol=1e-12)
    np.testing.assert_allclose(lazy.history_["free_energy"], kmeans.history_["free_energy"], atol=1e-12)


def test_lazy_kmeans_keeps_a_point_unless_the_nearest_centre_is_1_plus_epsilon_closer():
    # Seeds 0 and 10: the point at 5.4 joins the centre at 10, which the first M-step moves to
    # 9.08 while the other goes to 2. The point is then 3.68 from its centre and 3.4 from the
    # other, 1.082 times closer: lazy-k-means moves it for ε = 0.05, keeps it for ε = 0.1.
    X = np.array([[0.0], [4.0], [5.4], [10.0], [10.0], [10.0], [10.0]])
    init = np.array([[0.0], [10.0]])
    labels = {
        eps: LazyKMeans(2, epsilon=eps, init=init, tol=0.0).fit(X).labels_.tolist()
        for eps in (0.0, 0.05, 0.1)
    }
    assert labels[0.0] == labels[0.05] == [0, 0, 0, 1, 1, 1, 1]
    assert labels[0.1] == [0, 0, 1, 1, 1, 1, 1]


def hand_written_lazy_kmeans(X, centres, epsilon, iterations=100):
    """Eq. 19 in numpy: the seeds' nearest-centre labels, then Lloyd's means and a move of a point
    to its nearest centre only where (1 + ε)² times its squared distance is below the held one's."""
    rows = np.arange(len(X))
    labels = ((X[:, None] - centres[None]) ** 2).sum(-1).argmin(1)
    for _ in range(iterations):
        held = [X[labels == c] for c in range(len(centres))]
        centres = np.array([p.mean(0) if len(p) else mu for p, mu in zip(held, centres, strict=True)])
        distances = ((X[:, None] - centres[None]) ** 2).sum(-1)
        nearest = distances.argmin(1)
        moves = (1 + epsilon) ** 2 * distances[rows, nearest] < distances[rows, labels]
        if not moves.any():
            break
        labels = np.where(moves, nearest, labels)
    return labels, centres


@pytest.mark.parametrize("epsilon", [0.3, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lazy_kmeans_labels_and_centres_are_eq_19_by_hand(seed, epsilon):
    """Lazy-k-means against eq. 19 written in numpy from the same seeds, on mixtures where it leaves
    4 to 20 of 120 points off their nearest centre. The one-point test above separates ε = 0.05
    from 0.1 only: (1 + 2ε) in place of (1 + ε)², or distances from the scores with σ² in place of
    2σ² (‖y‖² − y·μ + ‖μ‖²/2), passed it and every other test."""
    X, _ = mixture(seed, spread=2.0)
    model = LazyKMeans(4, epsilon=epsilon, init=X[:4], tol=0.0, device="cpu").fit(X)
    labels, centres = hand_written_lazy_kmeans(X, X[:4], epsilon)
    np.testing.assert_array_equal(model.labels_, labels)
    np.testing.assert_allclose(model.cluster_centers_, centres, atol=1e-12)
    nearest = ((X[:, None] - centres[None]) ** 2).sum(-1).argmin(1)
    assert (labels != nearest).sum() >= 4  # the lazy rule kept points where k-means would move them


def hand_written_em(X, centres, iterations):
    """Algorithm 2 in numpy from the same seeds and initial σ² (eq. 12 at the seeds)."""
    n, d = X.shape
    distances = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
    sigma2 = distances.min(1).mean() / d
    likelihoods = []
    for iteration in range(iterations + 1):
        distances = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
        log_joint = (
            -distances / (2 * sigma2) - 0.5 * d * math.log(2 * math.pi * sigma2) - math.log(len(centres))
        )
        likelihoods.append(logsumexp(log_joint, axis=1).mean())
        if iteration == iterations:
            break
        r = softmax(log_joint, axis=1)
        centres = (r.T @ X) / r.sum(0)[:, None]
        sigma2 = (r * ((X[:, None, :] - centres[None]) ** 2).sum(-1)).sum() / (n * d)
    return centres, sigma2, np.array(likelihoods)


@pytest.mark.parametrize("model", [KMeansCPrime(4, c_prime=4), IsotropicGMM(4)])
def test_c_prime_equal_to_c_is_em_for_the_isotropic_gmm(model):
    X, _ = mixture(seed=2)
    init = X[[0, 10, 20, 30]]
    iterations = 15
    fitted = model.set_params(init=init, tol=0.0, max_iter=iterations).fit(X)
    centres, sigma2, likelihoods = hand_written_em(X, init, iterations)
    np.testing.assert_allclose(fitted.cluster_centers_, centres, atol=1e-10)
    assert fitted.sigma2_ == pytest.approx(sigma2, rel=1e-10)
    np.testing.assert_allclose(fitted.history_["log_likelihood"], likelihoods, atol=1e-10)
    # With every cluster in every set the free energy is the likelihood itself.
    np.testing.assert_allclose(fitted.history_["free_energy"], fitted.history_["log_likelihood"], atol=1e-12)


def hand_written_truncated_em(X, centres, c_prime, iterations):
    """Algorithm 3 in numpy from the same seeds and initial σ²: each point's C′ nearest centres
    share it by eq. 5, the M-step of eq. 6, and F(K_t, Θ_t) of eq. 7 with the sets K_t the last
    M-step used (at t = 0 the seeds' own nearest sets)."""
    n, d = X.shape
    distances = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
    sigma2 = distances.min(1).mean() / d
    held, free = None, []
    for iteration in range(iterations + 1):
        distances = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
        log_joint = (
            -distances / (2 * sigma2) - 0.5 * d * math.log(2 * math.pi * sigma2) - math.log(len(centres))
        )
        sets = np.argsort(distances, axis=1)[:, :c_prime]
        held = sets if held is None else held
        free.append(logsumexp(np.take_along_axis(log_joint, held, 1), axis=1).mean())
        if iteration == iterations:
            break
        q = np.zeros_like(log_joint)
        np.put_along_axis(q, sets, softmax(np.take_along_axis(log_joint, sets, 1), axis=1), 1)
        centres = (q.T @ X) / q.sum(0)[:, None]
        sigma2 = (q * ((X[:, None, :] - centres[None]) ** 2).sum(-1)).sum() / (n * d)
        held = sets
    return centres, sigma2, np.array(free)


@pytest.mark.parametrize("c_prime", [2, 3])
def test_truncated_em_centres_variance_and_free_energies_are_algorithm_3_by_hand(c_prime):
    """k-means-C′ for 1 < C′ < C against Algorithm 3 in numpy. The history's free energy is
    F(K_t, Θ_t), with the sets that produced Θ_t: F(K_t+1, Θ_t), the sets the E-step has just
    chosen, also never decreases and stays below ℒ, so it survived every other test."""
    X, _ = mixture(seed=3, spread=2.0)
    init = X[[0, 10, 20, 30]]
    iterations = 12
    fitted = KMeansCPrime(4, c_prime=c_prime, init=init, tol=0.0, max_iter=iterations).fit(X)
    centres, sigma2, free = hand_written_truncated_em(X, init, c_prime, iterations)
    np.testing.assert_allclose(fitted.cluster_centers_, centres, atol=1e-10)
    assert fitted.sigma2_ == pytest.approx(sigma2, rel=1e-10)
    np.testing.assert_allclose(fitted.history_["free_energy"], free, rtol=0, atol=1e-10)
    nearest = ((X[:, None] - centres[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(fitted.labels_, nearest)


@pytest.mark.parametrize("c_prime", [1, 2])
def test_every_point_on_a_centre_floors_the_variance_and_keeps_the_fit_finite(c_prime):
    """Three distinct points, five copies each, seeded on them: the M-step's σ² is 0, floored at
    1e-10 of the data's mean per-dimension variance (module docstring). Without the floor after
    the M-step (only the seeding's) every test passed; σ² came out 0 or rounding noise."""
    X = np.repeat([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]], 5, axis=0)
    model = KMeansCPrime(3, c_prime=c_prime, init=X[[0, 5, 10]], tol=0.0, max_iter=4).fit(X)
    floor = 1e-10 * ((X - X.mean(0)) ** 2).sum(1).mean() / X.shape[1]
    assert model.sigma2_ == pytest.approx(floor, rel=1e-9)
    np.testing.assert_allclose(model.history_["sigma2"], floor, rtol=1e-9)
    for key in model.history_:
        assert np.isfinite(model.history_[key]).all(), key
    if c_prime == 1:  # eq. 17's J/(nD) is floored as σ² is: it equals eq. 13 there, not log 0
        np.testing.assert_array_equal(model.history_["bound_eq17"], model.history_["free_energy_eq13"])
    np.testing.assert_array_equal(model.labels_, np.repeat([0, 1, 2], 5))
    np.testing.assert_allclose(model.cluster_centers_, X[[0, 5, 10]], atol=1e-12)


@pytest.mark.parametrize("c_prime", [1, 2])
def test_a_cluster_that_receives_no_responsibility_keeps_its_centre(c_prime):
    """A seed at 100, far from every point, is in no point's C′ nearest: its centre stays at 100
    (the module docstring's rule; the M-step is undetermined there). S_c / W_c with W_c = 0 read
    as 0 moved it to the data's mean, and survived every other test."""
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    model = KMeansCPrime(3, c_prime=c_prime, init=np.array([[1.5], [10.5], [100.0]]), max_iter=10).fit(X)
    assert model.cluster_centers_[2, 0] == 100.0
    np.testing.assert_allclose(model.cluster_centers_[:2, 0], [1.0, 11.0], atol=1e-9)
    np.testing.assert_array_equal(model.labels_, [0, 0, 0, 1, 1, 1])


def test_a_fit_that_has_converged_stops_at_tol_zero_rather_than_running_to_max_iter():
    """Stopping is F_t − F_t−1 ≤ tol: once no point moves, the next iteration repeats the free
    energy exactly, and tol = 0 stops there. A strict < ran every fit with tol = 0 to max_iter
    (and reported n_iter_ = max_iter), which no test noticed."""
    X, _ = mixture(seed=0, spread=6.0)
    model = KMeansCPrime(4, c_prime=1, init=X[:4], tol=0.0, max_iter=300).fit(X)
    free = model.history_["free_energy"]
    assert model.n_iter_ < 30 and len(free) == model.n_iter_ + 1
    assert free[-1] == free[-2] and np.all(np.diff(free)[:-1] > 0)


def test_greedy_k_means_plus_plus_keeps_the_candidate_of_least_potential():
    """Two groups of 50 (near 0 and 10) and one outlier at 40, C = 2: after a first centre in a
    group, D² sampling draws the outlier often (1600 of the ≈ 6600 weight), but the candidate that
    lowers the potential most is in the other group. Keeping the candidate of most potential (an
    arg max for the arg min) survived every test."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(0.0, 0.5, 50), rng.normal(10.0, 0.5, 50), [40.0]])[:, None]
    for seed in range(8):
        seeds = KMeansCPrime(2, c_prime=1, n_local_trials=20, max_iter=0, random_state=seed).fit(X)
        np.testing.assert_allclose(np.sort(seeds.cluster_centers_[:, 0]), [0.0, 10.0], atol=2.0)


def test_k_means_plus_plus_draws_scikit_learns_2_plus_log_c_candidates_by_default(monkeypatch):
    """n_local_trials=None is scikit-learn's greedy k-means++, 2 + ⌊ln C⌋ D²-drawn candidates per
    centre after the first (the form that reproduces Table S1). 1 + ⌊ln C⌋ survived every test."""
    drawn, multinomial = [], torch.multinomial

    def counted(weights, trials, *args, **kwargs):
        drawn.append(trials)
        return multinomial(weights, trials, *args, **kwargs)

    monkeypatch.setattr(torch, "multinomial", counted)
    X, _ = mixture(seed=1, n=100, k=8)
    KMeansCPrime(8, c_prime=1, max_iter=0, random_state=0).fit(X)
    assert drawn == [2 + int(math.log(8))] * 7 == [4] * 7
    drawn.clear()
    KMeansCPrime(8, c_prime=1, n_local_trials=1, max_iter=0, random_state=0).fit(X)
    assert drawn == [1] * 7


@pytest.mark.parametrize("c_prime", [1, 2])
def test_predict_far_from_the_origin_repeats_the_fitted_labels(c_prime):
    # y·μ − ‖μ‖²/2 cancels at an offset of 1e8 unless the points are centred, in predict as in fit
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) + np.repeat(rng.normal(scale=3, size=(6, 3)), 50, axis=0) + 1e8
    model = KMeansCPrime(6, c_prime=c_prime, random_state=0).fit(X)
    nearest = ((X[:, None] - model.cluster_centers_[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(model.labels_, nearest)
    np.testing.assert_array_equal(model.predict(X), nearest)


def test_far_apart_clusters_give_finite_free_energies():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(loc, 1e-3, size=(30, 2)) for loc in (0.0, 1e5, -1e5)])
    for model in (KMeansCPrime(3, c_prime=2), IsotropicGMM(3), LazyKMeans(3)):
        history = model.set_params(random_state=0).fit(X).history_
        for key, values in history.items():
            assert np.isfinite(values).all(), key


def test_batched_restarts_repeat_the_single_runs_and_keep_the_highest_free_energy(birch):
    X, _ = birch
    batched = KMeansCPrime(25, c_prime=2, n_init=4, random_state=7).fit(X)
    singles = [
        KMeansCPrime(25, c_prime=2, n_init=1, random_state=seed).fit(X) for seed in restart_seeds(7, 4)
    ]
    np.testing.assert_allclose(batched.restart_free_energies_, [s.free_energy_ for s in singles], atol=1e-10)
    best = singles[int(np.argmax([s.free_energy_ for s in singles]))]
    np.testing.assert_allclose(batched.cluster_centers_, best.cluster_centers_, atol=1e-10)
    assert np.array_equal(batched.predict(X), best.labels_)


@pytest.mark.parametrize(
    "estimator",
    [lambda **kw: KMeansCPrime(25, c_prime=1, **kw), lambda **kw: LazyKMeans(25, epsilon=0.1, **kw)],
    ids=["c_prime_1", "lazy"],
)
def test_hard_assignments_batched_repeat_the_single_runs(birch, estimator):
    # Hard assignments keep their sets as a view of the labels and read them without copies while
    # every restart runs; the restarts stop at different iterations, so the batch also runs with
    # some restarts done (indexed reads and writes). Each restart must be its single run.
    X, _ = birch
    batched = estimator(n_init=5, random_state=3, init="random", tol=1e-8).fit(X)
    singles = [
        estimator(n_init=1, random_state=s, init="random", tol=1e-8).fit(X) for s in restart_seeds(3, 5)
    ]
    assert len({s.n_iter_ for s in singles}) > 1  # they do stop at different iterations
    # (a batched product rounds differently from a single one: equal to 1e-10, labels exactly)
    np.testing.assert_allclose(batched.restart_free_energies_, [s.free_energy_ for s in singles], atol=1e-10)
    best = singles[int(np.argmax([s.free_energy_ for s in singles]))]
    np.testing.assert_array_equal(batched.labels_, best.labels_)
    for key, values in best.history_.items():
        np.testing.assert_allclose(batched.history_[key], values, rtol=0, atol=1e-10)


def test_metrics_recompute_the_models_likelihood_and_quantization_error(birch):
    X, _ = birch
    model = KMeansCPrime(25, c_prime=2, random_state=0).fit(X)
    assert gmm_log_likelihood(X, model) == pytest.approx(model.log_likelihood_, abs=1e-10)
    assert quantization_error(X, model) == pytest.approx(model.quantization_error_, rel=1e-10)
    # A model without σ² (scikit-learn's KMeans) is scored with eq. 12's σ², as the paper's k-means.
    lloyd = KMeans(25, n_init=1, random_state=0).fit(X)
    sigma2 = lloyd.inertia_ / (len(X) * X.shape[1])
    expected = KMeansCPrime(25, c_prime=1, init=lloyd.cluster_centers_, max_iter=0).fit(X)
    assert expected.sigma2_ == pytest.approx(sigma2, rel=1e-9)
    assert gmm_log_likelihood(X, lloyd) == pytest.approx(expected.log_likelihood_, abs=1e-9)
    assert math.isnan(gmm_log_likelihood(X, object()))
    # Every point on a centre: eq. 12's σ² is 0 and ℒ unbounded (a math domain error before)
    duplicated = np.repeat([[0.0, 0.0], [5.0, 5.0]], 3, axis=0)
    assert gmm_log_likelihood(duplicated, KMeans(2, n_init=1, random_state=0).fit(duplicated)) == math.inf


def test_purity_and_nmi_of_a_perfect_clustering_are_one():
    y = np.repeat(np.arange(5), 7)
    relabelled = (y * 3 + 1) % 5  # the same partition under other names
    assert purity(y, relabelled) == 1.0
    assert nmi(y, relabelled) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (KMeansCPrime(3, c_prime=4), "c_prime must be an integer between 1 and n_clusters"),
        (KMeansCPrime(3, init="kmeans"), "init must be one of"),
        (LazyKMeans(3, epsilon=-0.1), "epsilon must be a number ≥ 0"),
        (IsotropicGMM(3, tol=-1.0), "tol must be a number ≥ 0"),
        (LazyKMeans(500), r"LazyKMeans n_clusters must be at most the number of points \(\d+\), got 500"),
    ],
)
def test_invalid_hyperparameters_name_the_parameter(model, match):
    with pytest.raises(HyperparameterError, match=match):
        model.fit(mixture()[0])


@pytest.mark.parametrize("method", ["kmeans_cprime", "lazy_kmeans", "gmm_em"])
def test_method_configs_run_and_record_the_papers_metrics(tmp_path, method):
    from clusterbench.runner import run_job
    from tests.helpers import compose_config

    cfg = compose_config(
        tmp_path, "dataset=birch_grid", f"method={method}", "metrics=kcprime", "profile=smoke"
    )
    [outcome] = run_job(cfg)
    scores = outcome.scores
    assert outcome.status == "ok" and scores["n_found"] == 25
    assert -7.0 < scores["free_energy"] <= scores["log_likelihood"] + 1e-9 < -5.0
    assert scores["purity"] > 0.8 and scores["quantization_error"] > 0


# The compiled hard pass (C′ = 1 on the CPU): numba loops in a thread pool in place of torch's
# operations, to the same bits.


def fits_both_ways(monkeypatch, make, X):
    """``make()`` fitted on the compiled pass, and on torch's operations at one thread (at more,
    torch splits its sums over many points between its threads, which rounds otherwise)."""
    from clusterbench.methods import kmeans_cprime

    monkeypatch.setattr(kmeans_cprime, "COMPILED_ON_CPU", True)
    compiled = make().fit(X)
    monkeypatch.setattr(kmeans_cprime, "COMPILED_ON_CPU", False)
    return compiled, make().set_params(n_threads=1).fit(X)


def assert_same_fit(compiled, torch_path):
    """Labels, centres, iterations and every history entry to the bit, ℒ to rounding: the
    compiled pass sums eq. 3's logs over groups of points (1e-15 relative)."""
    assert np.array_equal(compiled.labels_, torch_path.labels_) and compiled.n_iter_ == torch_path.n_iter_
    np.testing.assert_array_equal(compiled.cluster_centers_, torch_path.cluster_centers_)
    np.testing.assert_array_equal(compiled.restart_free_energies_, torch_path.restart_free_energies_)
    assert sorted(compiled.history_) == sorted(torch_path.history_)
    for key, values in torch_path.history_.items():
        if key == "log_likelihood":
            np.testing.assert_allclose(compiled.history_[key], values, rtol=1e-14, atol=0)
        else:
            np.testing.assert_array_equal(compiled.history_[key], values, err_msg=key)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("track_likelihood", [True, False])
def test_the_compiled_hard_pass_fits_what_torchs_operations_fit(
    birch, threads, track_likelihood, monkeypatch
):
    """Batched restarts that stop at different iterations (so the pass also runs on some of
    them, indexed) and chunks of 256 points, the least (the moves of two chunks in order), at
    one thread and in the two-thread pool."""
    from clusterbench.methods import kmeans_cprime

    X, _ = birch
    monkeypatch.setattr(kmeans_cprime, "CHUNK_ELEMENTS", 250 * 25 * 5)
    make = lambda: KMeansCPrime(  # noqa: E731
        25, c_prime=1, n_init=5, init="random", tol=1e-8, random_state=3,
        track_likelihood=track_likelihood, n_threads=threads,
    )  # fmt: skip
    compiled, torch_path = fits_both_ways(monkeypatch, make, X)
    assert_same_fit(compiled, torch_path)
    singles = [
        KMeansCPrime(25, c_prime=1, init="random", tol=1e-8, random_state=s).fit(X)
        for s in restart_seeds(3, 5)
    ]
    assert len({s.n_iter_ for s in singles}) > 1  # they do stop at different iterations
    if track_likelihood:
        assert compiled.log_likelihood_ == pytest.approx(gmm_log_likelihood(X, compiled), abs=1e-10)


def test_the_compiled_pass_gives_the_same_bits_at_one_and_two_threads(monkeypatch):
    """Every chunk's product runs at one thread in the pool, its sums are added in chunk order
    and the rest of the iteration runs at one thread: the iterations do not depend on the thread
    count (nor, at n = 3000, does the seeding, whose sums torch splits over threads from 32768
    points)."""
    from clusterbench.methods import kmeans_cprime

    X, _ = mixture(seed=8, n=3000, d=6, k=5)
    monkeypatch.setattr(kmeans_cprime, "CHUNK_ELEMENTS", 200 * 5)
    one, two = (KMeansCPrime(5, c_prime=1, n_init=3, random_state=1, n_threads=t).fit(X) for t in (1, 2))
    assert np.array_equal(one.labels_, two.labels_)
    np.testing.assert_array_equal(one.cluster_centers_, two.cluster_centers_)
    for key, values in one.history_.items():
        np.testing.assert_array_equal(two.history_[key], values, err_msg=key)


def test_the_compiled_pass_breaks_ties_as_torch_does(monkeypatch):
    """Exact ties: two equal centres (the first of them is nearest) and points halfway between two
    centres, whose held label stays while it still ties (the guess rule), on integer data."""
    X = np.array([[0.0], [0.0], [2.0], [2.0], [1.0], [1.0], [5.0], [6.0], [3.0], [1.0]])
    start = np.array([[0.0], [0.0], [2.0], [6.0]])  # centres 0 and 1 equal; 1.0 halfway 0 and 2
    make = lambda: KMeansCPrime(4, c_prime=1, init=start, max_iter=5)  # noqa: E731
    compiled, torch_path = fits_both_ways(monkeypatch, make, X)
    assert_same_fit(compiled, torch_path)
    from clusterbench.methods._hard_pass import nearest_in_chunk

    scores = np.array(
        [[[1.0, 3.0, 2.0, 5.0], [1.0, 3.0, 4.0, 5.0], [0.0, 3.0, 4.0, 1.0]]]
    )  # (1, C = 3, m = 4)
    labels, best, held = np.empty((1, 4), np.int64), np.empty((1, 4)), np.empty((1, 4))
    guess = np.array([[1, 1, 0, 2]])
    nearest_in_chunk(scores.copy(), guess, True, labels, best, held, False)
    # point 0: the guess 1 ties with 0 and stays; 1: the guess ties with 0 and 2, stays; 2: the guess
    # falls short, the first of the tied 1 and 2 wins; 3: the guess falls short, 0 and 1 tie
    np.testing.assert_array_equal(labels, [[1, 1, 1, 0]])
    np.testing.assert_array_equal(best, [[1.0, 3.0, 4.0, 5.0]])
    np.testing.assert_array_equal(held, [[1.0, 3.0, 2.0, 1.0]])
    nearest_in_chunk(scores.copy(), guess, False, labels, best, held, False)  # the seeding: no guess
    np.testing.assert_array_equal(labels, [[0, 0, 1, 0]])
    np.testing.assert_array_equal(held, best)
    shifted = scores.copy()
    nearest_in_chunk(shifted, guess, True, labels, best, held, True)
    np.testing.assert_array_equal(shifted, scores - best[:, None])


def test_only_c_prime_one_takes_the_compiled_pass(monkeypatch):
    """Lazy-k-means's E-step is not the nearest cluster, nor is C′ = 2's: they keep torch's pass."""
    from clusterbench.methods import kmeans_cprime

    def refused(*args):
        raise AssertionError("the compiled pass")

    monkeypatch.setattr(kmeans_cprime, "_hard_pass_compiled", refused)
    X, _ = mixture(seed=2)
    LazyKMeans(4, epsilon=0.1, random_state=0).fit(X)
    KMeansCPrime(4, c_prime=2, random_state=0).fit(X)
    IsotropicGMM(4, random_state=0, max_iter=5).fit(X)
    with pytest.raises(AssertionError, match="the compiled pass"):
        KMeansCPrime(4, c_prime=1, random_state=0).fit(X)

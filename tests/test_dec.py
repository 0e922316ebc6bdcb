"""DEC (clusterbench.methods.dec): Q, P, KL and its gradient against hand computations (eqs. 1-3 and 5 of
Xie et al. 2016), k-means and random seeding, the tol stopping rule, seeding, validation, the
configs of CLAM Table 1 and the runner."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

import clusterbench.methods.deep.base as dec_module
from clusterbench.errors import HyperparameterError
from clusterbench.methods import DEC
from clusterbench.methods.deep.base import kl_divergence, log_soft_assignment, target_distribution
from tests.helpers import compose_config

# CLAM Table 7: the update_interval values swept for DCEC/DEC/DEC^r.
TABLE7_UPDATE_INTERVALS = [1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 75, 100, 125, 140, 150, 200]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def blobs():
    """Three well-separated standardized blobs in 8 dimensions, 20 points each, and their labels."""
    X, y = make_blobs(60, n_features=8, centers=3, center_box=(-10, 10), random_state=0)
    return StandardScaler().fit_transform(X), y


# Two points and two centroids: z1 = (0, 0), z2 = (1, 1); mu1 = (0, 0), mu2 = (2, 0).
# Squared distances: z1 -> (0, 4), z2 -> (2, 2).
POINTS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
CENTERS = torch.tensor([[0.0, 0.0], [2.0, 0.0]], dtype=torch.float64)
# eq. 1 with alpha = 1: kernels 1/(1 + d^2) = (1, 1/5) and (1/3, 1/3).
Q = np.array([[5 / 6, 1 / 6], [1 / 2, 1 / 2]])
# eq. 3: f = (4/3, 2/3); q^2/f = (25/48, 2/48) and (3/16, 6/16), normalized per row.
P = np.array([[25 / 27, 2 / 27], [1 / 3, 2 / 3]])


def soft_assignment(x, centers, alpha):
    return log_soft_assignment(x, centers, alpha).exp()


def test_soft_assignment_is_the_student_t_kernel_of_eq_1():
    np.testing.assert_allclose(soft_assignment(POINTS, CENTERS, alpha=1.0).numpy(), Q, rtol=0, atol=1e-12)
    # alpha = 2: kernels (1 + d^2/2)^(-3/2) = (1, 3^(-3/2)) for z1 and equal ones for z2
    z1 = np.array([1.0, 3.0**-1.5])
    expected = np.array([z1 / z1.sum(), [0.5, 0.5]])
    np.testing.assert_allclose(soft_assignment(POINTS, CENTERS, alpha=2.0).numpy(), expected, atol=1e-12)
    log_q = log_soft_assignment(POINTS, CENTERS, alpha=1.0).numpy()
    np.testing.assert_allclose(log_q, np.log(Q), atol=1e-12)


def test_target_distribution_and_kl_match_eq_3_and_eq_2():
    q = torch.tensor(Q)
    np.testing.assert_allclose(target_distribution(q).numpy(), P, rtol=0, atol=1e-12)
    kl = (P * np.log(P / Q)).sum(1).mean()  # mean over the points of KL(P_i || Q_i)
    assert kl_divergence(torch.tensor(P), torch.log(q)).item() == pytest.approx(kl, abs=1e-12)
    assert kl_divergence(torch.tensor([[1.0, 0.0]]), torch.log(torch.tensor([[0.5, 0.5]]))).item() == (
        pytest.approx(math.log(2.0))  # 0 log 0 = 0
    )


def test_a_cluster_whose_q_underflowed_everywhere_gets_no_target_mass():
    # alpha = 1000 and a centroid at 200: its q is 0 at both points, so f_j = 0 (0/0 before)
    points, centers = torch.tensor([[0.0], [30.0]]), torch.tensor([[0.0], [30.0], [200.0]])
    q = soft_assignment(points, centers, alpha=1000.0)
    assert q[:, 2].sum() == 0
    np.testing.assert_array_equal(target_distribution(q).numpy(), [[1, 0, 0], [0, 1, 0]])


def test_far_from_the_origin_dec_labels_as_it_does_at_the_origin(blobs):
    """Distances are taken from the data's mean: in float32 the GEMM identity around 1e4 mislabelled
    a fifth of the points; shifted data now get the same labels, and centroids shifted as much."""
    X, _ = blobs
    near = DEC(n_clusters=3, update_interval=10, max_iter=50, random_state=0).fit(X)
    far = DEC(n_clusters=3, update_interval=10, max_iter=50, random_state=0).fit(X + 1e4)
    np.testing.assert_array_equal(far.labels_, near.labels_)
    np.testing.assert_array_equal(far.predict(X + 1e4), near.labels_)
    np.testing.assert_allclose(far.cluster_centers_ - 1e4, near.cluster_centers_, atol=1e-3)
    exact = ((X[:, None, :] - near.cluster_centers_[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(near.labels_, exact)


@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_the_centroid_gradient_is_eq_5(alpha):
    # dL/dmu_j = -(alpha+1)/alpha * sum_i (1 + |z_i - mu_j|^2/alpha)^-1 (p_ij - q_ij)(z_i - mu_j),
    # divided by n since the loss is the mean over the points
    centers = CENTERS.clone().requires_grad_()
    p = target_distribution(soft_assignment(POINTS, CENTERS, alpha))
    kl_divergence(p, log_soft_assignment(POINTS, centers, alpha)).backward()
    z, mu = POINTS.numpy(), CENTERS.numpy()
    q = soft_assignment(POINTS, CENTERS, alpha).numpy()
    diff = z[:, None, :] - mu[None, :, :]
    kernel = 1.0 / (1.0 + (diff**2).sum(-1) / alpha)
    expected = -(alpha + 1) / alpha * ((kernel * (p.numpy() - q))[:, :, None] * diff).sum(0) / len(z)
    np.testing.assert_allclose(centers.grad.numpy(), expected, rtol=0, atol=1e-12)


def test_kmeans_seeded_dec_recovers_the_blobs_and_keeps_kmeans_labels(blobs):
    X, y = blobs
    model = DEC(n_clusters=3, update_interval=10, random_state=0).fit(X)
    kmeans = KMeans(n_clusters=3, n_init=20, random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    np.testing.assert_array_equal(model.labels_, kmeans.labels_)
    np.testing.assert_allclose(model.init_centers_, kmeans.cluster_centers_, atol=1e-6)
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    assert model.cluster_centers_.shape == (3, 8)
    assert model.converged_ and model.n_iter_ == 10  # nothing changed at the second update
    np.testing.assert_array_equal(model.history_["iteration"], [0, 10])
    np.testing.assert_array_equal(model.history_["changed"], [0.0, 0.0])
    assert np.abs(model.cluster_centers_ - model.init_centers_).max() > 0  # the SGD steps moved them


def test_randomly_seeded_dec_gives_valid_labels_from_glorot_uniform_centroids(blobs):
    X, _ = blobs
    model = DEC(n_clusters=3, init="random", update_interval=5, random_state=1).fit(X)
    assert model.labels_.shape == (60,) and model.labels_.dtype.kind == "i"
    assert model.labels_.min() >= 0 and model.labels_.max() < 3
    limit = math.sqrt(6 / (3 + 8))
    assert np.abs(model.init_centers_).max() <= limit
    assert np.isfinite(model.cluster_centers_).all()
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_gaussian_seeding_draws_the_clam_codes_centroids_and_adam_moves_them(blobs):
    X, _ = blobs
    model = DEC(n_clusters=40, init="gaussian", optimizer="adam", lr=0.001, max_iter=50, random_state=1).fit(
        X
    )
    assert model.init_centers_.shape == (40, 8)  # 320 draws of N(0.1, 0.1²)
    assert model.init_centers_.mean() == pytest.approx(0.1, abs=0.015)
    assert model.init_centers_.std() == pytest.approx(0.1, abs=0.015)
    # Adam moves a coordinate by about lr per step, whatever the gradient's scale
    moved = np.abs(model.cluster_centers_ - model.init_centers_).max()
    assert 0.5 * 0.001 * model.n_iter_ < moved < 2 * 0.001 * model.n_iter_


@pytest.mark.parametrize("init", ["kmeans", "random", "gaussian"])
def test_same_seed_gives_identical_labels(init, blobs):
    X, _ = blobs
    settings = {"n_clusters": 3, "init": init, "batch_size": 16, "update_interval": 7, "max_iter": 200}
    first = DEC(**settings, random_state=3).fit(X)
    again = DEC(**settings, random_state=3).fit(X)
    np.testing.assert_array_equal(first.labels_, again.labels_)
    np.testing.assert_array_equal(first.cluster_centers_, again.cluster_centers_)
    np.testing.assert_array_equal(first.history_["kl"], again.history_["kl"])
    if init != "kmeans":
        other = DEC(**settings, random_state=4).fit(X)
        assert np.abs(first.init_centers_ - other.init_centers_).max() > 1e-3


def test_training_stops_on_tol_or_after_max_iter(blobs):
    X, _ = blobs
    for settings in (
        {"init": "random", "batch_size": 16, "update_interval": 4, "max_iter": 2000},
        {"init": "random", "batch_size": 16, "update_interval": 4, "max_iter": 9, "tol": 0.0},
    ):
        model = DEC(n_clusters=3, **settings, random_state=0).fit(X)
        history = model.history_
        assert model.n_iter_ <= settings["max_iter"]
        assert history["changed"][-1] < model.tol or model.n_iter_ == model.max_iter
        assert model.converged_ == (model.n_iter_ < model.max_iter)
        np.testing.assert_array_equal(history["iteration"], np.arange(len(history["kl"])) * 4)
        assert ((history["changed"] >= 0) & (history["changed"] <= 1)).all()
        assert np.isfinite(history["kl"]).all() and (history["kl"] >= 0).all()
    assert model.n_iter_ == 9 and not model.converged_  # tol = 0 never stops early


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n_clusters", 0),
        ("init", "k-means++"),
        ("n_init", 0),
        ("alpha", 0.0),
        ("alpha", math.inf),
        ("lr", -0.1),
        ("momentum", 1.0),
        ("optimizer", "rmsprop"),
        ("batch_size", 0),
        ("update_interval", 2.5),
        ("max_iter", 0),
        ("tol", 1.5),
        ("device", "gpu"),
        ("random_state", -1),
    ],
)
def test_an_invalid_hyperparameter_raises_naming_it_and_its_range(name, value, blobs):
    X, _ = blobs
    with pytest.raises(HyperparameterError, match=rf"DEC {name} must be .* got "):
        DEC(**{"n_clusters": 3, name: value}).fit(X)


def test_the_dec_configs_and_the_table1_experiment_compose(tmp_path):
    cfg = compose_config(tmp_path, "experiment=clam_table1", "method=dec_random", "dataset=zoo")
    assert cfg.method.name == "dec_random" and cfg.method.variant == "default"
    assert cfg.method.estimator._target_ == "clusterbench.methods.DEC"
    assert (cfg.method.estimator.init, cfg.method.estimator.n_init) == ("gaussian", 1000)
    assert (cfg.method.estimator.optimizer, cfg.method.estimator.lr) == ("adam", 0.001)
    assert compose_config(tmp_path, "method=dec").method.estimator.init == "kmeans"
    for method in ("dec", "dec_random"):
        assert list(cfg.grids[method].update_interval) == TABLE7_UPDATE_INTERVALS
    # CLAM Table 6, two rows: Zoo and FMNIST
    zoo, fmnist = cfg.method_overrides.clam.zoo, cfg.method_overrides.clam.fashion_mnist
    assert dict(zoo) == {
        "beta": 2.4, "steps": 10, "lr": 0.1, "batch_size": 8, "mask_prob": 0.2, "mask_value": "mean"
    }  # fmt: skip
    assert dict(fmnist) == {
        "beta": 0.0005, "steps": 5, "lr": 0.01, "batch_size": 256, "mask_prob": 0.1, "mask_value": "max"
    }  # fmt: skip
    assert cfg.dataset_overrides.fashion_mnist.split == "train"


def test_the_kmeans_seeding_is_computed_once_per_data_k_n_init_and_seed(blobs, monkeypatch):
    X, _ = blobs
    fits = []
    original = dec_module.KMeans.fit
    monkeypatch.setattr(dec_module.KMeans, "fit", lambda self, data: fits.append(1) or original(self, data))
    dec_module._SEEDINGS.clear()
    first = [DEC(n_clusters=3, update_interval=u, max_iter=20, random_state=0).fit(X) for u in (1, 5, 10)]
    assert len(fits) == 1
    np.testing.assert_array_equal(first[0].init_centers_, first[2].init_centers_)
    DEC(n_clusters=3, max_iter=20, random_state=1).fit(X)  # another seed: another k-means
    DEC(n_clusters=3, max_iter=20, random_state=0).fit(X + 1.0)  # other data: another k-means
    assert len(fits) == 3


# From mutation audit 12 (the deep methods): each test below failed with one plausible bug in
# place and passed without it.


def _kl_by_hand(X, centres, alpha):
    """Mean over the points of KL(P‖Q), Q of eq. 1 at ``alpha`` and P of eq. 3, in float64 NumPy."""
    kernel = (1.0 + ((X[:, None, :] - centres[None]) ** 2).sum(-1) / alpha) ** (-(alpha + 1) / 2)
    q = kernel / kernel.sum(1, keepdims=True)
    weight = q**2 / q.sum(0)
    p = weight / weight.sum(1, keepdims=True)
    return float((p * np.log(p / q)).sum(1).mean())


def test_the_target_and_the_step_loss_take_alpha_and_each_epoch_reports_its_own_mean(blobs):
    """With full batches and a target update at every step, the loss of step t is the full-data
    KL(P‖Q) of the update before it: at α = 3 both must be eq. 1-3 at α = 3 (either one computed
    at the default α = 1 passed every other test), and each epoch's mean loss is its own step's
    (a running sum carried over from the previous epoch passed too)."""
    X, _ = blobs
    model = DEC(n_clusters=3, init="random", alpha=3.0, batch_size=60, update_interval=1, max_iter=3, tol=0.0)
    model.set_params(random_state=0).fit(X)
    assert model.history_["kl"][0] == pytest.approx(_kl_by_hand(X, model.init_centers_, 3.0), rel=1e-4)
    assert model.history_["kl"][0] != pytest.approx(_kl_by_hand(X, model.init_centers_, 1.0), rel=1e-2)
    np.testing.assert_allclose(model.loss_history_, model.history_["kl"], rtol=1e-5)


def test_changed_counts_the_labels_that_moved_since_the_previous_target_update(blobs):
    """history_['changed'] at an update is the fraction of labels that differ from the previous
    update's (at iteration 0 from the seeding's), as the tol rule reads it: comparing every update
    with the seeding's labels passed every other test. A fit stopped after t steps repeats the
    first t steps of a longer one, so its labels are those of the update at t."""
    X, _ = blobs
    settings = dict(n_clusters=3, init="gaussian", lr=0.5, batch_size=8, update_interval=2, tol=0.0)
    settings["random_state"] = 0
    model = DEC(**settings, max_iter=8).fit(X)
    seeding = ((X[:, None, :] - model.init_centers_[None]) ** 2).sum(-1).argmin(1)
    labels = [seeding] + [DEC(**settings, max_iter=t).fit(X).labels_ for t in (2, 4, 6)]
    labels.insert(1, seeding)  # the update at iteration 0 sees the seeding's centroids
    expected = [np.mean(after != before) for before, after in itertools.pairwise(labels)]
    np.testing.assert_allclose(model.history_["changed"], expected)
    since_seeding = [np.mean(after != seeding) for after in labels[1:]]
    assert not np.allclose(since_seeding, expected)  # the labels moved more than once


def test_kmeans_seeding_is_seeded_by_random_state(blobs):
    """init='kmeans' starts from scikit-learn's KMeans with the fit's own seed: a seeding that used
    one fixed seed passed every other test (blobs this clear give every seed one solution)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 2))  # no clusters: one k-means restart lands by its seed
    for seed in (0, 11):
        model = DEC(n_clusters=6, n_init=1, max_iter=1, random_state=seed).fit(X)
        expected = KMeans(n_clusters=6, n_init=1, random_state=seed).fit(X).cluster_centers_
        np.testing.assert_allclose(model.init_centers_, expected, atol=1e-6)
    other = KMeans(n_clusters=6, n_init=1, random_state=0).fit(X).cluster_centers_
    assert np.abs(expected - other).max() > 1e-2  # the two seeds' seedings do differ


def test_the_remembered_kmeans_seeding_is_told_apart_by_k_and_n_init(blobs, monkeypatch):
    """A seeding remembered for (X, k, n_init, seed) is not handed to a fit with another n_init or k:
    a key without n_init passed every other test."""
    X, _ = blobs
    fits = []
    original = dec_module.KMeans.fit
    monkeypatch.setattr(dec_module.KMeans, "fit", lambda self, data: fits.append(1) or original(self, data))
    dec_module._SEEDINGS.clear()
    dec_module.kmeans_seeding(X, 3, 1, 0)
    dec_module.kmeans_seeding(X, 3, 2, 0)
    assert dec_module.kmeans_seeding(X, 4, 2, 0).shape == (4, 8)
    assert len(fits) == 3
    dec_module.kmeans_seeding(X, 3, 2, 0)  # remembered
    assert len(fits) == 3


def test_random_init_draws_the_whole_glorot_uniform_range():
    """DEC^r's 'random' centroids are U(−√(6/(k+d)), √(6/(k+d))): the existing test bounds them from
    above only, and a range half as wide passed it."""
    X = np.random.default_rng(0).standard_normal((60, 8))
    model = DEC(n_clusters=20, init="random", max_iter=1, random_state=0).fit(X)
    limit = math.sqrt(6 / (20 + 8))
    drawn = model.init_centers_  # drawn in the input's coordinates
    assert np.abs(drawn).max() <= limit
    assert np.abs(drawn).max() > 0.9 * limit
    assert np.abs(drawn).mean() == pytest.approx(limit / 2, rel=0.15)  # E|U(−L, L)| = L/2


def test_each_sgd_step_moves_the_centroids_by_that_steps_gradient_alone(blobs):
    """Plain SGD (momentum 0) on full batches: μ_{t+1} = μ_t − lr·∇KL(P_t‖Q(μ_t)), the gradient of
    the step alone; gradients carried over from the step before (no zero_grad) passed every other
    test."""
    X, _ = blobs
    settings = dict(n_clusters=3, init="random", optimizer="sgd", lr=0.5, momentum=0.0, batch_size=60)
    model = DEC(**settings, update_interval=1, max_iter=2, tol=0.0, random_state=0).fit(X)
    z = torch.as_tensor(X - X.mean(0))
    centres = torch.as_tensor(model.init_centers_ - X.mean(0))
    for _ in range(2):
        centres = centres.clone().requires_grad_()
        log_q = log_soft_assignment(z, centres, 1.0)
        (gradient,) = torch.autograd.grad(
            kl_divergence(target_distribution(log_q.exp()).detach(), log_q), centres
        )
        centres = centres.detach() - 0.5 * gradient
    np.testing.assert_allclose(model.cluster_centers_ - X.mean(0), centres.numpy(), atol=1e-5)


def test_the_kmeans_seedings_kept_are_the_latest_few(blobs, monkeypatch):
    """The remembered seedings stay bounded, the oldest evicted first and refitted when asked for
    again, the newest kept (an eviction of the newest was caught only when earlier tests had filled
    the memory: a test-order accident)."""
    X, _ = blobs
    fits = []
    original = dec_module.KMeans.fit
    monkeypatch.setattr(
        dec_module.KMeans, "fit", lambda self, data: fits.append(self.random_state) or original(self, data)
    )
    monkeypatch.setattr(dec_module, "_SEEDINGS", dec_module.OrderedDict())
    seeds = range(dec_module.SEEDINGS_KEPT + 2)
    first = {seed: dec_module.kmeans_seeding(X, 3, 1, seed) for seed in seeds}
    assert fits == list(seeds) and len(dec_module._SEEDINGS) == dec_module.SEEDINGS_KEPT
    newest = dec_module.kmeans_seeding(X, 3, 1, seeds[-1])  # remembered: no fit
    assert fits == list(seeds)
    np.testing.assert_array_equal(newest, first[seeds[-1]])
    oldest = dec_module.kmeans_seeding(X, 3, 1, 0)  # evicted: fitted again, to the same centres
    assert fits == [*seeds, 0]
    np.testing.assert_array_equal(oldest, first[0])

"""CLAM (clusterbench.methods.clam): the AM recursion against hand computations, stability at
large β, batched restarts against single ones, seeding, validation, inference and the runner."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from sklearn.cluster import kmeans_plusplus
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score, silhouette_score
from sklearn.model_selection import ParameterGrid
from sklearn.preprocessing import StandardScaler

from clusterbench.errors import HyperparameterError
from clusterbench.methods import CLAM
from clusterbench.methods.clam import PlateauSchedule, RestartAdam, am_recursion
from tests.helpers import compose_config

# Small, quick settings shared by the fits below (the profiles' epochs and restarts are far larger).
QUICK = {"n_clusters": 3, "beta": 0.5, "steps": 5, "batch_size": 16, "epochs": 15, "restarts": 2}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def blobs():
    """Three well-separated standardized blobs in 8 dimensions, 20 points each, and their labels.

    Every coordinate separates the blobs, so a point with a few coordinates masked still shows
    which blob it belongs to (in 2 or 3 dimensions the masked loss is ambiguous and needs far
    more epochs).
    """
    X, y = make_blobs(60, n_features=8, centers=3, center_box=(-10, 10), random_state=0)
    return StandardScaler().fit_transform(X), y


def tensor(values) -> torch.Tensor:
    """A float64 tensor with leading (restart, point) axes of size 1 where ``values`` lacks them."""
    array = torch.tensor(values, dtype=torch.float64)
    while array.dim() < 3:
        array = array.unsqueeze(0)
    return array


PROTOTYPES = np.array([[0.0, 0.0], [2.0, 1.0]])
START = np.array([0.5, 0.2])
BETA, ALPHA = 0.7, 0.5


def test_one_and_two_euclidean_steps_match_a_hand_computation():
    # step 1 from x0 = (0.5, 0.2): squared distances 0.29 and 2.89 to ρ1 = (0, 0) and ρ2 = (2, 1)
    w = np.exp(-BETA * np.array([0.29, 2.89]))
    w /= w.sum()
    x1 = START + ALPHA * (w[0] * (PROTOTYPES[0] - START) + w[1] * (PROTOTYPES[1] - START))
    # step 2 from x1
    d2 = ((PROTOTYPES - x1) ** 2).sum(1)
    w = np.exp(-BETA * d2)
    w /= w.sum()
    x2 = x1 + ALPHA * (w[0] * (PROTOTYPES[0] - x1) + w[1] * (PROTOTYPES[1] - x1))
    assert x1 == pytest.approx([0.3894, 0.1697], abs=1e-4)  # pulled toward the nearer ρ1

    for steps, expected in ((1, x1), (2, x2)):
        got = am_recursion(tensor(START), tensor(PROTOTYPES), beta=BETA, steps=steps, alpha=ALPHA)
        np.testing.assert_allclose(got[0, 0].numpy(), expected, rtol=0, atol=1e-12)


def test_weights_enter_the_logits_and_clamped_coordinates_stay_put():
    log_eps = np.array([0.0, np.log(3.0)])  # eq. 11: ρ2 attracts three times as strongly
    free = np.array([False, True])  # only the second coordinate is masked, so only it evolves
    x = START.copy()
    for _ in range(2):
        w = np.exp(-BETA * ((PROTOTYPES - x) ** 2).sum(1) + log_eps)
        w /= w.sum()
        x = np.where(free, x + ALPHA * (w[:, None] * (PROTOTYPES - x)).sum(0), x)
    got = am_recursion(
        tensor(START),
        tensor(PROTOTYPES),
        beta=BETA,
        steps=2,
        alpha=ALPHA,
        log_weights=torch.tensor(log_eps).unsqueeze(0),
        free=torch.tensor(free).reshape(1, 1, 2),
    )
    np.testing.assert_allclose(got[0, 0].numpy(), x, rtol=0, atol=1e-12)
    assert got[0, 0, 0].item() == START[0]


def test_one_spherical_step_matches_eq_12():
    prototypes = np.array([[3.0, 0.0], [1.0, 1.0]])
    unit = prototypes / np.linalg.norm(prototypes, axis=1, keepdims=True)
    x = np.array([0.6, 0.8])
    w = np.exp(BETA * unit @ x)
    w /= w.sum()
    moved = x + ALPHA * (w[:, None] * unit).sum(0)
    expected = moved / np.linalg.norm(moved)
    got = am_recursion(tensor(x), tensor(prototypes), beta=BETA, steps=1, alpha=ALPHA, spherical=True)
    np.testing.assert_allclose(got[0, 0].numpy(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("beta", [100.0, 1000.0])
def test_large_beta_gives_finite_states_and_a_finite_loss(beta, blobs):
    prototypes = np.array([[0.0, 0.0], [1.0, 0.0]])
    far = np.array([5.0, 5.0])  # squared distances 50 and 41
    assert np.exp(-beta * ((prototypes - far) ** 2).sum(1)).sum() == 0  # a naive softmax gives 0 / 0
    x = am_recursion(
        tensor(far).float(), tensor(prototypes).float(), beta=beta, steps=2, alpha=ALPHA
    ).double()
    # all weight on the nearer ρ2: two steps halve the distance to it twice
    np.testing.assert_allclose(x[0, 0].numpy(), [1.0 + 4.0 / 4, 5.0 / 4], rtol=1e-6)

    X, _ = blobs
    model = CLAM(**{**QUICK, "beta": beta, "epochs": 3}, random_state=0).fit(X)
    assert np.isfinite(model.loss_) and np.isfinite(model.history_).all()
    assert np.isfinite(model.cluster_centers_).all()


def test_batched_restarts_equal_the_same_restarts_run_one_at_a_time(blobs):
    X, _ = blobs
    # min_lr just under two plateau decays of lr, so restarts stop at epochs of their own
    settings = {**QUICK, "epochs": 40, "restarts": 3, "lr": 0.1, "min_lr": 0.07}
    batched = CLAM(**settings, random_state=5).fit(X)
    assert batched.restart_seeds_[0] == 5 and len(set(batched.restart_seeds_)) == 3
    kept = int(np.argmin(batched.restart_losses_))
    singles = [
        CLAM(**{**settings, "restarts": 1}, random_state=seed).fit(X) for seed in batched.restart_seeds_
    ]
    for single, loss in zip(singles, batched.restart_losses_, strict=True):
        assert single.loss_ == pytest.approx(loss, abs=1e-6)
    assert len({single.n_iter_ for single in singles}) > 1  # the per-restart schedules differed
    np.testing.assert_allclose(singles[kept].cluster_centers_, batched.cluster_centers_, atol=1e-6)
    np.testing.assert_allclose(singles[kept].history_, batched.history_, atol=1e-6)
    assert singles[kept].n_iter_ == batched.n_iter_
    assert batched.loss_ == min(batched.restart_losses_)


@pytest.mark.parametrize("spherical", [False, True])
def test_silhouette_selection_keeps_the_restart_whose_labels_score_best(spherical, blobs):
    # scored on X as given, also when spherical CLAM clusters the unit-norm points: the space of
    # the silhouette a table reports
    X, _ = blobs
    settings = {**QUICK, "epochs": 5, "restarts": 4, "beta": 0.2, "spherical": spherical}
    model = CLAM(**settings, restart_selection="silhouette", random_state=2).fit(X)
    singles = [CLAM(**{**settings, "restarts": 1}, random_state=seed).fit(X) for seed in model.restart_seeds_]
    scores = [
        silhouette_score(X, single.labels_) if len(set(single.labels_)) > 1 else -1.0 for single in singles
    ]
    np.testing.assert_allclose(model.restart_scores_, scores, atol=1e-6)
    assert len(set(np.round(scores, 6))) > 1  # the restarts differ, so the choice is a real one
    np.testing.assert_array_equal(model.labels_, singles[int(np.argmax(scores))].labels_)
    assert model.kept_restart_ == int(np.argmax(scores))
    assert CLAM(**settings, random_state=2).fit(X).restart_scores_ is None  # 'loss' scores nothing


def test_code_masks_hide_a_fixed_count_never_coordinate_0_and_every_third_epoch_share_a_batch():
    model = CLAM(batch_size=4, mask_prob=0.3, mask_sampling="code")
    generator = torch.Generator().manual_seed(0)
    own = model._draw_mask(1, 10, 10, generator)  # floor(0.3 * 10) = 3 draws with replacement
    assert own.shape == (10, 10) and not own[:, 0].any()
    assert ((own.sum(1) >= 1) & (own.sum(1) <= 3)).all() and own.sum() > 10
    shared = model._draw_mask(3, 10, 10, generator)
    for start in range(0, 10, 4):
        assert (shared[start : start + 4] == shared[start]).all()
    assert not (shared[0] == shared[4]).all() or not (shared[4] == shared[8]).all()
    bernoulli = CLAM(mask_prob=0.3)._draw_mask(1, 2000, 10, generator)
    assert bernoulli[:, 0].any() and bernoulli.float().mean().item() == pytest.approx(0.3, abs=0.01)


def test_data_seeded_inits_start_from_data_points_or_kmeans_plus_plus(blobs):
    X, _ = blobs
    settings = {**QUICK, "epochs": 1, "restarts": 1, "prototype_snapshots": [0]}
    random = CLAM(**settings, init="random", random_state=1).fit(X).prototype_snapshots_[0]
    distances = ((random[:, None, :] - X[None]) ** 2).sum(-1)
    assert distances.min(1).max() < 1e-10 and len(set(distances.argmin(1))) == 3  # 3 distinct points
    plusplus = CLAM(**settings, init="k-means++", random_state=1).fit(X).prototype_snapshots_[0]
    expected, _ = kmeans_plusplus(X, 3, random_state=1)
    np.testing.assert_allclose(plusplus, expected, atol=1e-6)


def test_same_seed_gives_identical_labels_and_another_seed_other_prototypes(blobs):
    X, _ = blobs
    first = CLAM(**QUICK, random_state=3).fit(X)
    again = CLAM(**QUICK, random_state=3).fit(X)
    other = CLAM(**QUICK, random_state=4).fit(X)
    np.testing.assert_array_equal(first.labels_, again.labels_)
    np.testing.assert_array_equal(first.cluster_centers_, again.cluster_centers_)
    assert first.loss_ == again.loss_
    assert np.abs(first.cluster_centers_ - other.cluster_centers_).max() > 1e-3


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("mask_prob", 1.5),
        ("mask_prob", 0.0),
        ("steps", 0),
        ("mask_value", "median"),
        ("beta", 0.0),
        ("beta", math.nan),
        ("lr", "fast"),
        ("alpha", 2.0),
        ("batch_size", 0),
        ("restarts", 0),
        ("epochs", 2.5),
        ("min_lr", 1.0),
        ("n_clusters", 0),
        ("prototype_snapshots", [0, 500]),
        ("random_state", -1),
        ("device", "gpu"),
        ("mask", "yes"),
        ("mask_sampling", "uniform"),
        ("init", "kmeans"),
        ("restart_selection", "sc"),
    ],
)
def test_an_invalid_hyperparameter_raises_naming_it_and_its_range(name, value, blobs):
    X, _ = blobs
    with pytest.raises(HyperparameterError, match=rf"CLAM {name} must be .* got "):
        CLAM(**{**QUICK, name: value}).fit(X)


def test_cuda_without_a_gpu_is_a_hyperparameter_error_and_auto_falls_back_to_cpu(blobs):
    X, _ = blobs
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(HyperparameterError, match="device='cuda'"):
        CLAM(**QUICK, device="cuda").fit(X)
    assert CLAM(**{**QUICK, "epochs": 1}, random_state=0).fit(X).device_ == "cpu"


@pytest.mark.parametrize(
    "variant", [{}, {"mask": False}, {"mask_value": "max"}, {"weighted": True}, {"beta_scale": 0.5}]
)
def test_three_separated_blobs_are_recovered_and_labels_equal_predict(variant, blobs):
    X, y = blobs
    model = CLAM(**QUICK, **variant, random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    assert model.cluster_centers_.shape == (3, 8) and model.cluster_weights_.shape == (3,)
    assert (model.cluster_weights_ != 1).any() == bool(variant.get("weighted"))
    means = np.array([X[model.labels_ == c].mean(0) for c in range(3)])
    centers = model.cluster_centers_
    if not variant.get("mask", True):
        np.testing.assert_allclose(centers, means, atol=0.1)
    elif variant.get("mask_value", "mean") == "mean":
        # T steps of size 1/T bring a masked coordinate only part of the way from the feature mean
        # (0 here) to its prototype, so the prototypes overshoot: further out, the same direction.
        cosines = (centers * means).sum(1) / np.linalg.norm(centers, axis=1) / np.linalg.norm(means, axis=1)
        assert cosines.min() > 0.99
        assert (np.linalg.norm(centers, axis=1) / np.linalg.norm(means, axis=1)).min() > 1.3


def test_spherical_clustering_separates_directions_with_unit_prototypes():
    rng = np.random.default_rng(0)
    directions = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    y = np.repeat(np.arange(3), 20)
    scales = rng.uniform(0.5, 5.0, size=(60, 1))  # only the direction matters on the sphere
    X = scales * (directions[y] + rng.normal(scale=0.1, size=(60, 3)))
    model = CLAM(**{**QUICK, "beta": 5.0}, spherical=True, random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    np.testing.assert_allclose(np.linalg.norm(model.cluster_centers_, axis=1), 1.0, atol=1e-6)


def test_history_kept_epoch_and_snapshots_describe_the_kept_restart():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 40))
    model = CLAM(
        n_clusters=50, beta=0.05, steps=3, batch_size=20, epochs=6, restarts=2, prototype_snapshots=(0, 2, 6)
    ).fit(X)
    assert model.n_iter_ == len(model.history_) == 6
    assert model.loss_ == pytest.approx(model.history_.min()) == model.history_[model.best_epoch_ - 1]
    assert sorted(model.prototype_snapshots_) == [0, 2, 6]
    initial = model.prototype_snapshots_[0]  # 2000 draws of N(0.1, 0.1²)
    assert initial.shape == (50, 40)
    assert initial.mean() == pytest.approx(0.1, abs=0.01) and initial.std() == pytest.approx(0.1, abs=0.01)
    if model.best_epoch_ in model.prototype_snapshots_:
        np.testing.assert_array_equal(model.prototype_snapshots_[model.best_epoch_], model.cluster_centers_)
    assert np.abs(model.prototype_snapshots_[6] - initial).max() > 0.05  # training moved them


def test_clam_configs_compose_into_their_variants(tmp_path):
    variants = {}
    for option in ("clam", "clam_eq8", "clam_weighted"):
        method = compose_config(tmp_path, f"method={option}", "profile=smoke").method
        assert method.name == "clam" and method.max_samples is None
        assert method.estimator._target_ == "clusterbench.methods.CLAM"
        assert (method.estimator.epochs, method.estimator.restarts) == (20, 2)  # the smoke profile's
        variants[method.variant] = (method.estimator.mask, method.estimator.weighted)
    assert variants == {"default": (True, False), "eq8": (False, False), "weighted": (True, True)}


@pytest.mark.parametrize(("profile", "steps"), [("smoke", [5, 10]), ("paper", [2, 5, 7, 10, 12, 15, 20])])
def test_clam_search_sweeps_one_hyperparameter_at_a_time_around_table_6(tmp_path, profile, steps):
    cfg = compose_config(
        tmp_path, "experiment=clam_search", "method=clam", "dataset=ecoli", f"profile={profile}"
    )
    grid = list(ParameterGrid(OmegaConf.to_container(cfg.grids.clam, resolve=True)))
    swept = {key: sorted({point[key] for point in grid if key in point}) for key in ("beta", "steps")}
    assert len(grid) == (10 + 4 + 6 + 3) * len(steps)  # Figures 7-10: beta, lr, mask_prob, mask_value x T
    assert swept["steps"] == steps and len(swept["beta"]) == 10
    assert all(len(point) == 2 for point in grid)  # one hyperparameter besides T per point
    assert cfg.method.estimator.restart_selection == "silhouette"
    ecoli = cfg.method_overrides.clam.ecoli  # CLAM Table 6: the centre of each sweep
    assert (ecoli.beta, ecoli.steps, ecoli.batch_size) == (0.095, 12, 16)


@pytest.mark.parametrize("method", ["clam", "clam_eq8", "clam_weighted"])
def test_committed_paper_records_of_zoo_are_what_this_code_computes(method, tmp_path):
    """CLAM Table 1's records (profile paper) were written by this code: rerunning Zoo's points
    (both readings of β, 10 restarts x 200 epochs) gives every metric back. Records of earlier
    code had drifted unnoticed (SC 0.409 against today's 0.399) until a rerun compared them."""
    from tests.helpers import assert_refit_reproduces_committed, require_cached, require_records_cpu

    require_cached("zoo")
    require_records_cpu()
    overrides = ["profile=paper", f"method={method}", "dataset=zoo", "seed=0"]
    compared = assert_refit_reproduces_committed(tmp_path, "clam_table1", *overrides, atol=1e-9)
    assert compared == 2  # β read both ways


# From a fifth mutation audit of the suite (CLAM): each test below failed with one plausible bug in
# place and passed without it.


def test_a_masked_spherical_step_moves_only_the_free_coordinates():
    """Eq. 12 with a mask (Algorithm 1, line 11): the free coordinates take the projected point's
    values, the clamped ones keep theirs. Survived: the whole projected point kept."""
    prototypes = np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    unit = prototypes / np.linalg.norm(prototypes, axis=1, keepdims=True)
    x = np.array([0.6, 0.0, 0.8])
    free = np.array([True, True, False])
    w = np.exp(BETA * unit @ x)
    w /= w.sum()
    moved = x + ALPHA * (w[:, None] * unit).sum(0)
    expected = np.where(free, moved / np.linalg.norm(moved), x)
    got = am_recursion(
        tensor(x),
        tensor(prototypes),
        beta=BETA,
        steps=1,
        alpha=ALPHA,
        free=torch.tensor(free).reshape(1, 1, 3),
        spherical=True,
    )
    np.testing.assert_allclose(got[0, 0].numpy(), expected, rtol=0, atol=1e-12)
    assert got[0, 0, 2].item() == 0.8


def test_the_recursion_runs_with_beta_times_beta_scale_and_alpha_one_over_t_by_default():
    """Table 5's α = 1/T when ``alpha`` is None, and β·beta_scale (0.5: the code's exp(−(β/2)‖ρ−x‖²)).
    Survived every test but the Zoo records' (which needs the cached dataset): beta_scale ignored;
    also catches a fixed α = 0.1 (the code's) as the default."""
    options = CLAM(beta=0.3, beta_scale=0.5, steps=4)._recursion_options()
    assert options == {"beta": 0.15, "steps": 4, "alpha": 0.25, "spherical": False}
    assert CLAM(steps=4, alpha=0.1)._recursion_options()["alpha"] == 0.1


def test_the_plateau_schedule_decays_after_five_epochs_without_a_gain_of_the_threshold():
    """From epoch 10 on, the mean of the last 10 losses must beat its best by LR_THRESHOLD = 1e-3
    within LR_PATIENCE = 5 updates, else lr × 0.8. Losses falling by 1e-4 an epoch: the first mean
    (epoch 10) sets the best, the next five gain 1e-4 to 5e-4 on it, under the threshold, and the
    fifth of them decays the rate. Survived every test but the Zoo records': any gain counting (no
    threshold), and a decay on the sixth update without a gain."""
    schedule = PlateauSchedule(0.1)
    history, rates = [], []
    for epoch in range(16):
        history.append(1.0 - 1e-4 * epoch)
        rates.append(schedule.update(history))
    assert rates[:14] == [0.1] * 14
    assert rates[14:] == [pytest.approx(0.08, rel=1e-12)] * 2
    falling = PlateauSchedule(0.1)  # a gain of 2e-3 an epoch is over the threshold: no decay
    assert [falling.update([1.0 - 2e-3 * e for e in range(n + 1)]) for n in range(30)] == [0.1] * 30


def test_restart_adam_is_torch_adam_with_one_rate_per_restart():
    """Each restart's slice follows ``torch.optim.Adam`` (defaults β = (0.9, 0.999), ε = 1e-8) at
    its own rate. β1 in the second moment's bias correction was caught only by a blob fit's ARI."""
    generator = torch.Generator().manual_seed(0)
    start = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    gradients = [torch.randn(2, 3, 4, generator=generator, dtype=torch.float64) for _ in range(5)]
    rates = (0.1, 0.01)
    stacked = start.clone()
    optimizer = RestartAdam([stacked], torch.tensor(rates, dtype=torch.float64))
    for gradient in gradients:
        optimizer.step([gradient])
    for r, rate in enumerate(rates):
        alone = start[r].clone().requires_grad_()
        reference = torch.optim.Adam([alone], lr=rate)
        for gradient in gradients:
            alone.grad = gradient[r].clone()
            reference.step()
        torch.testing.assert_close(stacked[r], alone.detach(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mask_value", ["min", "max", "mean"])
def test_masked_coordinates_start_at_the_features_min_max_or_mean(mask_value, blobs, monkeypatch):
    """Algorithm 1: a masked coordinate is set to the feature's statistic over the training data,
    the others keep the point's value. Survived: 'min' and 'max' swapped."""
    X, _ = blobs
    seen = []

    def spy(x, prototypes, **kwargs):
        seen.append((x.detach().clone(), kwargs.get("free")))
        return am_recursion(x, prototypes, **kwargs)

    monkeypatch.setattr("clusterbench.methods.clam.am_recursion", spy)
    CLAM(**{**QUICK, "epochs": 1, "restarts": 1}, mask_prob=0.3, mask_value=mask_value).fit(X)
    statistic = {"min": X.min(0), "max": X.max(0), "mean": X.mean(0)}[mask_value]
    start, free = seen[0][0][0].numpy(), seen[0][1][0].numpy()
    assert free.any() and (~free).any()
    expected = np.broadcast_to(statistic, start.shape)
    np.testing.assert_allclose(start[free], expected[free], rtol=0, atol=1e-6)
    for row, hidden in zip(start, free, strict=True):  # the rest: some data point's coordinates
        assert np.isclose(X[:, ~hidden], row[~hidden], rtol=0, atol=1e-6).all(1).any()


def test_a_point_is_labelled_by_its_evolved_state_not_by_its_start():
    """InferCLAM: T steps from the point, then the nearest prototype. At β → 0 the weights are
    uniform, so one step of α = 1 takes every point to the prototypes' centroid (4/3, 0): the point
    (0.9, 0), nearest ρ1 = (0, 0) at the start, ends nearest ρ2 = (2, 0). Survived: labels of the
    start points (caught only by the Zoo records of weighted CLAM)."""
    model = CLAM(n_clusters=3, beta=1e-9, steps=1, alpha=1.0)
    model.device_ = "cpu"
    prototypes = torch.tensor([[[0.0, 0.0], [2.0, 0.0], [2.0, 0.0]]])
    points = torch.tensor([[0.9, 0.0], [-1.0, 0.0]])
    labels = model._assign(points, prototypes, None)[0].tolist()
    assert labels[0] == labels[1] == 1


def test_predict_weighs_the_prototypes_by_the_fitted_weights(blobs):
    """Weighted CLAM (eq. 11) predicts with log ε_μ in the logits, as its fit labels. One step of α = 1
    from (0.9, 0) with ρ = (0, 0), (2, 0), β = 1: unweighted, the pull is mostly ρ1's (nearest ρ1);
    with ε = (1, 100) it ends nearest ρ2. Survived: predict without the weights."""
    X, _ = blobs
    model = CLAM(n_clusters=2, beta=1.0, steps=1, alpha=1.0, epochs=1, restarts=1, weighted=True)
    model.fit(X[:, :2])
    model.cluster_centers_ = np.array([[0.0, 0.0], [2.0, 0.0]])
    points = np.array([[0.9, 0.0]])
    for weights, label in (((1.0, 1.0), 0), ((1.0, 100.0), 1)):
        model.cluster_weights_ = np.array(weights)
        logits = -((model.cluster_centers_ - points[0]) ** 2).sum(1) + np.log(weights)
        w = np.exp(logits) / np.exp(logits).sum()
        evolved = w @ model.cluster_centers_
        assert ((model.cluster_centers_ - evolved) ** 2).sum(1).argmin() == label
        assert model.predict(points).tolist() == [label]


def test_the_eq_8_loss_is_the_mean_squared_error_over_every_entry_of_each_restart(blobs):
    """mask=False (eq. 8): one batch of all points, one epoch: the recorded loss is the mean over the
    n·d entries of (x^T − x)², evolved from the initial prototypes, for each of two restarts.
    Survived: the mean taken over the entries of all restarts together."""
    X, _ = blobs
    settings = {**QUICK, "epochs": 1, "restarts": 2, "batch_size": 60, "mask": False}
    model = CLAM(**settings, prototype_snapshots=[0], random_state=0).fit(X)
    initial = torch.tensor(model.prototype_snapshots_[0], dtype=torch.float32)[None]
    data = torch.tensor(X, dtype=torch.float32)[None]
    evolved = am_recursion(data, initial, beta=0.5, steps=5, alpha=0.2)
    expected = float((evolved - data).square().mean())
    assert model.loss_ == pytest.approx(expected, rel=1e-5)

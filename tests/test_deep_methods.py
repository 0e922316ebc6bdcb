"""The deep family on its one loop (clusterbench.methods.deep.base): DEC's target, IDEC's and DKM's
losses against hand computations, the pretraining cache seen from the estimators (a second fit
pretrains nothing, a truncated file is rebuilt), the Khatri-Rao head and seeding, own labels
against the k-means re-clustering variant, determinism, bad input, the configs, and input-space
DEC's committed records refitted through the shared loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hydra.utils import instantiate
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import clusterbench.methods.deep.base as base
from clusterbench.errors import HyperparameterError
from clusterbench.methods import DCEC, DKM, IDEC, KhatriRaoDKM, KhatriRaoIDEC
from clusterbench.methods.dkm import annealed_alphas, dkm_loss
from clusterbench.methods.kr_deep import SumProtocentroids
from tests.helpers import REPO, cli, compose_config, require_cached

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {"layers": (16, 4), "pretrain_epochs": 15, "pretrain_batch_size": 64, "batch_size": 64}


@pytest.fixture(autouse=True)
def pretrained_cache(tmp_path, monkeypatch):
    """Every test pretrains into its own cache folder."""
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path / "pretrained"))
    return tmp_path / "pretrained"


@pytest.fixture(scope="module")
def blobs():
    """Four separated blobs in 20 dimensions, 240 points, about unit variance, centred at the
    corners of a parallelogram u·i + v·j (i, j ∈ {0, 1}): sums of 2 + 2 protocentroids can fit them."""
    rng = np.random.default_rng(3)
    u, v = rng.standard_normal((2, 20)) * 2.0
    centres = np.array([i * u + j * v for i in (0, 1) for j in (0, 1)])
    X, y = make_blobs(240, n_features=20, centers=centres, cluster_std=0.5, random_state=3)
    return (X / X.std()).astype(np.float32), y


@pytest.fixture
def pretrain_calls(monkeypatch):
    """How many times an autoencoder was pretrained (not loaded from the cache)."""
    calls = []
    original = base.pretrain
    monkeypatch.setattr(base, "pretrain", lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


# --- the losses ----------------------------------------------------------------------------------------


def test_the_target_distribution_is_a_sharper_distribution_than_q():
    torch.manual_seed(0)
    q = base.log_soft_assignment(torch.randn(50, 3), torch.randn(4, 3)).exp()
    # With every cluster equally frequent (q and its column rotations), P ∝ q² row by row: each
    # point's largest probability grows.
    balanced = torch.cat([q.roll(shift, dims=1) for shift in range(4)])
    p = base.target_distribution(balanced)
    torch.testing.assert_close(p.sum(1), torch.ones(200))
    assert bool((p.max(1).values > balanced.max(1).values).all())
    # In general the division by f_j may lower a point's top probability in a large cluster, but P
    # is sharper on average: lower mean entropy.
    p = base.target_distribution(q)
    torch.testing.assert_close(p.sum(1), torch.ones(50))
    entropy = lambda r: float(-(torch.xlogy(r, r)).sum(1).mean())  # noqa: E731
    assert entropy(p) < entropy(q) - 0.1


def test_idec_without_reconstruction_is_decs_kl_and_without_clustering_the_reconstruction(blobs):
    X, _ = blobs
    model = IDEC(n_clusters=4, **SMALL, max_iter=1, random_state=0, device="cpu").fit(X)
    network, head = model._network_, model._head_
    x = torch.as_tensor(X[:32])
    target = base.target_distribution(
        base.log_soft_assignment(network.encode(x), head.centres()).exp()
    ).detach()
    kl = base.kl_divergence(target, base.log_soft_assignment(network.encode(x), head.centres(), 1.0))
    dec = model.set_params(reconstruction_weight=0.0, clustering_weight=1.0)
    torch.testing.assert_close(dec._step_loss(network, head, x, target, 0), kl)
    recon_only = model.set_params(reconstruction_weight=1.0, clustering_weight=0.0)
    expected = base.reconstruction_loss(x, network(x)[1], "mean")
    torch.testing.assert_close(recon_only._step_loss(network, head, x, target, 0), expected)


def test_idecs_step_loss_weighs_each_term_by_its_own_weight(blobs):
    """L = reconstruction_weight · L_r + γ · KL(P‖Q) (Guo et al., eq. 5) at weights other than 0 and
    1 (2.5 and 0.3): the test above sets each to 0 or 1, and a dropped reconstruction weight passed it
    and every other test."""
    X, _ = blobs
    model = IDEC(n_clusters=4, **SMALL, max_iter=1, random_state=0, device="cpu").fit(X)
    network, head = model._network_, model._head_
    x = torch.as_tensor(X[:32])
    log_q = base.log_soft_assignment(network.encode(x), head.centres(), 1.0)
    target = base.target_distribution(log_q.exp()).detach()
    reconstruction = base.reconstruction_loss(x, network(x)[1], "mean")
    expected = 2.5 * reconstruction + 0.3 * base.kl_divergence(target, log_q)
    weighted = model.set_params(reconstruction_weight=2.5, clustering_weight=0.3)
    torch.testing.assert_close(weighted._step_loss(network, head, x, target, 0), expected)


def test_the_clustering_optimiser_takes_lr_momentum_and_the_centroids_own_rate(blobs):
    """The clustering phase's optimiser: SGD with ``momentum`` (DEC: 0.01, 0.9) over the network and
    the centroids, or Adam with the centroids at ``centroid_lr`` (KR-IDEC: 10x the network's rate).
    SGD without the momentum, or the centroids at the network's rate, passed every other test."""
    X, _ = blobs
    sgd = IDEC(n_clusters=4, **SMALL, optimizer="sgd", lr=0.05, momentum=0.7, max_iter=1, random_state=0)
    sgd.set_params(device="cpu").fit(X)
    groups = sgd._optimizer(sgd._network_, sgd._head_).param_groups
    assert [(g["lr"], g["momentum"]) for g in groups] == [(0.05, 0.7), (0.05, 0.7)]
    assert [len(g["params"]) for g in groups] == [len(list(sgd._network_.parameters())), 1]
    kr = KhatriRaoIDEC(n_clusters=4, **SMALL, hadamard_multiplier=None, kr_n_init=2, max_iter=1)
    kr.set_params(lr=1e-4, centroid_lr=2e-3, random_state=0, device="cpu").fit(X)
    adam = kr._optimizer(kr._network_, kr._head_)
    assert isinstance(adam, torch.optim.Adam)
    assert [g["lr"] for g in adam.param_groups] == [1e-4, 2e-3]


def test_the_loss_history_holds_every_epoch_the_last_one_too(blobs):
    """With per-batch targets and ``epochs``, loss_history_ has one mean loss per pass, the last
    pass included (it ends with the loop, not at the next permutation): dropping it passed every
    other test. 240 points in batches of 64 are 4 steps a pass."""
    X, _ = blobs
    model = IDEC(n_clusters=4, **SMALL, update_interval=None, epochs=3, random_state=0, device="cpu").fit(X)
    assert model.n_iter_ == 12 and len(model.loss_history_) == 3
    assert np.isfinite(model.loss_history_).all()


def test_dkm_loss_is_the_soft_kmeans_objective_by_hand():
    z = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    centres = torch.tensor([[0.0, 0.0], [2.0, 0.0]])
    # d² = (0, 4) and (2, 2); α = 0.5: p = softmax(−0.5·(0, 4)) = (1, e⁻²)/(1 + e⁻²), and (½, ½).
    p1 = np.array([1.0, np.exp(-2.0)]) / (1.0 + np.exp(-2.0))
    expected = (p1 @ [0.0, 4.0] + 0.5 * 2 + 0.5 * 2) / 2
    assert float(dkm_loss(z, centres, 0.5)) == pytest.approx(expected, rel=1e-6)
    # A huge α is hard k-means: each point's distance to its nearest centroid.
    assert float(dkm_loss(z, centres, 1e6)) == pytest.approx((0.0 + 2.0) / 2)


def test_dkm_loss_with_the_euclidean_distance_is_clustpys_unsquared_form():
    z = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    centres = torch.tensor([[0.0, 0.0], [2.0, 0.0]])
    # Hard assignment (α huge): distances 0 and √2 to the nearest centroid.
    assert float(dkm_loss(z, centres, 1e6, "euclidean")) == pytest.approx(np.sqrt(2.0) / 2, rel=1e-5)
    # Same softmax weights as the squared form, on d instead of d²; finite gradient on a centroid.
    z = z.clone().requires_grad_()
    dkm_loss(z, centres, 0.5, "euclidean").backward()
    assert torch.isfinite(z.grad).all()


def test_the_annealed_alphas_are_the_dkm_papers_schedule():
    alphas = annealed_alphas()
    assert len(alphas) == 40
    np.testing.assert_allclose(alphas[:4], [0.1, 0.423, 0.752, 1.078], atol=1e-3)
    assert alphas[-1] == pytest.approx(28.1, abs=0.1)


# --- the cache seen from the estimators --------------------------------------------------------------


def test_a_second_fit_loads_the_pretrained_autoencoder_and_pretrains_nothing(blobs, pretrain_calls):
    X, _ = blobs
    first = IDEC(n_clusters=4, **SMALL, max_iter=40, update_interval=10, random_state=0, device="cpu").fit(X)
    assert len(pretrain_calls) == 1 and not first.pretrained_from_cache_
    # Another clustering setting, same pretraining: the autoencoder comes from the cache.
    second = IDEC(n_clusters=4, **SMALL, max_iter=40, update_interval=20, random_state=0, device="cpu").fit(X)
    assert len(pretrain_calls) == 1 and second.pretrained_from_cache_
    assert second.pretrain_loss_ == first.pretrain_loss_
    # DKM on the same autoencoder settings shares it too; another seed pretrains its own.
    DKM(n_clusters=4, **SMALL, epochs=2, random_state=0, device="cpu").fit(X)
    assert len(pretrain_calls) == 1
    IDEC(n_clusters=4, **SMALL, max_iter=40, random_state=1, device="cpu").fit(X)
    assert len(pretrain_calls) == 2
    # pretrain_seed fixes one autoencoder across seeds (the Khatri-Rao protocol's 20 runs).
    IDEC(n_clusters=4, **SMALL, max_iter=40, pretrain_seed=0, random_state=5, device="cpu").fit(X)
    assert len(pretrain_calls) == 2


def test_an_unseeded_fit_pretrains_without_writing_to_the_cache(blobs, pretrain_calls, pretrained_cache):
    X, _ = blobs
    IDEC(n_clusters=4, **SMALL, max_iter=5, device="cpu").fit(X)
    IDEC(n_clusters=4, **SMALL, max_iter=5, device="cpu").fit(X)
    assert len(pretrain_calls) == 2 and not list(pretrained_cache.glob("*.pt"))
    IDEC(n_clusters=4, **SMALL, max_iter=5, pretrain_seed=3, device="cpu").fit(X)  # a seed: cached
    assert len(list(pretrained_cache.glob("*.pt"))) == 1


def test_a_truncated_cache_file_is_rebuilt_and_gives_the_same_fit(blobs, pretrain_calls, pretrained_cache):
    X, _ = blobs
    params = dict(n_clusters=4, **SMALL, max_iter=30, random_state=0, device="cpu")
    first = IDEC(**params).fit(X)
    (path,) = pretrained_cache.glob("*.pt")
    path.write_bytes(path.read_bytes()[:100])
    with pytest.warns(UserWarning, match="corrupt"):
        again = IDEC(**params).fit(X)
    assert len(pretrain_calls) == 2 and not again.pretrained_from_cache_
    np.testing.assert_array_equal(first.labels_, again.labels_)
    assert path.stat().st_size > 100


# --- fits ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (IDEC, {"max_iter": 60, "update_interval": 10}),
        (IDEC, {"epochs": 3, "update_interval": None, "max_iter": None}),
        (DKM, {"epochs": 3, "alpha": 10.0}),
        (KhatriRaoIDEC, {"epochs": 3, "hadamard_multiplier": None, "kr_n_init": 3}),
        (KhatriRaoDKM, {"epochs": 3, "hadamard_multiplier": None, "kr_n_init": 3, "alpha": 10.0}),
    ],
)
def test_each_method_clusters_separated_blobs_deterministically_with_its_own_labels(cls, params, blobs):
    X, y = blobs
    model = cls(n_clusters=4, **{**SMALL, "activation": "relu"}, **params, random_state=0, device="cpu").fit(
        X
    )
    again = cls(n_clusters=4, **{**SMALL, "activation": "relu"}, **params, random_state=0, device="cpu").fit(
        X
    )
    np.testing.assert_array_equal(model.labels_, again.labels_)
    assert adjusted_rand_score(y, model.labels_) > 0.9
    # Own labels: the nearest centroid of the final embedding, which predict repeats.
    z = torch.as_tensor(model.embedding_, dtype=torch.float32)
    expected = base.nearest_centre(z, torch.as_tensor(model.cluster_centers_, dtype=torch.float32))
    np.testing.assert_array_equal(model.labels_, expected.numpy())
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    assert model.embedding_.shape == (240, 4) and model.cluster_centers_.shape == (4, 4)
    assert len(model.loss_history_) >= 1 and np.isfinite(model.loss_history_).all()


def test_labels_by_kmeans_is_a_kmeans_reclustering_of_the_embedding(blobs):
    X, _ = blobs
    model = IDEC(
        n_clusters=4, **SMALL, max_iter=20, labels_by="kmeans", n_init=5, random_state=0, device="cpu"
    )
    model.fit(X)
    kmeans = KMeans(4, n_init=5, random_state=0).fit(model.embedding_)
    np.testing.assert_array_equal(model.labels_, kmeans.labels_)
    np.testing.assert_array_equal(model.predict(X), model.labels_)  # predict follows the re-clustering


def test_the_khatri_rao_head_builds_its_centroids_from_protocentroid_sums(blobs):
    head = SumProtocentroids([torch.tensor([[0.0, 1.0], [2.0, 3.0]]), torch.tensor([[10.0, 0.0]] * 3)], 5)
    expected = [[10, 1], [10, 1], [10, 1], [12, 3], [12, 3]]
    np.testing.assert_array_equal(head.centres().detach().numpy(), expected)
    X, _ = blobs
    model = KhatriRaoIDEC(n_clusters=4, **SMALL, epochs=2, hadamard_multiplier=None, kr_n_init=2)
    model.set_params(activation="relu", random_state=0, device="cpu").fit(X)
    assert model.sizes_ == (2, 2) and [p.shape for p in model.protocentroids_] == [(2, 4), (2, 4)]
    sums = (model.protocentroids_[0][:, None, :] + model.protocentroids_[1][None]).reshape(4, 4)
    np.testing.assert_allclose(model.cluster_centers_, sums, atol=1e-6)
    # Parameters: the autoencoder's and 2 + 2 protocentroids (IDEC: the autoencoder's and 4 centroids).
    dense = IDEC(n_clusters=4, **SMALL, max_iter=2, random_state=0, device="cpu").fit(X)
    assert model.n_params_ - 4 * 4 == dense.n_params_ - 4 * 4


def test_the_compressed_autoencoder_and_its_auto_schedule(blobs):
    X, _ = blobs
    params = dict(n_clusters=4, layers=(16, 12, 8, 4), pretrain_batch_size=64, epochs=1, kr_n_init=2)
    fixed = KhatriRaoDKM(**params, hadamard_multiplier=2, pretrain_epochs=3, pretrain_epochs_step=2)
    fixed.set_params(random_state=0, device="cpu").fit(X)
    assert fixed.hadamard_multiplier_ == 2
    ranks = [m.rank for m in fixed._network_.modules() if hasattr(m, "rank")]
    assert ranks == [20, 20, 20, 20]  # max(10, ·)·2 on the four inner layers
    # 'auto': the compressed AE grows m until it reconstructs as well as the full one; a full AE
    # trained far longer than the compressed ones forces several rounds, each cached.
    auto = KhatriRaoDKM(**params, hadamard_multiplier="auto", pretrain_epochs=1, pretrain_epochs_step=1)
    auto.set_params(reference_pretrain_epochs=60, random_state=0, device="cpu").fit(X)
    assert auto.hadamard_multiplier_ > 1 or auto.pretrain_loss_ <= auto.reference_pretrain_loss_
    assert auto.hadamard_multiplier_ == 10 or auto.pretrain_loss_ <= auto.reference_pretrain_loss_
    assert not auto.pretrained_from_cache_
    again = KhatriRaoDKM(**params, hadamard_multiplier="auto", pretrain_epochs=1, pretrain_epochs_step=1)
    again.set_params(reference_pretrain_epochs=60, random_state=0, device="cpu").fit(X)
    assert again.pretrained_from_cache_ and again.hadamard_multiplier_ == auto.hadamard_multiplier_


def test_a_dense_khatri_rao_network_pretrains_as_the_full_autoencoder_does(blobs, monkeypatch):
    epochs = []
    original = base.pretrain
    monkeypatch.setattr(base, "pretrain", lambda *a, **k: epochs.append(k["epochs"]) or original(*a, **k))
    X, _ = blobs
    params = dict(n_clusters=4, layers=(16, 4), pretrain_batch_size=64, epochs=1, kr_n_init=1, random_state=0)
    params |= dict(pretrain_epochs=7, pretrain_epochs_step=2, reference_pretrain_epochs=3, device="cpu")
    KhatriRaoIDEC(**params, hadamard_multiplier=None).fit(X)
    KhatriRaoIDEC(**params, hadamard_multiplier=2).fit(X)
    assert epochs == [3, 7 + 2]  # the full AE's epochs; the compressed one's 7 + 2·(m − 1)


def test_dcec_clusters_small_images():
    rng = np.random.default_rng(0)
    # Two classes of 8×8 images: a bright left half or a bright right half, with noise.
    left = np.zeros((8, 8), np.float32)
    left[:, :4] = 1.0
    images = np.concatenate(
        [left + 0.1 * rng.standard_normal((40, 8, 8)), left[:, ::-1] + 0.1 * rng.standard_normal((40, 8, 8))]
    )
    X, y = images.reshape(80, 64).astype(np.float32), np.repeat([0, 1], 40)
    model = DCEC(
        n_clusters=2, channels=(4, 4, 4), embedding_dim=2, pretrain_epochs=30, max_iter=30, random_state=0
    )
    model.set_params(device="cpu").fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert model.embedding_.shape == (80, 2)


# --- bad input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "params", "message"),
    [
        (IDEC, {"n_clusters": 1}, "n_clusters must be an integer ≥ 2"),
        (IDEC, {"n_clusters": 500}, "n_clusters must be at most the number of points"),
        (IDEC, {"layers": (30, 25)}, "embeds into 25 units but the data has 20 features"),
        (IDEC, {"layers": []}, "layers must be a non-empty list"),
        (IDEC, {"epochs": None, "max_iter": None}, "max_iter must be set where epochs is null"),
        (IDEC, {"device": "cuda"}, "no CUDA GPU is visible"),
        (DKM, {"alpha": "fast"}, "alpha must be a number > 0 or annealed"),
        (
            DKM,
            {"alpha": "annealed", "epochs": None, "max_iter": 5},
            "alpha must be a number where epochs is null",
        ),
        (DKM, {"distance": "manhattan"}, "distance must be one of euclidean, squared"),
        (KhatriRaoIDEC, {"hadamard_multiplier": 11}, "hadamard_multiplier must be null"),
        (DCEC, {}, "20 features are not a square image"),
        (DCEC, {"image_shape": [1, 4, 4]}, "holds 16 values but the data has 20 features"),
    ],
)
def test_bad_hyperparameters_fail_in_one_line_naming_the_fix(cls, params, message, blobs):
    if params.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    X, _ = blobs
    with pytest.raises(HyperparameterError, match=message):
        cls(**{"n_clusters": 4, **params}).fit(X)


@pytest.mark.parametrize("diverging", ["pretrain_lr", "lr"])
def test_a_diverging_network_fails_naming_the_rates_not_the_data(blobs, diverging):
    X, _ = blobs
    params = {**SMALL, "pretrain_epochs": 3, "max_iter": 5, "update_interval": 1, diverging: 1e12}
    with pytest.raises(FloatingPointError, match=r"training diverged .* lower pretrain_lr .* or lr"):
        IDEC(n_clusters=4, **params, random_state=0, device="cpu").fit(X)


def test_numpy_integer_hyperparameters_fit_and_key_the_cache_as_python_ints(blobs, pretrain_calls):
    """A scikit-learn grid over np.arange gives NumPy integers: the cache key failed to serialise
    them and the networks refused them as "not a positive int"."""
    X, _ = blobs
    as_numpy = {"layers": (np.int64(16), np.int64(4)), "pretrain_epochs": np.int64(15)}
    fits = [
        IDEC(n_clusters=4, **{**SMALL, **given}, max_iter=5, random_state=0, device="cpu").fit(X)
        for given in (as_numpy, {})
    ]
    assert len(pretrain_calls) == 1  # the Python ints' fit read the NumPy ints' network
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    model = KhatriRaoIDEC(n_clusters=4, **SMALL, hadamard_multiplier=np.int64(2), max_iter=5, random_state=0)
    assert len(np.unique(model.fit(X).labels_)) == 4


def test_khatri_rao_set_sizes_are_checked_against_the_centroids_they_give(blobs):
    """h overrides n_clusters: 2 x 2 centroids fit 6 points even where n_clusters = 8 would not."""
    X, _ = blobs
    params = {**SMALL, "layers": (4, 2), "pretrain_epochs": 1, "max_iter": 2, "random_state": 0}
    assert len(KhatriRaoIDEC(n_clusters=8, h=(2, 2), **params).fit(X[:6]).labels_) == 6
    with pytest.raises(HyperparameterError, match="needs at least as many points as its 9 centroids, got 6"):
        KhatriRaoIDEC(n_clusters=2, h=(3, 3), **params).fit(X[:6])


def test_nan_in_the_data_is_refused_before_any_training(blobs, pretrain_calls):
    X, _ = blobs
    X = X.copy()
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        IDEC(n_clusters=4, **SMALL, random_state=0).fit(X)
    assert not pretrain_calls


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("cls", [IDEC, KhatriRaoDKM])
def test_cuda_fits_agree_with_cpu(cls, blobs):
    X, _ = blobs
    params = dict(n_clusters=4, **SMALL, epochs=3, max_iter=None, update_interval=None, random_state=0)
    params = {k: v for k, v in params.items() if k in cls().get_params()}
    cpu = cls(**params, device="cpu").fit(X)
    gpu = cls(**params, device="cuda").fit(X)
    assert gpu.device_ == "cuda"
    assert adjusted_rand_score(cpu.labels_, gpu.labels_) > 0.95


# --- configs and the harness ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["idec", "dec_ae", "dkm", "dcec", "idec_kr", "dkm_kr", "kr_idec", "kr_dkm"]
)
def test_every_deep_method_config_instantiates_its_estimator_at_both_scales(method, tmp_path):
    epochs = {}
    for profile in ("paper", "smoke"):
        estimator = instantiate(
            compose_config(tmp_path, f"method={method}", f"profile={profile}").method.estimator
        )
        estimator._validate_params()
        epochs[profile] = estimator.pretrain_epochs
    assert 1 <= epochs["smoke"] < epochs["paper"]  # the smoke profile scales the epochs down


def test_the_kr_table3_experiment_fixes_the_papers_multipliers(tmp_path):
    cfg = compose_config(tmp_path, "experiment=kr_table3", "method=kr_idec", "dataset=mnist")
    assert cfg.method_overrides.kr_idec.mnist.hadamard_multiplier == 3
    assert cfg.method_overrides.kr_dkm.double_mnist.hadamard_multiplier == 2
    assert list(cfg.grids.idec.random_state) == list(range(20))


def test_input_space_dec_refits_give_the_committed_records(tmp_path):
    """DEC on the deep family's loop against records fitted by its own loop before (CLAM Table 1, Zoo)."""
    require_cached("zoo")
    committed = REPO / "results" / "runs" / "paper" / "clam_table1" / "zoo" / "dec"
    assert len(list(committed.glob("*.csv"))) == 16
    cli(
        "run", "-m", "experiment=clam_table1", "profile=paper", "dataset=zoo", "method=dec",
        "grids.dec.update_interval=[1,30,140]", f"results_dir={tmp_path}",
    )  # fmt: skip
    fresh = sorted((tmp_path / "runs" / "paper" / "clam_table1" / "zoo" / "dec").glob("*.labels.npy"))
    assert len(fresh) == 3
    for labels in fresh:
        np.testing.assert_array_equal(np.load(labels), np.load(committed / labels.name))


@pytest.mark.parametrize(
    "change",
    [
        {"pretrain_lr": 1e-2},
        {"pretrain_batch_size": 32},
        {"pretrain_epochs": 3},
        {"reconstruction_reduction": "sum_per_sample"},
    ],
)
def test_a_pretraining_setting_changed_pretrains_again(change, tmp_path, monkeypatch):
    """Every setting that changes the pretrained network keys its cache file: without the learning
    rate, batch size or reduction in the key, a sweep over one of them reused one autoencoder (a
    mutation audit's find; only the epochs were tested)."""
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path))
    calls = []
    original = base.pretrain
    monkeypatch.setattr(base, "pretrain", lambda *a, **k: calls.append(1) or original(*a, **k))
    X, _ = make_blobs(64, n_features=8, centers=2, random_state=0)
    X = X.astype(np.float32)
    params = dict(
        n_clusters=2, layers=(8, 2), pretrain_epochs=2, pretrain_batch_size=16, batch_size=16, max_iter=2,
        random_state=0, device="cpu",
    )  # fmt: skip
    IDEC(**params).fit(X)
    IDEC(**params).fit(X)
    assert len(calls) == 1
    again = IDEC(**{**params, **change}).fit(X)
    assert len(calls) == 2 and not again.pretrained_from_cache_


# From a third mutation audit of the suite: each test below failed with one plausible bug in
# place and passed without it.


def test_annealed_dkm_spends_epochs_epochs_at_each_alpha_then_keeps_the_last():
    import math

    model = DKM(2, alpha="annealed", epochs=2, distance="euclidean")
    z = torch.tensor([[0.5]], dtype=torch.float64)
    centres = torch.tensor([[0.0], [1.1]], dtype=torch.float64)  # d² = 0.25, 0.36; d = 0.5, 0.6

    def expected(alpha):  # Σ_k softmax(−α(d² − min d²))_k · d_k
        w = math.exp(-alpha * 0.11)
        return (0.5 + 0.6 * w) / (1 + w)

    last, before_last = 28.13257814746897, 26.735463299025135  # α_40, α_39 of the DKM schedule
    assert float(model._clustering_loss(z, centres, None, epoch=0)) == pytest.approx(expected(0.1), rel=1e-9)
    assert float(model._clustering_loss(z, centres, None, epoch=76)) == pytest.approx(
        expected(before_last), rel=1e-9
    )
    assert float(model._clustering_loss(z, centres, None, epoch=78)) == pytest.approx(
        expected(last), rel=1e-9
    )
    assert float(model._clustering_loss(z, centres, None, epoch=500)) == pytest.approx(
        expected(last), rel=1e-9
    )


# From mutation audit 12 (the deep methods): each test below failed with one plausible bug in place and
# passed without it.


def test_the_per_batch_target_is_a_constant_of_the_step():
    """With ``update_interval=None`` P is the batch's own sharpened Q, detached (ClustPy): its
    gradient is that of KL(P‖Q) at a fixed P. A P left in the graph passed every other test."""
    torch.manual_seed(0)
    z, centres = torch.randn(12, 3), torch.randn(4, 3, requires_grad=True)
    model = IDEC(n_clusters=4, alpha=2.0, update_interval=None)
    model._clustering_loss(z, centres, None, 0).backward()
    fixed = base.target_distribution(base.log_soft_assignment(z, centres, 2.0).exp()).detach()
    expected = torch.autograd.grad(
        base.kl_divergence(fixed, base.log_soft_assignment(z, centres, 2.0)), centres
    )
    torch.testing.assert_close(centres.grad, expected[0])


def test_the_embedding_and_labels_are_those_of_the_trained_network(blobs):
    """embedding_ is the final network's embedding of X, not the pretrained one: the embedding taken
    before the clustering phase passed every other test."""
    X, _ = blobs
    model = IDEC(n_clusters=4, **SMALL, max_iter=20, update_interval=5, lr=0.01, random_state=0, device="cpu")
    model.fit(X)
    with torch.no_grad():
        final = model._network_.encode(torch.as_tensor(X))
    np.testing.assert_allclose(model.embedding_, final.double().numpy(), atol=1e-6)
    centres = torch.as_tensor(model.cluster_centers_, dtype=torch.float32)
    np.testing.assert_array_equal(model.labels_, base.nearest_centre(final, centres).numpy())


def test_annealed_dkm_fits_epochs_steps_at_each_of_the_40_alphas(blobs, monkeypatch):
    """The loop hands the loss its pass number from 0, so that DKM's α schedule spends ``epochs``
    passes at each of its 40 values: one stage in all, or a schedule a pass ahead, passed every
    other test."""
    import clusterbench.methods.dkm as dkm

    X, _ = blobs
    used = []
    original = dkm.dkm_loss
    monkeypatch.setattr(
        dkm, "dkm_loss", lambda z, c, alpha, d: used.append(alpha) or original(z, c, alpha, d)
    )
    params = {**SMALL, "pretrain_epochs": 1, "batch_size": 120}  # 2 steps a pass
    model = DKM(n_clusters=4, **params, alpha="annealed", epochs=1, random_state=0, device="cpu").fit(X)
    assert model.n_iter_ == 40 * 2
    assert used == [alpha for alpha in annealed_alphas() for _ in range(2)]


def test_the_clustering_phase_reconstructs_with_the_chosen_reduction(blobs):
    """L_r in the clustering phase is reduced as ``reconstruction_reduction`` says (the Khatri-Rao
    runs' per-sample sum), not always per element: the mean passed every other test."""
    X, _ = blobs
    params = dict(
        **SMALL, reconstruction_reduction="sum_per_sample", max_iter=1, random_state=0, device="cpu"
    )
    model = IDEC(n_clusters=4, **params).fit(X)
    network, head = model._network_, model._head_
    x = torch.as_tensor(X[:32])
    recon_only = model.set_params(reconstruction_weight=1.0, clustering_weight=0.0)
    expected = ((x - network(x)[1]) ** 2).sum() / 32
    torch.testing.assert_close(recon_only._step_loss(network, head, x, None, 0), expected)


def test_the_reconstruction_error_weighs_each_chunk_by_its_rows(monkeypatch):
    """pretrain_loss_ (what 'auto' compares) is the loss of one batch of every row, however the rows
    are chunked: a mean of the chunks' means passed every other test (their data fit in one chunk)."""
    monkeypatch.setattr(base, "EMBED_CHUNK", 7)
    torch.manual_seed(0)
    network = base.MLPAutoencoder((5, 3, 2))
    data = torch.randn(20, 5) * torch.linspace(0.1, 5.0, 20)[:, None]  # chunks of unequal error
    with torch.no_grad():
        expected = float(base.reconstruction_loss(data, network(data)[1], "sum_per_sample"))
    assert base.reconstruction_error(network, data, "sum_per_sample") == pytest.approx(expected, rel=1e-6)


def test_other_data_of_the_same_shape_pretrains_its_own_network(blobs, pretrain_calls):
    """The data keys the cache: without its digest, a fit on rescaled (or other subsampled) data of
    the same shape loaded the first data's autoencoder, and every other test passed."""
    X, _ = blobs
    params = dict(n_clusters=4, **{**SMALL, "pretrain_epochs": 2}, max_iter=2, random_state=0, device="cpu")
    IDEC(**params).fit(X)
    other = IDEC(**params).fit(X * 2.0)
    assert len(pretrain_calls) == 2 and not other.pretrained_from_cache_


def pretrain_twelve_rows(network, epochs: int) -> float:
    """base.pretrain on the rows 0..11 (one feature) in batches of 5, 5 and 2, seeded."""
    data = torch.arange(12.0)[:, None]
    generator = torch.Generator().manual_seed(0)
    return base.pretrain(
        network, data, epochs=epochs, batch_size=5, lr=1e-3, reduction="mean", generator=generator
    )


def test_pretraining_draws_a_fresh_batch_order_at_each_epoch():
    """Each pretraining epoch walks its own seeded permutation of all the rows (docs: a fresh
    permutation per epoch): one order drawn for every epoch passed every other test."""

    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(()))
            self.seen = []

        def forward(self, x):
            self.seen.append(x[:, 0].tolist())
            return x, x * self.w

    network = Recorder()
    pretrain_twelve_rows(network, epochs=3)
    epochs = [[row for batch in network.seen[i : i + 3] for row in batch] for i in (0, 3, 6)]  # 5, 5, 2 rows
    assert all(sorted(order) == list(range(12)) for order in epochs)
    assert len({tuple(order) for order in epochs}) == 3


def test_the_centroids_are_seeded_by_kmeans_on_the_embedding_with_the_fits_seed(blobs, monkeypatch):
    """IDEC's centroids start at scikit-learn's KMeans(n_init, random_state) on the pretrained
    embedding, seeded by the fit's own seed: a seeding with one fixed seed, or with one restart,
    passed every other test (on clear blobs every seed finds one solution, so this runs on
    structureless data)."""
    X = np.random.default_rng(1).uniform(size=(120, 6)).astype(np.float32)
    seen = []
    original = base.kmeans_seeding
    monkeypatch.setattr(base, "kmeans_seeding", lambda E, *a: seen.append(E) or original(E, *a))
    starts, restarts_matter = [], []
    for seed in (0, 9):
        params = dict(layers=(6, 3), pretrain_epochs=1, pretrain_seed=0, n_init=3, max_iter=1, device="cpu")
        model = IDEC(n_clusters=6, **params, random_state=seed).fit(X)
        expected = KMeans(6, n_init=3, random_state=seed).fit(seen[-1]).cluster_centers_
        np.testing.assert_allclose(model.init_centers_, expected, atol=1e-5)
        starts.append(model.init_centers_)
        one_restart = KMeans(6, n_init=1, random_state=seed).fit(seen[-1]).cluster_centers_
        restarts_matter.append(np.abs(one_restart - expected).max() > 1e-2)
    np.testing.assert_array_equal(seen[0], seen[1])  # one pretrained network (pretrain_seed)
    assert np.abs(starts[0] - starts[1]).max() > 1e-2
    assert any(restarts_matter)  # at one seed at least, the best of 3 restarts is not the first


def test_the_protocentroids_are_seeded_by_khatri_rao_kmeans_as_configured(blobs, monkeypatch):
    """The Khatri-Rao seeding runs with kr_n_init restarts, kr_max_iter iterations and the fit's
    seed: a fixed seed or the default iteration cap passed every other test."""
    from clusterbench.methods.kr_kmeans import KhatriRaoKMeans

    X, _ = blobs
    seen = []
    original = KhatriRaoKMeans.fit
    monkeypatch.setattr(
        KhatriRaoKMeans, "fit", lambda self, E: seen.append(self.get_params()) or original(self, E)
    )
    params = dict(**SMALL, hadamard_multiplier=None, kr_n_init=3, kr_max_iter=7, max_iter=1, device="cpu")
    KhatriRaoIDEC(n_clusters=4, **params, random_state=5).fit(X)
    KhatriRaoDKM(n_clusters=4, **params, random_state=6).fit(X)
    assert [(p["n_init"], p["max_iter"], p["random_state"]) for p in seen] == [(3, 7, 5), (3, 7, 6)]
    assert [(p["aggregator"], p["h"]) for p in seen] == [("sum", None)] * 2


def test_auto_trains_the_reference_for_its_own_epochs_then_each_compressed_network(blobs, monkeypatch):
    """'auto' trains the full autoencoder reference_pretrain_epochs epochs, then compressed ones of
    pretrain_epochs + step·(m − 1) epochs: a reference trained pretrain_epochs passed every other
    test."""
    epochs = []
    original = base.pretrain
    monkeypatch.setattr(base, "pretrain", lambda *a, **k: epochs.append(k["epochs"]) or original(*a, **k))
    X, _ = blobs
    params = dict(n_clusters=4, layers=(16, 12, 8, 4), pretrain_batch_size=64, epochs=1, kr_n_init=1)
    model = KhatriRaoDKM(**params, hadamard_multiplier="auto", pretrain_epochs=1, pretrain_epochs_step=2)
    model.set_params(reference_pretrain_epochs=5, random_state=0, device="cpu").fit(X)
    m = model.hadamard_multiplier_
    assert epochs == [5] + [1 + 2 * (i - 1) for i in range(1, m + 1)]


def test_auto_is_from_the_cache_only_when_its_reference_network_is_too(blobs, monkeypatch):
    """pretrained_from_cache_ with 'auto' says whether every network of the schedule was loaded:
    the full reference network retrained while the compressed ones loaded is no cached fit."""
    X, _ = blobs
    params = dict(n_clusters=4, layers=(16, 12, 8, 4), pretrain_batch_size=64, epochs=1, kr_n_init=1)
    model = KhatriRaoDKM(**params, hadamard_multiplier="auto", pretrain_epochs=1, pretrain_epochs_step=2)
    model.set_params(reference_pretrain_epochs=3, random_state=0, device="cpu")
    assert not model.fit(X).pretrained_from_cache_
    assert model.fit(X).pretrained_from_cache_  # every network loaded
    loaded = []
    original = KhatriRaoDKM._load_or_pretrain

    def reference_missed(self, *args):
        loss, hit = original(self, *args)
        loaded.append(hit)
        return loss, hit and len(loaded) > 1  # the first call, the reference's, as if retrained

    monkeypatch.setattr(KhatriRaoDKM, "_load_or_pretrain", reference_missed)
    refit = model.fit(X)
    assert all(loaded) and len(loaded) == 1 + refit.hadamard_multiplier_
    assert not refit.pretrained_from_cache_


def test_dcec_builds_its_network_with_the_given_channels():
    """DCEC's three convolutions have ``channels`` filters: a network built with the default
    (32, 64, 128) whatever was asked passed every other test."""
    X = np.random.default_rng(0).standard_normal((20, 64)).astype(np.float32)
    model = DCEC(n_clusters=2, channels=(3, 5, 6), embedding_dim=2, pretrain_epochs=1, max_iter=1)
    model.set_params(random_state=0, device="cpu").fit(X)
    convs = [m for m in model._network_.encoder.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [3, 5, 6]


def test_n_params_counts_the_network_and_the_head(blobs):
    """n_params_ (the Khatri-Rao params column) is every network parameter plus the head's: k·e
    centroids, or h1 + h2 protocentroids of e values. The existing test compared two models' counts
    less the same 16, so a count without the head passed it."""
    X, _ = blobs
    idec = IDEC(n_clusters=4, **SMALL, max_iter=1, random_state=0, device="cpu").fit(X)
    network = sum(p.numel() for p in idec._network_.parameters())
    assert idec.n_params_ == network + 4 * 4
    kr = KhatriRaoIDEC(n_clusters=6, h=(2, 3), **SMALL, hadamard_multiplier=None, kr_n_init=1, max_iter=1)
    kr.set_params(random_state=0, device="cpu").fit(X)
    assert kr.n_params_ == sum(p.numel() for p in kr._network_.parameters()) + (2 + 3) * 4


def test_labels_by_kmeans_reclusters_into_as_many_clusters_as_the_head_has_centroids(blobs):
    """With Khatri-Rao set sizes h the head has h1·h2 centroids whatever n_clusters says, and the
    k-means re-clustering takes that many: one of n_clusters passed every other test."""
    X, _ = blobs
    model = KhatriRaoIDEC(n_clusters=8, h=(2, 2), **SMALL, hadamard_multiplier=None, kr_n_init=1, max_iter=1)
    model.set_params(labels_by="kmeans", n_init=2, random_state=0, device="cpu").fit(X)
    assert model.kmeans_.n_clusters == 4 and set(model.labels_) <= set(range(4))


def test_idecs_defaults_are_the_papers():
    """IDEC's defaults are Guo et al.'s: γ = 0.1 on KL(P‖Q) beside a reconstruction of weight 1,
    α = 1, P every 140 steps, tol 0.1%, 2·10⁴ steps, the d-500-500-2000-10 autoencoder pretrained
    200 epochs: γ = 1 passed every other test."""
    expected = dict(
        clustering_weight=0.1, reconstruction_weight=1.0, alpha=1.0, update_interval=140, tol=1e-3,
        max_iter=20000, layers=(500, 500, 2000, 10), pretrain_epochs=200, reconstruction_reduction="mean",
    )  # fmt: skip
    params = IDEC().get_params()
    assert {name: params[name] for name in expected} == expected


def test_pretraining_reports_the_last_epochs_mean_loss_over_its_rows():
    """pretrain returns the last epoch's loss averaged over rows, a short last batch weighing by its
    rows: a mean of the batches' means passed every other test. The network reconstructs 0 whatever
    its weight, so every epoch's loss is the mean of x² over the rows."""

    class Zero(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(()))

        def forward(self, x):
            return x, x * 0.0 * self.w

    data = torch.arange(12.0)[:, None]
    mean = pretrain_twelve_rows(Zero(), epochs=2)
    assert mean == pytest.approx(float(data.square().mean()), rel=1e-6)  # 5 + 5 + 2 rows


def test_an_embedding_as_wide_as_the_input_is_allowed(blobs):
    """Only an embedding wider than the input is refused without allow_wider_embedding: refusing
    one as wide passed every other test."""
    X, _ = blobs
    params = {**SMALL, "layers": (16, 20), "pretrain_epochs": 1}
    model = IDEC(n_clusters=4, **params, max_iter=1, random_state=0, device="cpu").fit(X)
    assert model.embedding_.shape == (240, 20)

"""SR-K-means, MI-ADM, MI-D (Jabi et al., TPAMI 2019), DEPICT's targets, AC-PIC and the DEPICT
autoencoder: the closed forms against hand computations, the cache, bad input, small fits."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.utils.estimator_checks import parametrize_with_checks
from torch import nn

from clusterbench.errors import HyperparameterError
from clusterbench.methods import ACPIC, MIADM, MID, SRKMeans
from clusterbench.methods.deep.base import squared_distances
from clusterbench.methods.deep.networks import DEPICTAutoencoder
from clusterbench.methods.mi_adm import adm_targets
from clusterbench.methods.mi_d import batch_mutual_information
from clusterbench.methods.sr_kmeans import (
    DEPICTClusterer,
    _Prototypes,
    mutual_information,
    soft_kmeans_loss,
    soft_kmeans_update,
)
from tests.helpers import Interrupted

TINY = dict(pretrain_epochs=3, init_epochs=2, epochs=3, init="kmeans", n_init=2, batch_size=20, device="cpu")
METHODS = (SRKMeans, MIADM, MID)


@pytest.fixture(autouse=True)
def pretrained_cache(tmp_path, monkeypatch):
    """Each test its own empty pretraining cache."""
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path / "pretrained"))


@pytest.fixture(scope="module")
def images():
    """60 8×8 images around three patterns (20 each), values in [−1, 1], and their labels."""
    rng = np.random.default_rng(0)
    patterns = np.zeros((3, 8, 8))
    patterns[0, :4], patterns[1, :, :4], patterns[2, 2:6, 2:6] = 1, 1, 1
    y = np.repeat(np.arange(3), 20)
    X = 2 * patterns[y] - 1 + 0.2 * rng.normal(size=(60, 8, 8))
    return X.reshape(60, 64).astype(np.float32), y


def test_soft_updates_never_increase_the_loss_with_features_fixed():
    """Eq. 27 then eq. 28, each a minimiser of eq. 18 in its variable: the loss only falls."""
    generator = torch.Generator().manual_seed(0)
    z = torch.randn(50, 4, generator=generator, dtype=torch.float64)
    q = torch.softmax(torch.randn(50, 3, generator=generator, dtype=torch.float64), dim=1)
    lam = 0.5
    theta = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    losses = [float(soft_kmeans_loss(z, theta, q, lam))]
    for _ in range(20):
        theta = soft_kmeans_update(z, q, lam)[0]  # eq. 27 alone
        losses.append(float(soft_kmeans_loss(z, theta, q, lam)))
        theta, q = soft_kmeans_update(z, q, lam)  # then eq. 28 on that θ
        losses.append(float(soft_kmeans_loss(z, theta, q, lam)))
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(losses))
    assert losses[-1] < losses[0] - 1e-3


P = torch.tensor([[0.9, 0.1], [0.7, 0.3], [0.2, 0.8]], dtype=torch.float64)


def test_mi_adm_targets_of_eq_14_by_hand():
    # Σ_i p² = (1.34, 0.74): q_0 ∝ (0.81/√1.34, 0.01/√0.74) = (0.69974, 0.011625) → (0.98366, 0.01634)
    expected = [[0.9836584, 0.0163416], [0.8018200, 0.1981800], [0.0443840, 0.9556160]]
    np.testing.assert_allclose(adm_targets(P, "mi").numpy(), expected, atol=1e-6)


def test_depict_targets_of_eq_9_and_of_its_code_by_hand():
    # Σ_i p = (1.8, 1.2): q_0 ∝ (0.9/√1.8, 0.1/√1.2) = (0.67082, 0.091287) → (0.88022, 0.11978)
    expected = [[0.8802176, 0.1197824], [0.6557847, 0.3442153], [0.1695208, 0.8304792]]
    np.testing.assert_allclose(adm_targets(P, "depict").numpy(), expected, atol=1e-6)
    # q ∝ p²/Σ_i p: q_0 ∝ (0.45, 0.008333) → (0.98182, 0.01818)
    expected = [[0.9818182, 0.0181818], [0.784, 0.216], [0.04, 0.96]]
    np.testing.assert_allclose(adm_targets(P, "depict_code").numpy(), expected, atol=1e-6)


def test_mutual_information_of_uniform_and_of_balanced_one_hot_posteriors():
    assert mutual_information(torch.full((12, 4), 0.25)) == pytest.approx(0.0, abs=1e-7)
    one_hot = torch.eye(4).repeat(3, 1)
    assert mutual_information(one_hot) == pytest.approx(math.log(4), abs=1e-6)
    assert float(batch_mutual_information(torch.log(one_hot.clamp(min=1e-30)))) == pytest.approx(
        math.log(4), abs=1e-5
    )


def test_the_depict_autoencoder_mirrors_the_code_settings_per_image_size():
    for shape, paddings in (((1, 16, 16), (0, 2)), ((1, 28, 28), (0, 2)), ((1, 32, 32), (2, 2))):
        network = DEPICTAutoencoder(shape, 10, paddings=paddings)
        x = torch.zeros(2, *shape)
        z, x_hat = network(x)
        assert z.shape == (2, 10) and x_hat.shape == x.shape
        assert torch.equal(network.encode(x), network.encode(x))  # the clean path has no dropout


def test_a_second_fit_runs_no_pretraining(images, monkeypatch):
    """The three methods share the pretraining (``DEPICTClusterer``); SR-K-means checks it."""
    calls = []
    original = DEPICTClusterer._pretrain

    def counted(self, *args):
        calls.append(True)
        return original(self, *args)

    monkeypatch.setattr(DEPICTClusterer, "_pretrain", counted)
    first = SRKMeans(3, **TINY, random_state=0).fit(images[0])
    torch.manual_seed(1)  # the caller's global generator state must not matter
    second = SRKMeans(3, **TINY, random_state=0).fit(images[0])
    assert len(calls) == 1
    assert not first.pretrained_from_cache_ and second.pretrained_from_cache_
    np.testing.assert_array_equal(first.labels_, second.labels_)  # deterministic on CPU


@pytest.mark.parametrize("init", ["ac_pic", "kmeans"])
def test_fits_sharing_a_network_cluster_its_embedding_once(images, monkeypatch, init):
    """The initial clustering is cached with the network: MI-ADM then SR-K-means on the same data
    and seed run it once, and start from the same labels; another seed's network runs its own."""
    from clusterbench.methods import sr_kmeans

    calls = []
    original = ACPIC.fit if init == "ac_pic" else sr_kmeans.KMeans.fit

    def counted(self, *args, **kwargs):
        calls.append(True)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ACPIC if init == "ac_pic" else sr_kmeans.KMeans, "fit", counted)
    settings = TINY | {"init": init}
    first = MIADM(3, **settings, random_state=0).fit(images[0])
    second = SRKMeans(3, **settings, random_state=0).fit(images[0])
    assert len(calls) == 1
    np.testing.assert_array_equal(first.init_labels_, second.init_labels_)
    MIADM(3, **settings, random_state=1).fit(images[0])
    assert len(calls) == 2


def test_phase_two_starts_from_the_pretrained_network_when_no_epoch_beats_it(images, monkeypatch):
    """Phase 1's first candidate is the pretrained network (as the authors' code): with validation
    scores that only fall, phase 2 receives the weights phase 1 started from."""
    from clusterbench.methods import sr_kmeans

    scores = iter([0.9, 0.5, 0.4, 0.3, 0.2, 0.1])
    monkeypatch.setattr(sr_kmeans, "normalized_mutual_info_score", lambda truth, predicted: next(scores))
    starts = {}

    def spying(phase, name):
        def spy(self, network, *args):
            starts[name] = copy.deepcopy(network.state_dict())
            return phase(self, network, *args)

        return spy

    monkeypatch.setattr(DEPICTClusterer, "_hard_phase", spying(DEPICTClusterer._hard_phase, "hard"))
    monkeypatch.setattr(DEPICTClusterer, "_soft_phase", spying(DEPICTClusterer._soft_phase, "soft"))
    model = SRKMeans(3, **{**TINY, "init_epochs": 10, "init_patience": 3}, random_state=0).fit(images[0])
    assert model.validation_nmi_ == [0.9, 0.5, 0.4, 0.3] and model.n_init_epochs_ == 3
    for name, tensor in starts["hard"].items():
        assert torch.equal(starts["soft"][name], tensor), name


def test_an_interrupted_pretraining_resumes_where_it_stopped(images, monkeypatch, tmp_path):
    """Progress saved after each epoch (CHECKPOINT_SECONDS = 0); a fit stopped after its third save
    is finished by the next fit, which trains only the remaining epochs, to the very same model."""
    from clusterbench.methods.deep import cache

    X = images[0]
    params = {**TINY, "pretrain_epochs": 6, "pretrain_patience": 10, "pretrain_batch_size": 15}
    whole = SRKMeans(3, **params, random_state=0).fit(X)
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path / "second"))
    monkeypatch.setattr(cache, "CHECKPOINT_SECONDS", 0.0)
    saves, original_save = [], cache.save_progress

    def save_then_stop(key, progress, folder=None):
        original_save(key, progress, folder)
        if "run" in progress:  # the clustering phases' progress
            return
        saves.append(progress["epoch"])
        if len(saves) == 3:
            raise Interrupted

    monkeypatch.setattr(cache, "save_progress", save_then_stop)
    with pytest.raises(Interrupted):
        SRKMeans(3, **params, random_state=0).fit(X)
    assert saves == [1, 2, 3] and len(list((tmp_path / "second").glob("*.partial"))) == 1
    epochs, original_batches = [], DEPICTClusterer._batches

    def counted(self, rows, size, generator):
        epochs.extend([True] if size == 15 else [])  # pretraining's batch size only
        return original_batches(self, rows, size, generator)

    monkeypatch.setattr(DEPICTClusterer, "_batches", counted)
    resumed = SRKMeans(3, **params, random_state=0).fit(X)
    assert len(epochs) == 3 and resumed.pretrain_epochs_run_ == whole.pretrain_epochs_run_ == 6
    assert resumed.pretrain_loss_ == whole.pretrain_loss_
    np.testing.assert_array_equal(resumed.embedding_, whole.embedding_)
    assert not list((tmp_path / "second").glob("*.partial"))  # finished: the progress is gone


@pytest.mark.parametrize("cls", METHODS)
@pytest.mark.parametrize("stop_at", [1, 4, 6], ids=["phase 1", "phase 2", "after the last epoch"])
def test_an_interrupted_clustering_resumes_where_it_stopped(cls, stop_at, images, monkeypatch, tmp_path):
    """The clustering phases save their progress after each epoch too (CHECKPOINT_SECONDS = 0):
    a fit stopped after its ``stop_at``-th save (phase 1 after its first epoch; phase 2 after its
    first, the two phase-1 epochs and the phase boundary being the first three saves; after the
    last of phase 2's three) is finished by the next fit, which trains only the remaining epochs,
    to the same labels, losses, records of I(X, K) and fitted heads as a fit never stopped."""
    from clusterbench.methods.deep import cache

    # Unbalanced (20, 20, 10 of the patterns): SR-K-means' prior is not the uniform it starts
    # from. tol 0: phase 2 runs all its epochs.
    X, params = images[0][:50], {**TINY, "tol": 0.0}
    whole = cls(3, **params, random_state=0).fit(X)
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path / "second"))
    monkeypatch.setattr(cache, "CHECKPOINT_SECONDS", 0.0)
    saves, original_save = [], cache.save_progress  # (phase, epochs trained) at each save

    def save_then_stop(key, progress, folder=None):
        original_save(key, progress, folder)
        if "run" in progress:
            saves.append((progress["run"]["phase"], len(progress["run"]["losses"])))
            if len(saves) == stop_at:
                raise Interrupted

    monkeypatch.setattr(cache, "save_progress", save_then_stop)
    with pytest.raises(Interrupted):
        cls(3, **params, random_state=0).fit(X)
    phase, trained = saves[-1]
    assert phase == (1 if stop_at == 1 else 2) and trained == stop_at - (stop_at > 1)
    epochs, original_epoch = [], DEPICTClusterer._epoch

    def counted(self, *args):
        epochs.append(True)
        return original_epoch(self, *args)

    monkeypatch.setattr(DEPICTClusterer, "_epoch", counted)
    resumed = cls(3, **params, random_state=0).fit(X)
    assert len(epochs) == len(whole.loss_history_) - trained == 5 - trained
    np.testing.assert_array_equal(resumed.labels_, whole.labels_)
    np.testing.assert_array_equal(resumed.loss_history_, whole.loss_history_)
    np.testing.assert_array_equal(resumed.embedding_, whole.embedding_)
    assert resumed.mutual_information_ == whole.mutual_information_
    assert resumed.validation_nmi_ == whole.validation_nmi_
    assert whole.earlier_seconds_ == 0.0 < resumed.earlier_seconds_  # the stopped run's time, kept
    assert (resumed.n_init_epochs_, resumed.n_iter_) == (whole.n_init_epochs_, whole.n_iter_)
    for fitted in ("prior_", "cluster_centers_", "classifier_weights_"):  # the subclasses' own
        if hasattr(whole, fitted):
            np.testing.assert_array_equal(getattr(resumed, fitted), getattr(whole, fitted))
    assert not list((tmp_path / "second").glob("*.partial"))  # finished: the progress is gone


def test_a_fit_without_random_state_saves_no_clustering_progress(images, monkeypatch):
    """``pretrain_seed`` alone caches the network, but the clustering's seed is drawn: its
    checkpoint would key a file no later fit asks for, so none is written."""
    from clusterbench.methods.deep import cache

    monkeypatch.setattr(cache, "CHECKPOINT_SECONDS", 0.0)
    saved = []
    monkeypatch.setattr(cache, "save_progress", lambda key, progress, folder=None: saved.append(progress))
    SRKMeans(3, **TINY, pretrain_seed=0).fit(images[0])
    assert saved and not [progress for progress in saved if "run" in progress]  # pretraining's only


@pytest.mark.parametrize("cls", METHODS)
@pytest.mark.parametrize(
    "params, data, message",
    [
        ({"n_clusters": 1}, "images", "n_clusters must be an integer ≥ 2"),
        ({"n_clusters": 61}, "images", "at most the number of points"),
        ({}, "tabular", r"needs images .*image_shape=\[C, H, W\]"),
        ({"image_shape": [1, 4, 4]}, "images", "holds 16 values but the data has 64"),
        ({"device": "cuda"}, "images", "no CUDA GPU is visible"),
    ],
)
def test_bad_input_is_a_hyperparameter_error(cls, params, data, message, images):
    if params.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    X = images[0] if data == "images" else np.zeros((30, 10), dtype=np.float32)
    with pytest.raises(HyperparameterError, match=message):
        cls(**{"n_clusters": 3, **TINY, **params}).fit(X)


@pytest.mark.parametrize("lam", [0.0, -1e-4])
def test_a_non_positive_lambda_is_a_hyperparameter_error(lam, images):
    with pytest.raises(HyperparameterError, match="lam must be a number > 0"):
        SRKMeans(3, lam=lam, **TINY).fit(images[0])


@pytest.mark.parametrize(
    "model",
    [
        SRKMeans(3, **TINY, random_state=0),
        SRKMeans(3, **{**TINY, "init": "ac_pic"}, random_state=0),
        MIADM(3, **TINY, random_state=0),
        MIADM(3, **TINY, targets="depict", random_state=0),
        MID(3, **TINY, random_state=0),
    ],
    ids=["sr", "sr-acpic", "mi-adm", "depict", "mi-d"],
)
def test_small_fits_find_the_three_patterns_and_record_the_information(model, images):
    X, y = images
    model.fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.9
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    assert len(model.mutual_information_) == model.n_iter_ + 1
    assert all(0 <= v <= math.log(3) + 1e-6 for v in model.mutual_information_)
    assert model.embedding_.shape == (60, 3)


@pytest.mark.parametrize("cls", METHODS)
def test_a_fit_leaves_the_callers_torch_generator_where_it_was(cls, images):
    """MI-ADM and MI-D drew their classifier's default initialisation (then overwritten) from the
    caller's global generator, outside the fit's own seeded block."""
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    cls(3, **TINY, random_state=0).fit(images[0])
    torch.testing.assert_close(torch.rand(3), expected, rtol=0, atol=0)


def test_prior_corrected_labels_are_the_codes_rule(images):
    """argmax_k z·θ_kᵀ/(λK) + ½ log q̂_k, recomputed from the fitted attributes."""
    X = images[0]
    model = SRKMeans(3, **TINY, labels_by="prior_corrected", random_state=0).fit(X)
    scores = model.embedding_ @ model.cluster_centers_.T / (1e-4 * 3) + 0.5 * np.log(model.prior_)
    np.testing.assert_array_equal(model.labels_, scores.argmax(1))
    np.testing.assert_allclose(model.prior_.sum(), 1.0, rtol=1e-6)


def test_ac_pic_separates_well_separated_blobs():
    X, y = make_blobs(120, centers=[[0, 0], [10, 0], [0, 10]], cluster_std=0.5, random_state=0)
    assert adjusted_rand_score(y, ACPIC(3).fit(X).labels_) == 1.0


# These checks set n_clusters=1, which AC-PIC refuses as the deep methods do (k ≥ 2 is checked).
ONE_CLUSTER_CHECKS = [
    "check_dont_overwrite_parameters",
    "check_methods_subset_invariance",
    "check_fit2d_1sample",
    "check_fit2d_1feature",
    "check_fit2d_predict1d",
]


@parametrize_with_checks(
    [ACPIC(3, n_neighbors=5)],
    expected_failed_checks=lambda _: dict.fromkeys(ONE_CLUSTER_CHECKS, "sets n_clusters=1; k ≥ 2 is checked"),
)
def test_ac_pic_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_prior_corrected_labels_add_half_the_log_prior():
    """The code's labelling rule, θ'_kᵀz/(λK) + ½ log q̂_k, by hand: λK = 0.5 · 2 = 1, θ = I,
    prior (0.1, 0.9). Point (1.5, 0): 1.5 + ½ log 0.1 = 0.349 against ½ log 0.9 = −0.053, so
    cluster 0 (with the whole log prior −0.803 against −0.105: cluster 1). Point (0, 1): cluster 1.
    The other test's λ = 1e-4 lets z·θ swamp any prior factor."""
    model = SRKMeans(2, lam=0.5, labels_by="prior_corrected")
    model._prior = torch.tensor([0.1, 0.9], dtype=torch.float64)
    head = _Prototypes(torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64))
    z = torch.tensor([[1.5, 0.0], [0.0, 1.0]], dtype=torch.float64)
    assert model._labels(head, z).tolist() == [0, 1]


# From a third mutation audit of the suite: each test below failed with one plausible bug in
# place and passed without it.

# Two soft posteriors and their batch information by hand: the mean of Σ_k p ln p over the points,
# ((.9 ln .9 + .1 ln .1) + (.2 ln .2 + .8 ln .8)) / 2, plus the entropy of their mean (0.55, 0.45).
SOFT_POSTERIORS = [[0.9, 0.1], [0.2, 0.8]]
SOFT_INFORMATION = (
    (0.9 * math.log(0.9) + 0.1 * math.log(0.1)) + (0.2 * math.log(0.2) + 0.8 * math.log(0.8))
) / 2 - (0.55 * math.log(0.55) + 0.45 * math.log(0.45))


def test_batch_mutual_information_of_soft_posteriors_by_hand():
    p = torch.tensor(SOFT_POSTERIORS, dtype=torch.float64)
    assert float(batch_mutual_information(p.log())) == pytest.approx(SOFT_INFORMATION, rel=1e-9)
    assert pytest.approx(0.2753961, abs=1e-7) == SOFT_INFORMATION


def test_mi_d_minimises_minus_the_batch_information_after_phase_one():
    logits = torch.tensor(SOFT_POSTERIORS, dtype=torch.float64).log()  # softmax = themselves
    loss = MID(2)._batch_loss(torch.nn.Identity(), logits, None, hard=False)
    assert float(loss) == pytest.approx(-SOFT_INFORMATION, rel=1e-9)  # −Î_B: falls as Î_B rises


def test_ac_pic_path_integral_of_a_two_point_walk_by_hand():
    from scipy import sparse

    model = ACPIC(2, z=0.5)
    model._transitions = sparse.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    # (I − zP)⁻¹ = [[1, z], [z, 1]] / (1 − z²) = [[4/3, 2/3], [2/3, 4/3]]
    # whole cluster: 1ᵀ·M·1 / 2² = 4 / 4 = 1; the part {0}: M_00 / 1² = 4/3
    whole, first = model._integral(np.arange(2), [np.arange(2), np.array([0])])
    np.testing.assert_allclose([whole, first], [1.0, 4.0 / 3.0], rtol=1e-12)


def test_mi_adm_target_step_uses_the_chosen_targets():
    p = torch.tensor([[0.9, 0.1], [0.7, 0.3], [0.2, 0.8]], dtype=torch.float64)
    for kind in ("mi", "depict", "depict_code"):
        q, kept = MIADM(2, targets=kind)._update(torch.nn.Identity(), p.log(), None)
        torch.testing.assert_close(kept, p)
        torch.testing.assert_close(q, adm_targets(p, kind))
    # eq. 9 by hand, row 0: (0.9/√1.8, 0.1/√1.2) normalised = (0.8802176, 0.1197824)
    q, _ = MIADM(2, targets="depict")._update(torch.nn.Identity(), p.log(), None)
    torch.testing.assert_close(
        q[0], torch.tensor([0.8802176, 0.1197824], dtype=torch.float64), atol=1e-6, rtol=0
    )


def test_ac_pic_graph_bandwidth_is_a_times_the_mean_squared_neighbour_distance(monkeypatch):
    seen = {}

    def capture(self, start, count, adjacency):
        seen[self.a] = self._transitions.toarray()
        return np.zeros(len(start), dtype=np.int64)

    monkeypatch.setattr(ACPIC, "_merge", capture)
    X = np.array([[0.0], [1.0], [3.0]])
    for a in (1.0, 4.0):
        ACPIC(2, n_neighbors=2, a=a).fit(X)
        # squared neighbour distances: 0→(1, 9), 1→(1, 4), 2→(4, 9); mean 28/6; σ² = a·28/6
        s2 = a * 28 / 6
        w = np.array(
            [
                [0, np.exp(-1 / s2), np.exp(-9 / s2)],
                [np.exp(-1 / s2), 0, np.exp(-4 / s2)],
                [np.exp(-9 / s2), np.exp(-4 / s2), 0],
            ]
        )
        np.testing.assert_allclose(seen[a], w / w.sum(1, keepdims=True), rtol=1e-12)


def test_ac_pic_keeps_merging_into_the_cluster_it_just_formed():
    # One component of first-neighbour links (< 2 clusters), so merging starts from single points.
    # The tight triple must end as one cluster and the far point alone; merging a new cluster with
    # its neighbours must compete by its (largest) affinity, not be pushed behind every old pair.
    X = np.array([[0.0], [0.1], [0.25], [5.0]])
    model = ACPIC(2).fit(X)
    assert model.n_initial_clusters_ == 4
    labels = model.labels_
    assert labels[0] == labels[1] == labels[2] != labels[3]


# From a fifth mutation audit of the suite (SR-K-means): each test below failed with one plausible
# bug in place and passed without it.


def test_the_update_is_eq_27_with_the_previous_q_then_eq_28_by_hand():
    """λK = 0.25 · 2 = 0.5. z = (0, 1, 3), hard Q (0, 0, 1): eq. 27 gives θ = (0.5, 3); eq. 28 on
    that θ gives q_i ∝ exp(−2(z_i − θ_k)²), and q̂ its mean. Survived: θ taken from the new Q
    instead of the previous one (an extra eq. 28 round first); also catches 1/λ for 1/(λK)."""
    model = SRKMeans(2, lam=0.25)
    head = _Prototypes(torch.zeros(2, 1, dtype=torch.float64))
    z = torch.tensor([[0.0], [1.0], [3.0]], dtype=torch.float64)
    previous = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    q, assignments = model._update(head, z, previous)
    np.testing.assert_allclose(head.theta.numpy(), [[0.5], [3.0]], rtol=1e-12)
    logits = -2.0 * (np.array([0.0, 1.0, 3.0])[:, None] - np.array([0.5, 3.0])) ** 2
    expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    assert expected[1, 1] == pytest.approx(np.exp(-8) / (np.exp(-0.5) + np.exp(-8)), rel=1e-12)
    np.testing.assert_allclose(q.numpy(), expected, rtol=1e-10, atol=1e-14)
    assert assignments is q
    np.testing.assert_allclose(model._prior.numpy(), expected.mean(0), rtol=1e-10)


def test_the_network_loss_is_eq_46_by_hand():
    """(1/(NλK))·Σ_i[Σ_k q_ik‖z̃_i − θ_k‖² − ‖z̃_i‖²] with λK = 0.25 · 2 = 0.5: point (1, 0), q = (1, 0),
    θ = ((1, 0), (0, 0)): 0 − 1; point (0, 2), q = (½, ½): ½·5 + ½·4 − 4 = ½; mean −¼, over λK:
    −½. Survived: +‖z̃‖² for −‖z̃‖², and the scale 1/λ (K dropped)."""
    model = SRKMeans(2, lam=0.25)
    head = _Prototypes(torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64))
    z = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    q = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=torch.float64)
    for hard in (True, False):
        assert float(model._batch_loss(head, z, q, hard)) == pytest.approx(-0.5, rel=1e-12)


def test_eq_18_over_n_by_hand():
    """Eq. 18 / N: mean_i[Σ_k q_ik‖z_i − θ_k‖² + λK Σ_k q_ik log q_ik − ‖z_i‖²], against numpy.
    Survived: λ for λK on the entropy term."""
    z = np.array([[0.0, 1.0], [2.0, -1.0], [1.0, 1.0]])
    theta = np.array([[0.0, 0.5], [1.5, 0.0]])
    q = np.array([[0.8, 0.2], [0.1, 0.9], [0.5, 0.5]])
    lam, k = 0.3, 2
    distances = ((z[:, None] - theta[None]) ** 2).sum(-1)
    expected = ((q * distances).sum(1) + lam * k * (q * np.log(q)).sum(1) - (z**2).sum(1)).mean()
    got = soft_kmeans_loss(*(torch.tensor(a) for a in (z, theta, q)), lam)
    assert float(got) == pytest.approx(expected, rel=1e-12)


class _Doubling(nn.Module):
    """A stand-in network whose clean embedding is twice its input."""

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * x


def test_phase_one_sets_the_prototypes_to_the_means_of_the_current_embedding():
    """Phase 1's per-epoch refresh (``_refresh``): θ by eq. 27 from the fixed hard labels over the
    clean embedding of all N (here 2x). Survived: the refresh skipped (θ kept at the initial means)."""
    model = SRKMeans(2)
    head = _Prototypes(torch.zeros(2, 2, dtype=torch.float64))
    data = torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], dtype=torch.float64)
    q = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    model._refresh(head, _Doubling(), data, q)
    np.testing.assert_allclose(head.theta.numpy(), [[2.0, 4.0], [8.0, 10.0]], rtol=1e-12)


def test_assignment_labels_are_the_nearest_prototype_not_the_largest_inner_product():
    """labels_by='assignment': argmax of eq. 28, the nearest θ_k. z = (1.2, 0) is nearest θ_0 = (1, 0)
    (0.04 against 3.24) but has the larger inner product with θ_1 = (3, 0). Survived: argmax zθᵀ."""
    model = SRKMeans(2)
    head = _Prototypes(torch.tensor([[1.0, 0.0], [3.0, 0.0]], dtype=torch.float64))
    z = torch.tensor([[1.2, 0.0], [2.2, 0.0]], dtype=torch.float64)
    assert model._labels(head, z).tolist() == [0, 1]


# From a sixth mutation audit of the suite (the DEPICT protocol shared by SR-K-means, MI-ADM and
# MI-D): each test below failed with one plausible bug in place and passed without it.


def test_phase_one_stops_after_init_patience_epochs_without_a_strict_gain(images, monkeypatch):
    """Validation NMIs 0.5 (pretrained), then 0.6, 0.4, 0.7, 0.7, 0.6, …, patience 2: epoch 3's 0.7
    resets the count, epoch 4's equal 0.7 is no gain, epoch 5 is the second without one, so phase 1
    ends after 5 epochs. Survived: a tie counted as a gain (6 epochs), the count not reset by a
    gain (4 epochs)."""
    from clusterbench.methods import sr_kmeans

    scores = iter([0.5, 0.6, 0.4, 0.7, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1])
    monkeypatch.setattr(sr_kmeans, "normalized_mutual_info_score", lambda truth, predicted: next(scores))
    model = SRKMeans(3, **{**TINY, "init_epochs": 10, "init_patience": 2}, random_state=0).fit(images[0])
    assert model.validation_nmi_ == [0.5, 0.6, 0.4, 0.7, 0.7, 0.6] and model.n_init_epochs_ == 5


def test_phase_two_starts_from_the_classifier_phase_one_kept(images, monkeypatch):
    """MI-ADM's head is trained in phase 1: with validation scores that only fall, phase 2 receives
    the classifier phase 1 started from (the pretrained network's candidate), not the last epoch's.
    Survived: only the network restored from the best snapshot."""
    from clusterbench.methods import sr_kmeans

    scores = iter([0.9, 0.5, 0.4, 0.3])
    monkeypatch.setattr(sr_kmeans, "normalized_mutual_info_score", lambda truth, predicted: next(scores))
    heads = {}

    def spying(phase, name):
        def spy(self, network, head, *args):
            heads[name] = copy.deepcopy(head.state_dict())
            return phase(self, network, head, *args)

        return spy

    monkeypatch.setattr(DEPICTClusterer, "_hard_phase", spying(DEPICTClusterer._hard_phase, "hard"))
    monkeypatch.setattr(DEPICTClusterer, "_soft_phase", spying(DEPICTClusterer._soft_phase, "soft"))
    model = MIADM(3, **{**TINY, "init_epochs": 3, "init_patience": 5}, random_state=0).fit(images[0])
    assert model.n_init_epochs_ == 3
    for name, tensor in heads["hard"].items():
        assert torch.equal(heads["soft"][name], tensor), name


def test_phase_one_trains_on_the_split_on_hard_targets_and_phase_two_on_all_data(images, monkeypatch):
    """Phase 1's passes are over the 90% training split only (the other 10% scores the early
    stopping), with ``hard`` set; phase 2's over all N with it unset (MI-D then minimises −Î_B, not
    the cross-entropy). Survived: phase 1 trained on all the rows; phase 2 passed ``hard=True``."""
    passes, original = [], DEPICTClusterer._epoch

    def spy(self, network, head, data, rows, targets, optimizer, generator, hard):
        passes.append((len(rows), len(set(rows.tolist())), hard))
        return original(self, network, head, data, rows, targets, optimizer, generator, hard)

    monkeypatch.setattr(DEPICTClusterer, "_epoch", spy)
    MID(3, **{**TINY, "tol": 0.0}, random_state=0).fit(images[0])
    assert passes == [(54, 54, True)] * 2 + [(60, 60, False)] * 3


class _ScaledLine(nn.Module):
    """A stand-in network: the embedding is w·x for one weight w, with no reconstruction term."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones((), dtype=torch.float64))

    def denoising(self, x: torch.Tensor):
        return self.w * x, torch.zeros((), dtype=torch.float64)


def test_an_epochs_recorded_loss_is_the_mean_over_its_points_not_over_its_batches():
    """λK = 1, θ = (1, −1), every q = (1, 0): a point z loses (z − 1)² − z² = 1 − 2z, so the points
    0, 1, 2, 3, 10 lose 1, −1, −3, −5, −19, mean −5.4 (SGD at lr 0 keeps w = 1). Batches of 2 leave
    one point alone, and the mean of the three batch means is (−27 + its loss)/6, never −5.4.
    Survived: the mean of the batch means."""
    model = SRKMeans(2, lam=0.5, batch_size=2)
    model.device_ = "cpu"
    network = _ScaledLine()
    head = _Prototypes(torch.tensor([[1.0], [-1.0]], dtype=torch.float64))
    data = torch.tensor([[0.0], [1.0], [2.0], [3.0], [10.0]], dtype=torch.float64)
    q = torch.tensor([[1.0, 0.0]] * 5, dtype=torch.float64)
    optimizer = torch.optim.SGD(network.parameters(), lr=0.0)
    for seed in range(3):
        generator = torch.Generator().manual_seed(seed)
        loss = model._epoch(network, head, data, torch.arange(5), q, optimizer, generator, False)
        assert loss == pytest.approx(-5.4, rel=1e-12)


def test_phase_two_stops_on_the_mean_squared_change_of_q_or_after_its_epochs():
    """Scripted updates that move every entry of Q by 0.2, then by 0.05: with tol 0.01 the run
    stops after the second (0.05² < 0.01, though the mean absolute change 0.05 is not); with
    steps of 0.2 only it stops after ``epochs`` = 3, unconverged. Survived: the mean absolute
    change for the squared one; one epoch more than ``epochs``."""
    from clusterbench.methods.sr_kmeans import _Run

    def soft_phase(steps, epochs):
        model = SRKMeans(2, epochs=epochs, tol=0.01)
        model.device_ = "cpu"
        model._epoch = lambda *args: 0.0
        model._embed = lambda network, data: data
        steps = iter(steps)

        def update(head, z, previous):
            targets = previous + next(steps)
            return targets, torch.softmax(targets, dim=1)

        model._update = update
        run = _Run(phase=2, targets=torch.zeros(4, 2))
        model._soft_phase(None, None, torch.zeros(4, 1), None, None, run, lambda: None)
        return run.n_iter, run.converged, len(run.losses), len(run.mutual_information)

    assert soft_phase([0.2] + [0.05] * 9, epochs=10) == (2, True, 2, 2)
    assert soft_phase([0.2] * 10, epochs=3) == (3, False, 3, 3)


def test_k_means_initialisation_uses_the_fits_seed_and_its_restarts(monkeypatch):
    """init='kmeans' runs scikit-learn's KMeans with ``n_init`` restarts, seeded by the fit's seed
    (taken mod 2³², the range scikit-learn takes). Survived: a fixed random_state."""
    from clusterbench.methods import sr_kmeans

    made, original = [], sr_kmeans.KMeans

    def recorded(*args, **kwargs):
        made.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(sr_kmeans, "KMeans", recorded)
    embedding = torch.tensor([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    for seed in (7, 2**32 + 9):
        labels = SRKMeans(2, init="kmeans", n_init=3)._initial_labels(embedding, seed)
        assert labels[0] == labels[1] != labels[2] == labels[3]
    assert made == [{"n_init": 3, "random_state": 7}, {"n_init": 3, "random_state": 9}]


class _ScriptedValidation(nn.Module):
    """A stand-in autoencoder for pretraining: a trainable (noisy) loss w², and clean validation
    losses read from a script, one per epoch."""

    def __init__(self, losses):
        super().__init__()
        self.w = nn.Parameter(torch.ones(()))
        self.losses = iter(losses)

    def denoising(self, x: torch.Tensor, noisy: bool = True):
        if noisy:
            return None, self.w.square()
        return None, torch.tensor(next(self.losses))


def test_pretraining_stops_pretrain_patience_epochs_after_its_best_and_keeps_that_network():
    """Validation losses 1.0, 0.5, 0.6, 0.7, 0.8, … with patience 2: the best is epoch 2's, and
    epochs 3 and 4 without a gain end the run after 4 epochs, with epoch 2's weights and loss.
    Survived: one epoch more than the patience."""
    from clusterbench.methods.deep.cache import FitProgress

    model = SRKMeans(3, pretrain_patience=2, pretrain_lr=0.1, pretrain_batch_size=10)
    model.device_ = "cpu"
    network = _ScriptedValidation([1.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    weights = []
    original = network.denoising

    def recording(x, noisy=True):
        if not noisy:
            weights.append(float(network.w.detach()))  # the weights each validation loss belongs to
        return original(x, noisy)

    network.denoising = recording
    loss, epochs = model._pretrain(network, torch.zeros(20, 1), 10, 0, FitProgress(None))
    assert (loss, epochs) == (0.5, 4)
    assert len(weights) == 4 and float(network.w.detach()) == weights[1] != weights[3]


def test_softmax_classifier_starts_with_the_initial_means_as_its_class_directions():
    """MI-ADM and MI-D's head: logits z·θ_k with θ_k the initial clusters' means (the DEPICT code's
    W = cluster_centers_ᵀ in a Keras Dense), bias 0. z = e_0 scores (θ_00, θ_10) = (1, 3).
    Survived: the means transposed (θ as a K × K matrix, z·θ_{·k})."""
    model = MIADM(2)
    model.device_ = "cpu"
    head = model._head(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    torch.testing.assert_close(head(z), torch.tensor([[1.0, 3.0], [2.0, 4.0]]), rtol=0, atol=0)


def test_prior_corrected_labels_scale_the_inner_product_by_lambda_k():
    """λ = 0.5, K = 2, θ = I, prior (0.1, 0.9): z = (1, 0) scores 1/(λK) + ½ log 0.1 = −0.151
    against ½ log 0.9 = −0.053, so cluster 1; over λ alone it would be 2 − 1.151 = 0.849: cluster 0.
    Survived: the inner product over λ (K dropped)."""
    model = SRKMeans(2, lam=0.5, labels_by="prior_corrected")
    model._prior = torch.tensor([0.1, 0.9], dtype=torch.float64)
    head = _Prototypes(torch.eye(2, dtype=torch.float64))
    z = torch.tensor([[1.0, 0.0], [1.5, 0.0]], dtype=torch.float64)
    assert model._labels(head, z).tolist() == [1, 0]


def test_the_pretraining_cache_is_keyed_by_the_patience(images):
    """A network pretrained with another ``pretrain_patience`` may have stopped elsewhere: it is
    not reused. Survived: the patience left out of the cache key."""
    first = SRKMeans(3, **TINY, random_state=0).fit(images[0])
    second = SRKMeans(3, **TINY, pretrain_patience=1, random_state=0).fit(images[0])
    third = SRKMeans(3, **TINY, pretrain_patience=1, random_state=0).fit(images[0])
    assert not first.pretrained_from_cache_ and not second.pretrained_from_cache_
    assert third.pretrained_from_cache_


@pytest.mark.parametrize("cls", METHODS)
def test_the_last_recorded_information_is_that_of_the_final_assignments(cls, images):
    """I(X, K) (eq. 11) is recorded after each update, of the assignments it makes: the last value
    is I of the fitted model's own, recomputed from the final embedding (SR-K-means: eq. 28 with
    the final θ; MI-ADM, MI-D: the classifier's posteriors). Survived: MI-D recording another
    distribution than its clean posteriors."""
    model = cls(3, **{**TINY, "tol": 0.0}, random_state=0).fit(images[0])
    z = torch.as_tensor(model.embedding_, dtype=torch.float32)
    if cls is SRKMeans:
        theta = torch.as_tensor(model.cluster_centers_, dtype=torch.float32)
        assignments = torch.softmax(-squared_distances(z, theta) / (model.lam * 3), dim=1)
    else:
        with torch.no_grad():
            assignments = torch.softmax(model._head_(z), dim=1)
    assert model.mutual_information_[-1] == pytest.approx(mutual_information(assignments), abs=1e-5)

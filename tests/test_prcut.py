"""PRCut (clusterbench.methods.prcut) and its Table 1-2 baselines: eq. 8's surrogate gradient against
autograd of the batch bound (eq. 7), Theorem 4.1's expectation by quadrature (Lemma 4.3) against
enumeration and Monte Carlo, the balance regulariser against collapse, the kNN batch, the fitted
attributes, bad input, the configs, and scikit-learn's estimator checks."""

from __future__ import annotations

import itertools
from unittest.mock import patch

import numpy as np
import pytest
import torch
from scipy import integrate, sparse
from scipy.sparse import csgraph
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from clusterbench import graphs
from clusterbench.errors import HyperparameterError
from clusterbench.fitting import needs_labels
from clusterbench.methods import PRCut, SpectralKNN, SupervisedMLP
from clusterbench.methods import prcut as prcut_module
from clusterbench.methods.prcut import (
    balance_penalty,
    batch_bound,
    build_encoder,
    cut_mass,
    encoder,
    expected_ratio_cut,
    knn_batch,
    surrogate_gradients,
    surrogate_loss,
)
from clusterbench.methods.spectral_knn import laplacian
from clusterbench.results import read_record
from clusterbench.runner import method_grid
from tests.helpers import Interrupted, cli, compose_config, load_script, record_files, stop_after_saves

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {"hidden": 16, "batch_size": 32, "steps": 20, "n_neighbors": 5, "device": "cpu"}


@pytest.fixture(autouse=True)
def knn_cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path / "pretrained"))
    graphs.forget_in_memory()


@pytest.fixture(scope="module")
def blobs():
    """Four separated blobs of 50 points in the plane (centres 10 apart, unit spread), and their labels."""
    return make_blobs(200, centers=[(0, 0), (10, 0), (0, 10), (10, 10)], cluster_std=1.0, random_state=0)


def pairwise_cut_mass(W, P_left, P_right):
    """S_ℓ through the (B, B, k) tensor, as the authors' code forms it: the reference."""
    pairs = P_left[:, None, :] + P_right[None, :, :] - 2.0 * P_left[:, None, :] * P_right[None, :, :]
    return (W[:, :, None] * pairs).sum((0, 1))


def test_the_matrix_product_form_equals_the_pairwise_tensor_form():
    rng = torch.Generator().manual_seed(0)
    W = torch.rand(7, 5, generator=rng, dtype=torch.float64)
    P_left = torch.softmax(torch.randn(7, 3, generator=rng, dtype=torch.float64), 1)
    P_right = torch.softmax(torch.randn(5, 3, generator=rng, dtype=torch.float64), 1)
    torch.testing.assert_close(cut_mass(W, P_left, P_right), pairwise_cut_mass(W, P_left, P_right))
    # and the bound is eq. 7's trace form, Tr(P̄⁻¹ (1 − P)ᵀ W P), summed over both directions
    p_mean = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    trace = torch.trace(
        torch.diag(1 / p_mean) @ ((1 - P_left).T @ W @ P_right + P_left.T @ W @ (1 - P_right))
    )
    torch.testing.assert_close(batch_bound(W, P_left, P_right, p_mean), trace)


@pytest.mark.parametrize("symmetric", [True, False])
def test_the_surrogate_gradient_is_autograd_of_the_batch_bound(symmetric):
    """Eq. 8 with p̄ = the batch mean: the gradient of the detached surrogate (Algorithm 1, line 9)
    equals autograd's gradient of eq. 7's batch bound, through P and back to the logits."""
    rng = torch.Generator().manual_seed(1)
    B, k = 6, 3
    W = torch.rand(B, B, generator=rng, dtype=torch.float64) * (torch.rand(B, B, generator=rng) < 0.6)
    if symmetric:
        W = (W + W.T) / 2
    logits = torch.randn(2 * B, k, generator=rng, dtype=torch.float64, requires_grad=True)

    P = torch.softmax(logits, 1)
    exact = batch_bound(W, P[:B], P[B:], P.mean(0))  # p̄ moves with P
    (expected,) = torch.autograd.grad(exact, logits)

    P = torch.softmax(logits, 1)
    surrogate, bound = surrogate_loss(W, P[:B], P[B:], P.mean(0).detach(), 2 * B)
    (got,) = torch.autograd.grad(surrogate, logits)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(bound, exact.detach())

    # and directly with respect to P
    P_left = torch.softmax(logits.detach()[:B], 1).requires_grad_()
    P_right = torch.softmax(logits.detach()[B:], 1).requires_grad_()
    value = batch_bound(W, P_left, P_right, torch.cat([P_left, P_right]).mean(0))
    grad_left, grad_right = torch.autograd.grad(value, [P_left, P_right])
    G_left, G_right, _ = surrogate_gradients(
        W, P_left.detach(), P_right.detach(), torch.cat([P_left, P_right]).mean(0).detach(), 2 * B
    )
    torch.testing.assert_close(G_left, grad_left)
    torch.testing.assert_close(G_right, grad_right)


def test_a_wrong_n_in_eq_8_breaks_the_equality():
    """The check above can fail: n = B instead of the 2B points p̄ averages gives another gradient."""
    rng = torch.Generator().manual_seed(2)
    W = torch.rand(4, 4, generator=rng, dtype=torch.float64)
    P = torch.softmax(torch.randn(8, 3, generator=rng, dtype=torch.float64), 1).requires_grad_()
    (expected,) = torch.autograd.grad(batch_bound(W, P[:4], P[4:], P.mean(0)), P)
    G_left, _, _ = surrogate_gradients(W, P[:4].detach(), P[4:].detach(), P.mean(0).detach(), 4)
    assert not torch.allclose(G_left, expected[:4])


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_the_whole_graph_probe_descends_the_objective_itself(layout):
    """scripts/prcut_balance.py: its gradient for the whole graph (eq. 8 with the exact p̄) is
    autograd's of the estimator's Σ S_ℓ / p̄_ℓ / ‖W‖₁ + β KL, for a dense and a sparse W, and the
    values it reports add up to that objective."""
    probe = load_script("prcut_balance")
    rng = torch.Generator().manual_seed(3)
    N, k, beta = 9, 3, 5.0
    W = torch.rand(N, N, generator=rng, dtype=torch.float64) * (torch.rand(N, N, generator=rng) < 0.5)
    W = torch.maximum(W, W.T).fill_diagonal_(0.0)
    logits = torch.randn(N, k, generator=rng, dtype=torch.float64, requires_grad=True)
    P = torch.softmax(logits, 1)
    value = batch_bound(W, P, P, P.mean(0)) / W.sum() + beta * balance_penalty(P)  # the objective itself
    (expected,) = torch.autograd.grad(value, logits)
    graph = probe.SymmetricGraph(sparse.csr_matrix(W.numpy()) if layout == "sparse" else W.numpy())
    loss, bound, balance = probe.whole_graph_loss(graph, torch.softmax(logits, 1), beta)
    (got,) = torch.autograd.grad(loss, logits)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    assert bound + beta * balance == pytest.approx(float(value.detach()), rel=1e-12)
    assert not torch.allclose(got, torch.zeros_like(got))


# A 6-node weighted graph and three clusters' assignment probabilities.
GRAPH6 = np.array(
    [
        [0, 1.0, 0.5, 0, 0, 0.2],
        [1.0, 0, 1.0, 0, 0.3, 0],
        [0.5, 1.0, 0, 0.1, 0, 0],
        [0, 0, 0.1, 0, 1.0, 0.8],
        [0, 0.3, 0, 1.0, 0, 1.0],
        [0.2, 0, 0, 0.8, 1.0, 0],
    ]
)
P6 = np.array(
    [[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.6, 0.2], [0.05, 0.15, 0.8]]
)


def sampled_ratio_cut(W, assignments, k):
    """Eq. 6 of sampled partitions (m, n): ½ Σ_ℓ Σ_ij W_ij (f_i − f_j)², f = 1_C / √|C|."""
    one_hot = np.eye(k)[assignments]  # (m, n, k)
    sizes = one_hot.sum(1, keepdims=True)
    f = np.divide(one_hot, np.sqrt(sizes), out=np.zeros_like(one_hot), where=sizes > 0)
    differences = (f[:, :, None, :] - f[:, None, :, :]) ** 2  # (m, n, n, k)
    return 0.5 * np.einsum("ij,mijl->m", W, differences)


def test_theorem_4_1_by_quadrature_matches_enumeration_and_monte_carlo():
    value = expected_ratio_cut(GRAPH6, P6)
    # every one of the 3^6 partitions, weighted by its probability: the exact expectation of eq. 6
    partitions = np.array(list(itertools.product(range(3), repeat=6)))
    weights = P6[np.arange(6), partitions].prod(1)
    exact = float((weights * sampled_ratio_cut(GRAPH6, partitions, 3)).sum())
    assert value == pytest.approx(exact, rel=1e-12)
    # Monte Carlo: within 4 standard errors
    rng = np.random.default_rng(0)
    draws = (rng.random((100_000, 6, 1)) > P6.cumsum(1)[None]).sum(2)
    samples = sampled_ratio_cut(GRAPH6, draws, 3)
    assert abs(samples.mean() - value) < 4 * samples.std() / np.sqrt(len(samples))
    # the quadrature is Lemma 4.2's integral, also by adaptive numerical integration
    p = P6[:, 0]
    integral = integrate.quad(lambda t: np.prod(1 - p[2:] * t), 0, 1)[0]
    one_pair = np.zeros((6, 6))
    one_pair[0, 1] = 1.0
    assert expected_ratio_cut(one_pair, P6[:, :1]) == pytest.approx(
        0.5 * (p[0] + p[1] - 2 * p[0] * p[1]) * integral, rel=1e-12
    )


def test_theorem_4_1_on_a_deterministic_partition_is_the_ratio_cut_without_the_half():
    labels = np.array([0, 0, 0, 1, 1, 2])
    # eq. 6 counts each cut edge from both sides: twice eq. 1's ½ Σ cut / |C| on a symmetric W
    assert expected_ratio_cut(GRAPH6, np.eye(3)[labels]) == pytest.approx(
        graphs.ratio_cut(GRAPH6, labels, half=False), rel=1e-12
    )


def test_the_balance_penalty_is_kl_to_uniform():
    P = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    assert float(balance_penalty(P)) == pytest.approx(np.log(3) - np.log(2))
    assert float(balance_penalty(torch.full((4, 3), 1 / 3))) == pytest.approx(0.0, abs=1e-7)


def test_the_knn_batch_is_the_adjacency_submatrix():
    X = np.random.default_rng(5).normal(size=(40, 3))
    indices = graphs.knn_indices(X, 4, use_cache=False)
    neighbors = torch.as_tensor(indices, dtype=torch.long)
    chosen = torch.randperm(40, generator=torch.Generator().manual_seed(0))[:24]
    left, right = chosen[:12], chosen[12:]
    for graph in graphs.GRAPHS:
        full = graphs.adjacency(indices, graph).toarray()
        W = knn_batch(neighbors, left, right, symmetric=graph == "symmetric")
        np.testing.assert_array_equal(W.numpy(), full[np.ix_(left.numpy(), right.numpy())])


def test_the_encoder_layers_and_weight_norm():
    network = encoder(10, 3, n_layers=3, hidden=8, weight_norm=True)
    kinds = [isinstance(layer, torch.nn.Linear) for layer in network]
    assert kinds == [True, False, True, False, True] and isinstance(network[1], torch.nn.GELU)
    normalised = [
        hasattr(layer, "parametrizations") for layer in network if isinstance(layer, torch.nn.Linear)
    ]
    assert normalised == [True, False, True]
    single = encoder(10, 3, n_layers=1, hidden=8, weight_norm=False)
    assert len(single) == 1 and single[0].weight.shape == (3, 10)


@pytest.mark.parametrize("seed", [0, 1])
def test_without_the_regulariser_clusters_empty_and_with_it_they_do_not(blobs, seed):
    X, _ = blobs
    settings = {
        "n_neighbors": 20,
        "optimizer": "adam",
        "lr": 1e-2,
        "steps": 300,
        "batch_size": 50,
        "hidden": 32,
    }
    free = PRCut(4, beta=0.0, device="cpu", random_state=seed, **settings).fit(X)
    held = PRCut(4, beta=200.0, device="cpu", random_state=seed, **settings).fit(X)
    free_shares = np.bincount(free.labels_, minlength=4) / len(X)
    held_shares = np.bincount(held.labels_, minlength=4) / len(X)
    assert free_shares.min() < 0.02 and free.cluster_mass_.min() < 0.02  # a cluster has emptied
    assert free_shares.max() > 0.4  # its points went to another
    assert held_shares.min() > 0.15 and held.cluster_mass_.min() > 0.15
    assert np.isfinite(free.history_["bound"]).all()


def test_the_inverse_time_rate_averages_every_batch_and_the_constant_one_forgets(blobs):
    # A frozen network (lr 1e-30): every batch's mean P estimates the same full-data mean. With
    # γ = 1, the constant rate keeps only the last batch's mean; γ/t makes p̄ the mean of all
    # 300 batch means (p̄_t = ((t − 1) p̄_(t−1) + m_t)/t), far closer to the full-data mean.
    X, _ = blobs
    settings = {**SMALL, "batch_size": 10, "steps": 300, "lr": 1e-30, "gamma": 1.0, "random_state": 0}
    last = PRCut(4, **settings).fit(X)
    averaged = PRCut(4, gamma_schedule="inverse_time", **settings).fit(X)
    with torch.no_grad():
        full = torch.softmax(averaged.network_(torch.as_tensor(X, dtype=torch.float32)), 1).mean(0).numpy()
    np.testing.assert_allclose(averaged.cluster_mass_, full, atol=0.01)
    assert np.abs(last.cluster_mass_ - full).max() > 3 * np.abs(averaged.cluster_mass_ - full).max()
    with pytest.raises(HyperparameterError, match="gamma_schedule must be one of constant, inverse_time"):
        PRCut(4, gamma_schedule="harmonic", **SMALL).fit(X)


@pytest.mark.parametrize(
    ("graph", "gamma_schedule"), [("symmetric", "constant"), ("directed", "inverse_time")]
)
def test_the_first_step_is_algorithm_1_on_the_batch_its_seed_draws(blobs, graph, gamma_schedule):
    """One step by hand: the seed draws the encoder and the 2B points (left the first B, right the
    next B); W_b is the graph's block between them; p̄ = (1 − γ₁) u + γ₁ · the mean of the 2B rows
    of P, γ₁ = γ under either schedule (γ/t at t = 1); the history holds eq. 7's bound at p̄ over
    ‖W_b‖₁ and KL(mean P ‖ u). Survived before: γ/(t + 1) for γ/t, and batches drawn from one
    fixed seed whatever random_state (only the encoder was seeded)."""
    X, _ = blobs
    seed, k, B, gamma = 11, 4, SMALL["batch_size"], 0.6
    settings = {**SMALL, "steps": 1, "graph": graph, "gamma": gamma, "gamma_schedule": gamma_schedule}
    model = PRCut(k, **settings, random_state=seed).fit(X)
    chosen = torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))[: 2 * B]
    left, right = chosen[:B].numpy(), chosen[B:].numpy()
    network = build_encoder(X.shape[1], k, 3, SMALL["hidden"], True, seed, "cpu")
    with torch.no_grad():
        P = torch.softmax(network(torch.as_tensor(X, dtype=torch.float32)[chosen]), 1)
    p_mean = (1 - gamma) / k + gamma * P.mean(0)
    adjacency = graphs.adjacency(graphs.knn_indices(X, SMALL["n_neighbors"]), graph).toarray()
    W = torch.as_tensor(adjacency[np.ix_(left, right)], dtype=torch.float32)
    np.testing.assert_allclose(model.cluster_mass_, p_mean.numpy(), rtol=1e-6)
    bound = batch_bound(W, P[:B], P[B:], p_mean) / W.sum()
    assert model.history_["bound"][0] == pytest.approx(float(bound), rel=1e-5)
    assert model.history_["kl"][0] == pytest.approx(float(balance_penalty(P)), rel=1e-5)


def test_label_similarity_recovers_the_labels(blobs):
    X, y = blobs
    model = PRCut(4, similarity="labels", optimizer="adam", lr=1e-2, steps=150, batch_size=100, hidden=32,
                  device="cpu", random_state=0).fit(X, y)  # fmt: skip
    assert adjusted_rand_score(y, model.labels_) > 0.95
    assert model.ratio_cut_ == pytest.approx(graphs.label_ratio_cut(y, model.labels_))


def test_fitted_attributes_predict_and_determinism(blobs):
    X, _ = blobs
    model = PRCut(4, random_state=3, **SMALL).fit(X)
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    probabilities = model.predict_proba(X)
    assert probabilities.shape == (len(X), 4)
    np.testing.assert_allclose(probabilities.sum(1), 1.0, rtol=1e-6)
    graph = graphs.knn_graph(X, SMALL["n_neighbors"], "symmetric")
    assert model.ratio_cut_ == pytest.approx(graphs.ratio_cut(graph, model.labels_))
    assert model.history_["bound"].shape == model.history_["kl"].shape == (SMALL["steps"],)
    assert model.batch_size_ == 32 and model.n_iter_ == SMALL["steps"]
    again = PRCut(4, random_state=3, **SMALL).fit(X)
    np.testing.assert_array_equal(again.labels_, model.labels_)
    np.testing.assert_array_equal(again.history_["bound"], model.history_["bound"])
    # the directed graph and the cosine similarity also train
    PRCut(4, graph="directed", random_state=0, **SMALL).fit(X)
    cosine = PRCut(4, similarity="cosine", random_state=0, **SMALL).fit(X)
    assert np.isfinite(cosine.ratio_cut_)
    # a batch larger than half the data is capped
    assert PRCut(4, random_state=0, **{**SMALL, "batch_size": 4096}).fit(X).batch_size_ == 100


def test_the_label_similarity_tags_say_y_is_required():
    assert PRCut(similarity="labels").__sklearn_tags__().target_tags.required
    assert not PRCut().__sklearn_tags__().target_tags.required
    assert SupervisedMLP().__sklearn_tags__().target_tags.required


@pytest.mark.parametrize(
    ("settings", "fit_y", "message"),
    [
        ({"n_clusters": 1}, False, "PRCut n_clusters must be an integer ≥ 2, got 1"),
        ({"n_clusters": 11}, False, r"n_clusters must be at most the number of points \(10\), got 11"),
        ({"similarity": "labels"}, False, "similarity='labels' needs the true labels at fit time"),
        ({"n_neighbors": 10}, False, r"PRCut n_neighbors must be below the number of points \(10\), got 10"),
        ({"similarity": "rbf"}, False, "similarity must be one of knn, labels, cosine"),
        ({"gamma": 0.0}, False, r"gamma must be in \(0, 1\]"),
        ({"graph": "or"}, False, "graph must be one of symmetric, directed"),
        ({"optimizer": "sgd"}, False, "optimizer must be one of rmsprop, adam"),
    ],
)
def test_bad_input_is_one_clear_hyperparameter_error(settings, fit_y, message):
    X = np.random.default_rng(6).normal(size=(10, 2))
    with pytest.raises(HyperparameterError, match=message):
        PRCut(**{"n_clusters": 2, **SMALL, "n_neighbors": 3, **settings}).fit(X)


def test_a_diverging_network_fails_naming_the_rate_not_one_cluster_recorded_as_success(blobs):
    """NaN weights gave NaN probabilities, whose arg max put every point in cluster 0: a fit that
    returned one cluster and a ratio cut of 0 instead of failing."""
    X, _ = blobs
    with pytest.raises(FloatingPointError, match=r"training diverged .* lower lr \(now 1e\+12\)"):
        PRCut(4, **{**SMALL, "lr": 1e12}, random_state=0).fit(X)


def test_a_sharp_cosine_similarity_trains_without_overflow(blobs):
    """exp(cos/τ) overflowed float32 once 1/τ > 88 (τ = 0.01 here): NaN weights and one cluster.
    The training kernel exp((cos − 1)/τ) differs by a constant that the loss divides out."""
    X, _ = blobs
    model = PRCut(4, **{**SMALL, "steps": 200}, similarity="cosine", temperature=0.01, random_state=0).fit(X)
    assert np.isfinite(model.ratio_cut_) and np.isfinite(model.history_["bound"]).all()
    assert len(np.unique(model.labels_)) > 1


def test_the_cosine_ratio_cut_zeroes_the_diagonal_in_every_block_of_rows():
    """ratio_cut_ on the dense cosine similarity is summed over blocks of 2048 rows, each with
    W_ii = 0 (eq. 1), against the dense matrix on 2100 points. Zeroing block[i, i] instead of
    block[i, start + i] dropped real pairs from the cut past the first block; every other test
    had fewer than 2048 points, and it survived."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(2100, 3))
    labels = rng.integers(0, 3, len(X))
    unit = torch.nn.functional.normalize(torch.as_tensor(X), dim=1)
    W = np.exp(unit.numpy() @ unit.numpy().T / 0.5)
    np.fill_diagonal(W, 0.0)
    got = PRCut(3, similarity="cosine", temperature=0.5)._cosine_ratio_cut(unit, labels)
    assert got == pytest.approx(graphs.ratio_cut(W, labels), rel=1e-10)


def test_nan_and_cuda_without_a_gpu_are_clear_errors():
    X = np.random.default_rng(7).normal(size=(20, 2))
    X[3, 0] = np.nan
    with pytest.raises(HyperparameterError, match=r"PRCut: X contains NaN or infinity \(first at row 3\)"):
        PRCut(2, **SMALL).fit(X)
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(HyperparameterError, match="device='cuda' but no CUDA GPU is visible"):
        PRCut(2, **{**SMALL, "device": "cuda"}).fit(np.nan_to_num(X))


def test_spectral_knn_separates_blobs_and_keeps_the_lowest_ratio_cut(blobs):
    X, y = blobs
    model = SpectralKNN(4, n_neighbors=10, n_init=4, random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.9
    assert model.ratio_cut_ == model.ratio_cuts_.min() and len(model.ratio_cuts_) == 4
    assert model.ratio_cut_ == pytest.approx(graphs.ratio_cut(graphs.knn_graph(X, 10), model.labels_))
    assert model.eigenvalues_[0] == pytest.approx(0.0, abs=1e-8)
    arpack = SpectralKNN(4, n_neighbors=10, eigen_solver="arpack", n_init=4, random_state=0).fit(X)
    np.testing.assert_allclose(arpack.eigenvalues_, model.eigenvalues_, rtol=1e-5, atol=1e-8)
    normalized = SpectralKNN(4, n_neighbors=10, laplacian="normalized", n_init=2, random_state=0).fit(X)
    assert adjusted_rand_score(y, normalized.labels_) > 0.9
    with pytest.raises(HyperparameterError, match="n_neighbors must be below the number of points"):
        SpectralKNN(4, n_neighbors=200).fit(X)
    with pytest.raises(HyperparameterError, match="n_clusters must be an integer ≥ 2"):
        SpectralKNN(1).fit(X)


def test_spectral_knn_keeps_the_first_least_cut_of_the_runs_it_yields(blobs):
    """iter_runs gives fit's runs, in order (scripts/sc_selection.py reads them); fit keeps the first
    run of least cut, and equal cuts do not move it to a later run."""
    X, _ = blobs
    model = SpectralKNN(4, n_neighbors=10, n_init=6, random_state=3)
    runs = list(model.iter_runs(X))
    model.fit(X)
    assert [cut for cut, _ in runs] == list(model.ratio_cuts_) and len(runs) == 6
    first = int(np.argmin(model.ratio_cuts_))
    np.testing.assert_array_equal(model.labels_, runs[first][1])
    assert model.ratio_cut_ == runs[first][0]
    # Runs of equal cut after a larger one: the first of them stays.
    runs = [(2.0, np.full(len(X), 0)), (1.0, np.full(len(X), 1)), (1.0, np.full(len(X), 2))]
    with patch.object(SpectralKNN, "iter_runs", lambda self, X: iter(runs)):
        kept = SpectralKNN(4).fit(X)
    assert (kept.labels_ == 1).all() and kept.ratio_cut_ == 1.0
    np.testing.assert_array_equal(kept.ratio_cuts_, [2.0, 1.0, 1.0])


@pytest.mark.parametrize("kind", ["unnormalized", "normalized"])
def test_spectral_knns_laplacians_are_scipys_on_a_weighted_graph(kind):
    """L = D − W and I − D^-½ W D^-½ against scipy's csgraph.laplacian on a weighted graph whose
    degrees differ (1.5, 3, 5.5, 3, and an isolated point: a zero row in both, as scipy's and
    scikit-learn's). D^-1 in place of D^-½ on both sides of the normalised one passed every other
    test (its embedding's rows are normalised afterwards)."""
    W = np.zeros((5, 5))
    for (i, j), w in {(0, 1): 1.0, (1, 2): 2.0, (2, 3): 3.0, (0, 2): 0.5}.items():
        W[i, j] = W[j, i] = w
    ours = laplacian(sparse.csr_matrix(W), kind).toarray()
    np.testing.assert_allclose(ours, csgraph.laplacian(W, normed=kind == "normalized"), atol=1e-15)


def test_spectral_knns_runs_are_scikit_learns_kmeans_on_the_embedding_with_their_own_seeds(blobs):
    """Each of the n_init runs is one single-start scikit-learn KMeans on ``embedding_``, seeded by
    the draws after the eigensolver's from ``random_state``'s RandomState: every run seeded alike
    would make the "best of n_init" one run, and passed every other test."""
    X, _ = blobs
    model = SpectralKNN(4, n_neighbors=10, n_init=3, random_state=7)
    runs = list(model.iter_runs(X))
    random = np.random.RandomState(7)
    random.randint(2**31)  # the eigensolver's seed
    seeds = random.randint(2**31, size=3)
    cut = graphs.RatioCut(graphs.knn_graph(X, 10, "symmetric"))
    assert len(set(seeds.tolist())) == 3
    for (ratio_cut, labels), seed in zip(runs, seeds, strict=True):
        expected = KMeans(4, n_init=1, random_state=int(seed)).fit(model.embedding_).labels_
        np.testing.assert_array_equal(labels, expected)
        assert ratio_cut == pytest.approx(cut(expected), rel=1e-12)


def test_supervised_mlp_learns_the_labels_and_needs_them(blobs):
    X, y = blobs
    model = SupervisedMLP(hidden=32, epochs=30, batch_size=32, device="cpu", random_state=0).fit(X, y + 10)
    assert (model.labels_ == y + 10).mean() > 0.95
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    assert model.loss_[-1] < model.loss_[0]
    with pytest.raises(HyperparameterError, match="SupervisedMLP is supervised: it needs the true labels"):
        SupervisedMLP(device="cpu").fit(X)


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop"])
def test_supervised_mlp_is_minibatch_cross_entropy_over_seeded_shuffles_by_hand(optimizer, blobs):
    """Two epochs of batches of 48 (the last one short) rerun by hand: the encoder from the seed,
    torch's optimiser with lr and weight decay, each epoch's order a randperm of the seeded
    generator, and loss_ the epoch's mean cross-entropy per point (a short batch weighed by its
    size). Swapping the optimisers, dropping the weight decay, the shuffle or zero_grad, or
    averaging the batch means left the only other fit test passing."""
    X, y = blobs
    settings = {"n_layers": 2, "hidden": 8, "lr": 1e-2, "weight_decay": 0.1, "batch_size": 48, "epochs": 2}
    model = SupervisedMLP(**settings, optimizer=optimizer, device="cpu", random_state=3).fit(X, y)
    network = build_encoder(2, 4, 2, 8, True, 3, "cpu")
    kind = torch.optim.Adam if optimizer == "adam" else torch.optim.RMSprop
    step = kind(network.parameters(), lr=1e-2, weight_decay=0.1)
    generator = torch.Generator().manual_seed(3)
    data, target = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y)
    losses = []
    for _ in range(2):
        order, total = torch.randperm(200, generator=generator), 0.0
        for batch in order.split(48):
            loss = torch.nn.functional.cross_entropy(network(data[batch]), target[batch])
            step.zero_grad()
            loss.backward()
            step.step()
            total += float(loss.detach()) * len(batch)
        losses.append(total / 200)
    np.testing.assert_allclose(model.loss_, losses, rtol=1e-5)
    with torch.no_grad():
        expected = network(data)
        np.testing.assert_allclose(model.network_(data).numpy(), expected.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(model.labels_, expected.argmax(1).numpy())


def test_the_configs_compose(tmp_path):
    paper = compose_config(tmp_path, "method=prcut").method
    assert paper.estimator._target_ == "clusterbench.methods.PRCut" and paper.name == "prcut"
    table5 = {
        "optimizer": "rmsprop",
        "lr": 1e-5,
        "weight_decay": 1e-9,
        "beta": 200.0,
        "gamma": 0.8,
        "n_neighbors": 100,
    }
    assert {key: paper.estimator[key] for key in table5} == table5
    assert (paper.estimator.n_layers, paper.estimator.hidden, paper.estimator.graph) == (3, 512, "symmetric")
    code = compose_config(tmp_path, "method=prcut_code").method
    assert (code.name, code.variant) == ("prcut", "code")
    assert (code.estimator.n_layers, code.estimator.weight_norm, code.estimator.graph) == (
        1,
        False,
        "directed",
    )
    assert (code.estimator.optimizer, code.estimator.lr, code.estimator.beta) == ("adam", 1e-4, 100.0)
    assert compose_config(tmp_path, "method=spectral_knn").method.estimator.n_neighbors == 150
    assert compose_config(tmp_path, "method=supervised_mlp").method.estimator.hidden == 512
    suite = compose_config(tmp_path, "metrics=prcut").metrics
    assert (suite.ratio_cut.n_neighbors, suite.ratio_cut.graph, suite.ratio_cut.half) == (
        150,
        "symmetric",
        True,
    )
    for method in ("prcut", "prcut_code", "spectral_knn", "supervised_mlp"):
        estimator = compose_config(tmp_path, f"method={method}").method.estimator
        settings = {key: value for key, value in estimator.items() if key != "_target_"}
        cls = {
            "prcut": PRCut,
            "prcut_code": PRCut,
            "spectral_knn": SpectralKNN,
            "supervised_mlp": SupervisedMLP,
        }
        cls[method](**settings)._validate_params()


def test_the_paper_profile_trains_table5_settings_four_times_the_codes_steps_and_table2_the_codes(tmp_path):
    """Table 5's lr (1e-5, ten times below the code's) gets 100k steps at paper scale, where Table 1
    levels off, and is the estimator's default; the code settings keep the code's 25k; Table 2
    trains both for 25k, the reduced run its note states."""

    def steps(*overrides, profile="paper"):
        cfg = compose_config(tmp_path, f"profile={profile}", *overrides)
        grid = method_grid(cfg)
        assert len(grid) == 1
        return grid[0].get("steps", cfg.method.estimator.steps)

    assert steps("method=prcut") == PRCut().steps == 100000
    assert steps("method=prcut_code") == 25000
    assert steps("experiment=prcut_table1", "method=prcut") == 100000
    assert (
        steps("experiment=prcut_table2", "method=prcut")
        == steps("experiment=prcut_table2", "method=prcut_code")
        == 25000
    )
    assert steps("experiment=prcut_table2", "method=prcut", profile="smoke") == 2000


@pytest.mark.parametrize("similarity", ["knn", "labels"])
def test_an_interrupted_fit_resumes_where_it_stopped(similarity, blobs, monkeypatch, tmp_path):
    """A seeded fit saves its progress (here after every step: CHECKPOINT_SECONDS = 0); one stopped
    after its 25th save is finished by the next fit, which runs only the remaining 35 steps, to the
    very same network, labels, history and cluster mass as a fit never stopped; then the file goes."""
    from clusterbench.methods.deep import cache

    X, y = blobs
    params = {**SMALL, "similarity": similarity, "steps": 60, "random_state": 0}
    whole = PRCut(4, **params).fit(X, y)
    folder = tmp_path / "pretrained"
    assert not list(folder.glob("*.partial"))  # a fit of seconds never reached a save
    with pytest.raises(Interrupted):
        saves, original_save = stop_after_saves(monkeypatch, 25)
        PRCut(4, **params).fit(X, y)
    assert saves == list(range(1, 26)) and len(list(folder.glob("*.partial"))) == 1
    monkeypatch.setattr(cache, "save_progress", original_save)
    monkeypatch.setattr(cache, "CHECKPOINT_SECONDS", 1e9)
    steps, original_loss = [], prcut_module.surrogate_loss

    def counted(*args):
        steps.append(True)
        return original_loss(*args)

    monkeypatch.setattr(prcut_module, "surrogate_loss", counted)
    resumed = PRCut(4, **params).fit(X, y)
    assert len(steps) == 35 and resumed.n_iter_ == 60
    np.testing.assert_array_equal(resumed.labels_, whole.labels_)
    for name in ("bound", "kl"):
        np.testing.assert_array_equal(resumed.history_[name], whole.history_[name])
    np.testing.assert_array_equal(resumed.cluster_mass_, whole.cluster_mass_)
    np.testing.assert_array_equal(resumed.predict_proba(X), whole.predict_proba(X))
    assert not list(folder.glob("*.partial"))  # finished: the progress is gone
    assert whole.earlier_seconds_ == 0.0 < resumed.earlier_seconds_  # the stopped run's time, kept


def test_a_resumed_fit_is_timed_with_its_earlier_runs(blobs):
    """A record's fit_seconds is this run's time plus what the fit's earlier, interrupted runs
    spent (``earlier_seconds_``): a resumed fit of hours is not recorded as minutes."""
    from omegaconf import OmegaConf

    from clusterbench.data import Dataset
    from clusterbench.fitting import fit_and_score

    class Resumed(PRCut):
        def fit(self, X, y=None):
            super().fit(X, y)
            self.earlier_seconds_ = 1000.0  # as if a run before this one had trained 1000 s
            return self

    X, y = blobs
    data = Dataset("blobs", X, y, 4)
    method, metrics = OmegaConf.create({"name": "prcut"}), OmegaConf.create({})
    fresh = fit_and_score(PRCut(4, **SMALL, random_state=0), method, metrics, data, 0, {})
    resumed = fit_and_score(Resumed(4, **SMALL, random_state=0), method, metrics, data, 0, {})
    assert fresh.status == resumed.status == "ok" and fresh.fit_seconds < 1000.0
    assert 1000.0 < resumed.fit_seconds < 1000.0 + 10 * fresh.fit_seconds + 5.0


@pytest.mark.parametrize("change", ["labels", "data", "steps"])
def test_a_checkpoint_of_other_labels_data_or_steps_is_not_resumed(change, blobs, monkeypatch, tmp_path):
    """The checkpoint's key holds the labels' digest (label similarity), the data's and every
    hyperparameter: a fit that differs in one of them starts from step 0 (and leaves the other's
    file alone)."""
    from clusterbench.methods.deep import cache

    X, y = blobs
    params = {**SMALL, "similarity": "labels", "steps": 60, "random_state": 0}
    with pytest.raises(Interrupted):
        _, original_save = stop_after_saves(monkeypatch, 25)
        PRCut(4, **params).fit(X, y)
    monkeypatch.setattr(cache, "save_progress", original_save)
    steps, original_loss = [], prcut_module.surrogate_loss
    monkeypatch.setattr(
        prcut_module, "surrogate_loss", lambda *args: steps.append(True) or original_loss(*args)
    )
    other = {
        "labels": lambda: PRCut(4, **params).fit(X, (y + 1) % 4),
        "data": lambda: PRCut(4, **params).fit(X + 1.0, y),
        "steps": lambda: PRCut(4, **{**params, "steps": 61}).fit(X, y),
    }
    other[change]()
    assert len(steps) == (61 if change == "steps" else 60)
    assert len(list((tmp_path / "pretrained").glob("*.partial"))) == 1  # the stopped fit's, untouched


def test_numpy_hyperparameters_key_a_checkpoint_as_the_numbers_they_hold(blobs, monkeypatch):
    """A scikit-learn grid hands NumPy scalars: the fit runs, and saves under the same key as with
    Python numbers, so either resumes the other."""
    from clusterbench.methods.deep import cache

    monkeypatch.setattr(cache, "CHECKPOINT_SECONDS", 0.0)
    keys = []
    monkeypatch.setattr(cache, "save_progress", lambda key, progress, folder=None: keys.append(key))
    X = blobs[0]
    PRCut(4, **{**SMALL, "steps": np.int64(3), "random_state": np.int64(0)}).fit(X)
    PRCut(4, **{**SMALL, "steps": 3, "random_state": 0}).fit(X)
    assert len(keys) == 6 and cache._canonical(keys[0]) == cache._canonical(keys[3])


def test_a_fit_without_random_state_saves_no_progress(blobs, monkeypatch):
    """A drawn seed would key a file no later fit asks for: nothing is saved."""
    from clusterbench.methods.deep import cache

    monkeypatch.setattr(cache, "CHECKPOINT_SECONDS", 0.0)
    saved = []
    monkeypatch.setattr(cache, "save_progress", lambda key, progress, folder=None: saved.append(progress))
    PRCut(4, **SMALL).fit(blobs[0])
    assert not saved


# These checks set n_clusters=1, which PRCut and SpectralKNN refuse (k ≥ 2: a one-cluster ratio cut
# is 0 whatever the network does), as KMeansCPrime refuses C < C′ (tests/test_estimators.py).
ONE_CLUSTER = "sets n_clusters=1; k ≥ 2 is checked"
# Fast settings that still find make_blobs' three clusters (check_clustering asks ARI > 0.4).
CHECKED = {"optimizer": "adam", "lr": 1e-2, "hidden": 16, "batch_size": 16}
ONE_CLUSTER_CHECKS = [
    "check_dont_overwrite_parameters",
    "check_methods_subset_invariance",
    "check_fit2d_1sample",
    "check_fit2d_1feature",
    "check_fit2d_predict1d",
]


@parametrize_with_checks(
    [
        PRCut(3, n_neighbors=3, steps=60, device="cpu", random_state=0, **CHECKED),
        SpectralKNN(3, n_neighbors=2, n_init=2, random_state=0),
    ],
    expected_failed_checks=lambda estimator: dict.fromkeys(ONE_CLUSTER_CHECKS, ONE_CLUSTER),
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_a_fitted_prcut_and_mlp_pickle(blobs):
    import pickle

    X, y = blobs
    for model in (
        PRCut(4, random_state=0, **SMALL).fit(X),
        SupervisedMLP(hidden=8, epochs=1, device="cpu").fit(X, y),
    ):
        restored = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(restored.predict(X), model.predict(X))


def test_the_runner_gives_the_labels_to_a_method_whose_tags_require_them(tmp_path):
    assert needs_labels(PRCut(similarity="labels")) and needs_labels(SupervisedMLP())
    assert not needs_labels(PRCut(similarity="knn"))
    result = cli("run", "method=supervised_mlp", "dataset=wine", f"results_dir={tmp_path}")
    assert result.returncode == 0, result.stderr[-2000:]
    (record,) = record_files(tmp_path)
    frame = read_record(record)
    assert frame.set_index("metric").loc["acc", "value"] > 0.9  # fitted on wine's own labels

"""PRCut: deep clustering by probabilistic ratio-cut optimisation (Ghriss & Monteleoni).

An encoder N_θ maps each point to cluster probabilities P_i (softmax over k). The ratio cut of
the random partition they define has the expectation of Theorem 4.1 (Lemmas 4.1-4.3), which
Lemma 4.5 bounds by, up to a constant (eq. 7),

    L_rc(W, P) = Σ_ℓ (1 / p̄_ℓ) Σ_ij W_ij (P_iℓ + P_jℓ − 2 P_iℓ P_jℓ) = Tr(P̄⁻¹ (1 − P)ᵀ W P),

p̄_ℓ the mean of column ℓ of P. Algorithm 1 minimises it online, one batch at a time:

1. draw 2B indices without replacement: left = the first B, right = the next B;
   W_b = W[left][:, right] (kNN, label or cosine similarity, below);
2. P_l, P_r = N_θ(X_left), N_θ(X_right);
3. the moving average p̄ ← (1 − γ_t) p̄ + γ_t · mean of the 2B rows of P (p̄₀ uniform; γ_t weights
   the new batch: a constant γ as Table 5 and the authors' code, or §4.2's decaying γ/t at step t,
   ``gamma_schedule='inverse_time'``, under which p̄ keeps every batch seen, with weights that
   decay slowly with age: at γ = 1 exactly their mean);
4. the gradient of eq. 7 with respect to P (eq. 8), with p̄ the moving average,
   G_l = W_b (1 − 2 P_r) / p̄ − S / (p̄² n),  G_r = W_bᵀ (1 − 2 P_l) / p̄ − S / (p̄² n),
   S_ℓ = Σ_ij W_ij (P^l_iℓ + P^r_jℓ − 2 P^l_iℓ P^r_jℓ), n = 2B (the code's; §5 says the batch size
   replaces n), and back-propagate the surrogate Σ G_l ⊙ P_l + Σ G_r ⊙ P_r (G detached), divided
   by ‖W_b‖₁ (§5);
5. plus β · KL(mean of the batch's P ‖ uniform) (§4.3; with gradient, on the batch mean as the
   code does), which keeps the clusters from collapsing into one.

Everything in 4 is matrix products on (B, B) x (B, k) (``cut_mass``, ``surrogate_gradients``):
the authors' code forms a (B, B, k) tensor instead, ≈ 5x slower per step at 2B = 4096.

Similarities (``similarity``): ``knn``, the binary kNN graph of the input (``n_neighbors``; OR-
symmetric as the paper, or directed as the code: ``graph``), built once per dataset and cached
(:mod:`clusterbench.graphs`); ``labels``, W_ij = 1 iff y_i = y_j, PRCut Table 1's "perfect"
similarity, which needs the true labels at fit time (``fit(X, y)``); ``cosine``,
W_ij = exp(cos(x_i, x_j) / τ) (§4.4) on the input.

Encoder (§5, C.1.2): ``n_layers`` linear layers of ``hidden`` units with GELU between, the first
and last weight-normalised, softmax on top; ``n_layers=1`` is the authors' code's single linear
layer (their code also has no weight norm: ``weight_norm=False``).

Defaults are the paper's Table 5 (RMSProp on raw input, lr 1e-5, weight decay 1e-9, β 200, γ 0.8,
k 100) with the code's batch (B = 2048) and 100 000 steps; the paper states neither. The code runs
25 000 steps at its lr 1e-4; at Table 5's ten times smaller lr, PRCut Table 1's fits still climb
at 25 000 steps (Fashion-MNIST ACC 0.801) and level off by 100 000 (0.889; measured on CUDA,
docs/reproduction/prcut.md).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClusterMixin

from clusterbench import graphs
from clusterbench.errors import HyperparameterError
from clusterbench.methods._seeding import repeatable, resolve_seed
from clusterbench.methods.deep.cache import FitProgress, array_digest, progress_key
from clusterbench.progress import progress_bar
from clusterbench.validation import (
    AT_LEAST_TWO,
    BOOLEAN,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    Constraint,
    TorchHyperparameters,
    check_enough_points,
    check_fit_input,
    check_predict_input,
    flush_denormals,
    in_interval,
    one_of,
    resolve_device,
    torch_threads,
)

SIMILARITIES = ("knn", "labels", "cosine")
OPTIMIZERS = ("rmsprop", "adam")
GAMMA_SCHEDULES = ("constant", "inverse_time")
PREDICT_CHUNK = 8192  # rows per forward pass when labelling
COSINE_RATIO_CUT_MAX = 20000  # ratio_cut_ on the dense cosine similarity only up to this many points
SHOW_LOSS_EVERY = 50  # steps between updates of the progress bar's loss
P_MEAN_FLOOR = 1e-6  # the least cluster mass p̄_ℓ eq. 8 divides by


def encoder(
    n_features: int, n_outputs: int, n_layers: int, hidden: int, weight_norm: bool
) -> torch.nn.Sequential:
    """The MLP of PRCut §5 / C.1.2: ``n_layers`` linear layers (``hidden`` units wide) with GELU
    between them, the first and the last weight-normalised when ``weight_norm``; it returns logits
    (PRCut takes their softmax, the supervised baseline their cross-entropy)."""
    widths = [n_features] + [hidden] * (n_layers - 1) + [n_outputs]
    layers: list[torch.nn.Module] = []
    for index in range(n_layers):
        linear = torch.nn.Linear(widths[index], widths[index + 1])
        if weight_norm and index in (0, n_layers - 1):
            linear = torch.nn.utils.parametrizations.weight_norm(linear)
        layers.append(linear)
        if index < n_layers - 1:
            layers.append(torch.nn.GELU())
    return torch.nn.Sequential(*layers)


def network_inputs(network: torch.nn.Sequential) -> int:
    return next(layer for layer in network if isinstance(layer, torch.nn.Linear)).in_features


def network_outputs(network: torch.nn.Sequential) -> int:
    return [layer for layer in network if isinstance(layer, torch.nn.Linear)][-1].out_features


def build_encoder(n_features, n_outputs, n_layers, hidden, weight_norm, seed, device) -> torch.nn.Sequential:
    """:func:`encoder` initialised from ``seed`` (torch's default initialisation, drawn on the CPU
    so a seed gives the same network on every device), on ``device``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed % 2**63)
        network = encoder(n_features, n_outputs, n_layers, hidden, weight_norm)
    return network.to(device)


def expected_ratio_cut(W, P) -> float:
    """Theorem 4.1: the expected ratio cut (eq. 6) of the random partition with assignment
    probabilities ``P`` (n, k) on the similarity ``W`` (n, n; W_ii ignored), Σ_ℓ RC(P_:ℓ) with

        RC(p) = ½ Σ_ij W_ij (p_i + p_j − 2 p_i p_j) ∫₀¹ Π_{m ≠ i, j} (1 − p_m t) dt,

    each integral exact by Gauss-Legendre quadrature on ⌊(n − 2)/2⌋ + 1 nodes (Lemma 4.3).
    O(k n² c) time and memory: a check of the theory on small graphs, not a training loss."""
    W = np.array(W, dtype=np.float64)
    P = np.asarray(P, dtype=np.float64)
    np.fill_diagonal(W, 0.0)
    roots, weights = np.polynomial.legendre.leggauss((len(P) - 2) // 2 + 1)
    nodes, node_weights = roots / 2.0 + 0.5, weights / 2.0  # Gauss-Legendre moved to [0, 1] (A.4)
    total = 0.0
    for p in P.T:
        factors = 1.0 - np.outer(nodes, p)  # (c, n): 1 − p_m t_q, > 0 as every t_q < 1
        without_pair = factors.prod(1)[:, None, None] / (factors[:, :, None] * factors[:, None, :])
        integral = np.tensordot(node_weights, without_pair, axes=1)  # (n, n): Lemma 4.2's E[1/(1+Z)]
        total += 0.5 * float((W * (p[:, None] + p[None, :] - 2.0 * np.outer(p, p)) * integral).sum())
    return total


def cut_mass(W: torch.Tensor, P_left: torch.Tensor, P_right: torch.Tensor) -> torch.Tensor:
    """S_ℓ = Σ_ij W_ij (P^l_iℓ + P^r_jℓ − 2 P^l_iℓ P^r_jℓ) for every cluster ℓ (k,), in
    matrix-product form: W 1 · P_l + Wᵀ 1 · P_r − 2 Σ_i P_l ⊙ (W P_r); no (B, B, k) tensor."""
    return W.sum(1) @ P_left + W.sum(0) @ P_right - 2.0 * (P_left * (W @ P_right)).sum(0)


def batch_bound(
    W: torch.Tensor, P_left: torch.Tensor, P_right: torch.Tensor, p_mean: torch.Tensor
) -> torch.Tensor:
    """The bound of eq. 7 on one batch, Σ_ℓ S_ℓ / p̄_ℓ (:func:`cut_mass`), W_b between the left and
    right points."""
    return (cut_mass(W, P_left, P_right) / p_mean).sum()


def surrogate_gradients(
    W: torch.Tensor, P_left: torch.Tensor, P_right: torch.Tensor, p_mean: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. 8: the derivatives of :func:`batch_bound` with respect to P_l and P_r when p̄ is the mean
    of the n rows of P (d p̄_ℓ / d P_iℓ = 1/n), evaluated at the given ``p_mean``:

        G_l = W (1 − 2 P_r) / p̄ − S / (p̄² n),   G_r = Wᵀ (1 − 2 P_l) / p̄ − S / (p̄² n).

    Returns (G_l, G_r, S); matrix products only."""
    S = cut_mass(W, P_left, P_right)
    correction = S / (p_mean.square() * n)
    G_left = (W @ (1.0 - 2.0 * P_right)) / p_mean - correction
    G_right = (W.T @ (1.0 - 2.0 * P_left)) / p_mean - correction
    return G_left, G_right, S


def surrogate_loss(
    W: torch.Tensor, P_left: torch.Tensor, P_right: torch.Tensor, p_mean: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Algorithm 1, line 9: Tr[P_l sg(G_l)ᵀ + P_r sg(G_r)ᵀ], whose gradient with respect to P is
    eq. 8's (sg: stop-gradient). Returns (the surrogate, eq. 7's batch bound at ``p_mean``)."""
    with torch.no_grad():
        G_left, G_right, S = surrogate_gradients(W, P_left.detach(), P_right.detach(), p_mean, n)
    return (G_left * P_left).sum() + (G_right * P_right).sum(), (S / p_mean).sum()


def balance_penalty(P: torch.Tensor) -> torch.Tensor:
    """KL(mean of P's rows ‖ uniform) = Σ_ℓ p̄_ℓ log(k p̄_ℓ) (§4.3; the code's −entropy up to log k)."""
    mean = P.mean(0)
    return torch.xlogy(mean, mean * P.shape[1]).sum()


def knn_batch(
    neighbors: torch.Tensor, left: torch.Tensor, right: torch.Tensor, symmetric: bool
) -> torch.Tensor:
    """W[left][:, right] (B_l, B_r) of the binary kNN graph whose row i lists ``neighbors[i]``
    (directed), or of its OR-symmetrisation; O(B k), from the lists, never from an n x n matrix."""
    n = len(neighbors)
    device = neighbors.device
    W = torch.zeros(len(left), len(right), device=device)
    where_right = torch.full((n,), -1, dtype=torch.long, device=device)
    where_right[right] = torch.arange(len(right), device=device)
    columns = where_right[neighbors[left]]  # (B_l, k): each left point's neighbours among the right
    rows = torch.arange(len(left), device=device).unsqueeze(1).expand_as(columns)
    found = columns >= 0
    W[rows[found], columns[found]] = 1.0
    if symmetric:
        where_left = torch.full((n,), -1, dtype=torch.long, device=device)
        where_left[left] = torch.arange(len(left), device=device)
        back = where_left[neighbors[right]]  # (B_r, k): each right point's neighbours among the left
        columns = torch.arange(len(right), device=device).unsqueeze(1).expand_as(back)
        found = back >= 0
        W[back[found], columns[found]] = 1.0
    return W


class PRCut(TorchHyperparameters, ClusterMixin, BaseEstimator):
    """Probabilistic ratio-cut clustering (Ghriss & Monteleoni, Algorithm 1); see the module docstring.

    Parameters
    ----------
    n_clusters : k (≥ 2), the encoder's outputs.
    similarity : 'knn' (binary kNN graph of X), 'labels' (W_ij = 1 iff y_i = y_j: Table 1; needs
        ``fit(X, y)``) or 'cosine' (exp(cos / ``temperature``), §4.4).
    n_neighbors : k of the kNN graph (Table 5: 100); below the number of points.
    graph : 'symmetric' (OR of the kNN relation, paper §4.4) or 'directed' (the authors' code).
    temperature : τ > 0 of the cosine similarity (not stated in the paper).
    n_layers, hidden : the encoder's linear layers (§5: 3) and their width (512).
    weight_norm : weight-normalise the first and last layer (C.1.2; the code's single layer: no).
    optimizer : 'rmsprop' (Table 5, raw input) or 'adam' (Table 5, representations; the code).
    lr, weight_decay : Table 5: 1e-5 and 1e-9 (the code: 1e-4 and 1e-7).
    beta : weight of the balance regulariser KL(p̄ ‖ u) (Table 5: 200; the code: 100).
    gamma : weight of the new batch in the moving average p̄ (Table 5: 0.8), in (0, 1].
    gamma_schedule : 'constant' (γ at every step: Table 5, the code) or 'inverse_time' (γ/t at
        step t = 1, 2, …: §4.2's rate β_t = β/t and Algorithm 1, line 7).
    batch_size : B; each step draws 2B points (the code: 2048). Capped at n // 2.
    steps : optimisation steps (not in the paper; the code: 25 000 at lr 1e-4).
    device : 'auto', 'cpu' or 'cuda'. Runs are deterministic on CPU.
    random_state : int, NumPy RandomState or Generator, or None; seeds the encoder and the batches.
    n_threads : torch's CPU threads during fit and predict (int ≥ 1), or None (torch's default).

    Attributes
    ----------
    labels_ : argmax_ℓ P_iℓ of the training points.
    ratio_cut_ : eq. 1 (with ½) of ``labels_`` on the full training similarity: the kNN graph
        (as ``graph``), the label similarity, or the dense cosine one (NaN above 20000 points).
    cluster_mass_ : (k,) the moving average p̄ at the end.
    history_ : dict of per-step arrays: ``bound`` (eq. 7 on the batch / ‖W_b‖₁, at the moving
        p̄), ``kl`` (the balance term before β).
    batch_size_ : the B used; n_iter_ : steps run; device_ : the device used.
    earlier_seconds_ : seconds spent by earlier, interrupted runs of this fit (0 without any).

    A seeded fit (``random_state`` an int) saves its progress every two minutes beside the
    pretrained-network cache (:class:`clusterbench.methods.deep.cache.FitProgress`): a fit that is
    stopped (a session's end, a killed job) resumes at its last saved step when run again, bit for
    bit on the CPU at the same thread count, and the file is removed when the fit ends.
    """

    # Added after records were made: their default is what the estimator did before.
    _params_added_later: ClassVar[dict] = {"gamma_schedule": "constant"}
    # The runner's elapsed-time bar for a slow fit is left out: the fit shows a bar of its steps.
    reports_progress: ClassVar[bool] = True

    def __init__(
        self,
        n_clusters=8,
        similarity="knn",
        n_neighbors=100,
        graph="symmetric",
        temperature=1.0,
        n_layers=3,
        hidden=512,
        weight_norm=True,
        optimizer="rmsprop",
        lr=1e-5,
        weight_decay=1e-9,
        beta=200.0,
        gamma=0.8,
        gamma_schedule="constant",
        batch_size=2048,
        steps=100000,
        device="auto",
        random_state=None,
        n_threads=1,
    ):
        self.n_clusters = n_clusters
        self.similarity = similarity
        self.n_neighbors = n_neighbors
        self.graph = graph
        self.temperature = temperature
        self.n_layers = n_layers
        self.hidden = hidden
        self.weight_norm = weight_norm
        self.optimizer = optimizer
        self.lr = lr
        self.weight_decay = weight_decay
        self.beta = beta
        self.gamma = gamma
        self.gamma_schedule = gamma_schedule
        self.batch_size = batch_size
        self.steps = steps
        self.device = device
        self.random_state = random_state
        self.n_threads = n_threads

    def __getstate__(self):
        """Pickled with the encoder's state dict, on the CPU: torch cannot pickle weight-normalised
        modules, and a CUDA tensor loads only where CUDA is. Loaded on the device it was fitted on,
        or on the CPU where that is a GPU this machine lacks (:func:`loading_device`). Written for
        SupervisedMLP too, which shares it: the bases' methods are named, not super()'s."""
        state = dict(BaseEstimator.__getstate__(self))  # the instance's own __dict__, for a non-sklearn class
        if "network_" in state:
            network = state.pop("network_")
            state["_network_state"] = {name: value.cpu() for name, value in network.state_dict().items()}
            state["_network_shape"] = (network_inputs(network), network_outputs(network))
        return state

    def __setstate__(self, state):
        state = dict(state)
        network_state = state.pop("_network_state", None)
        shape = state.pop("_network_shape", None)
        TorchHyperparameters.__setstate__(self, state)  # resolves device_
        if network_state is not None:
            with torch.random.fork_rng(devices=[]):  # the weights drawn here are overwritten
                network = encoder(*shape, self.n_layers, self.hidden, self.weight_norm)
            network.load_state_dict(network_state)
            self.network_ = network.to(self.__dict__.get("device_", "cpu"))

    def _checks(self) -> list[tuple[str, Constraint]]:
        return [
            ("n_clusters", AT_LEAST_TWO),
            ("similarity", one_of(SIMILARITIES)),
            ("n_neighbors", POSITIVE_INT),
            ("graph", one_of(graphs.GRAPHS)),
            ("temperature", POSITIVE_REAL),
            ("n_layers", POSITIVE_INT),
            ("hidden", POSITIVE_INT),
            ("weight_norm", BOOLEAN),
            ("optimizer", one_of(OPTIMIZERS)),
            ("lr", POSITIVE_REAL),
            ("weight_decay", NON_NEGATIVE_REAL),
            ("beta", NON_NEGATIVE_REAL),
            ("gamma", in_interval(0, 1, closed="right")),
            ("gamma_schedule", one_of(GAMMA_SCHEDULES)),
            ("batch_size", POSITIVE_INT),
            ("steps", POSITIVE_INT),
        ]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The label similarity trains on y: a harness must pass it (fit(X, y)) for this setting.
        tags.target_tags.required = self.similarity == "labels"
        return tags

    def _check_n_points(self, n_points: int) -> None:
        """What the data's size bounds (k ≤ n, the kNN graph's n_neighbors < n): checked by fit and,
        before a sweep's first fit, by the runner (:func:`clusterbench.checks.check_point`)."""
        check_enough_points(self, n_points)
        if self.similarity == "knn":
            graphs.check_n_neighbors(self.n_neighbors, n_points, type(self).__name__)

    def fit(self, X, y=None):
        """Train the encoder by Algorithm 1 on ``X``; ``y`` is used only by ``similarity='labels'``."""
        self._validate_params()
        name = type(self).__name__
        X = graphs.check_finite(check_fit_input(self, X, ensure_all_finite=False), name)
        n = len(X)
        self._check_n_points(n)
        if self.similarity == "labels":
            if y is None:
                raise HyperparameterError(
                    f"{name} similarity='labels' needs the true labels at fit time: call fit(X, y) "
                    "(it is PRCut Table 1's supervised similarity), or use similarity=knn"
                )
            y = np.asarray(y).reshape(-1)
            if len(y) != n:
                raise HyperparameterError(f"{name}: y has {len(y)} labels for {n} points")
        with torch_threads(self.n_threads), flush_denormals():
            self.device_ = resolve_device(self.device)
            seed = resolve_seed(self.random_state)
            self._fit(X, y, seed)
        return self

    def _fit(self, X: np.ndarray, y, seed: int) -> None:
        n, k, device = len(X), self.n_clusters, self.device_
        data = torch.as_tensor(X, dtype=torch.float32, device=device)
        B = min(self.batch_size, n // 2)
        self.batch_size_ = B
        batch_similarity, full_ratio_cut = self._similarity(X, y, data)
        self.network_ = build_encoder(
            X.shape[1], k, self.n_layers, self.hidden, self.weight_norm, seed, device
        )
        kind = torch.optim.RMSprop if self.optimizer == "rmsprop" else torch.optim.Adam
        optimizer = kind(self.network_.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        generator = torch.Generator(device=device).manual_seed(seed % 2**63)
        p_mean = torch.full((k,), 1.0 / k, device=device)
        history = torch.zeros(self.steps, 2, device=device)
        progress = FitProgress(self._progress_key(X, y, seed) if repeatable(self.random_state) else None)
        start = 0
        saved = progress.load()
        if saved is not None:
            self.network_.load_state_dict(saved["network"])
            optimizer.load_state_dict(saved["optimizer"])
            generator.set_state(saved["generator"])
            start, p_mean = int(saved["step"]), saved["p_mean"].to(device)
            history[:start] = saved["history"].to(device)
        bar = progress_bar(
            range(start, self.steps),
            desc=type(self).__name__,
            unit="step",
            leave=False,
            initial=start,
            total=self.steps,
        )
        for step in bar:
            chosen = torch.randperm(n, generator=generator, device=device)[: 2 * B]
            left, right = chosen[:B], chosen[B:]
            W = batch_similarity(left, right)
            P = torch.softmax(self.network_(data[chosen]), dim=1)
            with torch.no_grad():
                rate = self.gamma / (step + 1) if self.gamma_schedule == "inverse_time" else self.gamma
                p_mean = (1.0 - rate) * p_mean + rate * P.detach().mean(0)
                # A cluster that has emptied (p̄_ℓ → 0, collapse without the regulariser) would
                # turn eq. 8's 1/p̄ and 1/p̄² into inf and the network into NaN: floor it.
                p_used = p_mean.clamp_min(P_MEAN_FLOOR)
            surrogate, bound = surrogate_loss(W, P[:B], P[B:], p_used, 2 * B)
            norm = W.sum().clamp_min(torch.finfo(W.dtype).tiny)
            balance = balance_penalty(P)
            loss = surrogate / norm + self.beta * balance
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            history[step, 0] = bound / norm
            history[step, 1] = balance.detach()
            if (step + 1) % SHOW_LOSS_EVERY == 0 or step + 1 == self.steps:
                bar.set_postfix(
                    loss=f"{float(history[step, 0] + self.beta * history[step, 1]):.4g}", refresh=False
                )
            if progress.due():
                progress.save(
                    {
                        "network": self.network_.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "generator": generator.get_state(),
                        "p_mean": p_mean,
                        "step": step + 1,
                        "history": history[: step + 1],
                    }
                )
        bar.close()
        progress.discard()
        self.earlier_seconds_ = progress.earlier_seconds
        self.n_iter_ = self.steps
        self.cluster_mass_ = p_mean.cpu().double().numpy()
        values = history.cpu().double().numpy()
        self.history_ = {"bound": values[:, 0], "kl": values[:, 1]}
        probabilities = self._probabilities(data)
        if not torch.isfinite(probabilities).all():
            # Diverged weights give NaN probabilities, whose arg max is cluster 0 for every point:
            # a one-cluster labelling that would be recorded as a success.
            raise FloatingPointError(
                f"{type(self).__name__}: training diverged (NaN or inf in the network's cluster "
                f"probabilities); lower lr (now {self.lr:g})"
            )
        self.labels_ = probabilities.argmax(1).cpu().numpy()
        self.ratio_cut_ = full_ratio_cut(self.labels_)

    def _progress_key(self, X: np.ndarray, y, seed: int) -> dict:
        """What determines a seeded fit's steps (threads and the device's name left out, its type
        kept): the hyperparameters, the data (and the labels, for the label similarity), the seed."""
        labels = array_digest(np.asarray(y)) if self.similarity == "labels" else None
        return progress_key(self, self.device_, seed, data=array_digest(X), labels=labels)

    def _similarity(self, X: np.ndarray, y, data: torch.Tensor):
        """(W_b of a batch from its left and right indices, the ratio cut of a labelling on the full
        similarity): the module docstring's three similarities."""
        device = data.device
        if self.similarity == "knn":
            indices = graphs.knn_indices(X, self.n_neighbors)
            neighbors = torch.as_tensor(indices, dtype=torch.long, device=device)
            symmetric = self.graph == "symmetric"

            def full(labels):
                return graphs.ratio_cut(graphs.adjacency(indices, self.graph), labels)

            return (lambda left, right: knn_batch(neighbors, left, right, symmetric)), full
        if self.similarity == "labels":
            classes = torch.as_tensor(np.unique(y, return_inverse=True)[1].reshape(-1), device=device)

            def from_labels(left, right):
                return (classes[left].unsqueeze(1) == classes[right].unsqueeze(0)).float()

            return from_labels, lambda labels: graphs.label_ratio_cut(y, labels)
        unit = torch.nn.functional.normalize(data, dim=1)

        def cosine(left, right):
            # exp((cos - 1)/τ): eq. 7's bound is linear in W and the loss divides it by W's sum, so
            # the factor e^(-1/τ) cancels, and no weight overflows float32 (1/τ > 88 did).
            return torch.exp((unit[left] @ unit[right].T - 1.0) / self.temperature)

        return cosine, lambda labels: self._cosine_ratio_cut(unit, labels)

    @torch.no_grad()
    def _cosine_ratio_cut(self, unit: torch.Tensor, labels: np.ndarray) -> float:
        """Eq. 1 on the dense cosine similarity (W_ii = 0), row blocks at a time; NaN above 20000 points."""
        n = len(unit)
        if n > COSINE_RATIO_CUT_MAX:
            return math.nan
        unit = unit.double()  # exp(cos/τ) in float64: float32 overflows once 1/τ > 88
        codes = torch.as_tensor(np.unique(labels, return_inverse=True)[1].reshape(-1), device=unit.device)
        one_hot = torch.nn.functional.one_hot(codes).double()
        cut = torch.zeros(one_hot.shape[1], dtype=torch.float64, device=unit.device)
        for start in range(0, n, 2048):
            block = torch.exp(unit[start : start + 2048] @ unit.T / self.temperature)
            rows = torch.arange(len(block), device=unit.device)
            block[rows, rows + start] = 0.0
            outside = block @ (1.0 - one_hot)  # each row's weight to every cluster's complement
            cut += (outside * one_hot[start : start + 2048]).sum(0)
        return float(0.5 * (cut / one_hot.sum(0)).sum())

    @torch.no_grad()
    def _probabilities(self, data: torch.Tensor) -> torch.Tensor:
        self.network_.eval()
        parts = [
            torch.softmax(self.network_(data[s : s + PREDICT_CHUNK]), 1)
            for s in range(0, len(data), PREDICT_CHUNK)
        ]
        self.network_.train()
        return torch.cat(parts)

    def predict_proba(self, X) -> np.ndarray:
        """P (n, k): the fitted encoder's cluster probabilities of each point of ``X``."""
        X = check_predict_input(self, X, "network_")
        with torch_threads(self.n_threads):
            data = torch.as_tensor(X, dtype=torch.float32, device=self.device_)
            return self._probabilities(data).double().cpu().numpy()

    def predict(self, X) -> np.ndarray:
        """argmax_ℓ P_iℓ of each point of ``X`` under the fitted encoder."""
        return self.predict_proba(X).argmax(1)

"""What ratio cut can PRCut's balanced objective reach? Its loss on the whole graph, minimised directly.

PRCut (PRCut Table 2) trains a network on batches of its kNN graph. This script takes the
network and the batches out: it minimises the same objective over free per-point probabilities
P = softmax(Z), on the whole training graph (k = 100, OR-symmetric, Table 5; ``--train-k 150``
for the k of Table 2's text, the graph every column is scored on):

    eq. 7's bound Σ_ℓ S_ℓ / p̄_ℓ divided by ‖W‖₁  +  β KL(p̄ ‖ uniform),   p̄ = the mean row of P,

with Adam on Z and eq. 8's gradient written for the whole graph (:func:`whole_graph_loss`; the
tests check it against autograd of the estimator's ``batch_bound`` and ``balance_penalty``). It
starts from the partitions committed for prcut_table2 (PRCut's, SC's), a k-means partition and
the true labels, and prints for each, at the start and every ``--report-every`` steps, the ratio
cut that Table 2 scores (eq. 1, k = 150, ½), the one on the training graph, ACC, NMI (max), the
objective and its two parts, and the cluster sizes. A start whose end has a lower objective than
PRCut's record but a higher ratio cut than SC's says the balance term, not the optimiser, keeps
PRCut from SC's cut.

    python scripts/prcut_balance.py fashion_mnist                     # beta 200, 2000 steps: ~40 min
    python scripts/prcut_balance.py mnist --beta 20 --starts spectral_knn truth
    python scripts/prcut_balance.py mnist --train-k 150 --steps 1000   # trained on the scored graph
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from scipy import sparse
from sklearn.cluster import KMeans

from clusterbench import graphs
from clusterbench.catalog import check_in_cache, dataset_spec
from clusterbench.data import load_dataset
from clusterbench.errors import UserError
from clusterbench.methods.prcut import balance_penalty
from clusterbench.metrics import acc, nmi
from clusterbench.results import read_labels, records_folder
from clusterbench.scripting import positive_int, run_script

EXPERIMENT = "prcut_table2"
RESULTS = Path(__file__).resolve().parent.parent / "results"
RECORDED = ("prcut", "spectral_knn")  # methods whose committed partitions are starts
STARTS = (*RECORDED, "kmeans", "truth")
LOGIT_SCALE = 3.0  # a start's labels as logits: its own cluster e³ ≈ 20 times more likely than each other


class SymmetricGraph:
    """A symmetric similarity W (scipy sparse or dense) with its degrees W 1 and ‖W‖₁ held once."""

    def __init__(self, W):
        self.W = W.tocsr() if sparse.issparse(W) else np.asarray(W, dtype=np.float64)
        self.degrees = torch.from_numpy(np.asarray(self.W.sum(axis=1), dtype=np.float64).reshape(-1))
        self.total = float(self.degrees.sum())

    def times(self, P: torch.Tensor) -> torch.Tensor:
        """W P, no gradient through it (scipy's sparse product: 0.06 s for MNIST's k = 100 graph
        and ten columns, where torch's sparse CSR product took 0.16 s)."""
        return torch.from_numpy(np.asarray(self.W @ P.detach().numpy()))


def whole_graph_loss(
    graph: SymmetricGraph, P: torch.Tensor, beta: float
) -> tuple[torch.Tensor, float, float]:
    """(the loss to back-propagate, eq. 7's bound / ‖W‖₁, KL(p̄ ‖ u)) for P (N, k) on the whole graph.

    Eq. 7's bound with both sides the N rows, Σ_ℓ S_ℓ / p̄_ℓ, S = 2 (W 1)ᵀ P − 2 Σ_i P ⊙ W P (W
    symmetric), has the gradient G = (2 W 1 − 4 W P) / p̄ − S / (p̄² N) (eq. 8 for the whole graph,
    p̄ the exact mean): one sparse product a step. The surrogate Σ sg(G) ⊙ P carries it, as
    Algorithm 1's does; the balance term is the estimator's own (with gradient)."""
    WP = graph.times(P)
    with torch.no_grad():
        p_mean = P.mean(0)
        S = 2.0 * (graph.degrees @ P) - 2.0 * (P * WP).sum(0)
        G = (2.0 * graph.degrees[:, None] - 4.0 * WP) / p_mean - S / (p_mean.square() * len(P))
    balance = balance_penalty(P)
    loss = (G * P).sum() / graph.total + beta * balance
    return loss, float((S / p_mean).sum()) / graph.total, float(balance.detach())


def _starts(dataset: str, X: np.ndarray, y: np.ndarray, k: int, names: list[str]) -> dict[str, np.ndarray]:
    """The labels to start from: the labels of each committed record of the experiment on
    ``dataset`` of a named method (tagged method and record id; a failed run has none), ``kmeans``
    (one scikit-learn run, seed 0), ``truth``."""
    starts = {}
    for method in RECORDED:
        if method in names:
            for record in sorted(records_folder(RESULTS, "paper", EXPERIMENT, dataset, method).glob("*.csv")):
                labels = read_labels(record)
                if labels is not None:
                    starts[f"{method} {record.stem[:8]}"] = labels.astype(np.int64)
    if "kmeans" in names:
        starts["kmeans"] = KMeans(k, n_init=1, random_state=0).fit(X).labels_.astype(np.int64)
    if "truth" in names:
        starts["truth"] = y.astype(np.int64)
    return starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="mnist or fashion_mnist (prepared as prcut_table2 does)")
    parser.add_argument("--beta", type=float, default=200.0, help="the balance weight (Table 5: 200)")
    parser.add_argument("--steps", type=positive_int, default=2000)
    parser.add_argument("--lr", type=float, default=0.05, help="Adam's step size on the logits")
    parser.add_argument("--report-every", type=positive_int, default=500)
    parser.add_argument(
        "--starts",
        nargs="+",
        choices=STARTS,
        default=list(STARTS),
        help="the committed records of prcut and spectral_knn, a k-means partition, the true labels",
    )
    parser.add_argument(
        "--train-k",
        type=positive_int,
        default=100,
        help="neighbours of the graph the objective is minimised on (Table 5: 100; Table 2's text: 150)",
    )
    parser.add_argument("--threads", type=positive_int, default=1)
    args = parser.parse_args()
    if not args.beta >= 0 or not args.lr > 0:
        raise UserError(f"--beta must be ≥ 0 and --lr > 0, got {args.beta:g} and {args.lr:g}")
    check_in_cache([args.dataset])
    torch.set_num_threads(args.threads)
    data = load_dataset(dataset_spec(args.dataset, EXPERIMENT))
    X, y, k = data.X, data.y, data.n_clusters
    scored_graph = graphs.knn_graph(X, 150)  # Table 2 scores every column on k = 150
    train = scored_graph if args.train_k == 150 else graphs.knn_graph(X, args.train_k)
    graph = SymmetricGraph(train)
    scored = {150: graphs.RatioCut(scored_graph), args.train_k: graphs.RatioCut(train)}

    def report(tag: str, labels: np.ndarray) -> None:
        with torch.no_grad():
            _, cut, balance = whole_graph_loss(graph, torch.eye(k, dtype=torch.float64)[labels], args.beta)
        sizes = np.bincount(labels, minlength=k)
        print(
            f"{tag:<40} RC {scored[150](labels):7.1f} "
            f"(k={args.train_k}: {scored[args.train_k](labels):6.1f}) "
            f"ACC {acc(y, labels):.3f} NMI {nmi(y, labels, 'max'):.3f} "
            f"objective {cut + args.beta * balance:7.3f} = {cut:.3f} + beta KL {args.beta * balance:.3f} "
            f"sizes {sizes.min()}-{sizes.max()}",
            flush=True,
        )

    print(
        f"{args.dataset}: beta {args.beta:g}, {args.steps} Adam steps at lr {args.lr:g} on the logits, "
        f"on the k = {args.train_k} graph"
    )
    for tag, labels in _starts(args.dataset, X, y, k, args.starts).items():
        report(f"{tag}: start", labels)
        logits = (torch.eye(k, dtype=torch.float64)[labels] * LOGIT_SCALE).requires_grad_()
        optimizer = torch.optim.Adam([logits], lr=args.lr)
        began = time.perf_counter()
        for step in range(1, args.steps + 1):
            loss, _, _ = whole_graph_loss(graph, torch.softmax(logits, 1), args.beta)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % args.report_every == 0 or step == args.steps:
                seconds = time.perf_counter() - began
                report(f"{tag}: step {step} ({seconds:.0f} s)", logits.detach().argmax(1).numpy())


if __name__ == "__main__":
    run_script(main)

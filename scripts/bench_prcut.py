"""Speed of one PRCut step (issue 28's target): the matrix-product form of eq. 8 against the
(B, B, k) tensor form of the authors' code, on raw MNIST, timed in one run.

One step is Algorithm 1's: draw 2B = 4096 of the 60000 training images (pixels / 255), W_b of
the left and right halves, the 3 x 512 MLP's softmax, the moving average p̄, the detached
surrogate (divided by ‖W_b‖₁) plus β·KL, backward, one RMSProp update. The two forms differ only
in how S_ℓ = Σ_ij W_ij (P_iℓ + P_jℓ − 2 P_iℓ P_jℓ) is computed:

- ``matmul``: ``clusterbench.methods.prcut.surrogate_loss`` (W 1·P_l + Wᵀ1·P_r − 2 Σ P_l ⊙ W P_r);
- ``pairwise``: a (B, B, k) tensor W[:, :, None] · (P_l[:, None] + P_r[None] − 2 P_l[:, None] P_r[None]),
  formed twice per step as the authors' code does (for the gradient and for its monitored loss).

W_b is the label similarity (W_ij = 1 iff same digit; dense (B, B) either way, so the choice does
not change the cost) and, separately, the kNN batch from neighbour lists (row ``knn_batch_k100``: random
lists of k = 100, timed alone; building the real graph takes minutes and is cached elsewhere).
The forms are timed interleaved, min over ``--repeats`` steps after 2 warm-up steps, with torch at each of
``--threads``; the machine's load average is recorded, and each step's process CPU time beside
its wall time (at one thread, the CPU time is what a busy machine does not inflate).

    python scripts/bench_prcut.py                      # ~30 s on 2 cores; prints, writes the CSV
    python scripts/bench_prcut.py --threads 1 --out /tmp/bench
Writes results/benchmarks/prcut_step_cpu.csv (``--out`` folder).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import clusterbench
from clusterbench.methods.prcut import balance_penalty, build_encoder, knn_batch, surrogate_loss
from clusterbench.results import atomic_write_text
from clusterbench.scripting import output_folder, positive_int, run_script

REPO = Path(__file__).resolve().parents[1]
BETA, GAMMA, LR, WEIGHT_DECAY = 200.0, 0.8, 1e-5, 1e-9  # Table 5


def pairwise_surrogate(W, P_left, P_right, p_mean, n):
    """The surrogate with S from the (B, B, k) tensor, formed twice as in the authors' code."""
    with torch.no_grad():
        Pl, Pr = P_left.detach(), P_right.detach()
        pairs = W[:, :, None] * (Pl[:, None, :] + Pr[None, :, :] - 2.0 * Pl[:, None, :] * Pr[None, :, :])
        S = pairs.sum((0, 1))
        correction = S / (p_mean.square() * n)
        G_left = (W @ (1.0 - 2.0 * Pr)) / p_mean - correction
        G_right = (W.T @ (1.0 - 2.0 * Pl)) / p_mean - correction
        monitor = W[:, :, None] * (Pl[:, None, :] + Pr[None, :, :] - 2.0 * Pl[:, None, :] * Pr[None, :, :])
        bound = (monitor.sum((0, 1)) / p_mean).sum()
    return (G_left * P_left).sum() + (G_right * P_right).sum(), bound


FORMS = {"matmul": surrogate_loss, "pairwise": pairwise_surrogate}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--threads", type=positive_int, nargs="+", default=[1, 2], help="torch's CPU threads (1 2)"
    )
    parser.add_argument("--batch", type=positive_int, default=2048, help="B: 2B rows a step (2048)")
    parser.add_argument("--repeats", type=positive_int, default=8, help="timed steps per form (8)")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks")
    args = parser.parse_args()
    out = output_folder(parser, args.out)
    torch.set_flush_denormal(True)

    X, y = clusterbench.load_dataset("mnist", preprocess="pixels_unit")
    X, y = X[:60000], y[:60000]  # the training split
    data = torch.as_tensor(X, dtype=torch.float32)
    classes = torch.as_tensor(y)
    B, k, n = args.batch, 10, len(X)
    network = build_encoder(X.shape[1], k, 3, 512, True, 0, "cpu")
    optimizer = torch.optim.RMSprop(network.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    generator = torch.Generator().manual_seed(0)
    p_mean = torch.full((k,), 1.0 / k)

    def step(form) -> tuple[float, float]:
        nonlocal p_mean
        start, cpu_start = time.perf_counter(), time.process_time()
        chosen = torch.randperm(n, generator=generator)[: 2 * B]
        left, right = chosen[:B], chosen[B:]
        W = (classes[left][:, None] == classes[right][None, :]).float()
        P = torch.softmax(network(data[chosen]), 1)
        with torch.no_grad():
            p_mean = (1 - GAMMA) * p_mean + GAMMA * P.detach().mean(0)
        surrogate, _ = FORMS[form](W, P[:B], P[B:], p_mean, 2 * B)
        loss = surrogate / W.sum() + BETA * balance_penalty(P)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return time.perf_counter() - start, time.process_time() - cpu_start

    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        times = {form: [] for form in FORMS}
        cpu = {form: [] for form in FORMS}
        for _ in range(2):
            for form in FORMS:
                step(form)
        for _ in range(args.repeats):
            for form in FORMS:
                wall, used = step(form)
                times[form].append(wall)
                cpu[form].append(used)
        neighbors = torch.randint(0, n, (n, 100), generator=generator)
        knn_times = []
        for _ in range(args.repeats):
            chosen = torch.randperm(n, generator=generator)[: 2 * B]
            start = time.perf_counter()
            knn_batch(neighbors, chosen[:B], chosen[B:], symmetric=True)
            knn_times.append(time.perf_counter() - start)
        load = round(os.getloadavg()[0], 2)
        for part, wall, used in [
            *((f"step_{form}", times[form], cpu[form]) for form in FORMS),
            ("knn_batch_k100", knn_times, [math.nan]),
        ]:
            row = {"part": part, "threads": threads, "rows": 2 * B, "min_s": min(wall)}
            rows.append({**row, "median_s": np.median(wall), "min_cpu_s": min(used), "load_average": load})
        ratio = min(times["pairwise"]) / min(times["matmul"])
        print(f"{threads} thread(s): pairwise / matmul (min wall) {ratio:.2f}x", flush=True)
    frame = pd.DataFrame(rows).assign(torch=torch.__version__)
    print(frame.to_string(index=False))
    atomic_write_text(out / "prcut_step_cpu.csv", frame.to_csv(index=False))
    return 0


if __name__ == "__main__":
    run_script(main)

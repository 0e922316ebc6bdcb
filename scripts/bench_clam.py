"""CLAM speed benchmark (issue 3): wall time on Zoo, and time per epoch against n on Fashion-MNIST.

1. Zoo at CLAM Table 6's settings, 10 restarts x 200 epochs trained as one batched computation;
   target <= 5 s on 2 CPU cores (the paper reports 18 s for one run on an RTX 3090, Table 3).
2. Fashion-MNIST (60k training split, standardized) subsets of 1k, 10k and 60k points at Table 6's
   FMNIST settings: seconds per training epoch (a few epochs timed), which should grow linearly in n.

Prints a Markdown table and writes it as CSV to results/benchmarks/clam_speed_<device>.csv.

    python scripts/bench_clam.py                    # both parts, device auto
    python scripts/bench_clam.py --device cuda --threads 0 --part fmnist
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from omegaconf import OmegaConf

from clusterbench.catalog import load_option
from clusterbench.data import load_dataset, stratified_subsample
from clusterbench.methods import CLAM
from clusterbench.validation import resolve_device

EXPERIMENT = load_option("experiment", "clam_table1")
TABLE6 = load_option("tuned", "clam_table6")


def table6(dataset: str) -> dict:
    """CLAM Table 6's hyperparameters for ``dataset`` (conf/tuned/clam_table6.yaml)."""
    return OmegaConf.to_container(TABLE6[dataset])


def load(dataset: str):
    spec = load_option("dataset", dataset)
    overrides = EXPERIMENT.get("dataset_overrides", {}).get(dataset, {})
    return load_dataset(OmegaConf.merge(spec, overrides))


def timed_fit(estimator: CLAM, X: np.ndarray) -> float:
    start = time.perf_counter()
    estimator.fit(X)
    if estimator.device_ == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def zoo_rows(device: str, repeats: int) -> list[dict]:
    data = load("zoo")
    params = {**table6("zoo"), "restarts": 10, "epochs": 200, "device": device}
    seconds = [
        timed_fit(CLAM(n_clusters=data.n_clusters, random_state=seed, **params), data.X)
        for seed in range(repeats)
    ]
    return [
        {
            "benchmark": "zoo 10 restarts x 200 epochs",
            "n": len(data.X),
            "device": device,
            "seconds": min(seconds),
            "seconds_median": float(np.median(seconds)),
            "per_epoch_ms": 1e3 * min(seconds) / 200,
        }
    ]


def fmnist_rows(device: str, sizes: list[int], epochs: int, restarts: int) -> list[dict]:
    data = load("fashion_mnist")
    rows = []
    for size in sizes:
        subset = stratified_subsample(data.y, size, seed=0) if size < len(data.y) else np.arange(len(data.y))
        X = data.X[subset]
        params = {**table6("fashion_mnist"), "restarts": restarts, "epochs": epochs, "device": device}
        # One warm-up epoch first, so one-off costs (allocator, kernels) are not charged to n.
        timed_fit(CLAM(n_clusters=data.n_clusters, random_state=0, **{**params, "epochs": 1}), X)
        seconds = timed_fit(CLAM(n_clusters=data.n_clusters, random_state=0, **params), X)
        rows.append(
            {
                "benchmark": f"fashion_mnist {restarts} restart(s), {epochs} epochs",
                "n": size,
                "device": device,
                "seconds": seconds,
                "seconds_median": seconds,
                "per_epoch_ms": 1e3 * seconds / epochs,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--part", default="all", choices=["all", "zoo", "fmnist"])
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    parser.add_argument("--repeats", type=int, default=3, help="Zoo fits; the fastest is reported")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 60000])
    parser.add_argument("--epochs", type=int, default=3, help="epochs timed per FMNIST subset")
    parser.add_argument("--restarts", type=int, default=1, help="restarts per FMNIST fit")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    rows = []
    if args.part in ("all", "zoo"):
        rows += zoo_rows(device, args.repeats)
    if args.part in ("all", "fmnist"):
        rows += fmnist_rows(device, args.sizes, args.epochs, args.restarts)
    table = pd.DataFrame(rows).assign(threads=torch.get_num_threads(), torch=torch.__version__)
    print(table.to_markdown(index=False, floatfmt=".3f"))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"clam_speed_{device}.csv"
    table.to_csv(path, index=False)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

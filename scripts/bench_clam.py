"""CLAM speed benchmark (issue 3): wall time on Zoo, and time per epoch against n on Fashion-MNIST.

1. Zoo at CLAM Table 6's settings, 10 restarts x 200 epochs trained as one batched computation;
   target <= 5 s on 2 CPU cores (the paper reports 18 s for one run on an RTX 3090, Table 3).
2. Fashion-MNIST (60k training split, standardized) subsets of 1k, 10k and 60k points at Table 6's
   FMNIST settings: seconds per training epoch (a few epochs timed), which should grow linearly in n.

Prints a Markdown table and writes it as CSV to results/benchmarks/clam_speed_<device>.csv; a run
of one part replaces that part's rows there and keeps the other's.

    python scripts/bench_clam.py                    # both parts, device auto, one CPU thread
    python scripts/bench_clam.py --device cuda --part fmnist
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from omegaconf import OmegaConf

from clusterbench.catalog import dataset_spec, load_option
from clusterbench.data import Dataset, load_dataset
from clusterbench.errors import UserError
from clusterbench.methods import CLAM
from clusterbench.results import atomic_write_text
from clusterbench.scripting import output_folder, positive_int, run_script
from clusterbench.validation import resolve_device

# The benchmark rows of each part, named by the first word of their "benchmark" column.
PARTS = {"zoo": "zoo", "fmnist": "fashion_mnist"}


def table6(dataset: str) -> dict:
    """CLAM Table 6's hyperparameters for ``dataset`` (conf/tuned/clam_table6.yaml)."""
    return OmegaConf.to_container(load_option("tuned", "clam_table6")[dataset])


def load(dataset: str, n_points: int | None = None):
    """``dataset`` as experiment clam_table1 prepares it, or its seeded stratified subsample."""
    return load_dataset(OmegaConf.merge(dataset_spec(dataset, "clam_table1"), {"subsample": n_points}))


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
        timed_fit(CLAM(n_clusters=data.n_clusters, random_state=seed, n_threads=None, **params), data.X)
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


def fmnist_subsets(sizes: list[int]) -> list[Dataset]:
    """Each size's seeded stratified subsample of FMNIST's training split, all loaded before any
    fit: a size the subsample cannot draw (load_dataset names the range) or larger than the split
    fails before the benchmark's minutes, not after."""
    subsets = []
    for size in sizes:
        data = load("fashion_mnist", size)
        if len(data.y) < size:
            raise UserError(f"--sizes: FMNIST's training split holds {len(data.y)} points, got {size}")
        subsets.append(data)
    return subsets


def fmnist_rows(device: str, subsets: list[Dataset], epochs: int, restarts: int) -> list[dict]:
    rows = []
    for data in subsets:
        X = data.X
        params = {**table6("fashion_mnist"), "restarts": restarts, "epochs": epochs, "device": device}
        params["n_threads"] = None  # the threads main() set
        # One warm-up epoch first, so one-off costs (allocator, kernels) are not charged to n.
        timed_fit(CLAM(n_clusters=data.n_clusters, random_state=0, **{**params, "epochs": 1}), X)
        seconds = timed_fit(CLAM(n_clusters=data.n_clusters, random_state=0, **params), X)
        rows.append(
            {
                "benchmark": f"fashion_mnist {restarts} restart(s), {epochs} epochs",
                "n": len(X),
                "device": device,
                "seconds": seconds,
                "seconds_median": seconds,
                "per_epoch_ms": 1e3 * seconds / epochs,
            }
        )
    return rows


def earlier_rows(path: Path) -> pd.DataFrame | None:
    """The rows a previous run wrote to ``path`` (None if there is none), read before the work
    so that a file that cannot take the new rows does not cost the benchmark's minutes."""
    if not path.exists():
        return None
    try:
        rows = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        rows, why = None, str(exc).strip().splitlines()[0]
    else:
        why = "it has no benchmark column"
    if rows is None or "benchmark" not in rows:
        raise UserError(f"{path} is not a benchmark CSV ({why}); remove it or choose another --out")
    return rows


def merged(earlier: pd.DataFrame | None, table: pd.DataFrame, parts: list[str]) -> pd.DataFrame:
    """``table`` in place of the rows of ``parts`` among ``earlier``'s, the other rows kept, in
    the order of PARTS (rows of no part last)."""
    if earlier is None:
        return table
    part_of = earlier["benchmark"].astype(str).str.split().str[0]
    kept = earlier[~part_of.isin([PARTS[part] for part in parts])]
    rows = pd.concat([kept, table], ignore_index=True)
    position = {name: i for i, name in enumerate(PARTS.values())}
    order = rows["benchmark"].astype(str).str.split().str[0].map(position).fillna(len(PARTS))
    return rows.iloc[order.argsort(kind="stable")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--part", default="all", choices=["all", *PARTS])
    parser.add_argument(
        "--threads", type=positive_int, default=1, help="torch CPU threads (default 1, as `clusterbench run`)"
    )
    parser.add_argument("--repeats", type=positive_int, default=3, help="Zoo fits; the fastest is reported")
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[1000, 10000, 60000])
    parser.add_argument("--epochs", type=positive_int, default=3, help="epochs timed per FMNIST subset")
    parser.add_argument("--restarts", type=positive_int, default=1, help="restarts per FMNIST fit")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    args = parser.parse_args()
    output_folder(parser, args.out)
    device = resolve_device(args.device)
    parts = list(PARTS) if args.part == "all" else [args.part]
    path = args.out / f"clam_speed_{device}.csv"
    earlier = earlier_rows(path)
    subsets = fmnist_subsets(args.sizes) if "fmnist" in parts else []
    torch.set_num_threads(args.threads)
    rows = []
    if "zoo" in parts:
        rows += zoo_rows(device, args.repeats)
    if "fmnist" in parts:
        rows += fmnist_rows(device, subsets, args.epochs, args.restarts)
    table = pd.DataFrame(rows).assign(threads=torch.get_num_threads(), torch=torch.__version__)
    print(table.to_markdown(index=False, floatfmt=".3f"))
    atomic_write_text(path, merged(earlier, table, parts).to_csv(index=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    run_script(main)

"""Speed of the deep family's epochs beside ClustPy's, and the start of a warm-cache run.

    python scripts/bench_deep.py                     # needs clustpy (a scratch environment, not a dependency)
    python scripts/bench_deep.py --rows 10000 --threads 2 --repeats 3

What is measured, on the first ``--rows`` MNIST images (pixels / 255), the DEC/IDEC autoencoder
d-500-500-2000-10 with LeakyReLU (ClustPy's default activation), batches of 256, Adam, ClustPy's
per-sample-sum reconstruction loss (its ``mean_squared_error`` in 0.0.3), the same ``--threads``:

- per **pretraining epoch** and per **clustering epoch** of IDEC and of DKM, ours and ClustPy's
  (``clustpy.deep.IDEC`` / ``DKM``). A fit also runs k-means seeding and, in ClustPy, a final
  k-means; so each epoch time is the difference of two fits that differ by ``--extra`` epochs of
  one phase, divided by ``--extra``. Ours and ClustPy's alternate, and the least of
  ``--repeats`` differences is kept (the machine's other load only ever adds time);
- ``warm_start``: a fresh ``clusterbench run method=idec dataset=mnist`` process whose
  autoencoder is in the cache (a first run put it there): seconds from launching the process to
  its first clustering step (imports, data, loading the network, embedding, k-means seeding).

Rows are appended to results/benchmarks/kr_deep_cpu.csv (and printed): what, ours, clustpy, ratio,
rows, threads, the machine's 1-minute load average when the measurement ended.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "results" / "benchmarks" / "kr_deep_cpu.csv"  # the Khatri-Rao Table 3 family
LAYERS = [500, 500, 2000, 10]


def mnist(rows: int) -> tuple[np.ndarray, int]:
    from clusterbench.data.sources import find_npz

    found = find_npz("mnist")
    if found is None:
        sys.exit("bench_deep.py: mnist.npz is not in the data folders: clusterbench data pull mnist")
    data = np.load(found[1])
    return (data["X"][:rows] / 255.0).astype(np.float32), 10


def ours_fit(kind: str, X: np.ndarray, pretrain: int, clustering: int, threads: int) -> float:
    """Seconds of one fit of ours, with an empty pretraining cache."""
    from clusterbench.methods import DKM, IDEC
    from clusterbench.methods.deep import cache

    common = dict(
        n_clusters=10, layers=LAYERS, activation="leaky_relu", pretrain_epochs=pretrain,
        pretrain_batch_size=256, batch_size=256, reconstruction_reduction="sum_per_sample",
        epochs=clustering, max_iter=None, n_init=1, random_state=0, n_threads=threads, device="cpu",
    )  # fmt: skip
    model = IDEC(**common, update_interval=None) if kind == "idec" else DKM(**common)
    with tempfile.TemporaryDirectory() as folder, cache.folder_for_block(folder):
        start = time.perf_counter()
        model.fit(X)
        return time.perf_counter() - start


def clustpy_fit(kind: str, X: np.ndarray, pretrain: int, clustering: int, threads: int) -> float:
    """Seconds of one fit of ClustPy's, on the same network, data, batches and optimiser."""
    from clustpy.deep import DKM, IDEC

    torch.set_num_threads(threads)
    common = dict(
        n_clusters=10, batch_size=256, pretrain_epochs=pretrain, clustering_epochs=clustering,
        embedding_size=10, random_state=0, device="cpu", initial_clustering_params={"n_init": 1},
    )  # fmt: skip
    model = IDEC(**common) if kind == "idec" else DKM(**common)
    start = time.perf_counter()
    model.fit(X)
    return time.perf_counter() - start


def per_epoch(fit, kind, X, threads, phase: str, extra: int) -> float:
    base = fit(kind, X, 1, 1, threads)
    longer = (
        fit(kind, X, 1 + extra, 1, threads) if phase == "pretrain" else fit(kind, X, 1, 1 + extra, threads)
    )
    return (longer - base) / extra


def warm_start(rows: int, threads: int) -> float:
    """Seconds from launching a warm-cache ``clusterbench run`` to its first clustering step."""
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, CLUSTERBENCH_CACHE=f"{folder}/cache")
        words = [
            "method=idec", "dataset=mnist", f"dataset.subsample={rows}", "method.pretrain_epochs=2",
            "method.max_iter=1", f"threads={threads}", f"results_dir={folder}/first",
        ]  # fmt: skip
        subprocess.run(
            [sys.executable, "-m", "clusterbench", "run", *words], env=env, check=True, capture_output=True
        )
        probe = (
            "import sys, time; from clusterbench.methods.deep import base\n"
            "train = base.DeepClusterer._train\n"
            "def timed(self, *a):\n"
            "    print('CLUSTERING_AT', time.time(), file=sys.stderr, flush=True); return train(self, *a)\n"
            "base.DeepClusterer._train = timed\n"
            "from clusterbench.__main__ import main\n"
            "sys.argv = ['clusterbench', 'run', *sys.argv[1:]]; main()\n"
        )
        words[-1] = f"results_dir={folder}/second"
        launched = time.time()
        result = subprocess.run(
            [sys.executable, "-c", probe, *words], env=env, capture_output=True, text=True
        )
        stamp = next(line for line in result.stderr.splitlines() if line.startswith("CLUSTERING_AT"))
        return float(stamp.split()[1]) - launched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--extra", type=int, default=2, help="epochs by which the two timed fits differ")
    parser.add_argument("--skip-warm-start", action="store_true")
    args = parser.parse_args(argv)
    try:
        import clustpy  # noqa: F401
    except ImportError:
        parser.error("clustpy is not installed: pip install clustpy==0.0.3 in a scratch environment")
    torch.set_flush_denormal(True)
    X, _ = mnist(args.rows)
    rows = []
    for kind in ("idec", "dkm"):
        for phase in ("pretrain", "clustering"):
            times = {"ours": [], "clustpy": []}
            for _ in range(args.repeats):
                times["ours"].append(per_epoch(ours_fit, kind, X, args.threads, phase, args.extra))
                times["clustpy"].append(per_epoch(clustpy_fit, kind, X, args.threads, phase, args.extra))
            best = {name: min(values) for name, values in times.items()}
            rows.append(
                {"what": f"{kind} {phase} epoch (s)", **best, "ratio": best["ours"] / best["clustpy"]}
            )
            print(rows[-1], flush=True)
    if not args.skip_warm_start:
        seconds = min(warm_start(args.rows, args.threads) for _ in range(2))
        rows.append({"what": "warm-cache run to first clustering step (s)", "ours": seconds})
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows).assign(rows=args.rows, threads=args.threads, load=os.getloadavg()[0])
    frame["date"] = time.strftime("%Y-%m-%d")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(OUT, mode="a", header=not OUT.exists(), index=False, float_format="%.4g")
    print(frame.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

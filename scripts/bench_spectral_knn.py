"""The kNN graph of PRCut's Table 2 (k = 150 on the 60000 MNIST training images, pixels / 255):
built once, loaded from the cache after; and spectral clustering on it, ours (``method=
spectral_knn``) beside scikit-learn's ``SpectralClustering(affinity="precomputed_nearest_neighbors")``,
measured in one run (issue 28, "Speed").

The data are what ``experiment=prcut_table2`` fits (``clusterbench.load_dataset("mnist",
experiment="prcut_table2")``: the training split, max-scaled, i.e. pixels / 255); ``--n`` takes
its class-stratified seeded subsample instead, for a quick check. Every part runs under the same
``--threads`` (torch, BLAS and OpenMP pools: ``clusterbench.fitting.limit_threads``); the
1-minute load average is recorded before and after each part, and each part's process CPU time
beside its wall time (what a busy machine does not inflate at one thread).

- ``knn_build``: ``clusterbench.graphs.knn_indices(X, k)`` into an empty cache folder (a fresh
  temporary folder, ``$CLUSTERBENCH_CACHE`` pointed beside it for the run, so the user's cache is
  neither read nor written): the digest of X, scikit-learn's brute-force neighbours, the file
  written atomically.
- ``knn_load``: the same call again after ``graphs.forget_in_memory()``, so the lists come from
  the file (digest of X, read, checksum, decode), ``--load-repeats`` times (least and median; the
  file is in the OS page cache, as on a second run soon after the first). The lists must equal the
  built ones and no rebuild may happen (a warning fails the benchmark); ``identical`` says so.
- ``sc`` ``spectral_knn``: ``SpectralKNN(n_clusters=10, n_neighbors=k, n_init=--n-init,
  random_state=--seed)`` with the config's defaults (unnormalised Laplacian of the OR-symmetrised
  binary graph, LOBPCG, tol 1e-6), its neighbour lists from memory (the load above left them
  there): adjacency, Laplacian, eigenvectors, then ``n_init`` single-start k-means++ runs on the
  embedding, the run with the least ratio cut kept.
- ``sc`` ``sklearn_spectral_clustering``: ``SpectralClustering(n_clusters=10, affinity=
  "precomputed_nearest_neighbors", n_neighbors=k, n_init=--n-init, random_state=--seed,
  eigen_solver=...)``, a row for each of ``--sklearn-solver`` (arpack, its default: shift-invert
  Lanczos, which factorises the Laplacian; lobpcg), fitted on the same neighbour lists given as
  the directed binary graph (row i: i's k neighbours at "distance" 1; it keeps all k and
  symmetrises them as ½(A + Aᵀ)), normalised Laplacian (its only choice), then one ``k_means``
  call of ``n_init`` k-means++ runs, the least inertia kept. It runs in a child process (the
  neighbour lists passed in a file, its fit alone timed inside it) so that ``--sklearn-timeout``
  can stop it; a fit stopped there is recorded as "did not finish in N s", not dropped.

Both partitions are scored with ACC, NMI and the ratio cut (``clusterbench.graphs.ratio_cut``,
eq. 1 with the ½, on the OR-symmetric graph of the same lists: Table 2's metric).

    python scripts/bench_spectral_knn.py         # full scale, 2 threads; on 2 idle cores ~1.5 min
        # the graph, ~1 s its load, then ours, then scikit-learn (arpack: ~3 min at n = 10000 on
        # the busy machine, so likely past its 900 s cap at 60000): up to ~20 min in all
    python scripts/bench_spectral_knn.py --sklearn-solver arpack lobpcg     # a row for each
    python scripts/bench_spectral_knn.py --n 10000 --out /tmp/bench         # ~3 min, busy 2 cores
    python scripts/bench_spectral_knn.py --n 10000 --no-sc --out /tmp/bench # the graph alone: ~30 s
Writes results/benchmarks/spectral_knn_cpu.csv (``--out`` folder) and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
CSV = "spectral_knn_cpu.csv"
N_CLUSTERS = 10
TRAIN = 60000  # MNIST's training split, the data's rows without --n
SKLEARN_SOLVERS = ("arpack", "lobpcg")  # "amg" needs pyamg, not a dependency
COLUMNS = [
    "part",
    "method",
    "what",
    "n",
    "d",
    "n_neighbors",
    "threads",
    "n_init",
    "eigen_solver",
    "seconds",
    "seconds_median",
    "cpu_seconds",
    "status",
    "identical",
    "acc",
    "nmi",
    "ratio_cut",
    "load_before",
    "load_after",
]


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def timed(function):
    """``function()``, its wall and process CPU seconds."""
    start, cpu_start = time.perf_counter(), time.process_time()
    value = function()
    return value, time.perf_counter() - start, time.process_time() - cpu_start


def graph_rows(X: np.ndarray, k: int, repeats: int) -> tuple[list[dict], np.ndarray]:
    """The build into the (empty) cache folder and ``repeats`` loads from it; the lists."""
    from clusterbench import graphs

    folder = graphs.knn_cache_folder()
    if folder.exists() and any(folder.iterdir()):
        raise RuntimeError(f"the kNN cache folder {folder} is not empty")
    common = {"part": "knn_build", "method": "clusterbench.graphs.knn_indices", "n": len(X), "d": X.shape[1]}
    common |= {"n_neighbors": k}
    graphs.forget_in_memory()
    before = load_average()
    built, seconds, cpu = timed(lambda: graphs.knn_indices(X, k))
    files = list(folder.iterdir())
    mib = sum(path.stat().st_size for path in files) / 2**20
    rows = [
        {
            **common,
            "what": f"empty cache: digest of X, brute-force neighbours (scikit-learn), {mib:.2f} MiB file",
            "seconds": seconds,
            "seconds_median": seconds,
            "cpu_seconds": cpu,
            "status": "ok",
            "load_before": before,
            "load_after": load_average(),
        }
    ]
    before, wall, used, identical = load_average(), [], [], True
    for _ in range(repeats):
        graphs.forget_in_memory()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a corrupt file would be rebuilt with a warning
            loaded, seconds, cpu = timed(lambda: graphs.knn_indices(X, k))
        if loaded is built:
            raise RuntimeError("the second call returned the lists kept in memory, not the file's")
        identical &= bool(np.array_equal(loaded, built)) and loaded.dtype == built.dtype
        wall.append(seconds)
        used.append(cpu)
    if not identical:
        raise RuntimeError("the neighbour lists loaded from the cache differ from the built ones")
    rows.append(
        {
            **common,
            "part": "knn_load",
            "what": f"second call, lists from the cache file (memory copy dropped); least of {repeats}",
            "seconds": min(wall),
            "seconds_median": float(np.median(wall)),
            "cpu_seconds": min(used),
            "status": "ok",
            "identical": identical,
            "load_before": before,
            "load_after": load_average(),
        }
    )
    return rows, built


def scores(y, labels, W) -> dict:
    from clusterbench import graphs
    from clusterbench.metrics import acc, nmi

    return {"acc": acc(y, labels), "nmi": nmi(y, labels), "ratio_cut": graphs.ratio_cut(W, labels)}


def ours(X, y, W, k: int, n_init: int, seed: int) -> dict:
    from clusterbench.methods import SpectralKNN

    model = SpectralKNN(n_clusters=N_CLUSTERS, n_neighbors=k, n_init=n_init, random_state=seed)
    before = load_average()
    _, seconds, cpu = timed(lambda: model.fit(X))
    return {
        "method": "spectral_knn",
        "eigen_solver": model.eigen_solver,
        "what": (
            "SpectralKNN: unnormalised Laplacian of the OR-symmetric binary graph, LOBPCG (tol 1e-6), "
            f"{n_init} single-start k-means++ runs on the embedding, least ratio cut kept"
        ),
        "seconds": seconds,
        "seconds_median": seconds,
        "cpu_seconds": cpu,
        "status": "ok",
        **scores(y, model.labels_, W),
        "load_before": before,
        "load_after": load_average(),
    }


def sklearn_job(folder: Path) -> int:
    """The child process: fit scikit-learn's SpectralClustering on the lists in ``folder``."""
    from sklearn.cluster import SpectralClustering

    from clusterbench import graphs
    from clusterbench.fitting import limit_threads

    job = json.loads((folder / "job.json").read_text())
    directed = graphs.adjacency(np.load(folder / "indices.npy"), "directed")
    model = SpectralClustering(
        n_clusters=N_CLUSTERS,
        affinity="precomputed_nearest_neighbors",
        n_neighbors=job["n_neighbors"],
        n_init=job["n_init"],
        eigen_solver=job["solver"],
        random_state=job["seed"],
    )
    with limit_threads(job["threads"]):
        _, seconds, cpu = timed(lambda: model.fit(directed))
    np.savez(folder / "sklearn.npz", labels=model.labels_, seconds=seconds, cpu_seconds=cpu)
    return 0


def sklearn_spectral(y, W, indices, folder: Path, job: dict, timeout: float) -> dict:
    """scikit-learn's SpectralClustering in a child process stopped after ``timeout`` seconds."""
    (folder / "job.json").write_text(json.dumps(job))
    np.save(folder / "indices.npy", indices)
    row = {
        "method": "sklearn_spectral_clustering",
        "eigen_solver": job["solver"],
        "what": (
            'SpectralClustering(affinity="precomputed_nearest_neighbors") on the directed binary graph '
            f"(symmetrised ½(A + Aᵀ)), normalised Laplacian, eigen_solver={job['solver']}, one k_means "
            f"call of {job['n_init']} k-means++ runs, least inertia kept; fit timed in a child process"
        ),
        "load_before": load_average(),
    }
    command = [sys.executable, str(Path(__file__).resolve()), "--sklearn-job", str(folder)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**row, "status": f"did not finish in {timeout:g} s", "load_after": load_average()}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {**row, "status": f"failed (exit {done.returncode}): {last}", "load_after": load_average()}
    with np.load(folder / "sklearn.npz") as result:
        labels, seconds, cpu = result["labels"], float(result["seconds"]), float(result["cpu_seconds"])
    row |= {"seconds": seconds, "seconds_median": seconds, "cpu_seconds": cpu, "status": "ok"}
    return {**row, **scores(y, labels, W), "load_after": load_average()}


def main() -> int:
    from clusterbench.scripting import output_folder, positive_int

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=positive_int, default=None, help="a stratified subsample (all 60000)")
    parser.add_argument("--k", type=positive_int, default=150, help="neighbours of the graph (150)")
    parser.add_argument("--threads", type=positive_int, default=2, help="CPU threads of every part (2)")
    parser.add_argument("--n-init", type=positive_int, default=10, help="k-means runs of either SC (10)")
    parser.add_argument("--seed", type=int, default=0, help="random_state of either SC (0)")
    parser.add_argument("--load-repeats", type=positive_int, default=3, help="timed cache loads (3)")
    parser.add_argument(
        "--sklearn-solver",
        choices=SKLEARN_SOLVERS,
        nargs="+",
        default=["arpack"],
        help="scikit-learn's eigen_solver, a row each (arpack, its default)",
    )
    parser.add_argument(
        "--sklearn-timeout", type=positive_int, default=900, help="cap of scikit-learn's fit, s (900)"
    )
    parser.add_argument("--no-sc", action="store_true", help="time the graph only")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks")
    parser.add_argument("--sklearn-job", type=Path, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.sklearn_job is not None:
        return sklearn_job(args.sklearn_job)
    if args.seed < 0:
        parser.error(f"--seed must be ≥ 0, got {args.seed}")
    out = output_folder(parser, args.out)

    import sklearn

    import clusterbench
    from clusterbench import graphs

    graphs.check_n_neighbors(args.k, min(args.n or TRAIN, TRAIN))  # before the data's seconds
    from clusterbench.fitting import limit_threads
    from clusterbench.methods.deep import cache
    from clusterbench.results import atomic_write_text

    X, y = clusterbench.load_dataset("mnist", experiment="prcut_table2", max_samples=args.n)
    graphs.check_n_neighbors(args.k, len(X))
    scratch = Path(tempfile.mkdtemp(prefix="bench-spectral-knn-"))
    try:  # the kNN cache beside the pretrained one: scratch/knn, empty
        with cache.folder_for_block(scratch / "pretrained"), limit_threads(args.threads):
            rows, indices = graph_rows(X, args.k, args.load_repeats)
            build, cached = rows[0]["seconds"], rows[1]["seconds"]
            print(f"graph: built in {build:.2f} s, loaded from the cache in {cached:.3f} s", flush=True)
            if not args.no_sc:
                W = graphs.adjacency(indices, "symmetric")
                common = {"part": "sc", "n": len(X), "d": X.shape[1], "n_neighbors": args.k}
                rows.append({**common, **ours(X, y, W, args.k, args.n_init, args.seed)})
                print(f"ours: {rows[-1]['seconds']:.2f} s", flush=True)
                for solver in args.sklearn_solver:
                    job = {"n_neighbors": args.k, "n_init": args.n_init, "seed": args.seed}
                    job |= {"solver": solver, "threads": args.threads}
                    row = sklearn_spectral(y, W, indices, scratch, job, args.sklearn_timeout)
                    rows.append({**common, **row})
                    print(
                        f"scikit-learn ({solver}): {row.get('seconds', float('nan')):.2f} s, {row['status']}"
                    )
    finally:
        graphs.forget_in_memory()
        shutil.rmtree(scratch, ignore_errors=True)
    frame = pd.DataFrame(rows, columns=COLUMNS).assign(
        threads=args.threads, n_init=args.n_init, sklearn=sklearn.__version__
    )
    frame["n_init"] = frame["n_init"].astype("Int64").where(frame["part"] == "sc")  # k-means runs: SC only
    with pd.option_context("display.max_colwidth", 40, "display.width", 200):
        print(frame.drop(columns="what").to_string(index=False))
    atomic_write_text(out / CSV, frame.to_csv(index=False))
    return 0


if __name__ == "__main__":
    from clusterbench.scripting import run_script

    run_script(main)

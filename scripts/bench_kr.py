"""Speed and memory of Khatri-Rao k-means against scikit-learn's k-means (issue 31's targets).

Speed: the wall time of one iteration of Khatri-Rao k-means (sum and product, time- and
memory-efficient) against one Lloyd iteration of scikit-learn ``KMeans`` with h1·h2 centroids,
on blobs with n = 20000, d = 100 and k = h1·h2 clusters (h1 = h2 = 50 and 100), at 1 and 2
threads, in float32 and float64, all in one run. One iteration's time is the difference of two
fits capped at ``LOW`` and ``HIGH`` iterations (tol = 0, one restart, the same initial
centroids), divided by the difference, so set-up and the final assignment cancel.

How the comparison is kept fair:

- Both caps lie below the iteration at which scikit-learn stops by itself (on these data it
  finds no label change at its 5th iteration; a fit that stops skips its final assignment, so a
  stop inside the window made its iterations look ≈ 1.5x cheaper). Every fit is checked to have
  run exactly its cap; one that stopped early fails the benchmark instead of being divided out.
- The methods are timed interleaved in one process: each repeat fits every method in turn,
  untimed at the low cap and then timed at both caps (what the method before leaves behind, its
  BLAS's threads still spinning, say, falls on the untimed fit, not on the low cap alone), and
  each cap keeps its least time over the repeats, so a busy spell of the machine (2 cores,
  shared) falls on all methods alike rather than on one; ratios are taken within a (threads,
  dtype, k) group.
- ``--rounds R`` repeats the whole measurement, every group in turn each round, so that one
  group's rounds lie minutes apart and a busy spell longer than a round's repeats moves one
  round, not the result: the CSV gives each method's median over the rounds, the least and
  greatest round's ratio (``ratio_to_kmeans_low``, ``_high``) and the load average's range.
- Ours and scikit-learn get the same threads (torch and OpenMP/BLAS via threadpoolctl) and the
  same data, in the same dtype.

``--authors PATH`` also times the authors' NumPy implementation (maciap/KhatriRaoClustering,
``KathriRaokMeans/kr_k_means_time_efficient.py`` and ``..._space_efficient.py``, a checkout at
PATH; it is not a dependency and none of its code enters the project) on the same data and
initial protocentroids, sum aggregator, movement threshold −1 so that it runs its cap; in the
groups with k ≤ ``AUTHORS_LARGEST_K`` only (the issue's comparison is at k = 2500; their
iteration takes about 2 s there and grows with k, so at k = 10000 it would double the run).

Memory: peak resident memory of one fit (3 iterations) at k = 10000 (h1 = h2 = 100, n = 20000,
d = 100, float64), each fit in a fresh process that resets its peak once the data is loaded
(``clusterbench.figures.khatri_rao.fit_in_fresh_process``): the fit's own peak above the data,
against k-means with h1 + h2 = 200 and with h1·h2 centroids.

    python scripts/bench_kr.py                            # everything, 3 rounds: ~15 minutes
    python scripts/bench_kr.py --threads 1 --sides 50     # a part
    python scripts/bench_kr.py --threads 2 --merge --no-memory   # replace only the 2-thread rows
    python scripts/bench_kr.py --quick                    # n = 4000, k = 400: seconds; writes nothing
Writes results/benchmarks/kr_speed_cpu.csv and kr_memory_cpu.csv (``--out`` folder); with
``--merge`` the speed CSV keeps its rows of the (threads, dtype, k) groups not measured now, so
that the groups can be measured in parts (each group is measured side by side either way).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from clusterbench.figures.khatri_rao import fit_in_fresh_process, scaled_blobs
from clusterbench.results import atomic_write_text
from clusterbench.scripting import output_folder, positive_int, run_script
from clusterbench.timing import time_in_rounds

REPO = Path(__file__).resolve().parents[1]
# Iteration caps of the timed fits: scikit-learn stops by itself at iteration 5 on these data.
LOW, HIGH = 1, 4
DTYPES = {"float32": np.float32, "float64": np.float64}
AUTHORS_LARGEST_K = 2500


def khatri_rao(X, h, aggregator, memory_efficient, start) -> Callable[[int], int]:
    from clusterbench.methods import KhatriRaoKMeans

    def fit(iterations: int) -> int:
        model = KhatriRaoKMeans(
            h=list(h),
            aggregator=aggregator,
            init=start,
            max_iter=iterations,
            tol=0.0,
            memory_efficient=memory_efficient,
            device="cpu",
            n_threads=None,  # the threads main() set, as scikit-learn's side gets
        )
        return model.fit(X).n_iter_

    return fit


def lloyd(X, start) -> Callable[[int], int]:
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    def fit(iterations: int) -> int:
        model = KMeans(len(start), init=start, n_init=1, max_iter=iterations, tol=0.0, algorithm="lloyd")
        # A few of the h1·h2 centroids hold no point after the first iterations; scikit-learn warns
        # of it at every fit, which would bury the script's own lines.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return model.fit(X).n_iter_

    return fit


def product_distances(X, start) -> Callable[[int], int]:
    """The product's distance products alone, an iteration a pass: its materialised centroids
    and chunked ``baddbmm`` (as ``assign_explicit``, same row chunks), no minimum, no update.
    The same GEMM as Lloyd's distances: the floor of a product iteration in torch."""
    import torch

    from clusterbench.methods.kr_kmeans import CHUNK_ELEMENTS, aggregate

    points = torch.from_numpy(X)
    mean = points.mean(0)
    sets = [torch.from_numpy(theta)[None] for theta in start]

    def fit(iterations: int) -> int:
        for _ in range(iterations):
            centroids = aggregate(sets, "product") - mean
            squared = (centroids**2).sum(-1)[:, None, :]
            rows = max(1, CHUNK_ELEMENTS // centroids.shape[1])
            for lo in range(0, len(points), rows):
                chunk = (points[lo : lo + rows] - mean)[None]
                torch.baddbmm(squared, chunk, centroids.transpose(1, 2), alpha=-2)
        return iterations

    return fit


def authors(path: Path, X, start, space_efficient: bool) -> Callable[[int], int]:
    """The authors' KrKMeans (sum) from a checkout at ``path``, its output silenced."""
    if str(path) not in sys.path:  # the fits are built anew each round
        sys.path.insert(0, str(path))
    if space_efficient:
        from KathriRaokMeans.kr_k_means_space_efficient import KrKMeans
    else:
        from KathriRaokMeans.kr_k_means_time_efficient import KrKMeans

    def fit(iterations: int) -> int:
        model = KrKMeans(X, len(start[0]), len(start[1]), standardize=False, operator="sum")
        with contextlib.redirect_stdout(io.StringIO()):
            model.fit(iterations, th_movement=-1.0, init_type=[s.copy() for s in start])
        return iterations  # a movement threshold below 0 never stops it

    return fit


def group_fits(n, d, side, dtype, authors_path=None) -> dict[str, Callable[[int], int]]:
    """The timed fits of one (dtype, k = side²) group, each ``fit(iterations) -> iterations run``."""
    X = scaled_blobs(n, d, side * side).astype(DTYPES[dtype])
    rng = np.random.default_rng(0)
    protocentroids = [X[rng.choice(n, side, replace=False)] for _ in range(2)]
    centroids = X[rng.choice(n, side * side, replace=False)]
    fits = {"kmeans_sklearn_h1h2": lloyd(X, centroids)}
    for aggregator in ("sum", "product"):
        for memory_efficient in (False, True):
            mode = "memory_efficient" if memory_efficient else "time_efficient"
            fits[f"kr_kmeans_{aggregator}_{mode}"] = khatri_rao(
                X, (side, side), aggregator, memory_efficient, protocentroids
            )
    fits["kr_kmeans_product_distances_only"] = product_distances(X, protocentroids)
    if authors_path is not None and side * side <= AUTHORS_LARGEST_K:
        for space in (False, True):
            name = f"authors_numpy_sum_{'space' if space else 'time'}_efficient"
            fits[name] = authors(authors_path, X, protocentroids, space)
    return fits


def speed(n, d, sides, dtypes, threads_counts, rounds, repeats, authors_path=None) -> pd.DataFrame:
    """Every (threads, k, dtype) group timed ``rounds`` times, the groups in turn each round."""
    groups = {
        (threads, side, dtype): (
            f"{threads} thread(s), k = {side * side}, {dtype}",
            threads,
            partial(group_fits, n, d, side, dtype, authors_path),
        )
        for threads in threads_counts
        for side in sides
        for dtype in dtypes
    }
    timings = time_in_rounds(groups, rounds, LOW, HIGH, repeats, reference="kmeans_sklearn_h1h2")
    frames = [
        timed.frame({"ratio_to_kmeans": "kmeans_sklearn_h1h2"}).assign(
            n=n, d=d, k=side * side, h1=side, h2=side, threads=threads, dtype=dtype, caps=f"{LOW}-{HIGH}"
        )
        for (threads, side, dtype), timed in timings.items()
    ]
    return pd.concat(frames, ignore_index=True)


def memory(n: int, d: int, side: int, threads: int) -> pd.DataFrame:
    common = {"n": n, "d": d, "centers": side * side, "k": side * side, "sizes": [side, side]}
    common |= {"max_iter": 3, "tol": 0.0, "threads": threads, "memory_efficient": True}
    specs = {
        "kmeans_sklearn_h1+h2": {"method": "sklearn k-means", "k": 2 * side},
        "kmeans_sklearn_h1h2": {"method": "sklearn k-means"},
        "kr_kmeans_sum_time_efficient": {"method": "KR-k-means-+ (h1+h2)", "memory_efficient": False},
        "kr_kmeans_sum_memory_efficient": {"method": "KR-k-means-+ (h1+h2)"},
        "kr_kmeans_product_time_efficient": {"method": "KR-k-means-× (h1+h2)", "memory_efficient": False},
        "kr_kmeans_product_memory_efficient": {"method": "KR-k-means-× (h1+h2)"},
    }
    rows = [{"method": name, **fit_in_fresh_process({**common, **spec})} for name, spec in specs.items()]
    frame = pd.DataFrame(rows).drop(columns=["seconds", "n_iter"])
    frame["ratio_to_kmeans_h1+h2"] = frame["peak_mib"] / frame["peak_mib"].iloc[0]
    return frame.assign(n=n, d=d, k=side * side, h1=side, h2=side, threads=threads, dtype="float64")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--threads", type=positive_int, nargs="+", default=[1, 2], help="thread counts timed (default 1 2)"
    )
    parser.add_argument("--sides", type=positive_int, nargs="+", default=[50, 100], help="h1 = h2 (50 100)")
    parser.add_argument("--dtypes", nargs="+", choices=list(DTYPES), default=list(DTYPES))
    parser.add_argument("--repeats", type=positive_int, default=3, help="fits per cap in a round (3)")
    parser.add_argument("--rounds", type=positive_int, default=3, help="whole measurements (3)")
    parser.add_argument("--authors", type=Path, help="a checkout of maciap/KhatriRaoClustering to time too")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    parser.add_argument("--no-speed", action="store_true", help="skip the speed measurement")
    parser.add_argument("--merge", action="store_true", help="keep the speed CSV's other groups")
    parser.add_argument("--quick", action="store_true", help="n = 4000, k = 400 / 1600: writes nothing")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks")
    args = parser.parse_args()
    if not args.quick:
        output_folder(parser, args.out)
    n, sides, memory_side = (4000, [20], 40) if args.quick else (20000, args.sides, 100)
    written = []
    fast = None
    if not args.no_speed:
        fast = speed(n, 100, sides, args.dtypes, args.threads, args.rounds, args.repeats, args.authors)
        print(fast.to_string(index=False), flush=True)
    if fast is not None and args.merge and (args.out / "kr_speed_cpu.csv").exists():
        kept = pd.read_csv(args.out / "kr_speed_cpu.csv")
        group = ["threads", "dtype", "k"]
        measured = kept[group].apply(tuple, axis=1).isin(set(fast[group].apply(tuple, axis=1)))
        fast = pd.concat([kept[~measured], fast], ignore_index=True)
        fast = fast.sort_values(["threads", "k", "dtype"], kind="stable")  # a group's rows stay in order
    if fast is not None:
        written.append((fast, "kr_speed_cpu.csv"))
    if not args.no_memory:
        lean = memory(n, 100, memory_side, max(args.threads))
        print(lean.to_string(index=False))
        written.append((lean, "kr_memory_cpu.csv"))
    if args.quick:
        print("--quick: nothing written")
        return
    for frame, name in written:
        atomic_write_text(args.out / name, frame.to_csv(index=False, float_format="%.6g"))
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    run_script(main)

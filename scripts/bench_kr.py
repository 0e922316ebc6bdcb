"""Speed and memory of Khatri-Rao k-means against scikit-learn's k-means (issue targets).

Speed: the wall time of one iteration of Khatri-Rao k-means against one Lloyd iteration of
scikit-learn ``KMeans`` with h1·h2 centroids, on blobs with n = 20000, d = 100, k = 2500
(h1 = h2 = 50). One iteration's time is the difference of two fits that run a fixed number of
iterations (tol = 0, one restart, the same initial centroids), divided by the difference in
iterations, so the set-up and the final assignment cancel.

Memory: peak resident memory of one fit (3 iterations) at k = 10000 (h1 = h2 = 100, n = 20000,
d = 100), the memory-efficient mode against k-means with h1 + h2 = 200 centroids: each fit runs
in a fresh process that resets its peak (``/proc/self/clear_refs``) once the data is loaded
(``clusterbench.figures.khatri_rao.fit_in_fresh_process``), so the number is the fit's own peak
above the loaded data.

    python scripts/bench_kr.py                       # both, 2 threads, ~3 minutes on 2 cores
    python scripts/bench_kr.py --threads 1 --quick   # smaller sizes, seconds
Writes results/benchmarks/kr_speed_cpu.csv and kr_memory_cpu.csv (``--out`` folder).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from clusterbench.figures.khatri_rao import fit_in_fresh_process, scaled_blobs
from clusterbench.results import atomic_write_text
from clusterbench.scripting import output_folder, positive_int, run_script
from clusterbench.timing import seconds_per_iteration

REPO = Path(__file__).resolve().parents[1]


def khatri_rao(X, h, aggregator, memory_efficient, iterations, start):
    from clusterbench.methods import KhatriRaoKMeans

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
    return model.fit(X)


def lloyd(X, k, iterations, start):
    from sklearn.cluster import KMeans

    return KMeans(k, init=start, n_init=1, max_iter=iterations, tol=0.0, algorithm="lloyd").fit(X)


def speed(n: int, d: int, side: int, threads: int, repeats: int) -> pd.DataFrame:
    X = scaled_blobs(n, d, side * side)
    rng = np.random.default_rng(0)
    protocentroids = [X[rng.choice(n, side, replace=False)] for _ in range(2)]
    centroids = X[rng.choice(n, side * side, replace=False)]
    rows = [
        {
            "method": "kmeans_sklearn_h1h2",
            "seconds_per_iteration": seconds_per_iteration(
                lambda it: lloyd(X, side * side, it, centroids), 2, 7, repeats
            ),
        }
    ]
    for aggregator in ("sum", "product"):
        for memory_efficient in (False, True):
            seconds = seconds_per_iteration(
                lambda it, a=aggregator, m=memory_efficient: khatri_rao(
                    X, (side, side), a, m, it, protocentroids
                ),
                2,
                7,
                repeats,
            )
            mode = "memory_efficient" if memory_efficient else "time_efficient"
            rows.append({"method": f"kr_kmeans_{aggregator}_{mode}", "seconds_per_iteration": seconds})
    frame = pd.DataFrame(rows)
    frame["ratio_to_kmeans"] = frame["seconds_per_iteration"] / frame["seconds_per_iteration"].iloc[0]
    return frame.assign(n=n, d=d, k=side * side, h1=side, h2=side, threads=threads)


def memory(n: int, d: int, side: int, threads: int) -> pd.DataFrame:
    common = {"n": n, "d": d, "centers": side * side, "k": side * side, "sizes": [side, side]}
    common |= {"max_iter": 3, "tol": 0.0, "threads": threads, "memory_efficient": True}
    specs = {
        "kmeans_sklearn_h1+h2": {"method": "sklearn k-means", "k": 2 * side},
        "kmeans_sklearn_h1h2": {"method": "sklearn k-means"},
        "kr_kmeans_sum_memory_efficient": {"method": "KR-k-means-+ (h1+h2)"},
        "kr_kmeans_product_memory_efficient": {"method": "KR-k-means-× (h1+h2)"},
        "kr_kmeans_sum_time_efficient": {"method": "KR-k-means-+ (h1+h2)", "memory_efficient": False},
    }
    rows = [{"method": name, **fit_in_fresh_process({**common, **spec})} for name, spec in specs.items()]
    frame = pd.DataFrame(rows).drop(columns=["seconds", "n_iter"])
    frame["ratio_to_kmeans_h1+h2"] = frame["peak_mib"] / frame["peak_mib"].iloc[0]
    return frame.assign(n=n, d=d, k=side * side, h1=side, h2=side, threads=threads)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--threads", type=positive_int, default=2, help="torch and OpenMP threads (default 2)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="n = 4000, k = 400 / 1600: seconds; writes nothing"
    )
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks")
    args = parser.parse_args()
    if not args.quick:
        output_folder(parser, args.out)
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    n, speed_side, memory_side = (4000, 20, 40) if args.quick else (20000, 50, 100)
    with threadpool_limits(args.threads):
        fast = speed(n, 100, speed_side, args.threads, args.repeats)
    print(fast.to_string(index=False))
    lean = memory(n, 100, memory_side, args.threads)
    print(lean.to_string(index=False))
    if args.quick:
        print("--quick: nothing written")
        return
    for frame, name in ((fast, "kr_speed_cpu.csv"), (lean, "kr_memory_cpu.csv")):
        atomic_write_text(args.out / name, frame.to_csv(index=False, float_format="%.6g"))
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    run_script(main)

"""Which k-means draws did the Khatri-Rao paper's seed 42 make? Its k-means columns, two ways.

The authors' script fits scikit-learn's KMeans(init="random", n_init=20, random_state=42) with
h1 + h2 and with h1·h2 centroids. scikit-learn 1.3 changed how "random" picks its initial points
(``RandomState.choice`` with sample weights, where ``permutation`` was used before), so one seed
draws other restarts under older versions. This script fits both draws on the datasets of
experiment kr_table2 (its preprocessing) and prints their ARI beside Table 2's, to tell which
version the paper ran and whether a version explains a cell we miss at seed 42.

    python scripts/kr_kmeans_draws.py olivetti soybean_large cmu_faces
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.cluster import KMeans

from clusterbench.catalog import check_in_cache, dataset_spec, load_option
from clusterbench.data import load_dataset
from clusterbench.methods.kr_kmeans import protocentroid_budget
from clusterbench.metrics import ari
from clusterbench.scripting import positive_int, run_script


def drawn_before_1_3(X: np.ndarray, n_clusters: int, n_init: int, seed: int) -> np.ndarray:
    """KMeans(init="random") as scikit-learn 0.23 to 1.2 drew it: each restart starts from the
    first ``n_clusters`` points of a permutation from one RandomState; the least inertia is kept.
    (Lloyd's iterations; before 1.1 the default was Elkan's, which reaches the same fixed points
    up to rounding.)"""
    rng = np.random.RandomState(seed)
    fits = [
        KMeans(n_clusters, init=X[rng.permutation(len(X))[:n_clusters]], n_init=1).fit(X)
        for _ in range(n_init)
    ]
    return min(fits, key=lambda fit: fit.inertia_).labels_


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--n-init", type=positive_int, default=20)
    args = parser.parse_args(argv)
    check_in_cache(args.datasets)  # also names an unknown dataset (load_option), before any fit
    paper = load_option("table", "kr_table2").paper.ari
    print("ARI at seed", args.seed, "         h1 + h2: paper  >=1.3  <1.3   h1·h2: paper  >=1.3  <1.3")
    for name in args.datasets:
        data = load_dataset(dataset_spec(name, "kr_table2"))
        row = []
        for column, k in (
            ("kmeans_budget", protocentroid_budget(data.n_clusters)),
            ("kmeans", data.n_clusters),
        ):
            current = KMeans(k, init="random", n_init=args.n_init, random_state=args.seed).fit(data.X).labels_
            older = drawn_before_1_3(data.X, k, args.n_init, args.seed)
            cited = paper.get(name, {}).get(column)
            row.append(
                f"{cited if cited is not None else float('nan'):.3f}  {ari(data.y, current):.3f}  "
                f"{ari(data.y, older):.3f}"
            )
        print(f"{name:<28} {row[0]:>24}   {row[1]:>20}")


if __name__ == "__main__":
    run_script(main)

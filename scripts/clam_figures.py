"""Draw the figures of CLAM (Saha et al., ICML 2023) as PNG and PDF: Fig. 1, 4, 6, 7-10, 11, 12, 13.

    python scripts/clam_figures.py                      # all, full scale, into results/figures
    python scripts/clam_figures.py 4 11 12 --quick      # some, at the quick scale, into results/figures/quick
    make figures [QUICK=1]

The scales are ``clusterbench.figures.clam.FULL`` and ``QUICK`` (under a minute: coarser basin grids,
Fig. 6 on a 2000-image subsample for 10 epochs, short toy fits); each figure's title says the
scale it was drawn at. Fig. 7-10 fit nothing: they draw the paper-profile records of experiment
``clam_search`` (and k-means' from ``clam_baselines``) found under ``--results``, for the data sets
searched so far. The computation and drawing live in ``clusterbench.figures.clam``.
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

import torch

from clusterbench.errors import UserError
from clusterbench.figures import clam as figures
from clusterbench.figures import save_figure
from clusterbench.results import load_records
from clusterbench.scripting import output_folder, positive_int, run_script

FIGURES = ("1", "4", "6", "7", "8", "9", "10", "11", "12", "13")
FULL_OUT, QUICK_OUT = Path("results/figures"), Path("results/figures/quick")


def basins(number: str, scale: figures.Scale):
    prototypes, betas, what = {
        "4": (figures.THREE_PROTOTYPES, figures.FIG4_BETAS, "three prototypes"),
        "11": (figures.THREE_PROTOTYPES, figures.SWEEP_BETAS, "three prototypes"),
        "12": (figures.FIVE_PROTOTYPES, figures.SWEEP_BETAS, "five prototypes"),
    }[number]
    data = figures.basins_of_attraction(prototypes, betas, resolution=scale.basin_resolution)
    size = scale.basin_resolution
    title = (
        f"Fig. {number}: AM basins of attraction (colours, T = {data.steps}) vs Voronoi partition "
        f"(dashed)\n{what}, {size}x{size} grid of starting points"
    )
    return figures.draw_basins(data, title)


def evolution(scale: figures.Scale):
    data = figures.fashion_mnist_train(scale.fmnist_points)
    epochs = scale.evolution_epochs
    result = figures.prototype_evolution(data.X, data.n_clusters, epochs=epochs)
    print(f"  CLAM fit on {result.n_points} points: {result.fit_seconds:.0f} s")
    settings = figures.FMNIST_CLAM
    title = (
        f"Fig. 6: CLAM prototypes on Fashion-MNIST, one row per epoch: {result.n_points} standardized "
        f"train images, {max(epochs)} epochs, {result.restarts} restart\nβ {settings['beta']:g} (Table 6), "
        f"T {settings['steps']} (caption), lr {settings['lr']:g}, batch {settings['batch_size']}, "
        f"mask p {settings['mask_prob']:g} (Table 6), mask value {settings['mask_value']}"
    )
    return figures.draw_prototype_evolution(result, title)


def toy(number: str, scale: figures.Scale):
    name = {"1": "clam_outliers", "13": "clam_elongated"}[number]
    data = figures.toy_data(name)
    result = figures.toy_comparison(data, scale)
    for point in result.clam_grid:
        beta, lr, loss, score = point["beta"], point["lr"], point["loss"], point["nmi"]
        print(f"  CLAM beta {beta:g} lr {lr:g}: loss {loss:.5f} NMI {score:.3f}")
    clusters = f"{len(data.y)} points in {data.n_clusters} clusters"
    title = f"Fig. {number}: {data.name}, {clusters} ({scale.name} scale)"
    return figures.draw_toy_comparison(result, title)


@functools.cache
def search_records(results: Path):
    """The records Fig. 7-10 draw, read once for all four."""
    return load_records(results, "paper", ["clam_search", "clam_baselines"])


@functools.cache
def search_curves(number: str, results: Path):
    return figures.search_curves(search_records(results), figures.SEARCH_FIGURES[number])


def no_search_records(number: str, results: Path) -> str:
    return (
        f"Fig. {number}: no paper-profile clam_search records under {results}; run  clusterbench "
        f"run -m experiment=clam_search profile=paper results_dir={results}  (or pass --results)"
    )


def search(number: str, results: Path):
    """Fig. 7-10 from the records; without any, a note (when every figure is drawn)."""
    curves = search_curves(number, results)
    if not curves:
        print(f"  {no_search_records(number, results)}")
        return None
    label = figures.SEARCH_LABELS[figures.SEARCH_FIGURES[number]]
    title = (
        f"Fig. {number}: SC vs {label} (experiment clam_search, profile paper, seed 0)\n"
        f"one line per T, the other hyperparameters at Table 6's values (dotted: Table 6's {label})\n"
        "km = k-means (Table 1's cell); a hollow marker: the run left clusters empty"
    )
    return figures.draw_search_curves(curves, title)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "figures", nargs="*", help=f"figure numbers among {', '.join(FIGURES)} (default: all)"
    )
    parser.add_argument("--quick", action="store_true", help="small scale: minutes, for checking")
    parser.add_argument("--out", type=Path, help=f"output folder (default: {FULL_OUT}; --quick: {QUICK_OUT})")
    parser.add_argument(
        "--results", type=Path, default=Path("results"), help="results folder whose records Fig. 7-10 draw"
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="torch intra-op threads (default 1: the batches are small, more threads mostly contend)",
    )
    args = parser.parse_args()
    # A quick draw never lands over the committed full-scale figures unless sent there.
    args.out = args.out or (QUICK_OUT if args.quick else FULL_OUT)
    unknown = sorted(set(args.figures) - set(FIGURES))
    if unknown:
        parser.error(f"unknown figure {', '.join(unknown)}; choose among {', '.join(FIGURES)}")
    output_folder(parser, args.out)
    for number in args.figures:  # one asked for by name and not drawable fails before any work
        if number in figures.SEARCH_FIGURES and not search_curves(number, args.results):
            raise UserError(no_search_records(number, args.results))
    torch.set_num_threads(args.threads)
    scale = figures.QUICK if args.quick else figures.FULL
    for number in args.figures or FIGURES:
        start = time.perf_counter()
        if number in ("4", "11", "12"):
            figure = basins(number, scale)
        elif number == "6":
            figure = evolution(scale)
        elif number in figures.SEARCH_FIGURES:
            figure = search(number, args.results)
        else:
            figure = toy(number, scale)
        if figure is None:
            continue
        paths = save_figure(figure, args.out, f"clam_fig{number}")
        print(f"Fig. {number}: {time.perf_counter() - start:.0f} s -> {', '.join(map(str, paths))}")


if __name__ == "__main__":
    run_script(main)

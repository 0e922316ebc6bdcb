"""Draw the figures of Khatri-Rao clustering (Ciaperoni et al.) as PNG and PDF: Fig. 6, 7, 8, 9.

    python scripts/kr_figures.py                  # all, the paper's scale, into results/figures
    python scripts/kr_figures.py 6 9 --quick      # some, quick scale (≤ a minute), in results/figures/quick
    make figures [QUICK=1] [KR_FIGURES="6 9"]

The paper's scale: 20 restarts per fit, the full 5000-point BLOBS and CLASSIFICATION, Fig. 8's
sweeps up to k = 10000 on 20000 points (the longest part: an hour or more at one thread; each fit's
row goes to results/benchmarks/kr_fig8_cpu.csv as it ends, and a rerun resumes from it). Quick:
3 restarts, 1000-point subsamples, Fig. 8 at a twentieth of its sizes, two per sweep (several
minutes, most of it Fig. 8's 30 fits, each in a fresh process that imports torch and scikit-learn). Each
title says its scale; the computation and drawing live in ``clusterbench.figures.khatri_rao``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

from clusterbench.figures import khatri_rao as figures
from clusterbench.figures import save_figure
from clusterbench.scripting import output_folder, positive_int, run_script

FIGURES = ("6", "7", "8", "9")
FULL_OUT, QUICK_OUT = Path("results/figures"), Path("results/figures/quick")
# Fig. 8's fits, one row each, written as they end: a stopped sweep resumes from the file.
FIG8_MEASUREMENTS = Path("results/benchmarks/kr_fig8_cpu.csv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "figures", nargs="*", help=f"figure numbers among {', '.join(FIGURES)} (default: all)"
    )
    parser.add_argument("--quick", action="store_true", help="small scale, for checking: minutes")
    parser.add_argument("--out", type=Path, help=f"output folder (default: {FULL_OUT}; --quick: {QUICK_OUT})")
    parser.add_argument(
        "--threads", type=positive_int, default=1, help="torch and OpenMP threads per fit (default 1)"
    )
    parser.add_argument(
        "--measurements",
        type=Path,
        help=f"Fig. 8's per-fit CSV, resumed when present (default: {FIG8_MEASUREMENTS}; "
        "--quick: kr_fig8_quick.csv in the output folder)",
    )
    args = parser.parse_args()
    # A quick draw never lands over the committed full-scale figures unless sent there.
    args.out = args.out or (QUICK_OUT if args.quick else FULL_OUT)
    args.measurements = args.measurements or (
        args.out / "kr_fig8_quick.csv" if args.quick else FIG8_MEASUREMENTS
    )
    unknown = sorted(set(args.figures) - set(FIGURES))
    if unknown:
        parser.error(f"no figure {', '.join(unknown)}; choose among {', '.join(FIGURES)}")
    output_folder(parser, args.out)
    if "8" in (args.figures or FIGURES):
        output_folder(parser, args.measurements.parent)
    torch.set_num_threads(args.threads)
    with threadpool_limits(args.threads):  # scikit-learn's k-means in Fig. 6, 7 and 9
        draw(args)


def draw(args: argparse.Namespace) -> None:
    n_init, cap, scale = (3, 1000, 0.05) if args.quick else (figures.PAPER_RESTARTS, None, 1.0)
    label = "quick scale: 3 restarts, 1000-point subsamples" if args.quick else "20 restarts"
    for number in args.figures or FIGURES:
        start = time.perf_counter()
        if number == "6":
            curves = [
                figures.inertia_by_set_size(n, n_init=n_init, max_samples=cap)
                for n in ("blobs", "classification")
            ]
            figure = figures.draw_set_size_curves(
                curves, f"Fig. 6: inertia and purity against h1 = h2 ({label})"
            )
        elif number == "7":
            curves = [
                figures.inertia_by_number_of_sets(n, n_init=n_init, max_samples=cap)
                for n in ("blobs", "classification")
            ]
            figure = figures.draw_set_count_curves(curves, f"Fig. 7: inertia against p, 12 vectors ({label})")
        elif number == "8":
            result = figures.scalability(
                threads=args.threads,
                scale=scale,
                points=2 if args.quick else None,
                measurements=args.measurements,
            )
            what = "quick scale: sizes x 0.05, two per sweep" if args.quick else "paper sizes"
            figure = figures.draw_scalability(
                result, f"Fig. 8: one fit on blobs, {args.threads} thread(s) ({what})"
            )
        else:
            result = figures.colour_quantization(n_init=n_init)
            figure = figures.draw_quantization(result, f"Fig. 9: colour quantization of china.jpg ({label})")
            print("  inertia:", {name: round(value) for name, value in result.inertia.items()})
        paths = save_figure(figure, args.out, f"kr_fig{number}")
        print(f"Fig. {number}: {time.perf_counter() - start:.0f} s -> {', '.join(map(str, paths))}")


if __name__ == "__main__":
    run_script(main)

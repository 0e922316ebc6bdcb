"""Draw the figure of SR-K-means (Jabi et al., TPAMI 2019) as PNG and PDF: Fig. 1.

    python scripts/sr_figures.py                       # from the paper-profile records under results/
    python scripts/sr_figures.py --quick               # smoke-profile records, into results/figures/quick
    python scripts/sr_figures.py --results /tmp/r --profile smoke --out /tmp/fig
    make figures [QUICK=1] [SR_FIGURES="1"]

Fig. 1 fits nothing: it draws I(X, K) per outer iteration of MI-ADM and MI-D from the traces that
the runs of experiment ``sr_table3`` keep beside their records (``<hash>.trace.json``), on CMU-PIE
(the paper's FRGC is not available; the title says so; ``--dataset`` draws another). Without
such records it says which run makes them. The computation and drawing live in
``clusterbench.figures.sr_kmeans``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from clusterbench.errors import UserError
from clusterbench.figures import save_figure
from clusterbench.figures import sr_kmeans as figures
from clusterbench.results import load_records
from clusterbench.scripting import output_folder, run_script

FIGURES = ("1",)
FULL_OUT, QUICK_OUT = Path("results/figures"), Path("results/figures/quick")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", help=f"figures among {', '.join(FIGURES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="draw the smoke-profile records instead")
    parser.add_argument("--out", type=Path, help=f"output folder (default: {FULL_OUT}; --quick: {QUICK_OUT})")
    parser.add_argument("--results", type=Path, default=Path("results"), help="results folder of the records")
    parser.add_argument("--profile", help="profile of the records (default: paper; --quick: smoke)")
    parser.add_argument(
        "--dataset",
        default=figures.FIG1_DATASET,
        help=f"dataset of the runs (default: {figures.FIG1_DATASET})",
    )
    parser.add_argument(
        "--missing-ok",
        action="store_true",
        help="without records, say so and exit 0 (what `make figures` does when it draws every figure)",
    )
    args = parser.parse_args()
    args.out = args.out or (QUICK_OUT if args.quick else FULL_OUT)
    args.profile = args.profile or ("smoke" if args.quick else "paper")
    unknown = sorted(set(args.figures) - set(FIGURES))
    if unknown:
        parser.error(f"no figure {', '.join(unknown)}; choose among {', '.join(FIGURES)}")
    output_folder(parser, args.out)
    start = time.perf_counter()
    records = load_records(args.results, args.profile, [figures.FIG1_EXPERIMENT])
    curves = figures.mutual_information_curves(records, args.results, args.dataset) if len(records) else None
    if curves is None:
        experiment, dataset = figures.FIG1_EXPERIMENT, args.dataset
        message = (
            f"Fig. 1: no {args.profile}-profile {experiment} run on {dataset} with a trace under "
            f"{args.results}; run clusterbench run -m experiment={experiment} dataset={dataset} "
            f"profile={args.profile} results_dir={args.results}"
        )
        if args.missing_ok:
            print(message)
            return
        raise UserError(message)
    name = figures.DATASET_LABELS.get(args.dataset, args.dataset)
    title = (
        f"Fig. 1: I(X, K) per iteration of MI-ADM and MI-D on {name} (the paper's: FRGC, not held)\n"
        f"experiment {figures.FIG1_EXPERIMENT}, profile {args.profile}, seed 0"
    )
    paths = save_figure(figures.draw_mutual_information(curves, title), args.out, "sr_fig1")
    for label, values in curves.curves.items():
        print(f"  {label}: {len(values)} iterations, I(X, K) {values[0]:.4f} -> {values[-1]:.4f}")
    print(f"Fig. 1: {time.perf_counter() - start:.0f} s -> {', '.join(map(str, paths))}")


if __name__ == "__main__":
    run_script(main)

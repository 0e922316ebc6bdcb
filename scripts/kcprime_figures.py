"""Draw the figures of the k-means-C′ paper (Lücke & Forster) as PNG and PDF: Fig. 1 and S2.

    python scripts/kcprime_figures.py                 # the paper's scale, into results/figures
    python scripts/kcprime_figures.py --quick         # 10 runs per C′ (seconds), into results/figures/quick
    make figures [QUICK=1] [KC_FIGURES="1 S2"]

The paper's scale: 100 runs per C′ ∈ {1, 2, 3, 5, 10, 25} on both BIRCH data sets (a few
minutes on 2 cores). Fig. 1 G/H (KDD-Cup 2004 protein homology) is drawn only when
``kdd_protein.npz`` is in the data cache; otherwise the script says so and goes on. The
computation and drawing live in ``clusterbench.figures.kcprime``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from clusterbench.data.sources import searched_folders
from clusterbench.figures import kcprime as figures
from clusterbench.figures import save_figure
from clusterbench.scripting import output_folder, run_script

FIGURES = ("1", "S2")
FULL_OUT, QUICK_OUT = Path("results/figures"), Path("results/figures/quick")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", help=f"figures among {', '.join(FIGURES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="10 runs per C′ instead of 100")
    parser.add_argument("--out", type=Path, help=f"output folder (default: {FULL_OUT}; --quick: {QUICK_OUT})")
    args = parser.parse_args()
    # A quick draw never lands over the committed full-scale figures unless sent there.
    args.out = args.out or (QUICK_OUT if args.quick else FULL_OUT)
    unknown = sorted(set(args.figures) - set(FIGURES))
    if unknown:
        parser.error(f"no figure {', '.join(unknown)}; choose among {', '.join(FIGURES)}")
    output_folder(parser, args.out)
    torch.set_num_threads(1)  # many small fits: one thread each is fastest
    runs = 10 if args.quick else figures.PAPER_RUNS
    scale = f"{runs} runs per C′" + (", quick scale" if args.quick else "")
    start = time.perf_counter()
    sweeps, data = figures.birch_sweeps(runs)
    print(f"BIRCH sweeps: {time.perf_counter() - start:.0f} s")
    wanted = args.figures or FIGURES
    if "1" in wanted:
        figure = figures.draw_fig1(sweeps, data, f"Fig. 1 A-F, I-K / S3: k-means-C′ on BIRCH ({scale})")
        print("Fig. 1 ->", ", ".join(map(str, save_figure(figure, args.out, "kc_fig1"))))
        if figures.kdd_available():
            kdd_runs = 3 if args.quick else figures.KDD_RUNS
            figure = figures.draw_kdd(
                figures.kdd_curves(runs=kdd_runs),
                f"Fig. 1 G/H: KDD protein homology ({kdd_runs} runs per C′)",
            )
            print("Fig. 1 G/H ->", ", ".join(map(str, save_figure(figure, args.out, "kc_fig1_kdd"))))
        else:
            print(
                f"Fig. 1 G/H skipped: kdd_protein.npz is in no data folder ({searched_folders()}); "
                "see conf/dataset/kdd_protein.yaml for where to get it"
            )
    if "S2" in wanted:
        figure = figures.draw_fig_s2(
            sweeps, f"Fig. S2 (and 1 C/F): k-means-C′ at convergence against C′ ({scale})"
        )
        print("Fig. S2 ->", ", ".join(map(str, save_figure(figure, args.out, "kc_figS2"))))
    for name, sweep in sweeps.items():
        for c_prime, scores in ((c, figures.final_scores(r)) for c, r in sweep.items()):
            text = "  ".join(f"{k} {m:.4g}/{b:.4g}" for k, (m, b) in scores.items())
            print(f"  {name} C′={c_prime}: {text}  (mean/best)")


if __name__ == "__main__":
    run_script(main)

"""The figure of "Deep clustering: on the link between discriminative models and K-means" (Jabi et al.).

- Fig. 1: the mutual information I(X, K) (eq. 11) at each outer iteration of MI-ADM and MI-D.
  The paper draws it on FRGC, which we do not hold; ours is drawn on CMU-PIE (the other face set
  of its Table 3 on which MI-ADM and MI-D differ), and says so in its title.

Nothing is fitted here: the curves are the traces that the runs of experiment ``sr_table3`` keep
beside their records (``<hash>.trace.json``, the estimators' ``mutual_information_``: one value
before phase 2's first pass, then one after each update; see docs/sr_kmeans.md), so the figure
shows exactly the runs whose NMI and ACC Table 3 prints.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from clusterbench.results import read_trace, record_path
from clusterbench.runs import wide_runs

FIG1_EXPERIMENT = "sr_table3"
FIG1_DATASET = "cmu_pie"  # the paper's FRGC is not available
TRACE = "mutual_information_"
# Table 3's columns: (label, method, hyperparameters the run must have), as conf/table/sr_table3.yaml.
FIG1_METHODS = (("MI-ADM", "mi_adm", {"targets": "mi"}), ("MI-D", "mi_d", {}))
COLOURS = {"MI-ADM": "#1565c0", "MI-D": "#c62828"}
# The tables' row labels (conf/table/sr_table3.yaml).
DATASET_LABELS = {
    "usps_11000": "USPS",
    "mnist_test": "MNIST-test",
    "mnist": "MNIST-full",
    "cmu_pie": "CMU-PIE",
}


@dataclass
class MutualInformationCurves:
    """I(X, K) per outer iteration of each method's run on one dataset (Fig. 1)."""

    dataset: str
    n_clusters: int | None  # K, from the runs' hyperparameters: I(X, K) is at most log K
    curves: dict[str, np.ndarray] = field(default_factory=dict)  # label -> I(X, K) per iteration
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # label -> {nmi, acc} of the run

    @property
    def bound(self) -> float:
        """log K, the largest I(X, K) can be (a balanced one-hot posterior)."""
        return math.log(self.n_clusters) if self.n_clusters else math.nan


def mutual_information_curves(
    records: pd.DataFrame,
    results_dir: Path,
    dataset: str = FIG1_DATASET,
    experiment: str = FIG1_EXPERIMENT,
    seed: int = 0,
) -> MutualInformationCurves | None:
    """The I(X, K) traces of MI-ADM's and MI-D's runs of ``experiment`` on ``dataset`` at ``seed``,
    read from the trace files beside ``records`` (tidy records under ``results_dir``); None when
    neither has a successful run with a trace there. A method without one is left out."""
    runs = wide_runs(records)
    runs = runs[
        (runs["status"] == "ok")
        & (runs["experiment"] == experiment)
        & (runs["dataset"] == dataset)
        & (runs["seed"].astype(int) == seed)
    ]
    result = MutualInformationCurves(dataset, None)
    for label, method, wanted in FIG1_METHODS:
        mine = runs[runs["method"] == method]
        for _, run in mine.iterrows():
            params = json.loads(run["params"])
            if any(params.get(key) != value for key, value in wanted.items()):
                continue
            path = record_path(results_dir, run["profile"], experiment, dataset, method, run["config_hash"])
            trace = read_trace(path)
            if trace is None or TRACE not in trace:
                continue
            result.curves[label] = trace[TRACE]
            result.scores[label] = {m: float(run[m]) for m in ("nmi", "acc") if m in run and pd.notna(run[m])}
            result.n_clusters = params.get("n_clusters", result.n_clusters)
            break  # one run per method: the first, as runs are ordered (one per seed in sr_table3)
    return result if result.curves else None


def draw_mutual_information(curves: MutualInformationCurves, title: str) -> Figure:
    """I(X, K) against the outer iteration, one line per method, log K as a dotted line (Fig. 1)."""
    figure = Figure(figsize=(6.4, 4.2), layout="constrained")
    axes = figure.add_subplot()
    for label, values in curves.curves.items():
        scores = curves.scores.get(label, {})
        shown = ", ".join(f"{name.upper()} {value:.3f}" for name, value in scores.items())
        axes.plot(
            np.arange(len(values)),
            values,
            marker="." if len(values) <= 60 else None,
            color=COLOURS.get(label),
            label=f"{label} ({shown})" if shown else label,
        )
    if math.isfinite(curves.bound):
        axes.axhline(curves.bound, color="#757575", linestyle=":", label=f"log K (K = {curves.n_clusters})")
    axes.set_xlabel("outer iteration (0: before phase 2's first pass)")
    axes.set_ylabel("I(X, K) (nats)")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=8)
    return figure

"""A table's cells: one row per (dataset, metric, column), ours beside the paper's.

Each cell reads its column's runs on its dataset, chooses its value by the table's protocol
(:mod:`clusterbench.tables.protocols`) and sets the paper's value and the delta beside it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import ListConfig, OmegaConf

from clusterbench.errors import UserError
from clusterbench.metrics import agreement
from clusterbench.results import read_labels, record_path
from clusterbench.tables.protocols import (
    PROTOCOLS,
    _grid_point,
    _selected_run,
    column_protocol,
    n_scored,
    select,
)
from clusterbench.tables.spec import per_metric

# Every protocol kind: those that choose among one cell's runs, and agreement, which chooses two.
KINDS = (*PROTOCOLS, "agreement")
AGREEMENT_METRICS = ("nmi", "ari")


def compute_cells(spec, runs: pd.DataFrame, results_dir: Path | None = None) -> pd.DataFrame:
    """The long frame of cells: one row per (dataset, metric, column).

    ``results_dir`` holds the records' labels files; only protocol ``agreement`` reads them.
    """
    kind = spec.protocol.kind
    if kind not in KINDS:
        raise UserError(f"unknown table protocol '{kind}'; choose one of {', '.join(KINDS)}")
    if kind == "agreement" and results_dir is None:
        raise ValueError("protocol agreement reads the runs' labels: pass results_dir")
    if kind == "best_of" and spec.get("ratio_to"):
        raise UserError(
            f"table {spec.name}: ratio_to cannot be combined with protocol best_of (reach is raw)"
        )
    rows = []
    table_seeds = spec.get("seeds")
    for dataset in spec.rows:
        # Each column's runs on the dataset, read once for all the metrics.
        column_runs = {
            column: _column_runs(runs, dataset, col, table_seeds) for column, col in spec.columns.items()
        }
        if kind == "agreement":
            reference_runs, _ = _column_runs(runs, dataset, spec.protocol.reference, table_seeds)
        for metric in spec.metrics:
            for column, col in spec.columns.items():
                cell_runs, n_seeds_named = column_runs[column]
                protocol = column_protocol(spec.protocol, col)
                reported = OmegaConf.select(spec, f"paper.{metric}.{dataset}.{column}")
                paper, paper_best = _paper_values(reported)
                if kind == "agreement":
                    chosen = agreement_cell(cell_runs, reference_runs, protocol, metric, results_dir)
                else:
                    better = per_metric(spec, "better", metric, "max")
                    chosen = select(cell_runs[cell_runs["status"] == "ok"], protocol, metric, paper, better)
                ours = chosen.get("ours", math.nan)
                # A best-run column in a mean_best table (DBSCAN at its tuned parameters): its one
                # selected run is both its mean and its best, as the k-means-C′ paper prints it.
                ours_best = chosen.get("ours_best", ours if kind == "mean_best" else math.nan)
                rows.append(
                    {
                        "table": spec.name,
                        "dataset": dataset,
                        "metric": metric,
                        "column": column,
                        "ours": ours,
                        "ours_std": chosen.get("ours_std", math.nan),
                        "ours_best": ours_best,
                        "paper": paper,
                        "paper_best": paper_best,
                        "delta": ours - paper,
                        "delta_best": ours_best - paper_best,
                        "status": chosen.get("status", "ok") if chosen else _why_empty(cell_runs),
                        "n_runs": len(cell_runs),
                        "n_ok": (
                            int((cell_runs["status"] == "ok").sum())
                            if kind == "agreement"
                            else n_scored(cell_runs, protocol, metric)
                        ),
                        "n_seeds": chosen.get("n_seeds", math.nan),
                        "n_seeds_named": n_seeds_named,
                        "selected_params": chosen.get("selected", ""),
                        "n_found": chosen.get("n_found", math.nan),
                        "n_clusters": chosen.get("n_clusters", math.nan),
                    }
                    | ({"reach": chosen.get("reach", math.nan)} if kind == "best_of" else {})
                )
    cells = pd.DataFrame(rows)
    # A row we do not hold, or one left for other hardware: said so, with why, until it has runs.
    for key, status in (("unavailable", "not available"), ("not_run", "not run")):
        for dataset, why in (spec.get(key) or {}).items():
            missing = (cells["dataset"] == dataset) & (cells["n_runs"] == 0)
            cells.loc[missing, "status"] = status
            cells.loc[missing, "selected_params"] = why
    return _as_ratios(cells, spec.get("ratio_to") or {})


def _column_runs(runs: pd.DataFrame, dataset: str, column, table_seeds) -> tuple[pd.DataFrame, float]:
    """The runs of one table column on ``dataset``, whatever their status, and how many seeds the
    column names (NaN: every seed). The runs are of its method and variant, of the column's own
    ``seeds`` or else the table's (a method that ignores the seed runs at one), and, when the
    column gives ``params``, of those hyperparameter values."""
    seeds = column.get("seeds")
    if seeds is None:  # none of its own, or null (an extending table's way to drop its base's)
        seeds = table_seeds
    n_seeds_named = math.nan if seeds is None else len(set(seeds))
    if column.get("method") is None:  # a column of the paper's only (a method not reimplemented)
        return runs.iloc[:0], n_seeds_named
    mask = (runs["dataset"] == dataset) & (runs["method"] == column.method)
    mask &= runs["variant"] == column.get("variant", "default")
    wanted = column.get("params")
    if wanted:
        wanted = OmegaConf.to_container(wanted)
        mask &= runs["params"].map(lambda p: all(json.loads(p).get(k) == v for k, v in wanted.items()))
    if seeds is not None:
        mask &= runs["seed"].astype(int).isin(list(seeds))
    return runs[mask], n_seeds_named


def agreement_cell(
    cell_runs: pd.DataFrame, reference_runs: pd.DataFrame, protocol, metric: str, results_dir: Path
) -> dict:
    """``metric`` between the partitions of the selected run of the cell and of the reference.

    Returns ours and selected, or ``{"status": why}`` when there is nothing to compare.
    """
    if metric not in AGREEMENT_METRICS:
        raise UserError(
            f"protocol agreement compares partitions by {' or '.join(AGREEMENT_METRICS)}, not {metric}"
        )
    chosen = _selected_run(cell_runs, protocol, metric)
    reference = _selected_run(reference_runs, column_protocol(protocol, protocol.reference), metric)
    if chosen is None:
        return {"status": _why_empty(cell_runs)}
    if reference is None:
        return {"status": f"reference {_why_empty(reference_runs)}"}
    labels, reference_labels = _labels_of(chosen, results_dir), _labels_of(reference, results_dir)
    if labels is None or reference_labels is None:
        return {"status": "labels missing"}
    if len(labels) != len(reference_labels):
        return {"status": "different data"}  # e.g. one experiment subsampled the dataset
    values = agreement(reference_labels, labels, average_method=protocol.get("average_method", "arithmetic"))
    selected = _grid_point(chosen["params"], cell_runs["params"])
    reference_point = _grid_point(reference["params"], reference_runs["params"])
    if reference_point:
        selected = f"{selected}; reference: {reference_point}".lstrip("; ")
    return {"ours": values[metric], "selected": selected}


def _labels_of(run: pd.Series, results_dir: Path) -> np.ndarray | None:
    path = record_path(
        results_dir, run["profile"], run["experiment"], run["dataset"], run["method"], run["config_hash"]
    )
    return read_labels(path)


def _paper_values(value) -> tuple[float, float]:
    """(paper, paper_best) from a spec's paper entry: a number, or [mean, best] for mean_best."""
    if value is None:
        return math.nan, math.nan
    if isinstance(value, ListConfig):
        mean, best = (math.nan if v is None else float(v) for v in value)
        return mean, best
    return float(value), math.nan


def _as_ratios(cells: pd.DataFrame, ratio_to: Mapping) -> pd.DataFrame:
    """Divide each ``metric`` of ``ratio_to`` by the named column's value on the same dataset.

    The Khatri-Rao paper's Table 2 prints inertia and parameter count relative to k-means with
    h1·h2 centroids; the paper's values are such ratios already, ours are made so here.
    """
    cells = cells.copy()
    for metric, reference in ratio_to.items():
        rows = cells["metric"] == metric
        base = cells[rows & (cells["column"] == reference)].set_index("dataset")
        divisors = cells.loc[rows, "dataset"].map(base["ours"])
        orphaned = rows & cells["ours"].notna() & cells["dataset"].map(base["ours"]).isna()
        for value in ("ours", "ours_std", "ours_best"):
            divisor = divisors if value != "ours_best" else cells.loc[rows, "dataset"].map(base[value])
            cells.loc[rows, value] = cells.loc[rows, value] / divisor
        cells.loc[orphaned, "status"] = f"no {reference} value"
        cells.loc[rows, "delta"] = cells.loc[rows, "ours"] - cells.loc[rows, "paper"]
        cells.loc[rows, "delta_best"] = cells.loc[rows, "ours_best"] - cells.loc[rows, "paper_best"]
    return cells


def _why_empty(cell_runs: pd.DataFrame) -> str:
    """Why a cell has no value: ``missing`` (no runs), or the status its runs ended with."""
    statuses = set(cell_runs["status"]) - {"ok"}
    if cell_runs.empty:
        return "missing"
    if not statuses:
        return "no value"  # every run finished, none with a value (e.g. SC of one cluster)
    return "/".join(sorted(statuses))  # failed, skipped, timeout, or a mix such as skipped/timeout

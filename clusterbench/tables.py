"""Aggregate tidy records into a paper's table, our value beside the paper's.

A table spec (``conf/table/<name>.yaml``) names the experiments whose records it reads, the
selection protocol, the rows (datasets) and columns (methods), optional relative-gain and
win/loss rows, and the paper's reported values as data. ``build_table`` writes Markdown, LaTeX
and a long CSV with ``ours``, ``paper`` and ``delta`` for every cell.

Protocols (``protocol.kind``), applied per (dataset, column) over that cell's runs:

* ``best``: the run with the best ``protocol.by`` (e.g. best SC over a hyperparameter grid,
  or least inertia over restarts with ``mode: min``); its ``metric`` is reported.
* ``best_mean``: runs grouped by hyperparameters (seed excluded); the group with the best mean
  ``by`` is kept and its ``metric`` reported as mean ± std over seeds.
* ``mean_std``: mean ± std of ``metric`` over all runs.
* ``mean_best``: mean of ``metric`` over all runs, and its value at the best run by ``by``.

``protocol.require_all_clusters: true`` first drops runs whose labeling has fewer distinct
clusters than the ``n_clusters`` asked for (metric ``n_found``): spectral clustering on a
near-disconnected affinity can merge all but a few points, and such a labeling's SC is no
comparison with a k-cluster one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from clusterbench.catalog import load_option
from clusterbench.errors import UserError
from clusterbench.results import atomic_write_text, load_records

PROTOCOLS = ("best", "best_mean", "mean_std", "mean_best")


@dataclass
class TableOutputs:
    cells: pd.DataFrame
    markdown: str
    paths: list[Path]


def _runs(records: pd.DataFrame) -> pd.DataFrame:
    """One row per run (config hash) with a column per metric, plus its status and params."""
    keys = ["config_hash", "dataset", "method", "variant", "seed", "params", "status", "error"]
    runs = records[keys].drop_duplicates("config_hash").set_index("config_hash")
    ok = records[records["status"] == "ok"]
    if not ok.empty:
        wide = ok.pivot_table(index="config_hash", columns="metric", values="value", aggfunc="first")
        runs = runs.join(wide)
    return runs.reset_index()


def _params_without_seed(params: str) -> str:
    values = json.loads(params)
    values.pop("random_state", None)
    return json.dumps(values, sort_keys=True)


def _grid_point(params: str, cell_params: pd.Series) -> str:
    """The hyperparameters that vary across a cell's runs (its grid), as ``k=v`` text."""
    chosen = json.loads(params)
    others = [json.loads(p) for p in cell_params.unique()]
    varying = [k for k in chosen if k != "random_state" and any(o.get(k) != chosen[k] for o in others)]
    return " ".join(f"{k}={chosen[k]}" for k in sorted(varying))


def select(runs: pd.DataFrame, protocol, metric: str) -> dict:
    """Apply ``protocol`` to one cell's successful runs; returns ours, ours_std, ours_best, selected."""
    by = protocol.get("by", metric)
    ascending = protocol.get("mode", "max") == "min"
    kind = protocol.kind
    if kind not in PROTOCOLS:
        raise UserError(f"unknown table protocol '{kind}'; choose one of {', '.join(PROTOCOLS)}")
    if by not in runs or metric not in runs:
        return {}
    grid = runs["params"]  # the grid point is named against every run of the cell
    if protocol.get("require_all_clusters", False):
        if "n_found" not in runs:
            raise UserError("protocol.require_all_clusters needs the n_found metric in the records")
        runs = runs[runs["n_found"] == runs["params"].map(lambda p: json.loads(p).get("n_clusters"))]
    valid = runs.dropna(subset=[by, metric])
    if valid.empty:
        return {}
    best = valid.sort_values(by, ascending=ascending, kind="stable").iloc[0]
    if kind == "best":
        return {"ours": best[metric], "selected": _grid_point(best["params"], grid)}
    if kind == "mean_std":
        return {"ours": valid[metric].mean(), "ours_std": valid[metric].std(ddof=0)}
    if kind == "mean_best":
        selected = _grid_point(best["params"], grid)
        return {"ours": valid[metric].mean(), "ours_best": best[metric], "selected": selected}
    groups = valid.assign(grid_point=valid["params"].map(_params_without_seed)).groupby("grid_point")
    means = groups[by].mean().sort_values(ascending=ascending, kind="stable")
    chosen = groups.get_group(means.index[0])
    selected = _grid_point(chosen["params"].iloc[0], grid)
    return {"ours": chosen[metric].mean(), "ours_std": chosen[metric].std(ddof=0), "selected": selected}


def compute_cells(spec, runs: pd.DataFrame) -> pd.DataFrame:
    """The long frame of cells: one row per (dataset, metric, column)."""
    rows = []
    for dataset in spec.rows:
        for metric in spec.metrics:
            for column, col in spec.columns.items():
                mask = (runs["dataset"] == dataset) & (runs["method"] == col.method)
                cell_runs = runs[mask & (runs["variant"] == col.get("variant", "default"))]
                chosen = select(cell_runs[cell_runs["status"] == "ok"], spec.protocol, metric)
                paper = OmegaConf.select(spec, f"paper.{metric}.{dataset}.{column}")
                paper = math.nan if paper is None else float(paper)
                ours = chosen.get("ours", math.nan)
                rows.append(
                    {
                        "table": spec.name,
                        "dataset": dataset,
                        "metric": metric,
                        "column": column,
                        "ours": ours,
                        "ours_std": chosen.get("ours_std", math.nan),
                        "ours_best": chosen.get("ours_best", math.nan),
                        "paper": paper,
                        "delta": ours - paper,
                        "status": "ok" if chosen else _why_empty(cell_runs),
                        "n_runs": len(cell_runs),
                        "selected_params": chosen.get("selected", ""),
                    }
                )
    return pd.DataFrame(rows)


def _why_empty(cell_runs: pd.DataFrame) -> str:
    """Why a cell has no value: ``missing`` (no runs), or the status its runs ended with."""
    statuses = set(cell_runs["status"]) - {"ok"}
    if cell_runs.empty:
        return "missing"
    if len(statuses) == 1:
        return statuses.pop()  # skipped, timeout or failed
    return "failed" if "failed" in statuses else "no value"


def relative_gain(a: float, b: float) -> float:
    """CLAM's gain of ``a`` over baseline ``b``: (a - b) / b × 100%."""
    return (a - b) / abs(b) * 100.0 if b and not (math.isnan(a) or math.isnan(b)) else math.nan


def win_loss(spec, cells: pd.DataFrame, value: str) -> dict[str, dict[str, str]]:
    """Per W/L row (a column key) and metric: 'wins/losses' of that column against each other column.

    Values are compared as the table prints them (rounded to ``digits``); ties count neither.
    """
    digits = spec.get("digits", 3)
    rows = {}
    for reference in spec.get("win_loss", []):
        for metric in spec.metrics:
            frame = cells[cells["metric"] == metric].pivot(index="dataset", columns="column", values=value)
            line = {}
            for column in spec.columns:
                if column == reference:
                    continue
                a, b = frame[reference].round(digits), frame[column].round(digits)
                both = a.notna() & b.notna()
                if both.any():
                    line[column] = f"{int((a[both] > b[both]).sum())}/{int((a[both] < b[both]).sum())}"
            rows[(reference, metric)] = line
    return rows


def _format(value: float, digits: int, gain: float, bold: bool, latex: bool, std: float = math.nan) -> str:
    if math.isnan(value):
        return ""
    text = f"{value:.{digits}f}"
    if not math.isnan(std):
        text += f" ± {std:.{digits}f}"
    if bold:
        text = f"\\textbf{{{text}}}" if latex else f"**{text}**"
    if not math.isnan(gain):
        arrows = ("$\\blacktriangle$", "$\\blacktriangledown$", "\\%") if latex else ("▲", "▼", "%")
        text += f" {arrows[0] if gain >= 0 else arrows[1]}{abs(gain):.0f}{arrows[2]}"
    return text


def render(spec, cells: pd.DataFrame, latex: bool) -> pd.DataFrame:
    """The display frame: a row per dataset (x metric), 'ours' beside 'paper' for every column."""
    digits = spec.get("digits", 3)
    reference = OmegaConf.select(spec, "gain.reference")
    multi_metric = len(spec.metrics) > 1
    lines = []
    for (dataset, metric), group in cells.groupby(["dataset", "metric"], sort=False):
        cell = group.set_index("column")
        line = {"Dataset": spec.rows[dataset]} | ({"Metric": metric.upper()} if multi_metric else {})
        for side in ("ours", "paper"):
            values = cell[side]
            best = round(_best(values, spec.get("better", "max")), digits)
            for column in spec.columns:
                gain = relative_gain(values[reference], values[column]) if reference else math.nan
                std = cell.loc[column, "ours_std"] if side == "ours" else math.nan
                text = _format(
                    values[column],
                    digits,
                    math.nan if column == reference else gain,
                    round(values[column], digits) == best,
                    latex,
                    std,
                )
                if not text and side == "ours" and cell.loc[column, "status"] != "missing":
                    text = cell.loc[column, "status"]
                line[(column, side)] = text or "—"
        lines.append(line)
    for (reference_column, metric), results in _wl_rows(spec, cells).items():
        label = f"{spec.columns[reference_column].label} W/L"
        line = {"Dataset": label + (f" ({metric.upper()})" if multi_metric else "")}
        line |= {"Metric": ""} if multi_metric else {}
        for side in ("ours", "paper"):
            line |= {(column, side): results[side].get(column, "—") for column in spec.columns}
        lines.append(line)
    frame = pd.DataFrame(lines)
    # Interleave so that each of our columns stands beside the paper's.
    ordered = [key for key in frame.columns if not isinstance(key, tuple)]
    ordered += [(column, side) for column in spec.columns for side in ("ours", "paper")]
    frame = frame[ordered]
    frame.columns = [
        key if not isinstance(key, tuple) else f"{spec.columns[key[0]].label} ({key[1]})" for key in ordered
    ]
    return frame


def _best(values: pd.Series, better: str) -> float:
    if values.isna().all():
        return math.nan
    return values.min() if better == "min" else values.max()


def _wl_rows(spec, cells: pd.DataFrame) -> dict:
    ours, paper = win_loss(spec, cells, "ours"), win_loss(spec, cells, "paper")
    return {key: {"ours": ours[key], "paper": paper[key]} for key in ours}


def build_table(name: str, results_dir: Path, profile: str, skip_empty: bool = False) -> TableOutputs | None:
    """Build table ``name`` from the records of ``profile`` into ``<results_dir>/tables/<profile>/``.

    Returns None (with ``skip_empty``) when none of the table's experiments has records.
    """
    spec = load_option("table", name)
    spec.name = name
    records = load_records(results_dir, profile, list(spec.experiments))
    if records.empty and skip_empty:
        return None
    return write_table(spec, records, Path(results_dir) / "tables" / profile, profile)


def write_table(spec, records: pd.DataFrame, out: Path, profile: str) -> TableOutputs:
    """Compute the cells of ``spec`` from ``records``; write <name>.md, .tex and .csv into ``out``."""
    cells = compute_cells(spec, _runs(records))
    sources = ", ".join(spec.experiments)
    header = f"### {spec.title}\n\nProfile `{profile}`; records of {sources}. {spec.note}\n\n"
    markdown = header + render(spec, cells, latex=False).to_markdown(index=False, disable_numparse=True)
    latex = render(spec, cells, latex=True).to_latex(index=False, escape=False, caption=spec.title)
    table_csv = cells.to_csv(index=False, float_format=lambda v: f"{v:.6g}" if np.isfinite(v) else "")
    paths = [out / f"{spec.name}.md", out / f"{spec.name}.tex", out / f"{spec.name}.csv"]
    for path, text in zip(paths, (markdown + "\n", latex, table_csv), strict=True):
        atomic_write_text(path, text)
    return TableOutputs(cells=cells, markdown=markdown, paths=paths)

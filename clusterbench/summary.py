"""Summaries of one's own runs: per dataset × method (its variant when not the default) × hyperparameter
set, how many runs ended ok / failed / skipped / timed out, and each metric's mean ± std over the
runs that finished (over seeds).

Runs are counted as tables count them (:func:`clusterbench.runs.wide_runs`): one fit scored under
two metric suites is one run, and a point fitted on both CPU and CUDA is one run.

A row never pools hyperparameter sets: runs that differ in any hyperparameter but the seed
(``random_state``) and the device are separate rows, so that a std is a spread over seeds and
never the spread of a grid. Each row names the hyperparameters that vary among its dataset ×
method's rows (none when there is one set); ``by_params`` names all of them instead. The std is
the population std (ddof = 0), as in the tables; a row of one run has none.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from clusterbench.errors import UserError
from clusterbench.results import folder_words, load_records, no_records_error
from clusterbench.runs import PLACE, params_without, wide_runs

# The metrics a summary shows unless told otherwise, in this order (those the records hold): the
# papers' table metrics, PRCut's ratio cut among them.
HEADLINE_METRICS = ("acc", "nmi", "ari", "sc", "ratio_cut")
STATUSES = ("ok", "failed", "skipped", "timeout")
# Left out of a row's hyperparameter set: runs that differ only in these are the same configuration
# (the seed, and where a fit ran: its device and threads, which the tables pool too).
NOT_HYPERPARAMETERS = ("random_state", *PLACE)
GROUP = ["experiment", "profile", "dataset", "method", "variant", "params"]


def headline_metrics(records: pd.DataFrame) -> list[str]:
    """The metrics of :data:`HEADLINE_METRICS` that the records' successful runs hold, in that order;
    all those they hold when none of them is among them."""
    held = list(dict.fromkeys(records.loc[records["status"] == "ok", "metric"]))
    return [metric for metric in HEADLINE_METRICS if metric in held] or held


def summarize(
    records: pd.DataFrame, metrics: list[str] | None = None, by_params: bool = False
) -> pd.DataFrame:
    """One row per experiment × profile × dataset × method × variant × hyperparameter set of
    ``records`` (the frame :func:`clusterbench.results.load_records` returns, or part of it).

    Columns: those keys (``params``: the set as JSON, the seed and where a fit ran, its device and
    threads, left out), ``hyperparameters`` (``k=v`` text of those that vary within the dataset ×
    method, or of all with ``by_params``),
    the counts ``runs``, ``ok``, ``failed``, ``skipped``, ``timeout``, and for each metric
    ``<metric>_mean``, ``<metric>_std`` (NaN for one run) and ``<metric>_n`` (the successful runs
    that define it: SC is undefined for a labeling of one cluster). ``metrics`` (default
    :func:`headline_metrics`) may name ``fit_seconds``. Runs that did not succeed count in their
    status's column and in no mean.
    """
    metrics = headline_metrics(records) if metrics is None else list(metrics)
    if records.empty:
        columns = [*GROUP, "hyperparameters", "runs", *STATUSES]
        return pd.DataFrame(columns=columns + [f"{m}_{s}" for m in metrics for s in ("mean", "std", "n")])
    runs = wide_runs(records)
    runs["params"] = runs["params"].map(lambda params: params_without(params, *NOT_HYPERPARAMETERS))
    # wide_runs orders runs by experiment, dataset, method, variant, hyperparameters and seed;
    # grouping keeps that order.
    rows = []
    for key, group in runs.groupby(GROUP, sort=False, dropna=False):
        row = dict(zip(GROUP, key, strict=True))
        row["runs"] = len(group)
        row |= {status: int((group["status"] == status).sum()) for status in STATUSES}
        succeeded = group[group["status"] == "ok"]
        for metric in metrics:
            values = succeeded[metric].dropna() if metric in succeeded else pd.Series(dtype=float)
            row[f"{metric}_mean"] = values.mean() if len(values) else np.nan
            row[f"{metric}_std"] = values.std(ddof=0) if len(values) > 1 else np.nan
            row[f"{metric}_n"] = len(values)
        rows.append(row)
    summary = pd.DataFrame(rows)
    summary.insert(len(GROUP), "hyperparameters", _hyperparameter_labels(summary, by_params))
    return summary


def _hyperparameter_labels(summary: pd.DataFrame, by_params: bool) -> pd.Series:
    """Each row's hyperparameters as ``k=v`` text: all of them, or those whose value differs
    between the rows of its experiment × profile × dataset × method × variant."""
    sets = summary["params"].map(json.loads)
    labels = pd.Series("", index=summary.index)
    for _, rows in summary.groupby(GROUP[:-1], sort=False, dropna=False):
        others = sets[rows.index]
        for index, chosen in others.items():
            shown = sorted(
                name for name in chosen if by_params or any(o.get(name) != chosen[name] for o in others)
            )
            labels[index] = " ".join(f"{name}={_shown(chosen[name])}" for name in shown)
    return labels


def _shown(value):
    """A whole float as the integer it is (gamma=1 from a grid and the default 1.0 read alike)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def summary_metrics(summary: pd.DataFrame) -> list[str]:
    """The metrics a :func:`summarize` frame holds, in its order."""
    return [column.removesuffix("_mean") for column in summary.columns if column.endswith("_mean")]


def format_summary(summary: pd.DataFrame, digits: int = 3) -> str:
    """A :func:`summarize` frame as a Markdown table: a method named with its variant when not the
    default, each metric as ``mean ± std`` (a value alone for one run; ``(n=2)`` when fewer
    successful runs than ``ok`` define it), columns that would say nothing left out (one
    experiment, one profile, no hyperparameters to tell rows apart, no timeouts)."""
    if summary.empty:
        return "no runs"
    shown = pd.DataFrame(index=summary.index)
    for key in ("experiment", "profile"):
        if summary[key].nunique() > 1:
            shown[key] = summary[key]
    shown["dataset"] = summary["dataset"]
    shown["method"] = [
        method if variant == "default" else f"{method}[{variant}]"
        for method, variant in zip(summary["method"], summary["variant"], strict=True)
    ]
    if (summary["hyperparameters"] != "").any():
        shown["hyperparameters"] = summary["hyperparameters"]
    for column in ("runs", "ok", "failed", "skipped", "timeout"):
        if column != "timeout" or summary[column].any():
            shown[column] = summary[column].astype(int).astype(str)
    for metric in summary_metrics(summary):
        shown[metric.upper() if metric != "fit_seconds" else metric] = [
            _mean_std(row[f"{metric}_mean"], row[f"{metric}_std"], row[f"{metric}_n"], row["ok"], digits)
            for _, row in summary.iterrows()
        ]
    text_columns = {"experiment", "profile", "dataset", "method", "hyperparameters"}
    align = ["left" if column in text_columns else "right" for column in shown.columns]
    return shown.to_markdown(index=False, disable_numparse=True, colalign=align)


def _mean_std(mean: float, std: float, defined: int, succeeded: int, digits: int) -> str:
    if np.isnan(mean):
        return "—"
    text = f"{mean:.{digits}f}" + ("" if np.isnan(std) else f" ± {std:.{digits}f}")
    return text + (f" (n={defined})" if defined < succeeded else "")


def load_summary(
    results_dir: Path,
    profile: str,
    experiments: list[str],
    metrics: list[str] | None = None,
    by_params: bool = False,
) -> pd.DataFrame:
    """:func:`summarize` the records of ``experiments`` under ``results_dir``'s ``profile``; a user
    error when there are none, or when ``metrics`` names one no successful run holds."""
    records = load_records(results_dir, profile, experiments)
    if records.empty:
        where = folder_words(results_dir, "results_dir=")
        raise no_records_error(
            results_dir,
            profile,
            experiments,
            f"make some with `clusterbench run -m method=kmeans dataset=zoo seed=0,1,2 profile={profile}"
            f"{where}` (experiment adhoc), or name the experiments, folder and profile that hold them "
            "(--results-dir, --profile)",
        )
    held = set(records.loc[records["status"] == "ok", "metric"])
    if metrics is not None and held:
        unknown = [metric for metric in metrics if metric not in held | {"fit_seconds"}]
        if unknown:
            raise UserError(
                f"no record of {', '.join(experiments)} holds metric {', '.join(map(repr, unknown))}; "
                f"they hold {', '.join(sorted(held))} (and fit_seconds)"
            )
    return summarize(records, metrics, by_params)


# A run's closing table shows this many rows at most; `clusterbench summary` shows them all.
RUN_SUMMARY_ROWS = 30


def run_summary(entries: list[tuple[str, bool, Path | None]], table: bool) -> str:
    """What a ``clusterbench run`` did, from its journal (:func:`clusterbench.results.read_journal`):
    its points counted by what happened to them, the folder of their records and, with ``table``
    (a sweep, or a job of several points), :func:`format_summary` of those records."""
    from clusterbench.results import read_records

    counts = Counter(status for status, _, _ in entries)
    earlier = Counter(status for status, was, _ in entries if was and status != "cached")
    words = {"ok": "fitted", "rescored": "rescored from stored labels", "timeout": "timed out"}
    parts = []
    for status in ("ok", "rescored", "cached", "failed", "skipped", "timeout"):
        if counts[status]:
            again = f" ({earlier[status]} recorded earlier)" if earlier[status] else ""
            parts.append(f"{counts[status]} {words.get(status, status)}{again}")
    records = [record for _, _, record in entries if record is not None]
    where = Path(os.path.commonpath(records)) if records else None
    if where is not None and where.suffix == ".csv":
        where = where.parent
    lines = [
        f"{len(entries)} point(s): {', '.join(parts) or 'none'}"
        + (f"; records under {where}" if where is not None else "")
    ]
    if table and records:
        frame = read_records(sorted(set(records)))
        summary = summarize(frame)
        lines += ["", format_summary(summary.head(RUN_SUMMARY_ROWS))]
        if len(summary) > RUN_SUMMARY_ROWS:
            experiments = " ".join(dict.fromkeys(frame["experiment"]))
            profile = frame["profile"].iloc[0]
            lines.append(
                f"({len(summary) - RUN_SUMMARY_ROWS} more rows: clusterbench summary {experiments} "
                f"--profile {profile} --results-dir {records[0].parents[5]})"
            )
    return "\n".join(lines)

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
* ``mean_std``: mean ± std of ``metric`` over all runs (std: the population std, ddof = 0, here
  and in ``best_mean``; a cell of one run shows its value alone).
* ``mean_best``: mean of ``metric`` over all runs, and its value at the best run by ``by``
  (the k-means-C′ paper's Table S1); the paper's values are then ``[mean, best]`` pairs.
* ``best_of``: the runs are single restarts (one per seed) of a protocol that keeps the best of
  ``protocol.restarts`` of them by ``by``; the cell is the exact distribution of that kept run's
  ``metric`` over every ``restarts``-subset of the runs (not resampled): its mean ± std, and the
  chance ``reach`` that it reaches the paper's value less ``protocol.reach_within`` (its
  rounding), printed as ``[P 0.70]``. How often one run of a paper's protocol reproduces a cell.
* ``agreement``: the partitions of two runs compared (CLAM Table 8): the cell's run and the
  ``protocol.reference`` column's run on the same dataset, each chosen as ``best`` chooses it;
  ``metric`` (``nmi`` or ``ari``, ``average_method`` for NMI) is computed between their predicted
  labels, read from the ``<hash>.labels.npy`` files beside the records. A run whose labels file
  is missing (a record that predates them) gives the cell status ``labels missing``.

A cell's ``metric`` may also be ``fit_seconds``, the run's training time from its record
(CLAM Table 3 reports it for the run that gives the table's SC).

``protocol.require_all_clusters: true`` first drops runs whose labeling has fewer distinct
clusters than the ``n_clusters`` asked for (metric ``n_found``): spectral clustering on a
near-disconnected affinity can merge all but a few points, and such a labeling's SC is no
comparison with a k-cluster one.

A column (and an agreement ``reference``) may carry its own ``protocol`` keys, each in place of
the table's: a paper that scored one method's runs under another rule is reproduced column by column.

``by`` may be a list of metrics, ranked by their sum (purity + NMI), and ``by`` and ``mode`` may
map the table's metrics to their own (least φ, most ℒ, most purity + NMI in one table). A column
with ``params: {name: value}`` reads only runs with those hyperparameters (k-means as
k-means-C′ with C′ = 1 beside C′ = 2 from one sweep).

``paper_column: <column>`` on a column compares it with that column's paper values (a variant
of a method, run beside it, against the cell the paper printed for the method).
``ratio_to: {metric: column}`` reports that metric relative to the named column on the same
dataset (the Khatri-Rao paper's inertia and parameter ratios to k-means with h1·h2 centroids).
``extends: <table>`` takes that table's spec and changes only the keys given (e.g. its seeds).
``gain: {reference: column, columns: [...]}`` prints the reference column's relative gain
(a − b)/b as ▲/▼ on the listed columns (default: all others), and ``win_loss: [column, ...]`` adds a
W/L row per listed column. The paper side prints the gains and W/L the paper prints where the
spec gives them (``paper_gain: {metric: {dataset: {column: percent}}}``, ``paper_win_loss:
{metric: {column: {other column: "w/l"}}}``), and computes them from its cells otherwise.
``paper_from: <table>`` takes the paper's values from that table's spec, only those of this
table's metrics, rows and columns (a table that re-reads some of another's cells under another
protocol); ``paper`` entries of its own are merged over them.
``seeds: [...]`` reads only the runs of those seeds (e.g. the seed a paper's script fixed).
``unavailable: {dataset: why}`` marks a row whose data we do not hold: its cells say
``not available`` (the reason goes to the CSV) instead of the row silently missing.

Every protocol chooses among the runs that finished (status ok); a cell whose value was chosen
without some of its runs (failed, timed out, skipped) is marked † and counts them in the CSV
(``n_ok`` of ``n_runs``), so a partial grid or seed set never passes for a full one. A ``best``
cell whose selected run found fewer clusters than it asked for is marked ‡ (``n_found`` of
``n_clusters`` in the CSV), so a near-degenerate labeling never passes for a k-cluster one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, ListConfig, OmegaConf

from clusterbench.catalog import load_option, method_names, options
from clusterbench.errors import UserError
from clusterbench.metrics import agreement
from clusterbench.results import atomic_write_text, load_records, read_labels, record_path
from clusterbench.validation import is_int

# Protocols that choose among one cell's runs, and all protocols (agreement chooses two runs).
SELECTIONS = ("best", "best_mean", "mean_std", "mean_best", "best_of")
PROTOCOLS = (*SELECTIONS, "agreement")
AGREEMENT_METRICS = ("nmi", "ari")
# Marks a cell chosen from only the runs that finished (``n_ok`` of ``n_runs`` in the .csv).
PARTIAL_MARK = "†"
PARTIAL_NOTE = (
    "chosen from the runs that finished; others failed, timed out or were skipped"
    " (n_ok of n_runs in the .csv)."
)
PARTIAL_NOTE_LATEX = PARTIAL_NOTE.replace("_", r"\_")
# Marks a cell whose selected run's labeling has fewer clusters than it asked for.
FEWER_MARK = "‡"
FEWER_NOTE = "the selected run's labeling has fewer clusters than asked (n_found of n_clusters in the .csv)."
FEWER_NOTE_LATEX = FEWER_NOTE.replace("_", r"\_")


@dataclass
class TableOutputs:
    cells: pd.DataFrame
    markdown: str
    paths: list[Path]


def wide_runs(records: pd.DataFrame) -> pd.DataFrame:
    """One row per run (record) with a column per metric, plus its status, params, fit time
    and where its record lies (experiment, profile)."""
    # A run is a record file: its method's name and its config hash (which leaves out the name, so
    # two method configs of the same estimator and hyperparameters share a hash).
    run = ["method", "config_hash"]
    keys = ["experiment", "profile", "dataset", "variant", "seed", "params", "status", "error", "fit_seconds"]
    if "fit_hash" not in records:  # records written before records kept one
        records = records.assign(fit_hash="")
    runs = records[run + keys + ["fit_hash", "timestamp"]].drop_duplicates(run).set_index(run)
    ok = records[records["status"] == "ok"]
    if not ok.empty:
        wide = ok.pivot_table(index=run, columns="metric", values="value", aggfunc="first")
        runs = runs.join(wide)
    runs = _one_run_per_fit(runs.reset_index(), metrics=list(ok["metric"].unique()))
    # In an order of what the runs are, not of their hashes: the first of runs tied on a
    # protocol's metric is the one chosen (the smallest update_interval of equal DEC runs, say).
    runs = _without_device_twins(runs)
    what = ["experiment", "dataset", "method", "variant", "params", "seed"]
    keys = [
        (*names, _params_order(params), seed) for *names, params, seed in runs[what].itertuples(index=False)
    ]
    order = sorted(range(len(runs)), key=keys.__getitem__)
    return runs.iloc[order].reset_index(drop=True)


def _params_order(params: str) -> tuple:
    """A sort key of a run's hyperparameters by name, the device left out (a sweep may run on two
    machines): numbers by value (3 before 100, NaN after them), lists element by element, other
    values by their text."""
    return tuple(
        (name, _value_key(value)) for name, value in sorted(json.loads(params).items()) if name != "device"
    )


def _value_key(value) -> tuple:
    # (kind, payload): the kind comes first, so payloads of different types are never compared.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (1, 0.0) if math.isnan(value) else (0, value)
    if isinstance(value, list):
        return (2, tuple(map(_value_key, value)))
    return (3, json.dumps(value, sort_keys=True))


def _one_run_per_fit(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """One run per fit: records of one fit under several metric suites (one ``fit_hash``) count
    once, as the latest that succeeded (else the latest), with each metric from the latest
    successful record that holds it."""
    shared = runs["fit_hash"].fillna("") != ""
    keys = ["experiment", "profile", "dataset", "method", "fit_hash"]
    if not runs[shared].duplicated(keys).any():
        return runs
    ranked = runs[shared].assign(succeeded=runs["status"] == "ok")
    ranked = ranked.sort_values(["succeeded", "timestamp"], ascending=False, kind="stable")
    kept = ranked.drop_duplicates(keys).set_index(keys)
    succeeded = ranked[ranked["succeeded"]]
    if metrics and not succeeded.empty:
        kept.update(succeeded.groupby(keys, sort=False)[metrics].first())  # first non-missing value
    return pd.concat([runs[~shared], kept.reset_index().drop(columns="succeeded")], ignore_index=True)


def _without_device_twins(runs: pd.DataFrame) -> pd.DataFrame:
    """A point fitted on both CPU and CUDA (``force=true`` on the other machine) counts once: by
    its latest successful record (its latest record if none succeeded), as the runner reuses a
    point fitted on the other device."""
    keys = ["experiment", "profile", "dataset", "method", "variant", "seed", "point"]
    frame = runs.assign(
        point=runs["params"].map(lambda p: _params_without(p, "device")),
        run_device=runs["params"].map(lambda p: json.loads(p).get("device")),
        succeeded=runs["status"] == "ok",
    )
    twins = frame.groupby(keys, sort=False)["run_device"].transform("nunique") > 1
    kept = (
        frame[twins].sort_values(["succeeded", "timestamp"], kind="stable").drop_duplicates(keys, keep="last")
    )
    return runs.loc[frame.index[~twins].union(kept.index)]


def _params_without(params: str, *names: str) -> str:
    values = json.loads(params)
    for name in names:
        values.pop(name, None)
    return json.dumps(values, sort_keys=True)


def _grid_point(params: str, cell_params: pd.Series) -> str:
    """The hyperparameters that vary across a cell's runs (its grid), as ``k=v`` text."""
    chosen = json.loads(params)
    others = [json.loads(p) for p in cell_params.unique()]
    varying = [k for k in chosen if k != "random_state" and any(o.get(k) != chosen[k] for o in others)]
    return " ".join(f"{k}={chosen[k]}" for k in sorted(varying))


def _candidates(runs: pd.DataFrame, protocol, columns: list[str]) -> pd.DataFrame:
    """The runs the protocol may choose from: all ``columns`` defined (and all clusters found, if asked)."""
    if any(column not in runs for column in columns):
        return runs.iloc[:0]
    if protocol.get("require_all_clusters", False):
        if "n_found" not in runs:
            raise UserError("protocol.require_all_clusters needs the n_found metric in the records")
        runs = runs[runs["n_found"] == runs["params"].map(lambda p: json.loads(p).get("n_clusters"))]
    return runs.dropna(subset=columns)


def ranking(protocol, metric: str) -> tuple[list[str], bool]:
    """(the metrics whose sum ranks a cell's runs, whether less is better) for ``metric``.

    ``protocol.by`` is a metric, a list of metrics (ranked by their sum: the k-means-C′ paper
    picks its best run by purity + NMI) or a mapping from the table's metrics to either (a
    metric it leaves out ranks by itself); ``protocol.mode`` (max | min) likewise, or a mapping.
    """
    by = protocol.get("by", metric)
    if isinstance(by, Mapping):
        by = by.get(metric, metric)
    mode = protocol.get("mode", "max")
    if isinstance(mode, Mapping):
        mode = mode.get(metric, "max")
    return ([by] if isinstance(by, str) else list(by)), mode == "min"


def _best_first(runs: pd.DataFrame, by: list[str], ascending: bool) -> pd.DataFrame:
    order = runs[by].sum(axis=1).sort_values(ascending=ascending, kind="stable").index
    return runs.loc[order]


def best_of_weights(n_runs: int, restarts: int) -> np.ndarray:
    """P(the run ranked j-th of ``n_runs``, best first, is the best of ``restarts`` of them drawn
    without replacement) = C(n_runs − 1 − j, restarts − 1) / C(n_runs, restarts)."""
    subsets = math.comb(n_runs, restarts)
    return np.array([math.comb(n_runs - 1 - j, restarts - 1) / subsets for j in range(n_runs)])


def _best_of(ranked: pd.DataFrame, protocol, metric: str, paper: float, better: str) -> dict:
    """Protocol ``best_of`` on a cell's runs ranked best first (see the module docstring);
    ``better`` (max | min) is the direction in which ``metric`` reaches ``paper``."""
    restarts = protocol.restarts
    if len(ranked) < restarts:
        return {"status": f"{len(ranked)} runs, fewer than restarts={restarts}"}
    weights, values = best_of_weights(len(ranked), restarts), ranked[metric].to_numpy(dtype=float)
    mean = float(weights @ values)
    chosen = {"ours": mean, "ours_std": math.sqrt(float(weights @ (values - mean) ** 2))}
    if not math.isnan(paper):
        within = protocol.get("reach_within", 0.0)
        reached = values <= paper + within if better == "min" else values >= paper - within
        chosen["reach"] = float(weights @ reached)
    return chosen


def select(runs: pd.DataFrame, protocol, metric: str, paper: float = math.nan, better: str = "max") -> dict:
    """Apply ``protocol`` to one cell's successful runs; returns ours, ours_std, ours_best,
    selected (``best_of``: ours, ours_std and reach, the chance of reaching ``paper`` in the
    ``better`` direction of ``metric``)."""
    by, ascending = ranking(protocol, metric)
    kind = protocol.kind
    if kind not in SELECTIONS:
        raise UserError(f"unknown table protocol '{kind}'; choose one of {', '.join(SELECTIONS)}")
    if kind == "best_of" and not (is_int(protocol.get("restarts")) and protocol.restarts >= 1):
        raise UserError(f"protocol best_of needs restarts, an integer ≥ 1, got {protocol.get('restarts')!r}")
    grid = runs["params"]  # the grid point is named against every run of the cell
    valid = _candidates(runs, protocol, [*by, metric])
    if valid.empty:
        return {}
    if kind == "best_of":
        return _best_of(_best_first(valid, by, ascending), protocol, metric, paper, better)
    best = _best_first(valid, by, ascending).iloc[0]
    if kind == "best":
        return {"ours": best[metric], "selected": _grid_point(best["params"], grid)} | _clusters(best)
    if kind == "mean_std":
        return {"ours": valid[metric].mean(), "ours_std": _spread(valid[metric])}
    if kind == "mean_best":
        selected = _grid_point(best["params"], grid)
        return {"ours": valid[metric].mean(), "ours_best": best[metric], "selected": selected}
    groups = valid.assign(
        grid_point=valid["params"].map(lambda p: _params_without(p, "random_state"))
    ).groupby("grid_point", sort=False)  # runs come in grid order, so ties go to the first point
    means = groups[by].mean().sum(axis=1).sort_values(ascending=ascending, kind="stable")
    chosen = groups.get_group(means.index[0])
    selected = _grid_point(chosen["params"].iloc[0], grid)
    return {"ours": chosen[metric].mean(), "ours_std": _spread(chosen[metric]), "selected": selected}


def _clusters(run: pd.Series) -> dict:
    """The clusters a selected run found and asked for, where its record says (metric n_found)."""
    asked = json.loads(run["params"]).get("n_clusters")
    found = run.get("n_found", math.nan)
    return {"n_found": found, "n_clusters": asked} if is_int(asked) and not pd.isna(found) else {}


def _spread(values: pd.Series) -> float:
    """The population std of a cell's runs; NaN for a single run, which then prints without a
    "± 0.000" that would read as a measured spread."""
    return values.std(ddof=0) if len(values) > 1 else math.nan


def _column_runs(runs: pd.DataFrame, dataset: str, column) -> pd.DataFrame:
    """The runs of one table column on ``dataset``, whatever their status: its method and variant,
    and, when the column gives ``params``, only runs with those hyperparameter values."""
    if column.get("method") is None:  # a column of the paper's only (a method not reimplemented)
        return runs.iloc[:0]
    mask = (runs["dataset"] == dataset) & (runs["method"] == column.method)
    mask &= runs["variant"] == column.get("variant", "default")
    wanted = column.get("params")
    if wanted:
        wanted = OmegaConf.to_container(wanted)
        mask &= runs["params"].map(lambda p: all(json.loads(p).get(k) == v for k, v in wanted.items()))
    return runs[mask]


def _selected_run(runs: pd.DataFrame, protocol, metric: str) -> pd.Series | None:
    """The successful run that protocol ``best`` by ``protocol.by`` (for the table's ``metric``)
    chooses, or None."""
    by_given = protocol.get("by")
    if by_given is None or (isinstance(by_given, Mapping) and metric not in by_given):
        # Ranking by the table's own metric would select by agreement with the ground truth.
        raise UserError(
            f"protocol agreement needs `by` (for {metric}): the metric that selects each cell's run (e.g. sc)"
        )
    by, ascending = ranking(protocol, metric)
    valid = _candidates(runs[runs["status"] == "ok"], protocol, by)
    return None if valid.empty else _best_first(valid, by, ascending).iloc[0]


def _labels_of(run: pd.Series, results_dir: Path) -> np.ndarray | None:
    path = record_path(
        results_dir, run["profile"], run["experiment"], run["dataset"], run["method"], run["config_hash"]
    )
    return read_labels(path)


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


def column_protocol(protocol, column) -> DictConfig:
    """The table's protocol with a column's (or agreement reference's) ``protocol`` keys in place
    of its own (replaced whole: a column's ``by: [purity, nmi]`` over a table's per-metric map)."""
    merged = OmegaConf.to_container(protocol) | OmegaConf.to_container(
        column.get("protocol") or OmegaConf.create()
    )
    return OmegaConf.create(merged)


def compute_cells(spec, runs: pd.DataFrame, results_dir: Path | None = None) -> pd.DataFrame:
    """The long frame of cells: one row per (dataset, metric, column).

    ``results_dir`` holds the records' labels files; only protocol ``agreement`` reads them.
    """
    kind = spec.protocol.kind
    if kind not in PROTOCOLS:
        raise UserError(f"unknown table protocol '{kind}'; choose one of {', '.join(PROTOCOLS)}")
    if kind == "agreement" and results_dir is None:
        raise ValueError("protocol agreement reads the runs' labels: pass results_dir")
    if kind == "best_of" and spec.get("ratio_to"):
        raise UserError(
            f"table {spec.name}: ratio_to cannot be combined with protocol best_of (reach is raw)"
        )
    if spec.get("seeds") is not None:
        runs = runs[runs["seed"].astype(int).isin(list(spec.seeds))]
    rows = []
    for dataset in spec.rows:
        for metric in spec.metrics:
            for column, col in spec.columns.items():
                cell_runs = _column_runs(runs, dataset, col)
                protocol = column_protocol(spec.protocol, col)
                reported = OmegaConf.select(spec, f"paper.{metric}.{dataset}.{column}")
                paper, paper_best = _paper_values(reported)
                if kind == "agreement":
                    reference_runs = _column_runs(runs, dataset, spec.protocol.reference)
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
                        "n_ok": int((cell_runs["status"] == "ok").sum()),
                        "selected_params": chosen.get("selected", ""),
                        "n_found": chosen.get("n_found", math.nan),
                        "n_clusters": chosen.get("n_clusters", math.nan),
                    }
                    | ({"reach": chosen.get("reach", math.nan)} if kind == "best_of" else {})
                )
    cells = pd.DataFrame(rows)
    for dataset, why in (spec.get("unavailable") or {}).items():
        cells.loc[cells["dataset"] == dataset, "status"] = "not available"
        cells.loc[cells["dataset"] == dataset, "selected_params"] = why
    return _as_ratios(cells, spec.get("ratio_to") or {})


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


def relative_gain(a: float, b: float) -> float:
    """CLAM's gain of ``a`` over baseline ``b``: (a - b) / b × 100%."""
    return (a - b) / abs(b) * 100.0 if b and not (math.isnan(a) or math.isnan(b)) else math.nan


def cell_gain(spec, side: str, values: pd.Series, dataset: str, metric: str, column: str) -> float:
    """The ▲/▼ gain a cell prints: on a ``gain.columns`` column (default: all but the reference),
    the reference's gain over it. Ours from our unrounded values; the paper's as it prints it
    (``paper_gain``) where the spec gives that, since recomputing it from rounded cells can be a
    point off."""
    reference = OmegaConf.select(spec, "gain.reference")
    if reference is None or column == reference:
        return math.nan
    if column not in (OmegaConf.select(spec, "gain.columns") or spec.columns):
        return math.nan
    if side == "paper":
        printed = OmegaConf.select(spec, f"paper_gain.{metric}.{dataset}.{column}", default="not given")
        if printed != "not given":  # null: the paper prints no gain there
            return math.nan if printed is None else float(printed)
    return relative_gain(values[reference], values[column])


def per_metric(spec, key: str, metric: str, default):
    """A display setting given for all metrics (``digits: 3``) or per metric (``digits: {sc: 3}``)."""
    value = spec.get(key, default)
    return value.get(metric, default) if isinstance(value, Mapping) else value


def metric_label(spec, metric: str) -> str:
    return (spec.get("metric_labels") or {}).get(metric, metric.upper())


def win_loss(spec, cells: pd.DataFrame, value: str) -> dict[str, dict[str, str]]:
    """Per W/L row (a column key) and metric: 'wins/losses' of that column against each other column.

    Values are compared as the table prints them (rounded to ``digits``), in the direction the
    metric's ``better`` names; ties count neither.
    """
    rows = {}
    for reference in spec.get("win_loss", []):
        for metric in spec.metrics:
            digits = per_metric(spec, "digits", metric, 3)
            sign = -1 if per_metric(spec, "better", metric, "max") == "min" else 1
            frame = cells[cells["metric"] == metric].pivot(index="dataset", columns="column", values=value)
            line = {}
            for column in spec.columns:
                if column == reference:
                    continue
                a, b = sign * as_printed(frame[reference], digits), sign * as_printed(frame[column], digits)
                both = a.notna() & b.notna()
                if both.any():
                    line[column] = f"{int((a[both] > b[both]).sum())}/{int((a[both] < b[both]).sum())}"
            rows[(reference, metric)] = line
    return rows


def _format(
    value: float,
    digits: int,
    gain: float,
    bold: bool,
    latex: bool,
    std: float = math.nan,
    best: float = math.nan,
    partial: bool = False,
    fewer: bool = False,
) -> str:
    if math.isnan(value):
        return ""
    text = f"{value:.{digits}f}"
    if not math.isnan(std):
        text += f" ± {std:.{digits}f}"
    if not math.isnan(best):
        text += f" / {best:.{digits}f}"
    if bold:
        text = f"\\textbf{{{text}}}" if latex else f"**{text}**"
    if partial:
        text += "$^\\dagger$" if latex else PARTIAL_MARK
    if fewer:
        text += "$^\\ddagger$" if latex else FEWER_MARK
    if not math.isnan(gain):
        arrows = ("$\\blacktriangle$", "$\\blacktriangledown$", "\\%") if latex else ("▲", "▼", "%")
        text += f" {arrows[0] if gain >= 0 else arrows[1]}{abs(gain):.0f}{arrows[2]}"
    return text


def render(spec, cells: pd.DataFrame, latex: bool) -> pd.DataFrame:
    """The display frame: a row per dataset (x metric), 'ours' beside 'paper' for every column.

    Protocol ``mean_best`` prints each cell as "mean / best", ``best_of`` as "mean ± std [P reach]";
    bold marks the best mean.
    """
    multi_metric = len(spec.metrics) > 1
    lines = []
    for (dataset, metric), group in cells.groupby(["dataset", "metric"], sort=False):
        cell = group.set_index("column")
        digits = per_metric(spec, "digits", metric, 3)
        line = {"Dataset": spec.rows[dataset]} | (
            {"Metric": metric_label(spec, metric)} if multi_metric else {}
        )
        for side in ("ours", "paper"):
            values = cell[side]
            best = as_printed(_best(values, per_metric(spec, "better", metric, "max")), digits)
            for column in spec.columns:
                std = cell.loc[column, "ours_std"] if side == "ours" else math.nan
                text = _format(
                    values[column],
                    digits,
                    cell_gain(spec, side, values, dataset, metric, column),
                    as_printed(values[column], digits) == best,
                    latex,
                    std,
                    cell.loc[column, f"{side}_best"],
                    side == "ours" and is_partial(cell.loc[column]),
                    side == "ours" and found_fewer(cell.loc[column]),
                )
                reach = cell.loc[column, "reach"] if side == "ours" and "reach" in cell else math.nan
                if text and not math.isnan(reach):
                    text += f" [P {reach:.2f}]"
                if not text and side == "ours" and cell.loc[column, "status"] != "missing":
                    text = cell.loc[column, "status"]
                line[(column, side)] = text or "—"
        lines.append(line)
    for (reference_column, metric), results in _wl_rows(spec, cells).items():
        label = f"{spec.columns[reference_column].label} W/L"
        line = {"Dataset": label + (f" ({metric_label(spec, metric)})" if multi_metric else "")}
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


def is_partial(cell: pd.Series) -> bool:
    """Whether a cell with a value was chosen from only some of its runs: the others failed,
    timed out or were skipped, so a fuller run might change it."""
    return cell["status"] == "ok" and not math.isnan(cell["ours"]) and cell["n_ok"] < cell["n_runs"]


def found_fewer(cell: pd.Series) -> bool:
    """Whether a cell's selected run found fewer clusters than it asked for."""
    return bool(cell.get("n_found", math.nan) < cell.get("n_clusters", math.nan))


def as_printed(values, digits: int):
    """A value (or a Series of them) as the table prints it: Python's formatting, which rounds a
    float's exact binary value (0.2875 is 0.28749…, printed 0.287), where numpy's round gives
    0.288. Bold and W/L compare these, so a cell printed lower never ties or wins."""
    if isinstance(values, pd.Series):
        return values.map(lambda value: as_printed(value, digits))
    return values if math.isnan(values) else float(f"{values:.{digits}f}")


def _best(values: pd.Series, better: str) -> float:
    if values.isna().all():
        return math.nan
    return values.min() if better == "min" else values.max()


def _wl_rows(spec, cells: pd.DataFrame) -> dict:
    """Ours and the paper's W/L rows; the paper's as it prints them (``paper_win_loss``) where the
    spec gives them, which need not follow from its printed cells."""
    ours, paper = win_loss(spec, cells, "ours"), win_loss(spec, cells, "paper")
    for reference, metric in paper:
        printed = OmegaConf.select(spec, f"paper_win_loss.{metric}.{reference}")
        if printed is not None:
            paper[(reference, metric)] = {column: str(text) for column, text in printed.items()}
    return {key: {"ours": ours[key], "paper": paper[key]} for key in ours}


def table_spec(name: str) -> DictConfig:
    """The spec ``conf/table/<name>.yaml``; one with ``extends: <other>`` is merged over that table's,
    one with ``paper_from: <other>`` borrows that table's paper values for its own cells, and a
    column with ``paper_column`` takes that column's paper values where it has none of its own."""
    spec = _merged_spec(name)
    check_spec(spec)
    _paper_of_other_columns(spec)
    return spec


def _merged_spec(name: str) -> DictConfig:
    """The spec with what it extends and borrows merged in, before checks and column copies (an
    extending table's columns decide which paper values it copies, not its base's)."""
    spec = load_option("table", name)
    if spec.get("extends"):
        spec = OmegaConf.merge(_merged_spec(spec.extends), spec)
    if spec.get("paper_from"):
        borrowed = _paper_within(_merged_spec(spec.paper_from).paper, spec)
        spec.paper = OmegaConf.merge(borrowed, spec.get("paper", {}))
    spec.name = name
    return spec


def _paper_of_other_columns(spec: DictConfig) -> None:
    """A column with ``paper_column: <other>`` is compared with the other column's paper values
    (a variant of a method, e.g. with another reseeding rule, against the cell the paper printed)
    wherever the spec gives it none of its own."""
    for column, column_spec in spec.columns.items():
        source = column_spec.get("paper_column")
        if source is None:
            continue
        if source not in spec.columns:
            raise UserError(
                f"table {spec.name}: columns.{column}.paper_column names '{source}', which is no column; "
                f"fix conf/table/{spec.name}.yaml"
            )
        for by_dataset in (spec.get("paper") or {}).values():
            for by_column in (by_dataset or {}).values():
                if by_column is not None and source in by_column and column not in by_column:
                    by_column[column] = by_column[source]


def check_spec(spec: DictConfig) -> None:
    """A user error for a key of the spec that names no column, row or metric of the table (in
    ``gain``, ``win_loss``, ``paper``, ``paper_gain``, ``paper_win_loss``): its paper value would go
    unprinted without a word. Rows, methods and metrics are checked against the records too, when
    a table is built (:func:`build_table`)."""
    rows, columns = set(spec.rows), set(spec.columns)
    fix = f"fix conf/table/{spec.name}.yaml"
    reference = OmegaConf.select(spec, "gain.reference")
    named = {
        "gain.reference": [] if reference is None else [reference],
        "gain.columns": _listed(spec, "gain.columns"),
        "win_loss": _listed(spec, "win_loss"),
    }
    for key, values in named.items():
        for value in values:
            if value not in columns:
                raise UserError(f"table {spec.name}: {key} names '{value}', which is no column; {fix}")
    levels = {
        "paper": [("metric", spec.metrics), ("row", rows), ("column", columns)],
        "paper_gain": [("metric", spec.metrics), ("row", rows), ("column", columns)],
        "paper_win_loss": [("metric", spec.metrics), ("W/L row", named["win_loss"]), ("column", columns)],
    }
    for entry, expected in levels.items():
        _check_levels(spec, entry, spec.get(entry), expected)


def _listed(spec: DictConfig, key: str) -> list:
    value = OmegaConf.select(spec, key)
    if value is not None and not isinstance(value, ListConfig):
        raise UserError(f"table {spec.name}: {key} must be a list of columns, got {value!r}")
    return list(value or [])


def _check_levels(spec: DictConfig, where: str, node, expected: list) -> None:
    """Each key of ``node`` down ``expected``'s levels names one of that level's known names."""
    if node is None or not expected:
        return
    (what, known), *deeper = expected
    if not isinstance(node, DictConfig):
        raise UserError(
            f"table {spec.name}: {where} must map each {what} to its entries, got {node!r}; "
            f"fix conf/table/{spec.name}.yaml"
        )
    for name, child in node.items():
        if name not in known:
            raise UserError(
                f"table {spec.name}: {where}.{name} names no {what} of the table "
                f"({', '.join(map(str, known))}); fix conf/table/{spec.name}.yaml"
            )
        _check_levels(spec, f"{where}.{name}", child, deeper)


def _check_against_records(spec: DictConfig, records: pd.DataFrame) -> None:
    """A user error for a row, method or metric of the table that names no dataset, method or
    metric that exists (a config's, or one in its records): its cells would all be empty without
    a word."""
    fix = f"fix conf/table/{spec.name}.yaml"
    datasets = {load_option("dataset", name).get("name", name) for name in options("dataset")}
    for row in set(spec.rows) - set(spec.get("unavailable") or {}) - datasets - set(records["dataset"]):
        raise UserError(
            f"table {spec.name}: row '{row}' is no dataset (see `clusterbench list`) and in none of its "
            f"records; {fix}, or list it under unavailable: with the reason"
        )
    references = [("columns", key, column) for key, column in spec.columns.items()]
    if spec.protocol.get("reference") is not None:
        references.append(("protocol", "reference", spec.protocol.reference))
    methods = set(method_names()) | set(records["method"])
    for where, key, column in references:
        if column.get("method") is not None and column.method not in methods:
            raise UserError(
                f"table {spec.name}: {where}.{key} reads method '{column.method}', which no method config "
                f"or record names ({', '.join(sorted(methods))}); {fix} (a column without method shows "
                "the paper only)"
            )
    if spec.protocol.kind == "agreement" or not (records["status"] == "ok").any():
        return  # agreement compares stored labels; runs that all stopped leave no metric to check
    held = set(records["metric"]) | {"fit_seconds"}
    wanted = list(spec.metrics)
    for metric in spec.metrics:
        wanted += ranking(spec.protocol, metric)[0]
    for metric in wanted:
        if metric not in held:
            raise UserError(
                f"table {spec.name}: no record of {', '.join(spec.experiments)} holds metric '{metric}' "
                f"(they hold {', '.join(sorted(held - {'', 'fit_seconds'}))}); fix the table's metrics or "
                "protocol, or add it to the experiments' metric suite"
            )


def _paper_within(paper: DictConfig, spec: DictConfig) -> dict:
    """The entries of ``paper`` (metric -> dataset -> column -> value) that ``spec`` has cells for."""
    return {
        metric: {
            dataset: {column: value for column, value in by_column.items() if column in spec.columns}
            for dataset, by_column in paper[metric].items()
            if dataset in spec.rows
        }
        for metric in spec.metrics
        if metric in paper
    }


def build_table(name: str, results_dir: Path, profile: str, skip_empty: bool = False) -> TableOutputs | None:
    """Build table ``name`` from the records of ``profile`` into ``<results_dir>/tables/<profile>/``.

    When none of the table's experiments has records: None with ``skip_empty``, else a user
    error (a table of dashes would hide a wrong folder or profile).
    """
    spec = table_spec(name)
    records = load_records(results_dir, profile, list(spec.experiments))
    if records.empty:
        if skip_empty:
            return None
        folder = Path(results_dir) / "runs" / profile
        raise UserError(
            f"table {name}: no records of {', '.join(spec.experiments)} under {folder}; "
            f"run them first (clusterbench run -m experiment={spec.experiments[0]} profile={profile}) "
            "or name the folder and profile that hold them (--results-dir, --profile)"
        )
    _check_against_records(spec, records)
    return write_table(spec, records, Path(results_dir) / "tables" / profile, profile, results_dir)


def write_table(
    spec, records: pd.DataFrame, out: Path, profile: str, results_dir: Path | None = None
) -> TableOutputs:
    """Compute the cells of ``spec`` from ``records``; write <name>.md, .tex and .csv into ``out``.

    ``results_dir``: where the records' labels files lie (needed by protocol ``agreement``).
    """
    cells = compute_cells(spec, wide_runs(records), results_dir)
    sources = ", ".join(spec.experiments)
    title = spec.get("title", spec.name)
    header = f"### {title}\n\nProfile `{profile}`; records of {sources}. {spec.get('note', '')}"
    partial = cells.apply(is_partial, axis=1).any()
    fewer = cells.apply(found_fewer, axis=1).any()
    caption = title
    if partial:
        header += f" {PARTIAL_MARK}: {PARTIAL_NOTE}"
        caption += f". $^\\dagger$: {PARTIAL_NOTE_LATEX}"
    if fewer:
        header += f" {FEWER_MARK}: {FEWER_NOTE}"
        caption += f"{'' if partial else '.'} $^\\ddagger$: {FEWER_NOTE_LATEX}"
    header += "\n\n"
    markdown = header + render(spec, cells, latex=False).to_markdown(index=False, disable_numparse=True)
    latex = render(spec, cells, latex=True).to_latex(index=False, escape=False, caption=caption)
    table_csv = cells.to_csv(index=False, float_format=lambda v: f"{v:.6g}" if np.isfinite(v) else "")
    paths = [out / f"{spec.name}.md", out / f"{spec.name}.tex", out / f"{spec.name}.csv"]
    for path, text in zip(paths, (markdown + "\n", latex, table_csv), strict=True):
        atomic_write_text(path, text)
    return TableOutputs(cells=cells, markdown=markdown, paths=paths)

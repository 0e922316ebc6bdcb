"""Protocols: how a table chooses the value of one cell among that cell's runs.

Protocols (``protocol.kind``), applied per (dataset, column) over that cell's runs:

* ``best``: the run with the best ``protocol.by`` (e.g. best SC over a hyperparameter grid,
  or least inertia over restarts with ``mode: min``); its ``metric`` is reported.
* ``best_mean``: runs grouped by hyperparameters (seed excluded); the group with the best mean
  ``by`` is kept and its ``metric`` reported as mean ± std over seeds.
* ``mean_std``: mean ± std of ``metric`` over all runs (std: the population std, ddof = 0, here
  and in ``best_mean``; a cell of one run shows its value alone). Runs whose hyperparameters
  differ (other than the seed and where they ran) are not averaged: the cell's status names
  them (``mixed steps: …``), since a column's ``params`` or a folder of its own keeps them apart.
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

The first five choose among one cell's runs: each is a function here, found by its kind in
:data:`PROTOCOLS`. ``agreement`` chooses two runs and reads their labels, so it is a cell of its
own (:func:`clusterbench.tables.cells.agreement_cell`).

A cell's ``metric`` may also be ``fit_seconds``, the run's training time from its record
(CLAM Table 3 reports it for the run that gives the table's SC).

``protocol.require_all_clusters: true`` first drops runs whose labeling has fewer distinct
clusters than the ``n_clusters`` asked for (metric ``n_found``): spectral clustering on a
near-disconnected affinity can merge all but a few points, and such a labeling's SC is no
comparison with a k-cluster one.

A column (and an agreement ``reference``) may carry its own ``protocol`` keys, each in place of
the table's: a paper that scored one method's runs under another rule is reproduced column by column.

``by`` may be a list of metrics, ranked by their sum (purity + NMI), and ``by`` and ``mode`` may
map the table's metrics to their own (least φ, most ℒ, most purity + NMI in one table).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from clusterbench.errors import UserError
from clusterbench.runs import PLACE, params_without
from clusterbench.validation import is_int


@dataclass(frozen=True)
class CellRuns:
    """What a protocol chooses from: one cell's candidate runs and how they rank."""

    runs: pd.DataFrame  # the candidates (:func:`_candidates`): every ranking metric defined
    grid: pd.Series  # the params of every run of the cell, which a chosen grid point is named against
    protocol: DictConfig
    metric: str
    by: list[str]
    ascending: bool
    paper: float  # the paper's value, which ``best_of`` gives the chance of reaching
    better: str  # max | min: the direction in which ``metric`` reaches ``paper``

    def ranked(self) -> pd.DataFrame:
        """The candidates, best first (the first of runs tied on ``by`` stays first)."""
        return _best_first(self.runs, self.by, self.ascending)


def _best(cell: CellRuns) -> dict:
    best = cell.ranked().iloc[0]
    return {"ours": best[cell.metric], "selected": _grid_point(best["params"], cell.grid)} | _clusters(best)


def _best_mean(cell: CellRuns) -> dict:
    valid, by, metric, grid = cell.runs, cell.by, cell.metric, cell.grid
    groups = valid.assign(
        grid_point=valid["params"].map(lambda p: params_without(p, "random_state", *PLACE))
    ).groupby("grid_point", sort=False)  # runs come in grid order, so ties go to the first point
    # (a point's seeds fitted on two machines are one point: where a fit ran is no choice)
    means = groups[by].mean().sum(axis=1).sort_values(ascending=cell.ascending, kind="stable")
    chosen = groups.get_group(means.index[0])
    selected = _grid_point(chosen["params"].iloc[0], grid)
    # its seeds, not the grid's: a point of one seed (a sweep stopped) may beat one of three
    n_seeds = int(chosen["seed"].nunique())
    return {
        "ours": chosen[metric].mean(),
        "ours_std": _spread(chosen[metric]),
        "selected": selected,
        "n_seeds": n_seeds,
    }


def _mean_std(cell: CellRuns) -> dict:
    # The mean is over seeds of one setting: runs of another (a curve's point, an override, run
    # into the table's folder) would be averaged in silently; the cell says so instead.
    mixed = _mixed(cell)
    if mixed:
        return mixed
    values = cell.runs[cell.metric]
    return {"ours": values.mean(), "ours_std": _spread(values)}


def _mean_best(cell: CellRuns) -> dict:
    best = cell.ranked().iloc[0]
    selected = _grid_point(best["params"], cell.grid)
    return {"ours": cell.runs[cell.metric].mean(), "ours_best": best[cell.metric], "selected": selected}


def _best_of(cell: CellRuns) -> dict:
    """Protocol ``best_of`` on a cell's runs (see the module docstring); ``cell.better`` (max | min)
    is the direction in which ``cell.metric`` reaches ``cell.paper``."""
    mixed = _mixed(cell)  # restarts are seeds of one setting, as _mean_std's mean is over them
    if mixed:
        return mixed
    ranked, protocol, metric, paper = cell.ranked(), cell.protocol, cell.metric, cell.paper
    restarts = protocol.restarts
    if len(ranked) < restarts:
        return {"status": f"{len(ranked)} runs, fewer than restarts={restarts}"}
    weights, values = best_of_weights(len(ranked), restarts), ranked[metric].to_numpy(dtype=float)
    mean = float(weights @ values)
    chosen = {"ours": mean, "ours_std": math.sqrt(float(weights @ (values - mean) ** 2))}
    if not math.isnan(paper):
        within = protocol.get("reach_within", 0.0)
        reached = values <= paper + within if cell.better == "min" else values >= paper - within
        chosen["reach"] = float(weights @ reached)
    return chosen


# The protocols that choose among one cell's runs, by ``protocol.kind`` (in the order error
# messages list them).
PROTOCOLS: dict[str, Callable[[CellRuns], dict]] = {
    "best": _best,
    "best_mean": _best_mean,
    "mean_std": _mean_std,
    "mean_best": _mean_best,
    "best_of": _best_of,
}


def select(runs: pd.DataFrame, protocol, metric: str, paper: float = math.nan, better: str = "max") -> dict:
    """Apply ``protocol`` to one cell's successful runs; returns ours, ours_std, ours_best,
    selected (``best_of``: ours, ours_std and reach, the chance of reaching ``paper`` in the
    ``better`` direction of ``metric``) and, with a value, n_seeds: the seeds of the runs it chose among."""
    by, ascending = ranking(protocol, metric)
    kind = protocol.kind
    if kind not in PROTOCOLS:
        raise UserError(f"unknown table protocol '{kind}'; choose one of {', '.join(PROTOCOLS)}")
    # Checked before the runs are: a spec without restarts errs even where a cell has no runs.
    if kind == "best_of" and not (is_int(protocol.get("restarts")) and protocol.restarts >= 1):
        raise UserError(f"protocol best_of needs restarts, an integer ≥ 1, got {protocol.get('restarts')!r}")
    grid = runs["params"]  # the grid point is named against every run of the cell
    valid = _candidates(runs, protocol, [*by, metric])
    if valid.empty:
        return {}
    chosen = PROTOCOLS[kind](CellRuns(valid, grid, protocol, metric, by, ascending, paper, better))
    if "ours" in chosen:  # the seeds its value was chosen among (a status names no value)
        chosen.setdefault("n_seeds", int(valid["seed"].nunique()))
    return chosen


def n_scored(runs: pd.DataFrame, protocol, metric: str) -> int:
    """The runs of ``runs`` that finished with a value of ``metric`` and of each metric ranking it
    (SC is undefined for a labeling of one cluster): :func:`_candidates`, less the protocol's own
    choice among them (``require_all_clusters`` leaves runs out by design, not for want of a value)."""
    by, _ = ranking(protocol, metric)
    return len(_candidates(runs[runs["status"] == "ok"], {}, [*by, metric]))


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


def _candidates(runs: pd.DataFrame, protocol, columns: list[str]) -> pd.DataFrame:
    """The runs the protocol may choose from: all ``columns`` defined (and all clusters found, if asked)."""
    if any(column not in runs for column in columns):
        return runs.iloc[:0]
    if protocol.get("require_all_clusters", False):
        if "n_found" not in runs:
            raise UserError("protocol.require_all_clusters needs the n_found metric in the records")
        runs = runs[runs["n_found"] == runs["params"].map(lambda p: json.loads(p).get("n_clusters"))]
    return runs.dropna(subset=columns)


def _best_first(runs: pd.DataFrame, by: list[str], ascending: bool) -> pd.DataFrame:
    order = runs[by].sum(axis=1).sort_values(ascending=ascending, kind="stable").index
    return runs.loc[order]


def best_of_weights(n_runs: int, restarts: int) -> np.ndarray:
    """P(the run ranked j-th of ``n_runs``, best first, is the best of ``restarts`` of them drawn
    without replacement) = C(n_runs − 1 − j, restarts − 1) / C(n_runs, restarts)."""
    subsets = math.comb(n_runs, restarts)
    return np.array([math.comb(n_runs - 1 - j, restarts - 1) / subsets for j in range(n_runs)])


def _grid_point(params: str, cell_params: pd.Series) -> str:
    """The hyperparameters that vary across a cell's runs (its grid), as ``k=v`` text, valued as
    in ``params`` (one of the cell's runs). Where a fit ran (device, threads) is not a choice of
    the grid, though runs of one cell may differ in it (CPU and CUDA twins)."""
    chosen = json.loads(params)
    return " ".join(f"{k}={chosen[k]}" for k in _varying(cell_params, *PLACE) if k in chosen)


# The status of a cell whose runs differ in more than the seed (:func:`_mixed`) begins with it.
MIXED_STATUS = "mixed "


def _mixed(cell: CellRuns) -> dict:
    """The status of a cell whose runs differ in more than the seed and where they ran (a curve's
    point, an override run into the table's folder), for the protocols that pool seeds of one
    setting; {} for one setting."""
    differing = _varying(cell.runs["params"], *PLACE)
    if differing:
        names = ", ".join(differing)
        return {"status": f"{MIXED_STATUS}{names}: give the column params, or move the other runs"}
    return {}


def _varying(cell_params: pd.Series, *ignored: str) -> list[str]:
    """The hyperparameters, sorted, whose values differ among a cell's runs (``params`` JSON; a
    name one run lacks differs), the seed (``random_state``) and ``ignored`` aside."""
    settings = [json.loads(p) for p in cell_params.unique()]
    names = sorted({name for setting in settings for name in setting} - {"random_state", *ignored})
    return [name for name in names if any(s.get(name) != settings[0].get(name) for s in settings)]


def _clusters(run: pd.Series) -> dict:
    """The clusters a selected run found and asked for, where its record says (metric n_found)."""
    asked = json.loads(run["params"]).get("n_clusters")
    found = run.get("n_found", math.nan)
    return {"n_found": found, "n_clusters": asked} if is_int(asked) and not pd.isna(found) else {}


def _spread(values: pd.Series) -> float:
    """The population std of a cell's runs; NaN for a single run, which then prints without a
    "± 0.000" that would read as a measured spread."""
    return values.std(ddof=0) if len(values) > 1 else math.nan


def column_protocol(protocol, column) -> DictConfig:
    """The table's protocol with a column's (or agreement reference's) ``protocol`` keys in place
    of its own (replaced whole: a column's ``by: [purity, nmi]`` over a table's per-metric map)."""
    merged = OmegaConf.to_container(protocol) | OmegaConf.to_container(
        column.get("protocol") or OmegaConf.create()
    )
    return OmegaConf.create(merged)


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

"""What one run is, read side: tidy records -> one row per run.

A run is a record file (a method's name and its config hash). A fit scored under several metric
suites counts once (:func:`_one_run_per_fit`), and so does a point and seed recorded twice in one
folder (:func:`_latest_run_per_point`): fitted in two places (on CPU and CUDA, or with two thread
counts), or again after an edit of its configuration that its hyperparameters do not show (a
dataset's settings or description). Tables, figures and the summary all count runs this way.
"""

from __future__ import annotations

import json
import math

import pandas as pd


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
        # pivot_table drops a metric that is NaN in every record (k-means' free_energy): kept, as
        # a metric the runs were scored on, without a value
        runs = runs.join(wide.reindex(columns=ok["metric"].unique()))
    runs = _one_run_per_fit(runs.reset_index(), metrics=list(ok["metric"].unique()))
    # In an order of what the runs are, not of their hashes: the first of runs tied on a
    # protocol's metric is the one chosen (the smallest update_interval of equal DEC runs, say).
    runs = _latest_run_per_point(runs, metrics=list(ok["metric"].unique()))
    what = ["experiment", "dataset", "method", "variant", "params", "seed"]
    keys = [
        (*names, _params_order(params), seed) for *names, params, seed in runs[what].itertuples(index=False)
    ]
    order = sorted(range(len(runs)), key=keys.__getitem__)
    return runs.iloc[order].reset_index(drop=True)


# The hyperparameters that say where a fit ran, not what it fitted.
PLACE = ("device", "n_threads")
# What makes two runs the same point and seed (a fit run twice), ``point`` from :func:`with_points`.
SAME_POINT = ["profile", "dataset", "method", "variant", "seed", "point"]


def with_points(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a ``point`` column: each run's params without where it ran (:data:`PLACE`)."""
    return runs.assign(point=runs["params"].map(lambda p: params_without(p, *PLACE)))


def _params_order(params: str) -> tuple:
    """A sort key of a run's hyperparameters by name, where it ran (:data:`PLACE`) left out (a
    sweep may run on two machines): numbers by value (3 before 100, NaN after them), lists element
    by element, other values by their text."""
    return tuple(
        (name, _value_key(value)) for name, value in sorted(json.loads(params).items()) if name not in PLACE
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


def _latest_run_per_point(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """A point (its hyperparameters but where it ran, :data:`PLACE`) and seed count once in a
    folder: by the latest successful record (the latest record if none succeeded). Two records of
    one point are twins fitted in two places (``force=true`` on the other machine; the runner
    reuses a point fitted elsewhere, :mod:`clusterbench.resume`), or a record and the earlier one
    that an edit of the job's configuration outside the point left beside it (its record is named
    by a hash of the dataset's config too): counting both would weigh a seed twice and average
    two configurations into one cell. Twins elsewhere are one fit, so a metric the kept record
    lacks is its latest successful twin's (a point rescored under another suite on the other
    machine: the first suite's SC stays)."""
    keys = ["experiment", *SAME_POINT]
    frame = with_points(runs).assign(succeeded=runs["status"] == "ok")
    ranked = frame.sort_values(["succeeded", "timestamp"], kind="stable")
    kept = ranked.drop_duplicates(keys, keep="last")
    chosen = runs.loc[kept.index.sort_values()]
    twins = ranked[ranked["succeeded"] & ~ranked.index.isin(kept.index)]
    if metrics and not twins.empty:
        pairs = twins.merge(
            kept[[*keys, "params"]].rename_axis("kept").reset_index(), on=keys, suffixes=("", "_kept")
        )
        elsewhere = pairs[pairs["params"] != pairs["params_kept"]]  # in the order ranked: latest last
        if not elsewhere.empty:
            chosen = chosen.copy()
            chosen.update(elsewhere.groupby("kept")[metrics].last(), overwrite=False)
    return chosen


def params_without(params: str, *names: str) -> str:
    """A run's params (JSON text) without the hyperparameters ``names``, keys sorted."""
    values = json.loads(params)
    for name in names:
        values.pop(name, None)
    return json.dumps(values, sort_keys=True)

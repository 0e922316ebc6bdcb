"""Table specs: reading ``conf/table/<name>.yaml`` (with what it extends and borrows) and checking
that every key names a column, row or metric of the table, and every row, method and metric one
that exists.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from omegaconf import DictConfig, ListConfig, OmegaConf

from clusterbench.catalog import load_option, method_names, option_label, options
from clusterbench.errors import UserError
from clusterbench.runs import SAME_POINT, with_points
from clusterbench.tables.protocols import ranking
from clusterbench.validation import is_int


def per_metric(spec, key: str, metric: str, default):
    """A display setting given for all metrics (``digits: 3``) or per metric (``digits: {sc: 3}``)."""
    value = spec.get(key, default)
    return value.get(metric, default) if isinstance(value, Mapping) else value


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
                + _fix(spec)
            )
        for by_dataset in (spec.get("paper") or {}).values():
            for by_column in (by_dataset or {}).values():
                if by_column is not None and source in by_column and column not in by_column:
                    by_column[column] = by_column[source]


def check_spec(spec: DictConfig) -> None:
    """A user error for a key of the spec that names no column, row or metric of the table (in
    ``gain``, ``win_loss``, ``paper``, ``paper_gain``, ``paper_win_loss``, ``not_run``): its paper
    value (or its reason) would go unprinted without a word. Rows, methods and metrics are checked
    against the records too, when a table is built (:func:`build_table`)."""
    rows, columns = set(spec.rows), set(spec.columns)
    fix = _fix(spec)
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
        "not_run": [("row", rows)],
    }
    for entry, expected in levels.items():
        _check_levels(spec, entry, spec.get(entry), expected)
    where_seeds = [("seeds", spec.get("seeds"))]
    where_seeds += [(f"columns.{name}.seeds", column.get("seeds")) for name, column in spec.columns.items()]
    where_seeds.append(("protocol.reference.seeds", OmegaConf.select(spec, "protocol.reference.seeds")))
    for where, seeds in where_seeds:
        if seeds is not None and not (
            isinstance(seeds, ListConfig) and seeds and all(is_int(seed) for seed in seeds)
        ):
            raise UserError(
                f"table {spec.name}: {where} must be a list of integers (seeds: [0, 1]), got {seeds!r}; {fix}"
            )


def _fix(spec: DictConfig) -> str:
    """The fix a spec's error names: its file (conf/table/, or the user's config folder)."""
    return f"fix {option_label('table', spec.name)}"


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
            f"table {spec.name}: {where} must map each {what} to its entries, got {node!r}; " + _fix(spec)
        )
    for name, child in node.items():
        if name not in known:
            raise UserError(
                f"table {spec.name}: {where}.{name} names no {what} of the table "
                f"({', '.join(map(str, known))}); {_fix(spec)}"
            )
        _check_levels(spec, f"{where}.{name}", child, deeper)


def _check_against_records(spec: DictConfig, records: pd.DataFrame) -> None:
    """A user error for a row, method or metric of the table that names no dataset, method or
    metric that exists (a config's, or one in its records): its cells would all be empty without
    a word."""
    fix = _fix(spec)
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


def _check_one_experiment_per_point(spec: DictConfig, runs: pd.DataFrame) -> None:
    """A user error for a point and seed recorded by two of the table's experiments: within one
    experiment a point counts once (:mod:`clusterbench.runs`), across experiments the records
    could be fits of differently configured data that their hyperparameters do not show, so a
    cell would count the seed twice or average two set-ups, and neither is silently right."""
    if len(spec.experiments) < 2 or runs.empty:
        return
    frame = with_points(runs)
    shared = frame[frame.duplicated(SAME_POINT, keep=False)]
    if shared.empty:
        return
    first = shared.iloc[0]
    same = shared[(shared[SAME_POINT] == first[SAME_POINT]).all(axis=1)]
    raise UserError(
        f"table {spec.name}: {first['method']} on {first['dataset']} at seed {first['seed']} "
        f"(hyperparameters {first['point']}) is recorded by experiments "
        f"{' and '.join(sorted(set(same['experiment'])))}, and {len(shared)} records in all share a "
        "point and seed across experiments; a cell would count such a seed twice: drop the point "
        "from one experiment's grid and delete its records there"
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

"""Every value a job will use, checked before its data loads or its first fit: the keys a dataset
or method file must give, each grid point's hyperparameters and number of clusters, the metric
suite (probed on four points), the per-method settings and the thread count. A user error found
here costs a line, not hours of fitting.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

import numpy as np
from omegaconf import DictConfig, OmegaConf
from sklearn.base import BaseEstimator

from clusterbench.catalog import (
    FILE_KEYS,
    check_file_keys,
    dataset_names,
    locate,
    method_names,
)
from clusterbench.data import Dataset
from clusterbench.errors import HyperparameterError, UserError, first_line, is_invalid_parameter
from clusterbench.metrics import POINTWISE, call_metric
from clusterbench.results import COLUMNS
from clusterbench.validation import is_int, is_real

# What a dataset or method file must give (its name and a method's variant have defaults).
REQUIRED_KEYS = {
    "dataset": ("n_clusters", "source._target_"),
    "method": ("estimator._target_",),
}


# Required keys that may be null: a dataset's n_clusters (null: the number of classes in its y).
NULLABLE_KEYS = {("dataset", "n_clusters")}
_ABSENT = object()


def check_config_keys(cfg: DictConfig) -> None:
    """The job's dataset and method configs hold only keys something reads (a file's typo, or one
    an experiment merged in), and give those they must. (The top level's keys are checked before
    Hydra starts: the command line's by :func:`clusterbench.overrides.unread_key_hint`, an
    experiment file's by :func:`clusterbench.overrides.check_experiment_keys`.)"""
    for group in REQUIRED_KEYS:
        where = f"{group} '{cfg[group].get('name')}' (conf/{group}/ or an override)"
        check_file_keys(group, cfg[group], where)
    check_required_keys(cfg)


def check_required_keys(cfg: DictConfig) -> None:
    for group, keys in REQUIRED_KEYS.items():
        for key in keys:
            value = OmegaConf.select(cfg[group], key, default=_ABSENT)
            if value is _ABSENT or (value is None and (group, key) not in NULLABLE_KEYS):
                raise UserError(
                    f"{group} '{cfg[group].get('name')}' gives no {key}; add it to its file in "
                    f"conf/{group}/ (docs/extending.md)"
                )


def check_point(estimator, method_name: str, data: Dataset) -> None:
    """Check one grid point's hyperparameter values without fitting it: its number of clusters
    on this dataset, and the values the estimator's ``_validate_params`` accepts (scikit-learn's
    hook, which checks them against ``_parameter_constraints``; our estimators implement it), and
    what the dataset's size bounds besides the clusters (a kNN graph's ``n_neighbors``), by the
    estimator's ``_check_n_points(n)`` where it has one."""
    check_n_clusters(estimator, data)
    if not _values_valid(estimator, method_name):
        return  # a check that needs fit failed: fit will tell
    sized = getattr(estimator, "_check_n_points", None)
    if sized is not None:
        try:
            sized(len(data.y))
        except HyperparameterError as exc:
            raise HyperparameterError(
                f"method '{method_name}' on dataset '{data.name}': {first_line(exc)}", exc.parameter
            ) from None


def _values_valid(estimator, method_name: str) -> bool:
    """Raise for a value ``_validate_params`` refuses; False where it fails otherwise (a bug, a
    check that needs fit), True where it passes or the estimator has nothing to check it by."""
    validate = getattr(type(estimator), "_validate_params", None)
    if validate is None or (
        validate is BaseEstimator._validate_params and not hasattr(estimator, "_parameter_constraints")
    ):
        return True
    try:
        estimator._validate_params()
    except Exception as exc:  # anything but an invalid value: fit will tell
        if is_invalid_parameter(exc):
            raise HyperparameterError(f"method '{method_name}': {first_line(exc)}") from None
        return False
    return True


def check_n_clusters(estimator, data: Dataset) -> None:
    """The clusters a point asks for must number between 2 and the dataset's points: its
    ``n_clusters``, and, where other hyperparameters decide the count, the count the estimator's
    ``_clusters_asked()`` gives (a description and the count, or None; the Khatri-Rao set sizes
    h give Πh centroids)."""
    n_points = len(data.y)
    k = getattr(estimator, "n_clusters", None)
    if k is not None and not (is_int(k) and 2 <= k <= n_points):
        raise HyperparameterError(
            f"n_clusters must be an integer between 2 and the number of points ({n_points}) for "
            f"dataset '{data.name}', got {k!r}; give one in that range (dataset.n_clusters=K, or "
            "method.n_clusters=K where the method or its grid sets its own)"
        )
    asked = getattr(estimator, "_clusters_asked", None)
    counted = asked() if asked else None
    if counted is not None and not 2 <= counted[1] <= n_points:
        raise HyperparameterError(
            f"{counted[0]}; it must lie between 2 and the number of points ({n_points}) for dataset "
            f"'{data.name}'"
        )


def metric_options(spec: DictConfig) -> dict:
    """A metric's options from its suite entry (everything but ``_target_``)."""
    return {k: v for k, v in spec.items() if k != "_target_"}


# A four-point labeling every metric can score: a probe for invalid option values.
PROBE = {"X": np.array([[0.0, 0.0], [0.0, 1.0], [5.0, 0.0], [5.0, 1.0]]), "y": np.array([0, 0, 1, 1])}


def check_metric_suite(metrics: DictConfig) -> None:
    """Every metric of the suite can be found, takes the options given, and accepts their values
    (probed on a four-point labeling): a user error before any fit, not a failure recorded at every
    grid point after it."""
    if not metrics:
        raise UserError(
            "the metric suite is empty; choose one (e.g. metrics=default, see `clusterbench list`)"
        )
    for name, spec in metrics.items():
        if name in COLUMNS:  # a table puts each metric in a column beside these
            raise UserError(f"metric '{name}' takes the name of a record column; rename it in the suite")
        target = spec.get("_target_") if isinstance(spec, Mapping) else None
        if not target:
            raise UserError(
                f"metric '{name}' needs _target_, an importable function (e.g. clusterbench.metrics.nmi)"
            )
        try:
            function = locate(target)
            signature = inspect.signature(function)
        except (ImportError, TypeError, ValueError) as exc:  # a typo, not callable
            raise UserError(
                f"metric '{name}': _target_ '{target}' is not an importable function ({first_line(exc)}); "
                "fix the path (e.g. clusterbench.metrics.nmi)"
            ) from None
        probe = {**PROBE, "labels": PROBE["y"], "estimator": None, "random_state": 0}
        given = metric_options(spec)
        ignore_label = given.get("ignore_label")
        if ignore_label is not None and not is_int(ignore_label):
            raise UserError(
                f"metric '{name}': ignore_label must be one integer label or null, got {ignore_label!r}"
            )
        options = {k: v for k, v in given.items() if k != "ignore_label"}
        parameters = signature.parameters
        if ignore_label is not None and not set(POINTWISE) & set(parameters):
            raise UserError(
                f"metric '{name}' reads no per-point array ({', '.join(POINTWISE)}), only the fitted "
                "model, so ignore_label cannot apply to it; remove ignore_label from it"
            )
        keywords = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        named = [p for p in parameters if parameters[p].kind is not inspect.Parameter.VAR_KEYWORD]
        settable = [p for p in named if p not in probe]  # the runner passes the others by name
        # **kwargs takes any other option; a name the runner passes would collide
        unknown = sorted(
            set(options) & (set(named) - set(settable)) if keywords else set(options) - set(settable)
        )
        if unknown:
            why = " (the runner passes it)" if set(unknown) <= set(probe) else ""
            also = " and any other keyword (**kwargs)" if keywords else ""
            raise UserError(
                f"metric '{name}' has no option {', '.join(map(repr, unknown))}{why}; "
                f"its options are: {', '.join([*settable, 'ignore_label'])}{also}"
            )
        try:
            call_metric(function, probe, given)
        except Exception as exc:  # only an invalid value is the user's: other errors show on real data
            if is_invalid_parameter(exc):
                raise HyperparameterError(f"metric '{name}': {first_line(exc)}") from None


def check_keyed_maps(cfg: DictConfig) -> None:
    """The settings keyed by method name (``grids``, ``method_seeds``, ``method_overrides``, a
    ``timeout_s`` map) or by dataset name (``dataset_overrides``, the second level of
    ``method_overrides``): each a map, whose keys name a method or dataset (one that names none
    would be ignored without a word), and, for this job's method and dataset, values of the shape
    the runner reads; ``method.max_samples`` too."""
    methods, datasets = {cfg.method.name, *method_names()}, {cfg.dataset.name, *dataset_names()}
    for setting, kind in _KEYED_MAPS.items():
        value = cfg.get(setting)
        if value is None or (setting == "timeout_s" and not isinstance(value, Mapping)):
            continue  # timeout_s: seconds for every method (fit_timeout checks the number)
        _check_map(setting, value, kind, methods if kind == "method" else datasets)
    for method, per_dataset in (cfg.get("method_overrides") or {}).items():
        _check_map(f"method_overrides.{method}", per_dataset, "dataset", datasets)
    tuned = OmegaConf.select(cfg, f"method_overrides.{cfg.method.name}.{cfg.dataset.name}")
    if tuned is not None and not isinstance(tuned, Mapping):
        raise UserError(
            f"method_overrides.{cfg.method.name}.{cfg.dataset.name} must be a map {{hyperparameter: "
            f"value}}, got {tuned!r}"
        )
    merged = (cfg.get("dataset_overrides") or {}).get(cfg.dataset.name)
    if merged is not None and not isinstance(merged, Mapping):
        raise UserError(
            f"dataset_overrides.{cfg.dataset.name} must be a map {{dataset key: value}}, got {merged!r}"
        )
    keys = sorted(set(cfg.dataset) | set(FILE_KEYS["dataset"]) - {"defaults"})
    unknown = sorted(set(merged or {}) - set(keys))
    if unknown:
        raise UserError(
            f"dataset_overrides.{cfg.dataset.name}.{unknown[0]}: dataset '{cfg.dataset.name}' has no key "
            f"'{unknown[0]}'; its keys are: {', '.join(keys)}"
        )
    method_seeds(cfg)
    cap = cfg.method.get("max_samples")
    if cap is not None and not (is_int(cap) and cap >= 1):
        raise UserError(f"method.max_samples must be an integer ≥ 1 or null, got {cap!r}")


def method_seeds(cfg: DictConfig) -> list[int] | None:
    """The only seeds the job's method runs at (``method_seeds.<method>``), None for every seed."""
    seeds = (cfg.get("method_seeds") or {}).get(cfg.method.name)
    if seeds is not None and not (
        OmegaConf.is_list(seeds) and all(is_int(seed) and seed >= 0 for seed in seeds)
    ):
        raise UserError(
            f"method_seeds.{cfg.method.name} must be a list of seeds (integers ≥ 0), got {seeds!r}"
        )
    return None if seeds is None else list(seeds)


# Each setting keyed by name, and what its keys name.
_KEYED_MAPS = {
    "grids": "method",
    "method_seeds": "method",
    "timeout_s": "method",
    "method_overrides": "method",
    "dataset_overrides": "dataset",
}


def _check_map(setting: str, value, kind: str, names: set[str]) -> None:
    if not isinstance(value, Mapping):
        raise UserError(f"{setting} must be a map {{{kind} name: ...}}, got {value!r}")
    unknown = sorted(set(value) - names)
    if unknown:
        raise UserError(
            f"{setting}.{unknown[0]} names no {kind}; keys are the {kind}s' names (their config's "
            f"name:): {', '.join(sorted(names))}"
        )


def check_threads(threads) -> int | None:
    """``threads`` (config key): an integer ≥ 1, or None for torch's default of one per core."""
    if threads is not None and not (is_int(threads) and threads >= 1):
        raise UserError(f"threads must be an integer ≥ 1 or null, got {threads!r}")
    return threads


def fit_timeout(timeout_s, method_name: str) -> float | None:
    """``timeout_s`` (config key) for one method's fits: seconds, or None for no limit.

    ``timeout_s`` is a number for every fit, or a map ``{method name: seconds}`` that limits only
    the methods it names: an experiment caps the one method that can hang (spectral's eigensolver)
    without cutting short the fits that are long by nature (k-means with 1000 restarts on 60k points).
    """
    limit = timeout_s.get(method_name) if isinstance(timeout_s, Mapping) else timeout_s
    if limit is not None and not (is_real(limit) and limit > 0):
        raise UserError(
            f"timeout_s for method '{method_name}' must be seconds > 0 or null, got {limit!r} "
            "(timeout_s: seconds for every method, or a map {method name: seconds})"
        )
    return limit

"""One job: check its settings and load the dataset → for each point of the method's grid, ask the
ledger (:mod:`clusterbench.resume`) → fit and score it or rescore a stored fit
(:mod:`clusterbench.fitting`) → write its record (:mod:`clusterbench.results`).

Each fitted point's predicted labels are stored beside its record (see :mod:`clusterbench.results`).
"""

from __future__ import annotations

import inspect
import json
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict
from sklearn.model_selection import ParameterGrid

from clusterbench.catalog import check_source, compose_config, locate
from clusterbench.checks import (
    check_config_keys,
    check_keyed_maps,
    check_metric_suite,
    check_point,
    check_threads,
    fit_timeout,
    method_seeds,
    metric_options,
)
from clusterbench.data import Dataset, load_dataset
from clusterbench.errors import HyperparameterError, UserError, first_line
from clusterbench.fitting import (
    PointResult,
    fit_and_score,
    fit_progress,
    limit_threads,
    recorded_result,
    rescore,
)
from clusterbench.progress import progress_bar
from clusterbench.results import (
    code_version,
    config_hash,
    note_outcomes,
    processor,
    record_path,
    write_record,
)
from clusterbench.resume import Entry, Ledger
from clusterbench.validation import check_device, is_int, resolve_device


def dataset_config(cfg: DictConfig) -> DictConfig:
    """The dataset config with the experiment's per-dataset overrides (e.g. a paper's split) merged in."""
    overrides = (cfg.get("dataset_overrides") or {}).get(cfg.dataset.name)
    return OmegaConf.merge(cfg.dataset, overrides) if overrides else cfg.dataset


def method_config(cfg: DictConfig) -> DictConfig:
    """The method config with the experiment's hyperparameters for this dataset merged in.

    ``method_overrides.<method name>.<dataset name>: {hyperparameter: value}`` holds per-dataset
    settings a paper reports (e.g. CLAM Table 6); grid points still override them.
    """
    tuned = OmegaConf.select(cfg, f"method_overrides.{cfg.method.name}.{cfg.dataset.name}")
    if not tuned:
        return cfg.method
    method = OmegaConf.create(OmegaConf.to_container(cfg.method, resolve=True))
    return OmegaConf.merge(method, {"estimator": tuned})


def method_grid(cfg: DictConfig) -> list[dict]:
    """Grid points for this method: ``grids.<method name>`` (a dict of lists, or a list of them)."""
    grid = (cfg.get("grids") or {}).get(cfg.method.name)
    if grid is None:
        return [{}]
    if not grid:  # given, but empty: it would run the method's default point unasked
        raise UserError(
            f"grids.{cfg.method.name} is empty; give it values ({{param: [values]}}) or leave it out"
        )
    try:
        return list(ParameterGrid(OmegaConf.to_container(grid, resolve=True)))
    except (TypeError, ValueError) as exc:  # a scalar where a list of values belongs, or []
        raise UserError(f"grids.{cfg.method.name}: {first_line(exc)}") from None


def build_estimator(
    method: DictConfig, params: dict, data: Dataset, seed: int, device: str, threads: int | None = 1
):
    """Instantiate the estimator with grid ``params``, the dataset's k (as ``n_components`` to one
    that takes no ``n_clusters``, as scikit-learn's mixtures), the seed, the device and
    the job's ``threads`` (as ``n_threads``, None: torch's default), each where the estimator
    takes it and neither the method config nor the grid sets it.

    ``device`` (auto|cpu|cuda) is resolved only for estimators that take one, so CPU-only
    baselines never import torch. Unknown hyperparameter names are a user error naming the valid ones.
    """
    target = method.estimator._target_
    try:
        estimator_class = locate(target)
    except ImportError as exc:  # a typo, or a package not installed
        top = target.split(".")[0]
        # The console script does not search the folder it runs from, where a user's module may
        # lie: not found by its own name though its file is here, so this folder is not searched.
        unsearched = exc.name == top  # locate names the module it did not find
        candidates = (Path(f"{top}.py"), Path(top, "__init__.py")) if unsearched else ()
        here = next((path for path in candidates if path.is_file()), None)
        fix = (
            f"{here} lies in this folder, which is not searched: run with PYTHONPATH=$PWD"
            if here is not None
            else "check the name, and that its package is installed or on PYTHONPATH"
        )
        cause = first_line(exc)
        raise UserError(f"method '{method.name}': cannot import {target} ({cause}); {fix}") from None
    if not isinstance(estimator_class, type):
        raise UserError(f"method '{method.name}': {target} is not a class; name an estimator class")
    parameters = inspect.signature(estimator_class.__init__).parameters
    accepted = set(parameters) - {"self"}
    given = set(method.estimator) - {"_target_"} | set(params)
    unknown = sorted(given - accepted)
    if unknown:
        raise UserError(
            f"method '{method.name}' has no hyperparameter {', '.join(map(repr, unknown))}; "
            f"its hyperparameters are: {', '.join(sorted(accepted))}"
        )
    # An estimator's n_threads overrides limit_threads' torch count during its fit: it gets the job's.
    injected = {"n_clusters": data.n_clusters, "random_state": seed, "n_threads": threads}
    if "n_clusters" not in accepted:  # scikit-learn's mixtures (GaussianMixture) count theirs as n_components
        injected["n_components"] = data.n_clusters
    if "device" in accepted and "device" not in given:
        injected["device"] = resolve_device(device)
    extra = {k: v for k, v in injected.items() if k in accepted and k not in given}
    required = [
        name
        for name, parameter in parameters.items()
        if name != "self"
        and parameter.default is inspect.Parameter.empty
        and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    ]
    missing = [name for name in required if name not in given and name not in extra]
    if missing:
        raise UserError(
            f"method '{method.name}': {target} has no default for {', '.join(map(repr, missing))}; "
            f"give it under estimator: in the method's config file, or as method.{missing[0]}=VALUE"
        )
    # _convert_: list hyperparameters (e.g. Khatri-Rao set sizes h) arrive as lists, not ListConfig
    return instantiate(method.estimator, **params, **extra, _convert_="all")


def estimator_params(estimator) -> dict:
    """The estimator's hyperparameters as JSON-friendly values (what a record stores as ``params``)."""
    return json.loads(json.dumps(estimator.get_params(deep=False), default=str))


def named_by(estimator, hyperparameters: dict) -> dict:
    """The hyperparameters a point's record is named (hashed) by: all of them, less each one the
    estimator lists in ``_params_added_later`` (name → the value that does what the estimator did
    before it had the parameter) while it holds that value. Adding an option to a method then
    leaves the names and recorded ``params`` of its earlier records, which a rerun finds and
    tables group with the new ones; only points that use it are new."""
    later = getattr(type(estimator), "_params_added_later", {})
    return {k: v for k, v in hyperparameters.items() if k not in later or v != later[k]}


def _rows(base: dict, scores: dict, metrics: DictConfig, status: str, error: str = "") -> list[dict]:
    if status != "ok":
        return [{**base, "metric": "", "metric_params": "", "value": "", "status": status, "error": error}]
    return [
        {
            **base,
            "metric": name,
            "metric_params": json.dumps(metric_options(metrics[name])),
            "value": value,
            "status": "ok",
            "error": "",
        }
        for name, value in scores.items()
    ]


def job_identity(cfg: DictConfig, experiment: str, dataset_cfg: DictConfig) -> dict:
    """What, beside the method point, determines a job's numbers: its record's hash is of both."""
    return {
        "experiment": experiment,
        "profile": cfg.profile.name,
        "max_samples": cfg.profile.get("max_samples"),
        "dataset": OmegaConf.to_container(dataset_cfg, resolve=True),
        "seed": cfg.seed,
        "metrics": OmegaConf.to_container(cfg.metrics, resolve=True),
    }


def job_settings(cfg: DictConfig, choices) -> str:
    """Complete a composed job config as every job reads it, and return its experiment's name
    (``adhoc`` for none): ``results_dir`` made absolute, a dataset's or method's name defaulting to
    its file's (its group choice), a method's variant to ``default``."""
    from hydra.utils import to_absolute_path

    experiment = choices.get("experiment")
    with open_dict(cfg):
        cfg.results_dir = to_absolute_path(cfg.results_dir)
        for group in ("dataset", "method"):
            cfg[group].setdefault("name", choices[group])
        cfg.method.setdefault("variant", "default")
    return experiment if experiment not in (None, "null") else "adhoc"


def compose_job(results_dir: Path, profile: str, experiment: str, dataset: str, method: str) -> DictConfig:
    """The job config ``clusterbench run`` composes for one (profile, experiment, dataset, method),
    outside the app (the seed is the config's default), completed by :func:`job_settings`;
    ``experiment`` ``adhoc`` for none. Hand it to :func:`prepare_job` for the job itself."""
    choices = {
        "experiment": None if experiment == "adhoc" else experiment,
        "dataset": dataset,
        "method": method,
    }
    overrides = [f"results_dir={results_dir}", f"profile={profile}", f"dataset={dataset}", f"method={method}"]
    if choices["experiment"]:
        overrides.append(f"experiment={experiment}")
    cfg = compose_config(overrides)
    job_settings(cfg, choices)
    return cfg


@dataclass
class Job:
    """One (dataset, method, seed) job, checked and with its data loaded: what its grid points
    share, and how a point's record is named (:func:`prepare_job`)."""

    cfg: DictConfig
    experiment: str
    data: Dataset
    method: DictConfig
    identity: dict  # what, beside the method point, the record's hash is of (:func:`job_identity`)
    threads: int | None
    timeout: float | None

    def record_of(self, method_point: dict) -> Path:
        key = config_hash({**self.identity, "method": method_point})
        cfg = self.cfg
        return record_path(
            Path(cfg.results_dir), cfg.profile.name, self.experiment, self.data.name, self.method.name, key
        )

    def fit_hash_of(self, method_point: dict, experiment: str | None = None) -> str:
        """The hash of a fit whatever scores it: the point under another metric suite shares it.
        With ``experiment``: the hash the same fit has in that experiment's records (the same
        data settings, seed, profile and method point, under the other experiment's name)."""
        identity = {k: v for k, v in self.identity.items() if k != "metrics"}
        if experiment is not None:
            identity["experiment"] = experiment
        return config_hash({**identity, "method": method_point})

    def estimator(self, params: dict):
        return build_estimator(self.method, params, self.data, self.cfg.seed, self.cfg.device, self.threads)

    def setting(self, parameter: str, params: dict) -> str:
        """The override that sets ``parameter`` at grid point ``params``, by precedence: the grid,
        then the experiment's per-dataset value (``method_overrides``), then the method's."""
        name = self.method.name
        if parameter in params:
            return f"grids.{name}.{parameter}=[...]"
        tuned = f"method_overrides.{name}.{self.data.name}.{parameter}"
        if OmegaConf.select(self.cfg, tuned) is not None:
            return f"{tuned}=..."
        return f"method.{parameter}=..."

    def point(self, estimator) -> tuple[dict, dict]:
        """(all the estimator's hyperparameters, the method point its record is named by)."""
        hyper = estimator_params(estimator)
        point = {"target": self.method.estimator._target_, "variant": self.method.variant}
        return hyper, {**point, "params": named_by(estimator, hyper)}


def prepare_job(cfg: DictConfig, experiment: str, load=None) -> Job | None:
    """Every check of one job's settings, then its data (``load``: :func:`load_dataset` unless
    given a caching stand-in); None for a seed the method does not run at (``method_seeds``)."""
    seed = cfg.seed
    if not (is_int(seed) and seed >= 0):
        raise UserError(f"seed must be an integer ≥ 0, got {seed!r}")
    for setting in ("force", "retry_failed"):
        if not isinstance(cfg.get(setting, False), bool):
            raise UserError(f"{setting} must be true or false, got {cfg.get(setting)!r}")
    check_config_keys(cfg)
    check_keyed_maps(cfg)
    seeds = method_seeds(cfg)
    if seeds is not None and seed not in seeds:
        return None  # a method that ignores the seed (e.g. DBSCAN) runs at the listed seeds only
    # Checked before the dataset loads, which may take minutes.
    check_device(cfg.device)
    if cfg.device == "cuda":
        resolve_device("cuda")  # a scikit-learn method too: it would serve the CPU result as cuda's
    dataset_cfg = dataset_config(cfg)
    check_source(dataset_cfg)
    check_metric_suite(cfg.metrics)
    threads = check_threads(cfg.get("threads"))
    data = (load or load_dataset)(dataset_cfg, max_samples=cfg.profile.get("max_samples"))
    method = method_config(cfg)
    timeout = fit_timeout(cfg.get("timeout_s"), method.name)
    identity = job_identity(cfg, experiment, dataset_cfg)
    return Job(cfg, experiment, data, method, identity, threads, timeout)


def seeds_not_run(cfg: DictConfig) -> str:
    """Why :func:`prepare_job` gave no job: the method runs at the listed seeds only (``method_seeds``)."""
    seeds = method_seeds(cfg)
    if not seeds:
        return f"method_seeds.{cfg.method.name} is empty"
    return (
        f"method '{cfg.method.name}' runs only at seed(s) {seeds} (method_seeds), so seed={cfg.seed} "
        f"fits nothing; use seed={seeds[0]}"
    )


def checked_grid(job: Job) -> list[dict]:
    """The job's grid points, every one checked before the first fit: a value that one point of a
    long sweep holds stops it before hours of fitting, not after. The fit loop builds each
    estimator again (cheap) rather than keeping these: a list would hold every fitted one, and its
    attributes (spectral's n x n affinity matrix), until the job ends."""
    grid = method_grid(job.cfg)
    for params in grid:
        try:
            check_point(job.estimator(params), job.method.name, job.data)
        except HyperparameterError as exc:
            if exc.parameter is None:
                raise
            raise HyperparameterError(f"{exc} ({job.setting(exc.parameter, params)})") from None
    return grid


def recorded_outcomes(cfg: DictConfig, experiment: str, load=None) -> list[tuple] | None:
    """(status, True, record) of every grid point of the job when each is done as :func:`run_job`
    would find it (:meth:`Ledger.recorded`); None when any point would be fitted or rescored. What
    lets a finished sweep resume in seconds: its jobs need not be composed and launched one by one."""
    job = prepare_job(cfg, experiment, load)
    if job is None:
        return []
    ledger = Ledger(job)
    outcomes = []
    for params in checked_grid(job):  # a sweep's check refuses a bad value before any job fits
        _, point = job.point(job.estimator(params))
        outcome = ledger.recorded(point)
        if outcome is None:
            return None
        outcomes.append(outcome)
    return outcomes


def run_job(cfg: DictConfig, experiment: str = "adhoc", report=None) -> list[PointResult]:
    """Run every grid point of one (dataset, method, seed) job; return what each point did.

    ``report`` (optional) is called with each point's result as soon as it is known.
    """
    job = prepare_job(cfg, experiment)
    if job is None:
        return []
    grid = checked_grid(job)
    ledger, outcomes = Ledger(job), []
    label = f"{job.data.name}/{job.method.name}"
    # Set once for the job: entering the limit costs ~5 ms, a sweep of small fits has thousands.
    with limit_threads(job.threads):
        for params in progress_bar(grid, shown=len(grid) > 1, desc=label):
            estimator = job.estimator(params)
            hyper, point = job.point(estimator)
            entry = ledger.entry(point)
            if entry.done:
                outcome = recorded_result(params, entry.done[1], entry.done[0])
            else:
                outcome = _fit_and_record(job, estimator, params, point, entry)
            outcome.hyperparameters = hyper
            outcomes.append(outcome)
            if report:
                report(outcome)
    note_outcomes((outcome.status, outcome.earlier, outcome.path) for outcome in outcomes)
    return outcomes


def _fit_and_record(job: Job, estimator, params: dict, point: dict, entry: Entry) -> PointResult:
    """Fit the point, or score the stored fit its entry names, and write its record."""
    cfg, data, method = job.cfg, job.data, job.method
    device = getattr(estimator, "device", "cpu")
    base = {
        "experiment": job.experiment,
        "profile": cfg.profile.name,
        "dataset": data.name,
        "method": method.name,
        "variant": method.variant,
        "seed": cfg.seed,
        # As named: a record of a point at a later-added parameter's former value holds the
        # params its earlier records hold, so tables see one grid point, not two.
        "params": json.dumps(point["params"], sort_keys=True),
        "device": device,
        "processor": processor(device),
        "config_hash": entry.path.stem,
        "fit_hash": entry.fit_hash,
        "data_digest": data.digest,
        "clusterbench_version": code_version(),
    }
    if entry.stored is not None:
        # Where the labels were computed, not where they are scored (the stored fit's record).
        base |= {"device": entry.stored.device, "processor": entry.stored.processor}
        outcome = rescore(entry.stored, cfg.metrics, data, cfg.seed, params)
    else:
        # A method with bars of its own (the deep family's epochs) gets no elapsed-time bar.
        shown = not getattr(estimator, "reports_progress", False)
        with fit_progress(entry.path.parent, f"{data.name}/{method.name} seed={cfg.seed}", shown):
            outcome = fit_and_score(estimator, method, cfg.metrics, data, cfg.seed, params, job.timeout)
        if entry.stale:
            outcome.warnings.insert(0, "the data changed since this point's record: fitted again")
    outcome.path = entry.path
    base["fit_seconds"] = outcome.fit_seconds
    base["timestamp"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    status = "ok" if outcome.status == "rescored" else outcome.status
    rows = _rows(base, outcome.scores, cfg.metrics, status, outcome.error)
    write_record(entry.path, rows, labels=outcome.labels, trace=outcome.trace)
    return outcome


# The run line shows these four to four decimals, then what else the suite scores (its paper's
# own, a user's new metric) to four significant digits, but not what every suite holds beside them.
SUMMARY_METRICS = ("sc", "nmi", "ari", "acc")
ROUTINE_METRICS = ("purity", "inertia", "n_found")


def _score_text(value, headline: bool) -> str | None:
    """A score as the run line shows it: a headline metric to four decimals, another whole if it is
    (a count) or else to four significant digits; None for what is no number (a user's metric may
    return anything: its record keeps it, the line leaves it out)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if headline:
        return f"{value:.4f}"
    # counts (the clusters found, Khatri-Rao's parameters) are scored as floats
    whole = isinstance(value, numbers.Integral) or (math.isfinite(value) and float(value).is_integer())
    return f"{int(value):d}" if whole else f"{value:.4g}"


def method_label(method: DictConfig) -> str:
    """``clam``, or ``clam[eq8]`` for a variant other than the default: how a summary line names it."""
    variant = method.get("variant", "default")
    return method.name if variant == "default" else f"{method.name}[{variant}]"


def summary_line(
    dataset: str, method: str, seed: int, outcome: PointResult, given: Sequence[str] = ()
) -> str:
    """``zoo  kmeans  seed=0  init=k-means++ | SC 0.374  NMI 0.833 ... | fit 2.31 s``: the scores
    of :data:`SUMMARY_METRICS` and of the suite's others but :data:`ROUTINE_METRICS`; the
    hyperparameters shown are the grid point's and those named in ``given`` (set on the command
    line), each with the value fitted (an experiment's tuned value wins over the command line's)."""
    fitted = outcome.hyperparameters
    shown = {name: fitted[name] for name in given if name in fitted} | outcome.params
    grid = " ".join(f"{k}={v}" for k, v in shown.items())
    head = f"{dataset}  {method}  seed={seed}" + (f"  {grid}" if grid else "")
    if outcome.status in {"failed", "skipped", "timeout"}:
        # A recorded skip or timeout names the limit it ran under, which may not be today's.
        again = {"failed": "retry_failed=true", "skipped": "method.max_samples ≥ n"}.get(
            outcome.status, "a timeout_s above that"
        )
        earlier = f" (recorded earlier; {again} or force=true runs it again)" if outcome.earlier else ""
        return f"{head} | {outcome.status.upper()}: {outcome.error}{earlier}"
    scores = outcome.scores
    headline = [(name, scores[name]) for name in SUMMARY_METRICS if name in scores]
    own = [(name, value) for name, value in scores.items() if name not in SUMMARY_METRICS + ROUTINE_METRICS]
    shown = "  ".join(
        f"{name.upper()} {text}"
        for name, value in headline + own
        if (text := _score_text(value, name in SUMMARY_METRICS)) is not None
    )
    tail = {"cached": " (cached)", "rescored": " (rescored from its stored labels)"}.get(outcome.status, "")
    if outcome.warnings:
        more = f" (+{len(outcome.warnings) - 1} more)" if len(outcome.warnings) > 1 else ""
        tail += f"  [warning: {outcome.warnings[0]}{more}]"
    return f"{head} | {shown} | fit {outcome.fit_seconds:.2f} s{tail}"

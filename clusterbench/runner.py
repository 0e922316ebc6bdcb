"""One job: load the dataset → fit the method at each point of its grid → score → write records.

Each fitted point's predicted labels are stored beside its record (see :mod:`clusterbench.results`).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import signal
import sys
import threading
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict
from sklearn.model_selection import ParameterGrid
from tqdm.auto import tqdm

from clusterbench.catalog import check_source, locate
from clusterbench.checks import (
    check_method_keys,
    check_metric_suite,
    check_point,
    check_required_keys,
    check_threads,
    fit_timeout,
    metric_options,
)
from clusterbench.data import Dataset, load_dataset
from clusterbench.errors import HyperparameterError, UserError, first_line, is_invalid_parameter
from clusterbench.metrics import call_metric
from clusterbench.results import (
    adopt_typed_record,
    code_version,
    complete_record,
    config_hash,
    finished_record,
    note_outcomes,
    read_labels,
    read_record,
    read_records,
    record_path,
    records_by_fit,
    typed_hash,
    write_record,
)
from clusterbench.validation import check_device, is_int, resolve_device, torch_threads

# The devices a fit resolves to (device=auto becomes one of them).
DEVICES_RUN = ("cpu", "cuda")


@dataclass
class PointResult:
    """What one grid point produced (``status``: ok, failed, skipped, timeout, cached, or rescored:
    a fit recorded under another metric suite, scored with this one from its stored labels).

    ``labels`` are the fitted estimator's ``labels_`` (only for a point fitted now, status ok);
    ``hyperparameters`` all of the estimator's, as its record holds them.
    """

    params: dict
    status: str
    scores: dict = field(default_factory=dict)
    fit_seconds: float = float("nan")
    error: str = ""
    path: Path | None = None
    warnings: list[str] = field(default_factory=list)
    labels: np.ndarray | None = None
    hyperparameters: dict = field(default_factory=dict)
    earlier: bool = False  # read from a record written by an earlier run (cached, or stopped then)


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
    if not grid:
        return [{}]
    try:
        return list(ParameterGrid(OmegaConf.to_container(grid, resolve=True)))
    except (TypeError, ValueError) as exc:  # a scalar where a list of values belongs, or []
        raise UserError(f"grids.{cfg.method.name}: {first_line(exc)}") from None


def build_estimator(
    method: DictConfig, params: dict, data: Dataset, seed: int, device: str, threads: int | None = 1
):
    """Instantiate the estimator with grid ``params``, the dataset's k, the seed, the device and
    the job's ``threads`` (as ``n_threads``, None: torch's default), each where the estimator
    takes it and neither the method config nor the grid sets it.

    ``device`` (auto|cpu|cuda) is resolved only for estimators that take one, so CPU-only
    baselines never import torch. Unknown hyperparameter names are a user error naming the valid ones.
    """
    target = method.estimator._target_
    try:
        estimator_class = locate(target)
    except ImportError as exc:  # a typo, or a package not installed
        raise UserError(
            f"method '{method.name}': cannot import {target} ({first_line(exc)}); "
            "check the name, and that its package is installed or on PYTHONPATH"
        ) from None
    if not isinstance(estimator_class, type):
        raise UserError(f"method '{method.name}': {target} is not a class; name an estimator class")
    accepted = set(inspect.signature(estimator_class.__init__).parameters) - {"self"}
    given = set(method.estimator) - {"_target_"} | set(params)
    unknown = sorted(given - accepted)
    if unknown:
        raise UserError(
            f"method '{method.name}' has no hyperparameter {', '.join(map(repr, unknown))}; "
            f"its hyperparameters are: {', '.join(sorted(accepted))}"
        )
    # An estimator's n_threads overrides limit_threads' torch count during its fit: it gets the job's.
    injected = {"n_clusters": data.n_clusters, "random_state": seed, "n_threads": threads}
    if "device" in accepted and "device" not in given:
        injected["device"] = resolve_device(device)
    extra = {k: v for k, v in injected.items() if k in accepted and k not in given}
    # _convert_: list hyperparameters (e.g. Khatri-Rao set sizes h) arrive as lists, not ListConfig
    return instantiate(method.estimator, **params, **extra, _convert_="all")


def score(
    metrics: DictConfig, data: Dataset, labels: np.ndarray, seed: int, estimator=None
) -> dict[str, float]:
    """Every metric of the suite on ``labels``; a metric may also read the fitted ``estimator``
    (e.g. its own objective)."""
    available = {"X": data.X, "y": data.y, "labels": labels, "estimator": estimator, "random_state": seed}
    scores = {}
    for name, spec in metrics.items():
        try:
            scores[name] = call_metric(locate(spec._target_), available, metric_options(spec))
        except Exception as exc:
            raise MetricError(name) from exc
    return scores


class MetricError(Exception):
    """Raised by :func:`score` from the error of metric ``name``, so a failure names its metric."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


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


@contextlib.contextmanager
def limit_threads(threads: int | None):
    """Within the block, fits and metrics get ``threads`` CPU threads: torch's (if the estimator's
    module has loaded torch at all), and the BLAS and OpenMP pools of NumPy and scikit-learn
    (threadpoolctl); each count is restored after it. None leaves every library at its default,
    one thread per core. A torch estimator's own ``n_threads`` holds during its fit
    (:func:`build_estimator` gives it ``threads``).

    Why 1 by default: the torch methods run many small kernels; with one thread per core, a
    second busy process on the machine (another job of a joblib sweep, a test run) leaves torch's
    threads waiting on each other, and a fit runs up to 10x slower (CLAM on Yale: 116 s against
    14 s for 5 epochs on 2 busy cores). Larger problems on an idle machine gain from more. The
    BLAS pool is limited too because its sums depend on its thread count: spectral clustering on a
    near-disconnected graph, or a k-means restart on Soybean, ends elsewhere at two threads than
    at one, so a record is reproducible only at a stated count. Torch is looked up, not imported:
    a job of a scikit-learn baseline never loads it.
    """
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    torch_limit = torch_threads(threads) if "torch" in sys.modules else contextlib.nullcontext()
    with torch_limit, threadpool_limits(limits=threads):
        yield


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

    def fit_hash_of(self, method_point: dict) -> str:
        """The hash of a fit whatever scores it: the point under another metric suite shares it."""
        identity = {k: v for k, v in self.identity.items() if k != "metrics"}
        return config_hash({**identity, "method": method_point})

    def estimator(self, params: dict):
        return build_estimator(self.method, params, self.data, self.cfg.seed, self.cfg.device, self.threads)

    def point(self, estimator) -> tuple[dict, dict]:
        """(all the estimator's hyperparameters, the method point its record is named by)."""
        hyper = estimator_params(estimator)
        point = {"target": self.method.estimator._target_, "variant": self.method.variant}
        return hyper, {**point, "params": named_by(estimator, hyper)}

    def finished(self, point: dict, path: Path) -> tuple[tuple[Path, object] | None, bool]:
        """(path, record) of the point's finished record (at ``path``, its :meth:`record_of`), or
        of its successful twin on the other device (unless force=true, and unless the limit that
        stopped it was raised), and whether that record was fitted on other data (stale)."""
        if self.cfg.force:
            return None, False
        twins = [*map(self.record_of, _on_other_device(point))]
        found = _finished_point(path, twins, self.cfg.get("retry_failed", False))
        limit = self.method.get("max_samples")
        if found and _limit_raised(found[1].iloc[0], len(self.data.y), limit, self.timeout):
            found = None
        return found, found is not None and _data_changed(found[1], self.data.digest)


def prepare_job(cfg: DictConfig, experiment: str, load=None) -> Job | None:
    """Every check of one job's settings, then its data (``load``: :func:`load_dataset` unless
    given a caching stand-in); None for a seed the method does not run at (``method_seeds``)."""
    seed = cfg.seed
    if not (is_int(seed) and seed >= 0):
        raise UserError(f"seed must be an integer ≥ 0, got {seed!r}")
    for setting in ("force", "retry_failed"):
        if not isinstance(cfg.get(setting, False), bool):
            raise UserError(f"{setting} must be true or false, got {cfg.get(setting)!r}")
    check_required_keys(cfg)
    check_method_keys(cfg)
    seeds = (cfg.get("method_seeds") or {}).get(cfg.method.name)
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


def recorded_outcomes(cfg: DictConfig, experiment: str, load=None) -> list[tuple] | None:
    """(status, True, record) of every grid point of the job when each is done as :func:`run_job`
    would find it (a record under today's names, of this data, under limits that still hold);
    None when any point would be fitted, rescored or have its record completed. What lets a
    finished sweep resume in seconds: its jobs need not be composed and launched one by one."""
    job = prepare_job(cfg, experiment, load)
    if job is None:
        return []
    outcomes = []
    for params in method_grid(cfg):
        _, point = job.point(job.estimator(params))
        path = job.record_of(point)
        found, stale = job.finished(point, path)
        if found is None or stale or (found[0] == path and not _knows_its_fit(found[1])):
            return None
        status = found[1]["status"].iloc[0]
        outcomes.append(("cached" if status == "ok" else status, True, found[0]))
    return outcomes


def run_job(cfg: DictConfig, experiment: str = "adhoc", report=None) -> list[PointResult]:
    """Run every grid point of one (dataset, method, seed) job; return what each point did.

    ``report`` (optional) is called with each point's result as soon as it is known.
    """
    job = prepare_job(cfg, experiment)
    if job is None:
        return []
    seed, data, method, timeout = cfg.seed, job.data, job.method, job.timeout
    record_of, fit_hash_of = job.record_of, job.fit_hash_of
    outcomes = []
    same_fit = None  # the folder's records by what they fitted, read when a point needs it
    # A fit's stored labels can stand for it unless a metric of the suite reads the fitted
    # estimator (its objective, its parameter count).
    rescorable = not any(
        "estimator" in inspect.signature(locate(spec._target_)).parameters for spec in cfg.metrics.values()
    )
    grid = method_grid(cfg)
    # Every point is checked before the first fit: a value that one point of a long sweep holds
    # stops it before hours of fitting, not after. The loop builds each estimator again (cheap)
    # rather than keeping these: a list would hold every fitted one, and its attributes (spectral's
    # n x n affinity matrix), until the job ends.
    for params in grid:
        check_point(job.estimator(params), method.name, data)
    # Set once for the job: entering the limit costs ~5 ms, a sweep of small fits has thousands.
    with limit_threads(job.threads):
        for params in tqdm(grid, desc=f"{data.name}/{method.name}", disable=None if len(grid) > 1 else True):
            estimator = job.estimator(params)
            hyper, point = job.point(estimator)
            path = record_of(point)
            key = path.stem
            # A record of the point (or its twin) written under the former, type-sensitive hash takes
            # its new name first, so the lookup below finds it.
            for each in (point, *_on_other_device(point)):
                adopt_typed_record(record_of(each), typed_hash({**job.identity, "method": each}))
            # The point fitted on the other device counts as done: a sweep moved between a CPU and a
            # GPU machine resumes instead of fitting it twice (its record says where it ran).
            found, stale = job.finished(point, path)
            fit = fit_hash_of(point)
            same_data: list[Path] = []
            if found and not stale:
                if found[0] == path and not _knows_its_fit(found[1]):  # a record of earlier code
                    complete_record(path, fit_hash=fit, data_digest=data.digest)
            elif not cfg.force:
                # Records of this fit on the same data under another metric suite: one skipped or
                # timed out here under today's limits would be again, and one that succeeded (on
                # either device) lends its labels, scored with this suite instead of fitting again.
                if same_fit is None:
                    same_fit = records_by_fit(path.parent)
                here = _other_records(same_fit, fit, path, data.digest)
                twins = [
                    _other_records(same_fit, fit_hash_of(each), path, data.digest)
                    for each in _on_other_device(point)
                ]
                same_data = here + [record for records in twins for record in records]
                found = found or _stopped_elsewhere(here, len(data.y), method.get("max_samples"), timeout)
            if found and not stale:
                outcomes.append(_cached(params, found[1], found[0]))
                outcomes[-1].hyperparameters = hyper
                if report:
                    report(outcomes[-1])
                continue
            base = {
                "experiment": experiment,
                "profile": cfg.profile.name,
                "dataset": data.name,
                "method": method.name,
                "variant": method.variant,
                "seed": seed,
                # As named: a record of a point at a later-added parameter's former value holds the
                # params its earlier records hold, so tables see one grid point, not two.
                "params": json.dumps(point["params"], sort_keys=True),
                "device": getattr(estimator, "device", "cpu"),
                "config_hash": key,
                "fit_hash": fit,
                "data_digest": data.digest,
                "clusterbench_version": code_version(),
            }
            stored = _stored_fit(same_data, len(data.y)) if rescorable and not cfg.force else None
            if stored is not None:
                outcome = _rescore(stored, cfg.metrics, data, seed, params)
            else:
                # A method with bars of its own (the deep family's epochs) gets no elapsed-time bar.
                shown = not getattr(estimator, "reports_progress", False)
                with fit_progress(path.parent, f"{data.name}/{method.name} seed={seed}", shown):
                    outcome = _fit_and_score(estimator, method, cfg.metrics, data, seed, params, timeout)
                if stale:
                    outcome.warnings.insert(0, "the data changed since this point's record: fitted again")
            outcome.path, outcome.hyperparameters = path, hyper
            base["fit_seconds"] = outcome.fit_seconds
            base["timestamp"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            status = "ok" if outcome.status == "rescored" else outcome.status
            write_record(
                path, _rows(base, outcome.scores, cfg.metrics, status, outcome.error), labels=outcome.labels
            )
            outcomes.append(outcome)
            if report:
                report(outcome)
    note_outcomes((outcome.status, outcome.earlier, outcome.path) for outcome in outcomes)
    return outcomes


# A fit shows a progress bar once it has run this long (seconds): short fits stay one line each.
PROGRESS_AFTER = 5.0


@contextlib.contextmanager
def fit_progress(folder: Path, label: str, shown: bool = True, after: float = PROGRESS_AFTER):
    """Within the block (one fit), a bar of the seconds it has run once it runs past ``after``,
    its total the median fit time of the records in ``folder`` (the same method on the same
    dataset: other seeds and grid points), so the bar's estimate says how long is left; without
    such records, the seconds alone. Shown on a terminal only (tqdm's ``disable=None``); the
    bar's thread reads the records only when a fit is slow, and is gone when the block ends.
    ``shown=False``: no bar (the fit shows its own)."""
    if not shown:
        yield
        return
    done = threading.Event()

    def show() -> None:
        if done.wait(after):
            return
        expected = expected_seconds(folder)
        with tqdm(
            total=round(expected) if expected else None,
            initial=round(after),
            desc=label,
            unit="s",
            disable=None,
            leave=False,
        ) as bar:
            while not done.wait(1.0):
                if bar.total is not None and bar.n + 1 > bar.total:
                    bar.total = bar.n + 1  # slower than its peers: the estimate grows with it
                bar.update(1)

    thread = threading.Thread(target=show, name="fit-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def expected_seconds(folder: Path) -> float | None:
    """The median ``fit_seconds`` of the successful records in ``folder``; None without any."""
    try:
        records = read_records(sorted(folder.glob("*.csv")))
    except (OSError, ValueError):  # a record being written meanwhile: no estimate this time
        return None
    seconds = records.loc[records["status"] == "ok"].drop_duplicates("config_hash")["fit_seconds"].dropna()
    return float(seconds.median()) if len(seconds) else None


class FitTimeout(Exception):
    """Raised inside ``fit`` by the alarm that enforces ``timeout_s``."""


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise :class:`FitTimeout` in this thread after ``seconds`` (SIGALRM; main thread on Unix only).

    Elsewhere (or with ``seconds=None``) the fit runs unbounded.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    if not (seconds and hasattr(signal, "setitimer") and in_main_thread):
        yield
        return

    def expire(signum, frame):
        raise FitTimeout(f"fit exceeded timeout_s={seconds}")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _fit_and_score(
    estimator, method, metrics, data: Dataset, seed: int, params: dict, timeout_s: float | None = None
) -> PointResult:
    cap = method.get("max_samples")
    if cap is not None and len(data.y) > cap:
        return PointResult(
            params,
            "skipped",
            error=f"n={len(data.y)} exceeds method.max_samples={cap} (dense n x n memory)",
        )
    # Library warnings (e.g. "fewer distinct clusters than n_clusters") and prints (e.g. "SVD did
    # not converge, randomizing and trying again") are summarised in the job's output line
    # instead of flooding a sweep's log.
    printed = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
        warnings.simplefilter("always")
        try:
            start = time.perf_counter()
            with time_limit(timeout_s):
                # A method that learns from the labels (PRCut's label similarity, a supervised
                # baseline) says so through scikit-learn's tags, and gets them.
                estimator.fit(data.X, data.y) if needs_labels(estimator) else estimator.fit(data.X)
            seconds = time.perf_counter() - start
            labels = fitted_labels(estimator, method.name, data.X)
            scores = score(metrics, data, labels, seed, estimator)
        except NoLabels:
            raise  # the method's config is wrong, at every point alike: the user's error
        except FitTimeout as exc:
            # The limit is kept as the point's time: a rerun under a larger one fits it again.
            return PointResult(params, "timeout", error=str(exc), fit_seconds=timeout_s)
        except MetricError as exc:
            return _failed(params, exc.__cause__, f"metric '{exc.name}'")
        except Exception as exc:
            return _failed(params, exc, f"method '{method.name}'")
    notes = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught})
    notes += [f"printed {n}x: {line}" for line, n in Counter(printed.getvalue().splitlines()).items()]
    return PointResult(params, "ok", scores=scores, fit_seconds=seconds, warnings=notes, labels=labels)


def needs_labels(estimator) -> bool:
    """Whether ``estimator.fit`` requires y (scikit-learn's ``target_tags.required``)."""
    try:
        return bool(estimator.__sklearn_tags__().target_tags.required)
    except AttributeError:  # not a scikit-learn estimator: fit(X) as every clusterer
        return False


class NoLabels(UserError):
    """A fitted estimator that gives no labels (neither ``labels_`` nor ``predict``)."""


def fitted_labels(estimator, method_name: str, X: np.ndarray) -> np.ndarray:
    """A fitted estimator's labels of the points it was fitted on: ``labels_`` (scikit-learn's
    clustering convention), else ``predict`` (e.g. GaussianMixture, which sets no ``labels_``).
    Labels that are not one finite value per point fail the point: metrics would drop NaN-labelled
    points or read them as a cluster, each its own way."""
    if hasattr(estimator, "labels_"):
        labels = np.asarray(estimator.labels_)
    elif callable(getattr(estimator, "predict", None)):
        labels = np.asarray(estimator.predict(X))
    else:
        raise NoLabels(
            f"method '{method_name}': the fitted {type(estimator).__name__} sets no labels_ and has no "
            "predict; a clustering estimator's fit must set labels_ (scikit-learn's convention)"
        )
    if labels.shape != (len(X),):
        raise ValueError(f"labels have shape {labels.shape}, expected one per point ({len(X)},)")
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise ValueError(f"{int((~np.isfinite(labels)).sum())} labels are NaN or infinite")
    return labels


def _failed(params: dict, exc: Exception, culprit: str) -> PointResult:
    """A failed point, its error naming ``culprit`` (a method or metric) and where it was raised;
    an invalid parameter value is the user's error instead."""
    if is_invalid_parameter(exc):
        raise HyperparameterError(f"{culprit}: {first_line(exc)}") from None
    last = traceback.extract_tb(exc.__traceback__)[-1]
    where = f" at {Path(last.filename).name}:{last.lineno}"
    return PointResult(params, "failed", error=f"{culprit}: {type(exc).__name__}: {exc}{where}")


def _finished_point(path: Path, twins: list[Path], retry_failed: bool):
    """(path, record) of the point's finished record (a failed one too, unless ``retry_failed``),
    or of a fit that succeeded on the other device (a skip, timeout or failure there says nothing
    about this device), or None."""
    record = finished_record(path, retry_failed)
    if record is not None:
        return path, record
    for twin in twins:
        record = finished_record(twin)
        if record is not None and (record["status"] == "ok").all():
            return twin, record
    return None


def _on_other_device(point: dict) -> list[dict]:
    """The same method point on the other device (``cpu`` / ``cuda``), if the estimator takes one."""
    device = point["params"].get("device")
    if device not in DEVICES_RUN:
        return []
    return [
        {**point, "params": {**point["params"], "device": other}} for other in DEVICES_RUN if other != device
    ]


def _limit_raised(record, n_points: int, max_samples, timeout_s) -> bool:
    """Whether a point recorded as skipped or timed out would run now: the limit that stopped it
    (``method.max_samples``, ``timeout_s``) was raised or lifted."""
    if record["status"] == "skipped":
        return max_samples is None or n_points <= max_samples
    if record["status"] == "timeout":
        # Its fit_seconds is the limit it ran under (unknown, NaN, in records before that).
        return timeout_s is None or timeout_s > float(record["fit_seconds"])
    return False


def _other_records(by_fit: dict, fit_hash: str, path: Path, digest: str) -> list[Path]:
    """The records of fit ``fit_hash`` on data ``digest`` in a folder's :func:`records_by_fit`,
    other than ``path``."""
    return [other for other, recorded in by_fit.get(fit_hash, []) if other != path and recorded == digest]


def _knows_its_fit(record) -> bool:
    """Whether a record holds its ``fit_hash`` and ``data_digest`` (those of earlier code do not)."""
    return all(column in record and bool(record[column].iloc[0]) for column in ("fit_hash", "data_digest"))


def _data_changed(record, digest: str) -> bool:
    """Whether a record was fitted on other data than ``digest`` names (a replaced cache file, say);
    records written before records kept a digest cannot tell, and count as the same data."""
    recorded = record["data_digest"].iloc[0] if "data_digest" in record else ""
    return bool(recorded) and recorded != digest


def _stored_fit(records: list[Path], n_points: int) -> tuple[np.ndarray, float] | None:
    """(labels, fit seconds) of the latest successful of ``records`` (one fit under other metric
    suites), for this suite to score instead of fitting again; None where no record has labels of
    these points."""
    usable = []
    for record in records:
        try:
            labels, frame = read_labels(record), read_record(record)
        except FileNotFoundError:  # removed by hand meanwhile
            continue
        if labels is not None and len(labels) == n_points and (frame["status"] == "ok").all():
            first = frame.iloc[0]
            usable.append((str(first["timestamp"]), labels.astype(np.int64), float(first["fit_seconds"])))
    return max(usable, key=lambda entry: entry[0])[1:] if usable else None


def _stopped_elsewhere(records: list[Path], n_points: int, max_samples, timeout_s):
    """(path, record) of a record of this fit, under another metric suite, that was skipped or
    timed out under limits that still hold: the point would stop again, so it counts as done."""
    for record in records:
        try:
            frame = read_record(record)
        except FileNotFoundError:
            continue
        first = frame.iloc[0]
        if first["status"] in ("skipped", "timeout") and not _limit_raised(
            first, n_points, max_samples, timeout_s
        ):
            return record, frame
    return None


def _rescore(stored: tuple[np.ndarray, float], metrics: DictConfig, data: Dataset, seed: int, params: dict):
    """A fit's stored labels scored with ``metrics``: a :class:`PointResult` of status rescored."""
    labels, fit_seconds = stored
    try:
        scores = score(metrics, data, labels, seed)
    except MetricError as exc:
        return _failed(params, exc.__cause__, f"metric '{exc.name}'")
    return PointResult(params, "rescored", scores=scores, fit_seconds=fit_seconds, labels=labels)


def _cached(params: dict, frame, path: Path) -> PointResult:
    first = frame.iloc[0]
    if first["status"] != "ok":  # failed, or skipped or timed out under the same limit
        return PointResult(params, str(first["status"]), error=str(first["error"]), path=path, earlier=True)
    scores = dict(zip(frame["metric"], frame["value"], strict=True))
    seconds = float(first["fit_seconds"])
    return PointResult(params, "cached", scores=scores, fit_seconds=seconds, path=path, earlier=True)


SUMMARY_METRICS = ("sc", "nmi", "ari", "acc")


def method_label(method: DictConfig) -> str:
    """``clam``, or ``clam[eq8]`` for a variant other than the default: how a summary line names it."""
    variant = method.get("variant", "default")
    return method.name if variant == "default" else f"{method.name}[{variant}]"


def summary_line(
    dataset: str, method: str, seed: int, outcome: PointResult, given: Sequence[str] = ()
) -> str:
    """``zoo  kmeans  seed=0  init=k-means++ | SC 0.374  NMI 0.833 ... | fit 2.31 s``: the
    hyperparameters shown are the grid point's and those named in ``given`` (set on the command
    line), each with the value fitted (an experiment's tuned value wins over the command line's)."""
    fitted = outcome.hyperparameters
    shown = {name: fitted[name] for name in given if name in fitted} | outcome.params
    grid = " ".join(f"{k}={v}" for k, v in shown.items())
    head = f"{dataset}  {method}  seed={seed}" + (f"  {grid}" if grid else "")
    if outcome.status in {"failed", "skipped", "timeout"}:
        again = {"failed": "retry_failed=true", "skipped": "a larger method.max_samples"}.get(
            outcome.status, "a larger timeout_s"
        )
        earlier = f" (recorded earlier; {again} or force=true runs it again)" if outcome.earlier else ""
        return f"{head} | {outcome.status.upper()}: {outcome.error}{earlier}"
    shown = "  ".join(
        f"{name.upper()} {value:.4f}" for name, value in outcome.scores.items() if name in SUMMARY_METRICS
    )
    tail = {"cached": " (cached)", "rescored": " (rescored from its stored labels)"}.get(outcome.status, "")
    if outcome.warnings:
        more = f" (+{len(outcome.warnings) - 1} more)" if len(outcome.warnings) > 1 else ""
        tail += f"  [warning: {outcome.warnings[0]}{more}]"
    return f"{head} | {shown} | fit {outcome.fit_seconds:.2f} s{tail}"

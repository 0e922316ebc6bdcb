"""Fitting one grid point: the estimator's fit under the job's thread count and time limit, its
labels, the metric suite's scores, and what it all produced (a :class:`PointResult`); or a stored
fit's labels scored instead (:func:`rescore`)."""

from __future__ import annotations

import contextlib
import io
import signal
import sys
import threading
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from clusterbench.catalog import locate
from clusterbench.checks import metric_options
from clusterbench.data import Dataset
from clusterbench.errors import HyperparameterError, UserError, first_line, is_invalid_parameter
from clusterbench.metrics import call_metric
from clusterbench.progress import progress_bar
from clusterbench.results import read_records
from clusterbench.validation import torch_threads


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
    trace: dict = field(default_factory=dict)  # per-iteration values kept beside the labels (fitted_trace)


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


@contextlib.contextmanager
def limit_threads(threads: int | None):
    """Within the block, fits and metrics get ``threads`` CPU threads: torch's (if the estimator's
    module has loaded torch at all), and the BLAS and OpenMP pools of NumPy and scikit-learn
    (threadpoolctl); each count is restored after it. None leaves every library at its default,
    one thread per core. A torch estimator's own ``n_threads`` holds during its fit
    (:func:`~clusterbench.runner.build_estimator` gives it ``threads``).

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


# A fit shows a progress bar once it has run this long (seconds): short fits stay one line each.
PROGRESS_AFTER = 5.0


@contextlib.contextmanager
def fit_progress(folder: Path, label: str, shown: bool = True, after: float = PROGRESS_AFTER):
    """Within the block (one fit), a bar of the seconds it has run once it runs past ``after``,
    its total the median fit time of the records in ``folder`` (the same method on the same
    dataset: other seeds and grid points), so the bar's estimate says how long is left; without
    such records, the seconds alone. Off a terminal, a line a minute (:mod:`clusterbench.progress`); the
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
        total = round(expected) if expected else None
        with progress_bar(total=total, initial=round(after), desc=label, unit="s", leave=False) as bar:
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


def fit_and_score(
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
            # A fit of hours resumed from its checkpoint ran partly before (its earlier runs).
            seconds = time.perf_counter() - start + float(getattr(estimator, "earlier_seconds_", 0.0))
            labels = fitted_labels(estimator, method.name, data.X)
            trace = fitted_trace(estimator, method.get("trace"))
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
    return PointResult(
        params, "ok", scores=scores, fit_seconds=seconds, warnings=notes, labels=labels, trace=trace
    )


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


# Fitted attributes kept as a run's trace when its method config names none (``trace: [...]``):
# SR-K-means', MI-ADM's and MI-D's I(X, K) per outer iteration (their paper's Fig. 1).
TRACED = ("mutual_information_",)


def fitted_trace(estimator, names=None) -> dict[str, list[float]]:
    """The per-iteration values a record keeps beside its labels (``<hash>.trace.json``): each
    attribute of ``names`` (a method config's ``trace``, which the fit must set as numbers), else
    each of :data:`TRACED` the fitted estimator has as numbers, as a flat list of floats."""
    trace = {}
    for name in TRACED if names is None else names:
        try:
            trace[name] = np.asarray(getattr(estimator, name), dtype=float).ravel().tolist()
        except (AttributeError, TypeError, ValueError) as exc:
            if names is not None:
                what = f"{type(estimator).__name__}.{name}"
                raise ValueError(
                    f"the method's trace: names {what}, which the fit left unset or not numbers"
                ) from exc
    return trace


def _failed(params: dict, exc: Exception, culprit: str) -> PointResult:
    """A failed point, its error naming ``culprit`` (a method or metric) and where it was raised;
    an invalid parameter value is the user's error instead."""
    if is_invalid_parameter(exc):
        raise HyperparameterError(f"{culprit}: {first_line(exc)}") from None
    last = traceback.extract_tb(exc.__traceback__)[-1]
    where = f" at {Path(last.filename).name}:{last.lineno}"
    return PointResult(params, "failed", error=f"{culprit}: {type(exc).__name__}: {exc}{where}")


def rescore(stored, metrics: DictConfig, data: Dataset, seed: int, params: dict):
    """A recorded fit's labels (``stored``, a :class:`~clusterbench.resume.StoredFit`) scored with
    ``metrics``: a :class:`PointResult` of status rescored, keeping the fit's time and trace."""
    try:
        scores = score(metrics, data, stored.labels, seed)
    except MetricError as exc:
        return _failed(params, exc.__cause__, f"metric '{exc.name}'")
    return PointResult(
        params,
        "rescored",
        scores=scores,
        fit_seconds=stored.fit_seconds,
        labels=stored.labels,
        trace=stored.trace,
    )


def recorded_result(params: dict, frame, path: Path) -> PointResult:
    """What a point's record (``frame`` at ``path``, written by an earlier run) says it produced."""
    first = frame.iloc[0]
    if first["status"] != "ok":  # failed, or skipped or timed out under the same limit
        return PointResult(params, str(first["status"]), error=str(first["error"]), path=path, earlier=True)
    scores = dict(zip(frame["metric"], frame["value"], strict=True))
    seconds = float(first["fit_seconds"])
    return PointResult(params, "cached", scores=scores, fit_seconds=seconds, path=path, earlier=True)

"""Resume: what a job's records say of each of its grid points, asked before any fit.

A point is done (a record stands for it: its own, the same fit run elsewhere — on the other
device or with another thread count — or the same fit skipped or timed out under another metric
suite under limits that still hold), or it is rescored (a fit recorded under another metric suite,
or by another experiment with the same data settings, seed, profile and method point, lends its
stored labels), or it is fitted (nothing recorded, ``force=true``, a limit raised since, or its
record was fitted on other data).

Records are read in today's form only: those of earlier code (named by the former, typed hash, or
without a fit hash and data digest) are brought to it once, by ``clusterbench records upgrade``
(:mod:`clusterbench.upgrade`), never while resuming.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from clusterbench.catalog import locate
from clusterbench.checks import metric_options
from clusterbench.errors import UserError
from clusterbench.results import (
    finished_record,
    first_rows,
    read_labels,
    read_record,
    read_trace,
    records_by_fit,
)
from clusterbench.runs import PLACE

if TYPE_CHECKING:
    from clusterbench.runner import Job

# Where a fit can have run: the devices it resolves to (device=auto becomes one of them) and the
# thread counts a job is given (threads=null: each library's default).
DEVICES_RUN = ("cpu", "cuda")
THREADS_RUN = (None, *range(1, 129))


class StoredFit(NamedTuple):
    """What a recorded fit lends a point that is rescored instead of fitted: its labels, its fit
    time, its per-iteration trace ({name: list of floats}, empty where it kept none), and where it
    ran (its record's ``device`` and ``processor``), all of which the new record keeps."""

    labels: np.ndarray
    fit_seconds: float
    trace: dict
    device: str
    processor: str


@dataclass
class Entry:
    """What the records say of one grid point (:meth:`Ledger.entry`): ``done``, the (path, record)
    that stands for it; else ``stored``, a recorded fit to score instead of fitting;
    else it is fitted, ``stale`` when its record was fitted on other data."""

    path: Path  # where the point's own record is, or is written
    fit_hash: str
    done: tuple[Path, pd.DataFrame] | None = None
    stored: StoredFit | None = None
    stale: bool = False


class Ledger:
    """The records of one job, asked point by point (a point is the method point its record is
    named by, :meth:`~clusterbench.runner.Job.point`)."""

    def __init__(self, job: Job):
        self.job = job
        # The folder's records (first rows only), read once and only when a point needs them: by
        # what they fitted, and where they ran.
        self._rows = None
        self._by_fit = None
        self._places = None
        self._other_experiments = None

    def _folder_rows(self, path: Path) -> list[tuple[Path, dict]]:
        if self._rows is None:
            self._rows = first_rows(path.parent)
        return self._rows

    def _elsewhere(self, point: dict) -> Iterator[dict]:
        """:func:`_elsewhere` among the devices and thread counts the folder's records ran with: a
        twin can only be one of those (a few names to hash and look up, where :data:`THREADS_RUN`
        alone offers 258). A generator: nothing is read unless a twin is looked for."""
        if self._places is None:
            self._places = places_run(self._folder_rows(self.job.record_of(point)))
        yield from _elsewhere(point, self._places)

    @cached_property
    def rescorable(self) -> bool:
        """Whether a fit's stored labels can stand for it: no metric of the suite reads the fitted
        estimator (its objective, its parameter count)."""
        metrics = self.job.cfg.metrics.values()
        return not any("estimator" in inspect.signature(locate(spec._target_)).parameters for spec in metrics)

    def finished(self, point: dict, path: Path) -> tuple[tuple[Path, pd.DataFrame] | None, bool]:
        """(path, record) of the point's finished record (at ``path``, its
        :meth:`~clusterbench.runner.Job.record_of`), or of its successful twin run elsewhere
        (:func:`_elsewhere`; unless force=true, and unless the limit that stopped it was raised),
        and whether that record was fitted on other data (stale)."""
        job = self.job
        if job.cfg.force:
            return None, False
        twins = map(job.record_of, self._elsewhere(point))  # looked up only when its own record is missing
        found = _finished_point(path, twins, job.cfg.get("retry_failed", False))
        limit = job.method.get("max_samples")
        if found and _limit_raised(found[1].iloc[0], len(job.data.y), limit, job.timeout):
            found = None
        return found, found is not None and _data_changed(found[1], job.data.digest)

    def recorded(self, point: dict) -> tuple[str, bool, Path] | None:
        """(status, True, record) of a point done as :meth:`entry` would find it by its own record or
        its twin's (of this data, under limits that still hold); None when it would be fitted or
        rescored."""
        found, stale = self.finished(point, self.job.record_of(point))
        if found is None or stale:
            return None
        status = found[1]["status"].iloc[0]
        return "cached" if status == "ok" else status, True, found[0]

    def entry(self, point: dict) -> Entry:
        """What to do for the point. Records are read as today's code writes them: those of earlier
        code are brought to today's names and columns once, by ``clusterbench records upgrade``
        (:mod:`clusterbench.upgrade`), not here."""
        job, digest = self.job, self.job.data.digest
        path = job.record_of(point)
        # The point fitted elsewhere counts as done: a sweep moved between a CPU and a GPU machine,
        # or run with another thread count, resumes instead of fitting it twice (its record says
        # where it ran).
        found, stale = self.finished(point, path)
        entry = Entry(path, job.fit_hash_of(point), stale=stale)
        if found and not stale:
            entry.done = found
            return entry
        # Records of this fit on the same data under another metric suite: one skipped or timed
        # out here under today's limits would be again, and one that succeeded (on either device)
        # lends its labels, scored with this suite instead of fitting again; failing those, a
        # successful fit of another experiment that this job's limits allow (_lent).
        if self._by_fit is None:
            self._by_fit = records_by_fit(self._folder_rows(path))
        here = _other_records(self._by_fit, entry.fit_hash, path, digest)
        there = [
            record
            for each in self._elsewhere(point)
            for record in _other_records(self._by_fit, job.fit_hash_of(each), path, digest)
        ]
        _check_metric_names(job.cfg.metrics, here + there)
        if job.cfg.force:
            return entry
        if not found:
            n_points, limit = len(job.data.y), job.method.get("max_samples")
            entry.done = _stopped_elsewhere(here, n_points, limit, job.timeout)
            if entry.done:
                return entry
        if self.rescorable:
            entry.stored = _stored_fit(here + there, len(job.data.y)) or self._lent(point, path, digest)
        return entry

    def _lent(self, point: dict, path: Path, digest: str) -> StoredFit | None:
        """The fit of this point that another experiment recorded, on data ``digest``, as this job
        would have fitted it: two paper tables that share a configuration (SR-K-means' Tables 2 and
        3 both fit MI-ADM) fit it once. Only a successful fit is lent, and only one this job's
        limits would have let run (within its ``timeout_s``, ``max_samples`` not below the data)
        with the trace its method config asks for; else the point is fitted here."""
        job, n_points = self.job, len(self.job.data.y)
        limit, traced = job.method.get("max_samples"), job.method.get("trace")
        if limit is not None and n_points > limit:
            return None
        stored = _stored_fit(self._in_other_experiments(point, path, digest), n_points)
        if stored is None or (job.timeout is not None and stored.fit_seconds > job.timeout):
            return None
        return stored if traced is None or set(traced) <= set(stored.trace) else None

    def _in_other_experiments(self, point: dict, path: Path, digest: str) -> list[Path]:
        """Records of this point's fit (or its twins elsewhere, by the places each experiment's
        records ran) on data ``digest`` that other experiments wrote for this dataset and method.
        The experiment's name is in a fit's hash, so each other experiment's hash of the point is
        looked up in its own folder (read once per job)."""
        method_folder = path.parent
        experiment_folder = method_folder.parent.parent
        if self._other_experiments is None:
            self._other_experiments = {}
            profile_folder = experiment_folder.parent
            for other in sorted(profile_folder.iterdir()) if profile_folder.is_dir() else []:
                folder = other / method_folder.parent.name / method_folder.name
                if other != experiment_folder and folder.is_dir():
                    rows = first_rows(folder)
                    self._other_experiments[other.name] = (records_by_fit(rows), places_run(rows))
        return [
            record
            for experiment, (by_fit, places) in self._other_experiments.items()
            for each in [point, *_elsewhere(point, places)]
            for record in _other_records(by_fit, self.job.fit_hash_of(each, experiment), path, digest)
        ]


def _check_metric_names(metrics, others: list[Path]) -> None:
    """Refuse a suite that gives a metric's name to a metric with other options than the records
    ``others`` of the same fit give it (NMI averaged otherwise): tables and the summary read one
    value per metric name and fit (:mod:`clusterbench.runs`), so one would stand for the other."""
    suite = {name: json.loads(json.dumps(metric_options(spec))) for name, spec in metrics.items()}
    for other in others:
        record = read_record(other)
        for name, options in zip(record["metric"], record["metric_params"], strict=True):
            if name in suite and options and json.loads(options) != suite[name]:  # "": not written
                raise UserError(
                    f"metric '{name}' is scored with options {json.dumps(suite[name])} here but "
                    f"{options} in {other}, a record of the same fit; give this one a name of its own in "
                    "a suite of your own (docs/extending.md#adding-a-metric), or write to another results_dir"
                )


def _finished_point(path: Path, twins: Iterable[Path], retry_failed: bool):
    """(path, record) of the point's finished record (a failed one too, unless ``retry_failed``),
    or of a fit that succeeded elsewhere (a skip, timeout or failure there says nothing about
    here), or None."""
    record = finished_record(path, retry_failed)
    if record is not None:
        return path, record
    for twin in twins:
        record = finished_record(twin)
        if record is not None and (record["status"] == "ok").all():
            return twin, record
    return None


@dataclass(frozen=True)
class Places:
    """The ``device`` and ``n_threads`` values a folder's records were fitted with."""

    devices: frozenset
    threads: frozenset


def places_run(rows: Iterable[tuple[Path, dict]]) -> Places:
    """Where a folder's records (its :func:`~clusterbench.results.first_rows`) ran
    (:class:`Places`). A record named without ``n_threads`` (a parameter added later at 1,
    ``runner.named_by``) ran at 1."""
    devices, threads = set(), set()
    for params in (json.loads(row["params"]) for _, row in rows if row.get("params")):
        devices.add(params.get("device"))
        threads.add(params.get("n_threads", 1))
    return Places(frozenset(devices), frozenset(threads))


def _elsewhere(point: dict, places: Places) -> Iterator[dict]:
    """The same method point run elsewhere, nearest first: on the other device (``cpu`` /
    ``cuda``) and with another thread count (:data:`THREADS_RUN`) that some record ran at
    (``places``), for an estimator that takes ``device`` and ``n_threads``. Where a fit ran moves
    its numbers at rounding only, and its record says where (``device``, ``params``), so such a
    record stands for the point. A place parameter that the estimator's records are named without
    at its former value (``n_threads`` at 1, ``runner.named_by``) is put back to list the twins, and
    left out again of each twin's name."""
    later = getattr(locate(point["target"]), "_params_added_later", {})
    params = {**{key: later[key] for key in PLACE if key in later}, **point["params"]}
    devices = tuple(d for d in DEVICES_RUN if d in places.devices or d == params.get("device"))
    threads = tuple(t for t in THREADS_RUN if t in places.threads or t == params.get("n_threads"))
    choices = {}
    if params.get("device") in DEVICES_RUN:
        choices["device"] = _own_first(params["device"], devices)
    if "n_threads" in params:
        choices["n_threads"] = _own_first(params["n_threads"], threads)
    for values in itertools.islice(itertools.product(*choices.values()), 1, None):  # the first: itself
        twin = {**params, **dict(zip(choices, values, strict=True))}
        named = {key: value for key, value in twin.items() if key not in later or value != later[key]}
        yield {**point, "params": named}


def _own_first(own, options: tuple) -> tuple:
    return (own, *(option for option in options if option != own))


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


def _data_changed(record, digest: str) -> bool:
    """Whether a record was fitted on other data than ``digest`` names (a replaced cache file, say);
    records written before records kept a digest cannot tell, and count as the same data."""
    recorded = record["data_digest"].iloc[0] if "data_digest" in record else ""
    return bool(recorded) and recorded != digest


def _stored_fit(records: list[Path], n_points: int) -> StoredFit | None:
    """The latest successful of ``records`` (one fit under other metric suites or experiments), for
    this point to score instead of fitting again; None where no record has labels of these points."""
    usable = []
    for record in records:
        try:
            labels, frame = read_labels(record), read_record(record)
        except FileNotFoundError:  # removed by hand meanwhile
            continue
        if labels is not None and len(labels) == n_points and (frame["status"] == "ok").all():
            usable.append((str(frame["timestamp"].iloc[0]), record, labels, frame.iloc[0]))
    if not usable:
        return None
    _, record, labels, first = max(usable, key=lambda entry: entry[0])
    trace = {name: values.tolist() for name, values in (read_trace(record) or {}).items()}
    # A record written before the processor column has none: empty, as its text would read.
    where = (first["device"], first.get("processor", ""))
    return StoredFit(labels.astype(np.int64), float(first["fit_seconds"]), trace, *where)


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

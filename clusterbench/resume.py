"""Resume: what a job's records say of each of its grid points, asked before any fit.

A point is done (a record stands for it: its own, its fit on the other device, or the same fit
skipped or timed out under another metric suite under limits that still hold), or it is rescored
(a fit recorded under another metric suite lends its stored labels), or it is fitted (nothing
recorded, ``force=true``, a limit raised since, or its record was fitted on other data).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from clusterbench.catalog import locate
from clusterbench.migrations import adopt_typed_record, complete_record
from clusterbench.results import (
    finished_record,
    read_labels,
    read_record,
    records_by_fit,
    typed_hash,
)

if TYPE_CHECKING:
    from clusterbench.runner import Job

# The devices a fit resolves to (device=auto becomes one of them).
DEVICES_RUN = ("cpu", "cuda")


@dataclass
class Entry:
    """What the records say of one grid point (:meth:`Ledger.entry`): ``done``, the (path, record)
    that stands for it; else ``stored``, a fit's (labels, fit seconds) to score instead of fitting;
    else it is fitted, ``stale`` when its record was fitted on other data."""

    path: Path  # where the point's own record is, or is written
    fit_hash: str
    done: tuple[Path, pd.DataFrame] | None = None
    stored: tuple[np.ndarray, float] | None = None
    stale: bool = False


class Ledger:
    """The records of one job, asked point by point (a point is the method point its record is
    named by, :meth:`~clusterbench.runner.Job.point`)."""

    def __init__(self, job: Job):
        self.job = job
        self._by_fit = None  # the folder's records by what they fitted, read when a point needs it

    @cached_property
    def rescorable(self) -> bool:
        """Whether a fit's stored labels can stand for it: no metric of the suite reads the fitted
        estimator (its objective, its parameter count)."""
        metrics = self.job.cfg.metrics.values()
        return not any("estimator" in inspect.signature(locate(spec._target_)).parameters for spec in metrics)

    def finished(self, point: dict, path: Path) -> tuple[tuple[Path, pd.DataFrame] | None, bool]:
        """(path, record) of the point's finished record (at ``path``, its
        :meth:`~clusterbench.runner.Job.record_of`), or of its successful twin on the other device
        (unless force=true, and unless the limit that stopped it was raised), and whether that
        record was fitted on other data (stale)."""
        job = self.job
        if job.cfg.force:
            return None, False
        twins = [*map(job.record_of, _on_other_device(point))]
        found = _finished_point(path, twins, job.cfg.get("retry_failed", False))
        limit = job.method.get("max_samples")
        if found and _limit_raised(found[1].iloc[0], len(job.data.y), limit, job.timeout):
            found = None
        return found, found is not None and _data_changed(found[1], job.data.digest)

    def recorded(self, point: dict) -> tuple[str, bool, Path] | None:
        """(status, True, record) of a point done as :meth:`entry` would find it with nothing to
        change (a record under today's names, of this data, under limits that still hold); None
        when it would be fitted, rescored or have its record completed."""
        path = self.job.record_of(point)
        found, stale = self.finished(point, path)
        if found is None or stale or (found[0] == path and not _knows_its_fit(found[1])):
            return None
        status = found[1]["status"].iloc[0]
        return "cached" if status == "ok" else status, True, found[0]

    def entry(self, point: dict) -> Entry:
        """What to do for the point, its records brought up to date first: a record named by the
        former, type-sensitive hash takes its new name, and a record of earlier code learns its
        fit hash and data digest."""
        job, digest = self.job, self.job.data.digest
        path = job.record_of(point)
        twins = _on_other_device(point)
        for each in (point, *twins):
            adopt_typed_record(job.record_of(each), typed_hash({**job.identity, "method": each}))
        # The point fitted on the other device counts as done: a sweep moved between a CPU and a
        # GPU machine resumes instead of fitting it twice (its record says where it ran).
        found, stale = self.finished(point, path)
        entry = Entry(path, job.fit_hash_of(point), stale=stale)
        if found and not stale:
            if found[0] == path and not _knows_its_fit(found[1]):  # a record of earlier code
                complete_record(path, fit_hash=entry.fit_hash, data_digest=digest)
            entry.done = found
            return entry
        if job.cfg.force:
            return entry
        # Records of this fit on the same data under another metric suite: one skipped or timed
        # out here under today's limits would be again, and one that succeeded (on either device)
        # lends its labels, scored with this suite instead of fitting again.
        if self._by_fit is None:
            self._by_fit = records_by_fit(path.parent)
        here = _other_records(self._by_fit, entry.fit_hash, path, digest)
        there = [
            record
            for each in twins
            for record in _other_records(self._by_fit, job.fit_hash_of(each), path, digest)
        ]
        if not found:
            n_points, limit = len(job.data.y), job.method.get("max_samples")
            entry.done = _stopped_elsewhere(here, n_points, limit, job.timeout)
            if entry.done:
                return entry
        if self.rescorable:
            entry.stored = _stored_fit(here + there, len(job.data.y))
        return entry


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

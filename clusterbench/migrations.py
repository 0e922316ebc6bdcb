"""Records in the forms earlier code wrote, brought to today's: a record named by the former,
type-sensitive hash (:func:`~clusterbench.results.typed_hash`) takes its name by value, and a
record written before records kept their ``fit_hash`` and ``data_digest`` gets them. Applied by
``clusterbench records upgrade`` (:mod:`clusterbench.upgrade`) to a whole results folder at once;
a rerun's ledger (:mod:`clusterbench.resume`) reads records as they are.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from clusterbench.results import (
    COLUMNS,
    atomic_write_bytes,
    atomic_write_text,
    labels_path,
    read_record,
)


def adopt_typed_record(path: Path, typed_key: str) -> None:
    """Give a point's record written under its :func:`~clusterbench.results.typed_hash` its
    :func:`~clusterbench.results.config_hash` name ``path``, so a rerun finds it instead of
    fitting the point again.

    Where both names hold a record (a point refitted by code that hashed by value but did not
    rename), one is kept: the typed one only if it succeeded and the other did not. The typed
    record takes the new name in one rename, its labels copied before it: at every moment there
    is one record, with its labels. Repeating it, or two sweeps doing it at once, is safe.
    """
    typed = path.with_name(f"{typed_key}.csv")
    if typed == path:
        return
    typed_labels = labels_path(typed)
    try:
        if typed.exists() and (not path.exists() or (_succeeded(typed) and not _succeeded(path))):
            if typed_labels.exists():
                atomic_write_bytes(labels_path(path), typed_labels.read_bytes())
            atomic_write_text(typed, typed.read_text().replace(f",{typed_key},", f",{path.stem},"))
            os.replace(typed, path)
        typed.unlink(missing_ok=True)  # the point's record is the other one
        typed_labels.unlink(missing_ok=True)
    except FileNotFoundError:  # another sweep adopted it meanwhile
        return


def complete_record(path: Path, **values: str) -> None:
    """Fill the columns that a record written by earlier code lacks or left empty (its ``fit_hash``
    and ``data_digest``) with ``values``; every other field keeps its text as written. A record that
    cannot be rewritten (a read-only results folder) is left as it is."""
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if all(row.get(column) for row in rows for column in values):
        return
    for row in rows:
        for column, value in values.items():
            row[column] = row.get(column) or value
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    try:
        atomic_write_text(path, buffer.getvalue())
    except OSError:
        return


def _succeeded(record: Path) -> bool:
    return bool((read_record(record)["status"] == "ok").all())

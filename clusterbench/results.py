"""Tidy result records: one small long-format CSV per job and grid point, one row per metric.

A record's file name is the hash of everything that determines its numbers, so a rerun finds what
is done and skips it. Files are written to a temporary name and renamed: a killed sweep never
leaves half a record.

Beside a successful record ``<hash>.csv`` lies its run's predicted labels, ``<hash>.labels.npy``
(one integer per point of the prepared dataset, in its order), for tables that compare two runs'
partitions (CLAM Table 8). The labels are written before the record, so a record that exists
has its labels unless it predates them or its run did not succeed (or, with ``force=true``, a
rerun was killed between the two writes: the new run's labels then lie beside the old record of
the same configuration).

A fit's per-iteration trace (:func:`clusterbench.fitting.fitted_trace`) lies beside its labels as
``<hash>.trace.json``, ``{attribute: [value per iteration]}``: figures draw it without refitting.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import hashlib
import io
import json
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from clusterbench import __version__
from clusterbench.errors import UserError

COLUMNS = [
    "experiment",
    "profile",
    "dataset",
    "method",
    "variant",
    "seed",
    "params",
    "metric",
    "metric_params",
    "value",
    "status",
    "error",
    "fit_seconds",
    "device",
    "processor",
    "config_hash",
    "fit_hash",
    "data_digest",
    "clusterbench_version",
    "timestamp",
]


@cache
def code_version() -> str:
    """The ``clusterbench_version`` of a record: the package version, and from a git checkout the
    commit as a PEP 440 local label (``0.1.0+g7e5d28f``, ``.dirty`` when files under
    ``clusterbench/`` differ from it or are new and not ignored). A checkout git will not read
    (another owner's, say) gives ``+unknown``. The config hash leaves code out, so that a rerun
    resumes across commits; this column says which code wrote each record."""
    package = Path(__file__).resolve().parent

    def git(*args: str) -> str:
        # --no-optional-locks: a status that refreshes the index would race a user's git commit.
        command = ["git", "--no-optional-locks", "-C", str(package), *args]
        return subprocess.run(command, capture_output=True, text=True, check=True, timeout=10).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")) / "clusterbench" != package:
            return __version__  # installed inside some other repository (a venv in a project)
        commit = git("rev-parse", "--short=7", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=normal", "--", ".")
    except (OSError, subprocess.SubprocessError):
        checkout = (package.parent / ".git").exists() and (package.parent / "pyproject.toml").exists()
        return f"{__version__}+unknown" if checkout else __version__
    return f"{__version__}+g{commit}{'.dirty' if dirty else ''}"


def processor(device: str) -> str:
    """The ``processor`` column of a record: what computed it, beyond its ``device``. CUDA: the
    GPU's name. CPU: the model name and the widest vector instructions it offers, which torch's
    and the BLAS's kernels follow (``AMD EPYC, AVX2``): float32 sums round differently with AVX2
    and AVX-512 kernels, so a deep fit refitted on another CPU can differ from its record while
    the code is the same (docs/records.md); this column tells the machines' records apart."""
    torch = sys.modules.get("torch")  # loaded by every torch estimator; a CPU-only baseline never needs it
    on_gpu = device in ("cuda", "auto") or device.startswith("cuda:")
    if on_gpu and torch is not None and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device("cuda" if device == "auto" else device))
    return _cpu()


# /proc/cpuinfo flags, widest first, and how a record names them.
VECTOR_EXTENSIONS = (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("asimd", "NEON"))


@cache
def _cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name and widest vector extension (Linux: ``cpuinfo``), else the platform's
    name for it."""
    model, flags = "", set()
    with contextlib.suppress(OSError):
        for line in cpuinfo.read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key == "model name" and not model:
                model = value
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    model = model or platform.processor() or platform.machine() or "unknown"
    widest = next((name for flag, name in VECTOR_EXTENSIONS if flag in flags), None)
    return f"{model}, {widest}" if widest else model


def config_hash(identity: Mapping) -> str:
    """A short stable hash of a JSON-serialisable description of a job.

    Numbers are hashed by value, not by type: ``tol=1`` and ``tol=1.0`` name one configuration
    (an estimator keeps whichever a config or command line gave it), so a rerun finds its record.
    """
    return typed_hash(_by_value(identity))


def typed_hash(identity: Mapping) -> str:
    """The hash records were named by until numbers were hashed by value (``tol=1`` and
    ``tol=1.0`` apart): the name a point's record may still have in a folder written before."""
    text = json.dumps(identity, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def records_by_fit(rows: Iterable[tuple[Path, dict]]) -> dict[str, list[tuple[Path, str]]]:
    """A folder's records (its :func:`first_rows`) by ``fit_hash`` (a record's hash without its
    metric suite: one fit scored under two suites has two records, one fit hash), each with its
    ``data_digest``. Records written before records kept these have none, and are left out."""
    index: dict[str, list[tuple[Path, str]]] = {}
    for path, row in rows:
        if row.get("fit_hash"):
            index.setdefault(row["fit_hash"], []).append((path, row.get("data_digest") or ""))
    return index


def first_rows(folder: Path) -> list[tuple[Path, dict]]:
    """Each record in ``folder`` with its first row (the columns every row of a record shares),
    reading nothing else of the files."""
    rows = []
    for path in sorted(Path(folder).glob("*.csv")):
        try:
            with path.open(newline="") as handle:
                row = next(csv.DictReader(handle), None)
        except FileNotFoundError:  # removed meanwhile
            continue
        if row:
            rows.append((path, row))
    return rows


def _by_value(node):
    """``node`` with every integral float written as an int (bools, which are ints, kept)."""
    if isinstance(node, Mapping):
        return {key: _by_value(value) for key, value in node.items()}
    if isinstance(node, list | tuple):
        return [_by_value(value) for value in node]
    if isinstance(node, float) and node.is_integer():
        return int(node)
    return node


def records_folder(results_dir: Path, *levels: str) -> Path:
    """The folder of ``results_dir``'s records, narrowed by ``levels`` (profile, experiment,
    dataset, method, outermost first): ``<results_dir>/runs/<profile>/<experiment>/...``."""
    return Path(results_dir, "runs", *levels)


def _other_profiles(folder: Path, besides: str) -> list[Path]:
    """The profile folders under ``folder`` (``runs/`` or ``tables/``) other than ``besides``."""
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name != besides) if folder.is_dir() else []


def profiles_holding(results_dir: Path, experiments: list[str], besides: str) -> list[str]:
    """The profiles under ``results_dir`` other than ``besides`` with a record of one of
    ``experiments``: where the records are when a command read the wrong profile's (a run with
    ``profile=smoke`` read as the paper's, the default)."""
    return [
        profile.name
        for profile in _other_profiles(records_folder(results_dir), besides)
        if any(next((profile / experiment).rglob("*.csv"), None) for experiment in experiments)
    ]


def profiles_with_tables(results_dir: Path, besides: str) -> list[str]:
    """The profiles under ``results_dir`` other than ``besides`` with a built table: where the
    tables are when the report read the wrong profile's (:func:`profiles_holding`'s twin)."""
    return [
        profile.name
        for profile in _other_profiles(Path(results_dir, "tables"), besides)
        if any(profile.glob("*.csv"))
    ]


def held_by(profiles: list[str]) -> str:
    """``profile smoke holds`` / ``profiles a and b hold``: the subject of a sentence naming them."""
    if len(profiles) == 1:
        return f"profile {profiles[0]} holds"
    return f"profiles {', '.join(profiles[:-1])} and {profiles[-1]} hold"


def elsewhere_or(others: list[str], fix: str, also: str = "") -> str:
    """The remedy of a command that found nothing under its profile: the ``others`` profiles that
    hold some (the likeliest slip: a ``profile=smoke`` run read as the paper's, the default), with
    ``also`` another way to read them, else ``fix``."""
    return f"{held_by(others)} some (--profile {others[0]}{also})" if others else fix


def folder_words(results_dir: str | Path, spelling: str) -> str:
    """`` --results-dir X`` (``spelling`` ``"--results-dir "``, ``"results_dir="``, ``"RESULTS="``):
    how a command printed for the user names ``results_dir``, shell-quoted; nothing for the default
    folder, ``results`` here, however it was given (relative or absolute)."""
    if Path(results_dir).resolve() == Path("results").resolve():
        return ""
    return f" {spelling}{shlex.quote(str(results_dir))}"


def profile_words(profile: str, spelling: str) -> str:
    """`` --profile X`` (``spelling`` ``"--profile "``, ``"profile="``, ``"PROFILE="``): how a
    command printed for the user names ``profile``; nothing for ``paper``, the default."""
    return "" if profile == "paper" else f" {spelling}{shlex.quote(profile)}"


def no_records_error(results_dir: Path, profile: str, experiments: list[str], fix: str) -> UserError:
    """What a command that found no records of ``experiments`` under ``profile`` says: the other
    profiles that hold some where there are, else ``fix`` (:func:`elsewhere_or`)."""
    remedy = elsewhere_or(profiles_holding(Path(results_dir), experiments, besides=profile), fix)
    folder = records_folder(results_dir, profile)
    return UserError(f"no records of {', '.join(experiments)} under {folder}; {remedy}")


def record_path(
    results_dir: Path, profile: str, experiment: str, dataset: str, method: str, key: str
) -> Path:
    return records_folder(results_dir, profile, experiment, dataset, method) / f"{key}.csv"


def labels_path(record: Path) -> Path:
    """Where the predicted labels of a record's run lie: ``<hash>.labels.npy`` beside ``<hash>.csv``."""
    return record.with_name(f"{record.stem}.labels.npy")


def trace_path(record: Path) -> Path:
    """Where the per-iteration trace of a record's run lies: ``<hash>.trace.json`` beside ``<hash>.csv``."""
    return record.with_name(f"{record.stem}.trace.json")


def write_record(path: Path, rows: Iterable[Mapping], labels: np.ndarray | None = None, trace=None) -> None:
    """Write one record's rows, its run's ``labels`` and ``trace`` first, each atomically written.

    Without ``labels`` (a failed, skipped or timed-out run) the labels and trace files left by an
    earlier run of the point are removed (without ``trace``, its file). Separate writes: a process
    killed between them while rewriting a finished point (``force=true``) leaves the new labels
    beside the old record, or an ok record without labels; rerunning it with ``force=true`` mends either.
    """
    if labels is None:
        labels_path(path).unlink(missing_ok=True)
        trace = None
    else:
        write_labels(labels_path(path), labels)
    if trace:
        write_trace(trace_path(path), trace)
    else:
        trace_path(path).unlink(missing_ok=True)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buffer.getvalue())


def write_labels(path: Path, labels: np.ndarray) -> None:
    """Save integer labels as ``.npy`` in the smallest integer type that holds them.

    Records are committed to the repository: 60k labels take 60 kB as int8 instead of 480 kB.
    """
    labels = np.asarray(labels, dtype=np.int64)
    dtype = np.promote_types(np.min_scalar_type(labels.min()), np.min_scalar_type(labels.max()))
    buffer = io.BytesIO()
    np.save(buffer, labels.astype(dtype), allow_pickle=False)
    atomic_write_bytes(path, buffer.getvalue())


def read_labels(record: Path) -> np.ndarray | None:
    """The predicted labels of the run recorded at ``record``, or None where no labels file exists."""
    path = labels_path(record)
    return np.load(path, allow_pickle=False) if path.exists() else None


def write_trace(path: Path, trace: Mapping[str, Iterable[float]]) -> None:
    """Save ``{name: values}`` as JSON, a list of floats per name (non-finite ones as null)."""
    lists = {
        str(name): [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=float).ravel()]
        for name, values in trace.items()
    }
    atomic_write_text(path, json.dumps(lists, sort_keys=True, allow_nan=False) + "\n")


def read_trace(record: Path) -> dict[str, np.ndarray] | None:
    """The per-iteration trace of the run recorded at ``record`` (``{name: float array}``, null as
    NaN), or None where it has none (a method that keeps none, a record older than traces)."""
    path = trace_path(record)
    if not path.exists():
        return None
    lists = json.loads(path.read_text())
    return {
        name: np.array([np.nan if v is None else v for v in values], dtype=float)
        for name, values in lists.items()
    }


def check_writable(folder: Path, what: str) -> None:
    """Fail in one line, before any work, unless ``folder`` is or can be made a writable folder:
    its nearest existing ancestor is a folder in which a probe folder can be made (and is removed
    at once; permission bits alone say yes on /proc or a read-only mount)."""
    existing = folder.absolute()
    while not (existing.exists() or existing.is_symlink()):  # a broken link is in the way too
        existing = existing.parent
    why = None
    if not existing.is_dir():
        why = "a file is in the way"
    else:
        try:
            tempfile.TemporaryDirectory(dir=existing, prefix=".clusterbench-probe-").cleanup()
        except OSError as exc:
            why = f"cannot create a folder in {existing}: {exc.strerror or type(exc).__name__}"
    if why:
        raise UserError(f"{what} '{folder}' is not a writable folder ({why}); choose another")


# The process's umask, read once (reading it means setting it): what ``open`` would leave a new
# file's mode at.
UMASK = os.umask(0o022)
os.umask(UMASK)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """A temporary file in the same folder, fsync, then ``os.replace``: readers never see half a
    file. The file gets the mode ``open`` would give it (mkstemp's is owner-only)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# Columns read as text whatever they hold: a hash of digits alone ("37224736794370633463") or with
# one "e" ("4e131859530002375504") would otherwise be read as a number, and name no file.
TEXT_COLUMNS = [c for c in COLUMNS if c not in ("seed", "value", "fit_seconds")]


def read_record(path: Path | io.StringIO) -> pd.DataFrame:
    """A record file (or the text of records sharing one header) as a frame."""
    # An undefined metric is written as "nan"; other text (errors, params) is never read as NaN.
    return pd.read_csv(
        path,
        keep_default_na=False,
        na_values={"value": ["", "nan"], "fit_seconds": ["", "nan"]},
        dtype={**dict.fromkeys(TEXT_COLUMNS, str), "value": float, "fit_seconds": float},
    )


def finished_record(path: Path, retry_failed: bool = False) -> pd.DataFrame | None:
    """The record at ``path`` if its point is done: it exists and, with ``retry_failed``, did not
    fail. A failure is recorded once and stays (a deterministic one, an eigensolver that does not
    converge, would fail again on every rerun, and rewrite its record each time)."""
    if not path.exists():
        return None
    frame = read_record(path)
    return frame if not retry_failed or (frame["status"] != "failed").all() else None


def load_records(results_dir: Path, profile: str, experiments: Iterable[str] | None = None) -> pd.DataFrame:
    """All records of ``profile`` (optionally only these experiments) as one tidy frame."""
    root = records_folder(results_dir, profile)
    folders = [root / name for name in experiments] if experiments is not None else [root]
    return read_records(sorted(f for folder in folders if folder.is_dir() for f in folder.rglob("*.csv")))


def read_records(files: Iterable[Path]) -> pd.DataFrame:
    """The records ``files`` as one tidy frame, in their order."""
    files = list(files)
    if not files:
        return pd.DataFrame(columns=COLUMNS)
    # One parse per run of files with the same header, not one per file: a table over thousands of
    # single-restart records (kr_restart_odds: 4800) loads in a second instead of twenty. Rows
    # keep the files' order.
    runs: list[tuple[str, list[str]]] = []
    for path in files:
        header, _, rows = path.read_text().partition("\n")
        if not runs or runs[-1][0] != header:
            runs.append((header, []))
        runs[-1][1].append(rows if rows.endswith("\n") else rows + "\n")
    frames = [read_record(io.StringIO(f"{header}\n{''.join(rows)}")) for header, rows in runs]
    # Every column, in order, whatever the files' headers: records written before a column
    # existed (``processor``, say) have it empty, as a text column's empty field reads.
    frame = pd.concat(frames, ignore_index=True)
    absent = [column for column in COLUMNS if column not in frame]
    frame = frame.assign(**{column: "" if column in TEXT_COLUMNS else np.nan for column in absent})
    text = [column for column in TEXT_COLUMNS if column not in absent]
    frame[text] = frame[text].fillna("")
    return frame[COLUMNS]


def record_differences(
    fresh: Path, committed: Path, atol: float, rtol: float = 0.0
) -> tuple[list[str], int, int]:
    """Compare every record under ``fresh`` with the record of the same point under ``committed``.

    Returns (one line per point that differs: its status, or each metric that moved beyond
    ``atol + rtol·|committed|`` as old → new, or that ``committed`` lacks; points compared; points
    that differ). A record says what some code computed once, and the config hash leaves code out
    (so that reruns resume across commits): this is how a rerun checks that it still holds.
    """
    lines, compared, differing = [], 0, 0
    for path in sorted(records_folder(fresh).rglob("*.csv")):
        relative = path.relative_to(fresh)
        committed_path = Path(committed) / relative
        if not committed_path.exists():
            lines.append(f"{relative}: not in {committed}")
            continue
        new, old = read_record(path), read_record(committed_path)
        compared += 1
        if new["status"].iloc[0] != old["status"].iloc[0]:
            changes = [f"status {old['status'].iloc[0]} → {new['status'].iloc[0]}"]
        else:
            old_values = old.set_index("metric")["value"]
            new_values = new.set_index("metric")["value"]
            changes = [
                f"{metric} {_shown(old_values[metric], new_values[metric])}"
                for metric in old_values.index.intersection(new_values.index)
                if not np.isclose(
                    new_values[metric], old_values[metric], rtol=rtol, atol=atol, equal_nan=True
                )
            ]
            changes += [
                f"{metric} only in the committed record"
                for metric in old_values.index.difference(new_values.index)
            ]
            changes += [
                f"{metric} only in the fresh record"
                for metric in new_values.index.difference(old_values.index)
            ]
        if changes:
            differing += 1
            lines.append(f"{relative}: {', '.join(changes)}")
    return lines, compared, differing


def _shown(old: float, new: float) -> str:
    """``old → new`` with as many digits as it takes to tell them apart (6 at least)."""
    for digits in (6, 9, 12, 17):
        if f"{old:.{digits}g}" != f"{new:.{digits}g}":
            break
    return f"{old:.{digits}g} → {new:.{digits}g}"


# The folder where each job of a `clusterbench run` notes what its points did (set in the
# environment, which the jobs of every launcher inherit: joblib's and submitit's processes), so
# the run can count its own points (and no other run's) and summarise them at its end.
JOURNAL_ENV = "CLUSTERBENCH_JOURNAL"


def journal_folder(results_dir: Path) -> Path:
    """A fresh folder for one run's journal, on the results' file system (which a cluster's nodes
    share), named ``<host>-<pid>-<random>`` after the run's process. The journals that runs killed
    on this host left behind (SIGKILL, a lost session: their process is gone) are removed; hosts
    sharing a results folder are told apart by name, as lock files on shared file systems are."""
    journals = records_folder(Path(results_dir).resolve(), ".journal")
    host = socket.gethostname()
    for folder in journals.glob(f"{glob.escape(host)}-*-*"):
        pid = folder.name[len(host) + 1 :].partition("-")[0]
        if pid.isdigit() and int(pid) not in (0, os.getpid()) and not _process_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
    return journals / f"{host}-{os.getpid()}-{uuid.uuid4().hex}"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True


def note_outcomes(entries: Iterable[tuple[str, bool, Path | None]]) -> None:
    """Note one job's points, (status, read from an earlier record, record) each, in the
    ``JOURNAL_ENV`` folder if a ``clusterbench run`` set one: one file per job, renamed into place
    (read only after the jobs)."""
    folder = os.environ.get(JOURNAL_ENV)
    lines = [f"{status}\t{int(earlier)}\t{record or ''}\n" for status, earlier, record in entries]
    if not folder or not lines:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    path = Path(folder) / f"{uuid.uuid4().hex}.tsv"
    temporary = path.with_suffix(".tmp")
    temporary.write_text("".join(lines))
    os.replace(temporary, path)


def read_journal(folder: Path) -> list[tuple[str, bool, Path | None]]:
    """What :func:`note_outcomes` noted of every point of the run's jobs in ``folder``; removes it."""
    if not folder.is_dir():
        return []
    entries = []
    for job in sorted(folder.glob("*.tsv")):
        for line in job.read_text().splitlines():
            status, earlier, record = line.split("\t")
            entries.append((status, earlier == "1", Path(record) if record else None))
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # the runs' .journal folder, unless another run is using it
        folder.parent.rmdir()
    return entries

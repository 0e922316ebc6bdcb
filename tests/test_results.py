"""Tidy records: atomic writes, stable hashes, typed loading, completeness."""

from __future__ import annotations

import csv
import math
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clusterbench import __version__, results
from clusterbench.migrations import adopt_typed_record
from clusterbench.results import (
    COLUMNS,
    code_version,
    config_hash,
    finished_record,
    folder_words,
    journal_folder,
    labels_path,
    load_records,
    read_labels,
    read_record,
    read_trace,
    record_differences,
    record_path,
    write_record,
)
from tests.helpers import load_script


def rows(status: str = "ok", seed: int = 0, dataset: str = "zoo", experiment: str = "adhoc") -> list[dict]:
    base = {
        "experiment": experiment,
        "profile": "smoke",
        "dataset": dataset,
        "method": "kmeans",
        "variant": "default",
        "seed": seed,
        "params": '{"init": "k-means++"}',
        "fit_seconds": 0.25,
        "device": "cpu",
        "config_hash": "abc",
        "clusterbench_version": "0.1.0",
        "timestamp": "2024-01-01T00:00:00+00:00",
    }
    if status != "ok":
        return [{**base, "metric": "", "metric_params": "", "value": "", "status": status, "error": "E: x"}]
    return [
        {
            **base,
            "metric": "sc",
            "metric_params": '{"max_samples": 20000}',
            "value": 0.374,
            "status": "ok",
            "error": "",
        },
        {
            **base,
            "metric": "nmi",
            "metric_params": '{"average_method": "arithmetic"}',
            "value": 0.833,
            "status": "ok",
            "error": "",
        },
    ]


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir())


def test_write_record_failing_midway_leaves_neither_the_record_nor_a_temp_file(tmp_path, monkeypatch):
    path = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "k1")

    def disk_full(fd):  # the rows already sit in the temp file when the sync fails
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="disk full"):
        write_record(path, rows())
    assert not path.exists()
    assert leftovers(path.parent) == []


def test_a_failed_rewrite_keeps_the_previous_record_intact(tmp_path, monkeypatch):
    path = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "k1")
    write_record(path, rows())
    before = path.read_bytes()

    def fail(self, data):
        raise KeyboardInterrupt  # BaseException too: a Ctrl-C mid-write

    monkeypatch.setattr(csv.DictWriter, "writerows", fail)
    with pytest.raises(KeyboardInterrupt):
        write_record(path, rows(status="failed"))
    assert path.read_bytes() == before
    assert leftovers(path.parent) == [path.name]


def test_record_round_trip_has_the_columns_and_types(tmp_path):
    path = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "k1")
    assert path == tmp_path / "runs" / "smoke" / "adhoc" / "zoo" / "kmeans" / "k1.csv"
    write_record(path, rows(seed=3))
    with path.open(newline="") as handle:
        assert next(csv.reader(handle)) == COLUMNS
    frame = read_record(path)
    assert list(frame["metric"]) == ["sc", "nmi"]
    assert list(frame["value"]) == [0.374, 0.833]
    assert frame["value"].dtype == float
    assert frame["seed"].dtype.kind == "i" and frame["seed"].iloc[0] == 3
    assert frame["fit_seconds"].iloc[0] == 0.25


@pytest.mark.parametrize("key", ["37224736794370633463", "4e131859530002375504", "0000000000000000001e"])
def test_a_hash_that_looks_like_a_number_is_read_as_its_text(tmp_path, key):
    # Two committed records had such names; read as 3.72e19 and inf, they named no labels file.
    path = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", key)
    write_record(path, [{**row, "config_hash": key, "dataset": "1", "variant": "2"} for row in rows()])
    frame = read_record(path)
    assert list(frame["config_hash"]) == [key, key]
    assert frame["dataset"].iloc[0] == "1" and frame["variant"].iloc[0] == "2"


def typed_and_new(folder, typed_status: str, new_status: str | None):
    """A point's record under its former hash (with labels when ok) and, optionally, under its new one."""
    typed, new = (record_path(folder, "smoke", "adhoc", "zoo", "kmeans", key) for key in ("t1", "n1"))
    write_record(typed, [{**r, "config_hash": "t1"} for r in rows(status=typed_status)], labels=np.arange(3))
    if new_status:
        write_record(new, [{**r, "config_hash": "n1"} for r in rows(status=new_status, seed=5)])
    return typed, new


@pytest.mark.parametrize("new_status", [None, "failed", "timeout"])
def test_a_typed_record_that_succeeded_takes_the_new_name_with_its_labels(tmp_path, new_status):
    _, new = typed_and_new(tmp_path, "ok", new_status)
    adopt_typed_record(new, "t1")
    assert sorted(p.name for p in new.parent.iterdir()) == ["n1.csv", "n1.labels.npy"]
    frame = read_record(new)
    assert (
        set(frame["config_hash"]) == {"n1"} and set(frame["status"]) == {"ok"} and set(frame["seed"]) == {0}
    )
    assert list(read_labels(new)) == [0, 1, 2]
    adopt_typed_record(new, "t1")  # again: nothing to do
    assert sorted(p.name for p in new.parent.iterdir()) == ["n1.csv", "n1.labels.npy"]


@pytest.mark.parametrize(
    ("typed_status", "new_status"), [("ok", "ok"), ("failed", "timeout"), ("failed", "ok")]
)
def test_where_the_new_name_holds_the_points_record_the_typed_one_goes(tmp_path, typed_status, new_status):
    _, new = typed_and_new(tmp_path, typed_status, new_status)
    adopt_typed_record(new, "t1")
    assert [p.name for p in new.parent.iterdir()] == ["n1.csv"]
    assert set(read_record(new)["seed"]) == {5}


def test_labels_a_killed_rename_left_behind_are_removed(tmp_path):
    typed, new = typed_and_new(tmp_path, "ok", None)
    os.replace(typed, new)  # killed after the rename, before the typed labels went
    adopt_typed_record(new, "t1")
    assert [p.name for p in new.parent.iterdir()] == ["n1.csv"]


def test_config_hash_is_stable_and_independent_of_key_order():
    a = {"dataset": {"name": "zoo", "n_clusters": 7}, "seed": 0, "method": {"params": {"b": 1, "a": [1, 2]}}}
    b = {"seed": 0, "method": {"params": {"a": [1, 2], "b": 1}}, "dataset": {"n_clusters": 7, "name": "zoo"}}
    assert config_hash(a) == config_hash(b)
    assert len(config_hash(a)) == 20 and int(config_hash(a), 16) >= 0
    assert config_hash({**a, "seed": 1}) != config_hash(a)
    assert config_hash({**a, "method": {"params": {"a": [2, 1], "b": 1}}}) != config_hash(
        a
    )  # list order counts
    # the same in a fresh interpreter with another hash seed (no dependence on Python's hash())
    code = f"from clusterbench.results import config_hash; print(config_hash({b!r}))"
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    )
    assert other.stdout.strip() == config_hash(a)


def test_config_hash_reads_numbers_by_value():
    point = {"params": {"tol": 1, "beta": [2, 0.5], "mask": True, "n_init": 10}}
    same = {"params": {"tol": 1.0, "beta": (2.0, 0.5), "mask": True, "n_init": 10.0}}
    assert config_hash(same) == config_hash(point)
    # a bool is not the number it equals, and unequal numbers stay apart
    assert config_hash({"params": {**point["params"], "mask": 1}}) != config_hash(point)
    assert config_hash({"params": {**point["params"], "tol": 1.5}}) != config_hash(point)
    assert config_hash({"x": float("inf")}) != config_hash({"x": float("-inf")})


def test_load_records_parses_files_together_as_it_would_one_by_one(tmp_path):
    # Records written before fit_hash, data_digest and processor (another header) between today's, one
    # without its last line break before another, a quoted error across lines: the frame is the
    # files' concat.
    folder = tmp_path / "runs" / "smoke" / "adhoc" / "zoo" / "kmeans"
    failed = rows(status="failed")
    failed[0]["error"] = 'ValueError: "bad"\nat line 2'
    for name, records in [("a", rows()), ("b", rows(seed=1)), ("c", failed), ("d", rows(seed=2))]:
        write_record(folder / f"{name}.csv", records)
    old_header = pd.read_csv(folder / "b.csv", dtype=str, keep_default_na=False)
    old_header.drop(columns=["fit_hash", "data_digest", "processor"]).to_csv(folder / "b.csv", index=False)
    (folder / "c.csv").write_text((folder / "c.csv").read_text().rstrip("\r\n"))  # d follows it
    one_by_one = pd.concat([read_record(f) for f in sorted(folder.glob("*.csv"))], ignore_index=True)
    missing = ["fit_hash", "data_digest", "processor"]  # b's: empty text, as a written empty field reads
    one_by_one[missing] = one_by_one[missing].fillna("")
    pd.testing.assert_frame_equal(load_records(tmp_path, "smoke"), one_by_one)
    assert load_records(tmp_path, "smoke")["error"].iloc[-len(rows()) - 1] == 'ValueError: "bad"\nat line 2'


def test_records_of_several_headers_load_with_every_column_in_order(tmp_path):
    # An old record first: the frame's columns still follow COLUMNS, the missing ones empty text.
    folder = tmp_path / "runs" / "smoke" / "adhoc" / "zoo" / "kmeans"
    write_record(folder / "a.csv", [{**row, "processor": "AMD EPYC, AVX2"} for row in rows()])
    write_record(folder / "0.csv", rows(seed=1))
    old = pd.read_csv(folder / "0.csv", dtype=str, keep_default_na=False)
    old.drop(columns=["processor", "fit_hash"]).to_csv(folder / "0.csv", index=False)
    frame = load_records(tmp_path, "smoke")
    assert list(frame.columns) == COLUMNS
    assert frame["processor"].tolist() == ["", "", "AMD EPYC, AVX2", "AMD EPYC, AVX2"]
    assert frame["fit_hash"].tolist()[:2] == ["", ""]


@pytest.mark.parametrize(
    ("cpuinfo", "expected"),
    [
        ("model name\t: Intel Xeon\nflags\t\t: fpu sse4_2 avx avx2 avx512f\n", "Intel Xeon, AVX-512"),
        ("model name\t: AMD EPYC\nflags\t\t: fpu avx avx2\nmodel name\t: AMD EPYC\n", "AMD EPYC, AVX2"),
        ("model name\t: Old\nflags\t\t: fpu sse4_2\n", "Old"),
        ("model name\t: Neoverse\nFeatures\t: fp asimd\n", "Neoverse, NEON"),
    ],
)
def test_processor_names_the_cpu_model_and_its_widest_vector_extension(tmp_path, cpuinfo, expected):
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    assert results._cpu(path) == expected


def test_processor_without_cpuinfo_falls_back_to_the_platform(tmp_path, monkeypatch):
    monkeypatch.setattr(results.platform, "processor", lambda: "arm")
    assert results._cpu(tmp_path / "missing") == "arm"


def test_load_records_reads_every_record_with_types(tmp_path):
    write_record(record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "a"), rows(seed=0))
    write_record(
        record_path(tmp_path, "smoke", "adhoc", "ecoli", "kmeans", "b"), rows(seed=1, dataset="ecoli")
    )
    write_record(record_path(tmp_path, "smoke", "other", "zoo", "kmeans", "c"), rows(status="failed", seed=2))
    write_record(record_path(tmp_path, "paper", "adhoc", "zoo", "kmeans", "d"), rows(seed=9))
    # a stray temp file (as a SIGKILL mid-write can leave) is not a record
    (tmp_path / "runs" / "smoke" / "adhoc" / "zoo" / "kmeans" / ".a.x1y2.tmp").write_text("experiment,pro")

    frame = load_records(tmp_path, "smoke")
    assert len(frame) == 5  # 2 + 2 + 1 failed row; the paper profile is elsewhere
    assert frame["value"].dtype == float
    assert frame["seed"].dtype.kind == "i"
    assert sorted(frame["seed"].unique()) == [0, 1, 2]
    failed = frame[frame["status"] == "failed"]
    assert len(failed) == 1 and math.isnan(failed["value"].iloc[0]) and failed["error"].iloc[0] == "E: x"
    ok = frame[frame["status"] == "ok"]
    assert ok.groupby("dataset")["value"].sum().to_dict() == pytest.approx({"zoo": 1.207, "ecoli": 1.207})

    only = load_records(tmp_path, "smoke", experiments=["other"])
    assert list(only["seed"]) == [2]
    assert list(load_records(tmp_path, "smoke", experiments=["missing"]).columns) == COLUMNS
    empty = load_records(tmp_path / "nothing", "smoke")
    assert empty.empty and list(empty.columns) == COLUMNS


def test_finished_record_is_none_for_missing_records_and_failed_ones_to_retry(tmp_path):
    ok = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "ok")
    failed = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "failed")
    skipped = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "skipped")
    write_record(ok, rows())
    write_record(failed, rows(status="failed"))
    write_record(skipped, rows(status="skipped"))
    assert set(finished_record(ok)["status"]) == {"ok"}
    assert set(finished_record(failed)["status"]) == {"failed"}  # kept: a rerun would fail again
    assert finished_record(failed, retry_failed=True) is None
    assert set(finished_record(ok, retry_failed=True)["status"]) == {"ok"}
    assert set(finished_record(skipped)["status"]) == {"skipped"}  # a decision, not an accident
    assert finished_record(tmp_path / "absent.csv") is None


def test_failed_record_value_is_empty_not_zero(tmp_path):
    path = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "f")
    write_record(path, rows(status="failed"))
    with path.open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["value"] == "" and row["status"] == "failed"
    assert pd.isna(read_record(path)["value"].iloc[0])


def test_columns_are_the_documented_tidy_layout():
    docs = (Path(__file__).parents[1] / "docs" / "records.md").read_text()
    documented = docs.split("one row per metric:\n`", 1)[1].split("`", 1)[0]
    assert documented.replace("\n", " ").split(", ") == COLUMNS
    assert results.COLUMNS[:3] == ["experiment", "profile", "dataset"]
    assert {"metric", "metric_params", "value", "status", "error", "config_hash"} <= set(COLUMNS)
    assert len(set(COLUMNS)) == len(COLUMNS)


def test_an_undefined_metric_reads_back_as_nan_and_keeps_the_column_numeric(tmp_path):
    path = record_path(tmp_path, "smoke", "adhoc", "zoo", "kmeans", "k1")
    undefined = rows()
    undefined[0]["value"] = float("nan")  # e.g. SC of a one-cluster labeling
    write_record(path, undefined)
    frame = read_record(path)
    assert frame["value"].dtype == float
    assert math.isnan(frame["value"].iloc[0]) and frame["value"].iloc[1] == 0.833


def test_code_version_names_the_commit_and_marks_new_or_changed_code(tmp_path):
    """In a fresh repository holding a copy of this package: the commit, then ``.dirty`` once a
    new module appears under clusterbench/."""
    checkout = tmp_path / "checkout"
    shutil.copytree(
        os.path.dirname(results.__file__),
        checkout / "clusterbench",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (checkout / ".gitignore").write_text("__pycache__/\n")

    def git(*args: str) -> str:
        command = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t", *args]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()

    try:
        git("init", "-q")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not available")
    git("add", ".")
    git("commit", "-q", "-m", "copy")
    head = git("rev-parse", "--short=7", "HEAD")

    def version_in_checkout() -> str:
        script = "from clusterbench.results import code_version; print(code_version())"
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        return subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env, cwd=tmp_path
        ).stdout.strip()

    assert version_in_checkout() == f"{__version__}+g{head}"
    (checkout / "clusterbench" / "methods" / "new_method.py").write_text("")  # new, not yet added
    assert version_in_checkout() == f"{__version__}+g{head}.dirty"


def test_code_version_without_git_is_unknown_in_a_checkout(monkeypatch):
    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(subprocess, "run", no_git)
    code_version.cache_clear()
    try:
        top = os.path.dirname(os.path.dirname(results.__file__))
        in_checkout = all(os.path.exists(os.path.join(top, name)) for name in (".git", "pyproject.toml"))
        assert code_version() == (f"{__version__}+unknown" if in_checkout else __version__)
    finally:
        code_version.cache_clear()


def test_compare_records_names_the_points_a_rerun_does_not_reproduce(tmp_path, capsys):
    compare_records = load_script("compare_records")
    fresh, committed = tmp_path / "fresh", tmp_path / "committed"
    for root in (fresh, committed):
        write_record(record_path(root, "paper", "adhoc", "zoo", "kmeans", "same"), rows())
    write_record(record_path(committed, "paper", "adhoc", "zoo", "kmeans", "moved"), rows())
    moved = rows()
    moved[0]["value"] = 0.374 + 1e-6  # sc: beyond the default tolerance
    write_record(record_path(fresh, "paper", "adhoc", "zoo", "kmeans", "moved"), moved)
    write_record(record_path(committed, "paper", "adhoc", "zoo", "kmeans", "broke"), rows())
    write_record(record_path(fresh, "paper", "adhoc", "zoo", "kmeans", "broke"), rows(status="failed"))
    write_record(record_path(fresh, "paper", "adhoc", "zoo", "kmeans", "new"), rows())

    assert compare_records.main([str(fresh), "--against", str(committed)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "runs/paper/adhoc/zoo/kmeans/broke.csv: status ok → failed",
        "runs/paper/adhoc/zoo/kmeans/moved.csv: sc 0.374 → 0.374001",
        f"runs/paper/adhoc/zoo/kmeans/new.csv: not in {committed}",
        "3 points compared, 2 differ",
    ]
    assert compare_records.main([str(fresh), "--against", str(committed), "--tol", "1e-5"]) == 1  # status
    (fresh / "runs/paper/adhoc/zoo/kmeans/broke.csv").unlink()
    assert compare_records.main([str(fresh), "--against", str(committed), "--tol", "1e-5"]) == 0
    # A metric only one record holds is a difference; a drift is shown to the digits that tell it.
    lonely, drift = rows(), rows()
    lonely.pop()
    drift[0]["value"] = 0.374 + 1e-10
    write_record(record_path(committed, "paper", "adhoc", "zoo", "kmeans", "lonely"), lonely)
    write_record(record_path(fresh, "paper", "adhoc", "zoo", "kmeans", "lonely"), rows())
    write_record(record_path(fresh, "paper", "adhoc", "zoo", "kmeans", "moved"), drift)
    lines = record_differences(fresh, committed, atol=1e-12)[0]
    assert (
        lines[0] == f"runs/paper/adhoc/zoo/kmeans/lonely.csv: {rows()[-1]['metric']} only in the fresh record"
    )
    assert lines[1] == "runs/paper/adhoc/zoo/kmeans/moved.csv: sc 0.374 → 0.3740000001"
    write_record(record_path(fresh, "paper", "adhoc", "zoo", "kmeans", "moved"), moved)
    (fresh / "runs/paper/adhoc/zoo/kmeans/lonely.csv").unlink()
    # Relative tolerance, for metrics that are large sums (inertia): 1e-6 on 0.374 is 2.7e-6 of it.
    assert record_differences(fresh, committed, atol=0, rtol=1e-5)[1:] == (2, 0)
    assert record_differences(fresh, committed, atol=0, rtol=1e-6)[1:] == (2, 1)


def test_a_run_clears_the_journals_of_dead_runs_on_its_host_and_no_other(tmp_path):
    """A SIGKILLed run leaves its notes (runs/.journal/<host>-<pid>-<id>); the next run removes
    those whose process is gone, and keeps a live run's and another host's."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead = int(finished.stdout)
    host = socket.gethostname()
    journals = tmp_path / "runs" / ".journal"
    names = [
        f"{host}-{dead}-{'a' * 32}",
        f"{host}-{os.getppid()}-{'b' * 32}",
        f"other{host}-{dead}-{'c' * 32}",
    ]
    for name in names:
        (journals / name).mkdir(parents=True)
    mine = journal_folder(tmp_path)
    assert mine.parent == journals and mine.name.startswith(f"{host}-{os.getpid()}-")
    assert sorted(path.name for path in journals.iterdir()) == sorted(names[1:])


@pytest.mark.parametrize("labels", [[-1, 0, 5], [-1, 0, 200], [0, 40000, 3], [-40000, 1]])
def test_labels_round_trip_exactly_with_noise_and_large_ids(tmp_path, labels):
    """The labels file's integer type must hold the least label too: DBSCAN's noise −1 stored as
    uint8 reads back as 255 (a mutation audit's find: no test wrote a negative label)."""
    path = tmp_path / "k.csv"
    write_record(path, [{"status": "ok", "metric": "sc", "value": 0.5}], labels=np.array(labels))
    assert read_labels(path).tolist() == labels


def test_a_rewrite_failing_at_the_sync_keeps_the_previous_record_intact(tmp_path, monkeypatch):
    """A rewrite that fails after its bytes are written, before they are synced, leaves the old
    record as it was and no temporary file: a write straight into the record passed every other
    test (the failed-rewrite test raises before the file is written)."""
    path = tmp_path / "k.csv"
    write_record(path, [{"status": "ok", "metric": "sc", "value": 0.5}])
    before = path.read_bytes()

    def disk_full(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="disk full"):
        write_record(path, [{"status": "failed", "error": "boom"}])
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.csv"]


def test_a_record_gets_the_mode_open_would_give_it_not_mkstemps(tmp_path):
    # Records are shared (a lab's results folder, a repository): mkstemp's 0600 would hide them.
    path = tmp_path / "k.csv"
    write_record(path, [{"status": "ok", "metric": "sc", "value": 0.5}], labels=np.array([0, 1]))
    for written in (path, labels_path(path)):
        assert written.stat().st_mode & 0o777 == 0o666 & ~results.UMASK


def test_a_ctrl_c_during_the_sync_keeps_the_previous_record_and_leaves_no_temp_file(tmp_path, monkeypatch):
    """A KeyboardInterrupt is no Exception: the temporary file is removed on any error."""
    path = tmp_path / "k.csv"
    write_record(path, [{"status": "ok", "metric": "sc", "value": 0.5}])
    before = path.read_bytes()

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_record(path, [{"status": "failed", "error": "boom"}])
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.csv"]


def test_a_rewrite_without_a_trace_removes_the_earlier_runs_trace(tmp_path):
    path = tmp_path / "k.csv"
    row = {"status": "ok", "metric": "sc", "value": 0.5}
    write_record(path, [row], labels=np.array([0, 1]), trace={"mutual_information_": [0.1, 0.2]})
    assert list(read_trace(path)) == ["mutual_information_"]
    write_record(path, [row], labels=np.array([1, 0]))  # rerun (force=true) by a method keeping none
    assert read_trace(path) is None and read_labels(path).tolist() == [1, 0]


def test_retry_failed_retries_failures_only_not_skips_or_timeouts(tmp_path):
    # A skip or timeout stands while its limit does (resume._limit_raised), retry_failed or not.
    for status in ("skipped", "timeout"):
        path = tmp_path / f"{status}.csv"
        write_record(path, rows(status=status))
        assert list(finished_record(path, retry_failed=True)["status"]) == [status]


def test_zero_given_as_int_or_float_names_one_configuration():
    # 0.0 is integral too: tol=0 and tol=0.0 are one point (and one record), as tol=1 and 1.0 are.
    assert config_hash({"method": {"tol": 0}}) == config_hash({"method": {"tol": 0.0}})
    assert config_hash({"method": {"tol": 0}}) != config_hash({"method": {"tol": 0.5}})


def test_a_printed_command_names_a_folder_only_when_it_is_not_the_default_and_quotes_it(
    tmp_path, monkeypatch
):
    # The default folder given absolute (as the committed report is built) is still the default.
    monkeypatch.chdir(tmp_path)
    assert folder_words("results", "--results-dir ") == ""
    assert folder_words(tmp_path / "results", "RESULTS=") == ""
    assert folder_words("my runs", "results_dir=") == " results_dir='my runs'"
    assert folder_words(tmp_path / "r", "--results-dir ") == f" --results-dir {tmp_path / 'r'}"

"""Progress: a slow fit shows a bar of its seconds, estimated from the records of its peers; off a
terminal every bar writes a stamped line at intervals."""

from __future__ import annotations

import itertools
import re
import sys
import threading
import time
from typing import ClassVar

import pytest

from clusterbench import fitting, progress
from clusterbench.errors import UserError
from clusterbench.results import record_path, write_record
from tests.helpers import cli
from tests.test_results import rows


def write_peers(folder_root, seconds: list[float], failed: int = 0):
    for index, value in enumerate(seconds):
        path = record_path(folder_root, "smoke", "adhoc", "zoo", "kmeans", f"ok{index}")
        write_record(path, [{**row, "fit_seconds": value, "config_hash": f"ok{index}"} for row in rows()])
    for index in range(failed):
        path = record_path(folder_root, "smoke", "adhoc", "zoo", "kmeans", f"failed{index}")
        write_record(path, [{**row, "fit_seconds": 1000.0} for row in rows(status="failed")])
    return path.parent


def test_the_estimate_is_the_median_fit_time_of_the_successful_peers(tmp_path):
    folder = write_peers(tmp_path, [1.0, 3.0, 100.0], failed=2)
    assert fitting.expected_seconds(folder) == 3.0
    assert fitting.expected_seconds(tmp_path / "nothing") is None


class Bar:
    """Stands in for tqdm: what the progress bar was made with and how it moved."""

    made: ClassVar[list] = []

    def __init__(self, total=None, initial=0, desc="", **_):
        self.total, self.n, self.desc = total, initial, desc
        Bar.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, step):
        self.n += step


def test_a_fit_past_the_threshold_gets_a_bar_and_a_quick_one_none(tmp_path, monkeypatch):
    monkeypatch.setattr(fitting, "progress_bar", Bar)
    monkeypatch.setattr(Bar, "made", [])
    folder = write_peers(tmp_path, [2.0, 2.0, 4.0])
    with fitting.fit_progress(folder, "zoo/kmeans seed=0", after=0.05):
        pass
    assert Bar.made == []  # a quick fit: no bar
    with fitting.fit_progress(folder, "zoo/kmeans seed=0", after=0.05):
        time.sleep(2.3)
    (bar,) = Bar.made
    assert bar.desc == "zoo/kmeans seed=0" and bar.n >= 2
    assert bar.total == max(2, bar.n)  # the peers' median, grown once passed
    assert not any(thread.name == "fit-progress" for thread in threading.enumerate())


STAMPED_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d pretraining: +\d+%\|[ #0-9]*\| (\d+)/40 \[")


def iterate_slowly(seconds_each: float, steps: int = 40) -> None:
    with progress.progress_bar(total=steps, desc="pretraining", unit="epoch", leave=False) as bar:
        for _ in range(steps):
            time.sleep(seconds_each)
            bar.update()


def test_off_a_terminal_a_bar_writes_a_stamped_line_at_each_interval(capsys, monkeypatch):
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.25")
    iterate_slowly(0.03)  # 1.2 s: a line at about 0.25, 0.5, 0.75 and 1 s, none at the close
    lines = capsys.readouterr().err.splitlines()
    assert 3 <= len(lines) <= 5, lines
    steps = [int(STAMPED_LINE.match(line).group(1)) for line in lines]
    assert steps == sorted(steps) and 0 < steps[0] < steps[-1] < 40
    assert all("\r" not in line and "\x1b" not in line for line in lines)


def test_off_a_terminal_a_bar_shorter_than_the_interval_writes_nothing(capsys, monkeypatch):
    monkeypatch.setenv(progress.INTERVAL_ENV, "5")
    iterate_slowly(0.005)
    monkeypatch.setenv(progress.INTERVAL_ENV, "0")  # never
    iterate_slowly(0.005)
    assert capsys.readouterr().err == ""


def test_on_a_terminal_the_bar_is_tqdms_own_drawn_at_once(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with progress.progress_bar(total=3, desc="pretraining"):
        pass
    drawn = capsys.readouterr().err
    assert drawn.startswith("\rpretraining:   0%|") or drawn.startswith("pretraining:   0%|"), drawn


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_malformed_interval_stops_the_run_with_one_line(value, tmp_path, monkeypatch):
    monkeypatch.setenv(progress.INTERVAL_ENV, value)
    with pytest.raises(UserError, match=f"{progress.INTERVAL_ENV}='{value}' is not a number of seconds"):
        progress.line_interval()
    result = cli("run", "method=kmeans", "dataset=zoo", f"results_dir={tmp_path}")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"clusterbench: error: {progress.INTERVAL_ENV}='{value}' is not a number of seconds ≥ 0; "
        f"set e.g. {progress.INTERVAL_ENV}=300"
    ]
    assert not list(tmp_path.rglob("*.csv"))


def test_off_a_terminal_nested_bars_write_clean_lines_and_a_kept_bar_no_repeat(capsys, monkeypatch):
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.2")
    with progress.progress_bar(total=3, desc="jobs", unit="job") as jobs:  # kept at its close
        for _ in range(3):
            iterate_slowly(0.01, steps=30)  # the inner bars: 0.3 s each, left out at their close
            jobs.update()
    lines = capsys.readouterr().err.splitlines()
    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (jobs|pretraining): ")
    assert lines and all(stamp.match(line) for line in lines), lines
    assert not any("\x1b" in line or "\r" in line for line in lines)
    texts = [line[20:] for line in lines]
    assert all(a != b for a, b in itertools.pairwise(texts)), texts
    assert texts[-1].startswith("jobs: 100%|##########| 3/3")
    assert sum(text.startswith("jobs:") for text in texts) >= 2


def test_off_a_terminal_a_sweep_writes_its_jobs_bar(tmp_path, monkeypatch):
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.01")
    result = cli("run", "-m", "method=kmeans", "dataset=zoo", "seed=0,1,2", f"results_dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^\S+ \S+ jobs: +\d+%\|.*\| [12]/3 \[", result.stderr, re.MULTILINE), result.stderr


def test_off_a_terminal_ac_pic_writes_lines_of_its_merges(capsys, monkeypatch):
    """AC-PIC's merges take minutes on 10⁴ points inside an SR fit, which said nothing meanwhile."""
    from sklearn.datasets import make_blobs

    from clusterbench.methods import ACPIC

    monkeypatch.setenv(progress.INTERVAL_ENV, "0.001")
    X, _ = make_blobs(400, centers=3, random_state=0)
    model = ACPIC(3).fit(X)
    lines = [line for line in capsys.readouterr().err.splitlines() if "AC-PIC:" in line]
    counts = [tuple(map(int, re.search(r"(\d+)/(\d+) ", line).groups())) for line in lines]
    assert counts, "no line of the merges"
    assert all(total == model.n_initial_clusters_ - 3 for _, total in counts)
    assert [done for done, _ in counts] == sorted(done for done, _ in counts)

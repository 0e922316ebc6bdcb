"""A slow fit shows a bar of its seconds, estimated from the records of its peers."""

from __future__ import annotations

import threading
import time
from typing import ClassVar

from clusterbench import fitting
from clusterbench.results import record_path, write_record
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
    monkeypatch.setattr(fitting, "tqdm", Bar)
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

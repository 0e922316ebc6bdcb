"""scripts/bench_sr.py (issue 29's epoch timings): its rows, and the warm fit loading the network."""

from __future__ import annotations

import os

import pytest

from tests.helpers import load_script, require_cached

bench = load_script("bench_sr")


def test_the_benchmark_measures_each_epoch_and_the_warm_fit_skips_pretraining(monkeypatch):
    require_cached("usps_11000")
    monkeypatch.setattr(bench, "FIXED", {**bench.FIXED, "channels": 8})  # a small network: seconds
    X = bench.prepared("usps_11000", 300)
    assert X.shape == (300, 256) and X.min() >= -1.0 and X.max() <= 1.0  # pixels_symmetric
    rows = bench.measure("usps_11000", X, threads=1, extra=1, repeats=1)
    what = [(row["what"], row["method"]) for row in rows]
    assert what == [
        ("pretraining epoch (s)", "sr_kmeans"),
        ("clustering epoch (s)", "sr_kmeans"),
        ("clustering epoch (s)", "mi_adm"),
        ("cold fit, 1+1 epochs (s)", "sr_kmeans"),
        ("warm fit, 1+1 epochs (s)", "sr_kmeans"),
    ]
    assert all(row["rows"] == 300 and row["threads"] == 1 for row in rows)
    assert all(row["seconds"] > 0 for row in rows[3:])


def test_a_fit_that_does_not_run_as_set_fails_the_benchmark(monkeypatch):
    require_cached("usps_11000")
    # tol above any change of q: the phase-2 fits stop after their first epoch, so 1 + extra never runs
    monkeypatch.setattr(bench, "FIXED", {**bench.FIXED, "channels": 8, "tol": 0.999})
    with pytest.raises(SystemExit, match="did not run as set"):
        bench.measure("usps_11000", bench.prepared("usps_11000", 200), threads=1, extra=1, repeats=1)


def test_the_callers_cache_setting_is_left_as_it_was(monkeypatch, tmp_path):
    require_cached("usps_11000")
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path / "mine"))
    monkeypatch.setattr(bench, "FIXED", {**bench.FIXED, "channels": 8})
    X = bench.prepared("usps_11000", 100)
    bench.fit_seconds("sr_kmeans", X, tmp_path / "bench", threads=1, pretrain_epochs=1, epochs=1)
    assert os.environ["CLUSTERBENCH_CACHE"] == str(tmp_path / "mine")
    assert list((tmp_path / "bench").iterdir()) and not (tmp_path / "mine").exists()

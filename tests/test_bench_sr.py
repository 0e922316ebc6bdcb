"""scripts/bench_sr.py (issue 29's epoch timings): its rows and their arithmetic, the warm fit
loading the network, each dataset's own K."""

from __future__ import annotations

import os

import pytest

from tests.helpers import load_script, require_cached

bench = load_script("bench_sr")
WHAT = [
    ("pretraining epoch (s)", "sr_kmeans"),
    ("clustering epoch (s)", "sr_kmeans"),
    ("clustering epoch (s)", "mi_adm"),
    ("cold fit, 1+1 epochs (s)", "sr_kmeans"),
    ("warm fit, 1+1 epochs (s)", "sr_kmeans"),
]


def test_the_benchmark_fits_each_epoch_count_and_the_warm_fit_skips_pretraining(monkeypatch):
    require_cached("usps_11000")
    monkeypatch.setattr(bench, "FIXED", {**bench.FIXED, "channels": 8})  # a small network: seconds
    data = bench.prepared("usps_11000", 300)
    assert data.X.shape == (300, 256) and data.X.min() >= -1.0 and data.X.max() <= 1.0  # pixels_symmetric
    least = bench.least_seconds(data, threads=1, extra=1, repeats=1)
    assert sorted(least) == ["mi_adm 1", "mi_adm 2", "pretrain 1", "pretrain 2", "sr_kmeans 1", "sr_kmeans 2"]
    assert all(seconds > 0 for seconds in least.values())  # the warm fits loaded the network: checked inside


def test_rows_are_differences_per_extra_epoch_and_noise_fails(monkeypatch):
    least = {"pretrain 1": 10.0, "pretrain 3": 16.0, "sr_kmeans 1": 4.0, "sr_kmeans 3": 5.0}
    least |= {"mi_adm 1": 4.5, "mi_adm 3": 7.5}
    monkeypatch.setattr(bench, "least_seconds", lambda data, threads, extra, repeats, device: least)
    data = bench.Dataset("toy", bench.np.zeros((7, 64), dtype="float32"), bench.np.zeros(7, int), 3)
    rows = bench.measure(data, threads=2, extra=2, repeats=1)
    assert [(row["what"], row["method"]) for row in rows] == WHAT
    assert [row["seconds"] for row in rows] == [3.0, 0.5, 1.5, 10.0, 4.0]
    assert all(row["dataset"] == "toy" and row["rows"] == 7 and row["threads"] == 2 for row in rows)
    assert {row["hardware"] for row in rows} == {bench.processor("cpu")}  # "AMD EPYC, AVX2", a GPU's name
    least["mi_adm 3"] = 4.5  # no longer than one epoch: noise, not a time
    with pytest.raises(SystemExit, match="'mi_adm 3' took no longer than 'mi_adm 1' on toy"):
        bench.measure(data, threads=2, extra=2, repeats=1)


def test_a_fit_that_does_not_run_as_set_fails_the_benchmark(monkeypatch):
    require_cached("usps_11000")
    # tol above any change of q: the phase-2 fits stop after their first epoch, so 1 + extra never runs
    monkeypatch.setattr(bench, "FIXED", {**bench.FIXED, "channels": 8, "tol": 0.999})
    with pytest.raises(SystemExit, match="did not run as set"):
        bench.least_seconds(bench.prepared("usps_11000", 200), threads=1, extra=1, repeats=1)


def test_each_dataset_keeps_its_k_and_the_callers_cache_setting_is_left_as_it_was(monkeypatch, tmp_path):
    require_cached("cmu_pie")
    monkeypatch.setenv("CLUSTERBENCH_CACHE", str(tmp_path / "mine"))
    monkeypatch.setattr(bench, "FIXED", {**bench.FIXED, "channels": 8})
    data = bench.prepared("cmu_pie", 136)  # 2 faces of each of the 68 subjects
    assert data.n_clusters == 68
    _, model = bench.fit_seconds(
        "sr_kmeans", data, tmp_path / "bench", threads=1, pretrain_epochs=1, epochs=1
    )
    assert model.n_clusters == 68 and model.embedding_.shape == (136, 68)
    assert os.environ["CLUSTERBENCH_CACHE"] == str(tmp_path / "mine")
    assert list((tmp_path / "bench").iterdir()) and not (tmp_path / "mine").exists()


def test_a_rerun_replaces_its_own_machines_rows_and_keeps_another_machines(tmp_path):
    path = tmp_path / "sr_kmeans_cuda.csv"
    row = {"what": "pretraining epoch (s)", "method": "sr_kmeans", "dataset": "mnist", "threads": 4}
    old = bench.pd.DataFrame([{**row, "seconds": 2.8, "hardware": "NVIDIA H200"}])
    old = bench.pd.concat([old, bench.pd.DataFrame([{**row, "seconds": 3.5, "hardware": "NVIDIA H100"}])])
    path.write_text(old.to_csv(index=False))
    frame = bench.merged(path, bench.pd.DataFrame([{**row, "seconds": 2.6, "hardware": "NVIDIA H200"}]))
    assert sorted(zip(frame["hardware"], frame["seconds"], strict=True)) == [
        ("NVIDIA H100", 3.5), ("NVIDIA H200", 2.6),
    ]  # fmt: skip
    # a file written before the hardware column: its rows stay, none is taken for this machine's
    path.write_text(old.drop(columns="hardware").to_csv(index=False))
    assert (
        len(bench.merged(path, bench.pd.DataFrame([{**row, "seconds": 2.6, "hardware": "NVIDIA H200"}]))) == 3
    )

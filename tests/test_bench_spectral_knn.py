"""scripts/bench_spectral_knn.py (issue 28's graph and SC timings): its CSV, the cached second load
of the kNN graph, and the row of a scikit-learn fit stopped at the time cap."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from clusterbench import graphs
from clusterbench.methods.deep.cache import ENVIRONMENT_VARIABLE
from tests.helpers import REPO, cli_env, load_script, require_cached, script

bench = load_script("bench_spectral_knn")


@pytest.mark.slow
def test_the_benchmark_writes_its_csv_on_a_subsample(tmp_path):
    """n = 600, k = 10: the two graph rows and the two SC rows, the cached load faster than the
    build and equal to it, both SC fits finished with the same k-means runs."""
    require_cached("mnist")
    out = tmp_path / "out"
    words = ["--n", "600", "--k", "10", "--threads", "1", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_spectral_knn.py"), *words],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["spectral_knn_cpu.csv"]
    frame = pd.read_csv(out / "spectral_knn_cpu.csv")
    assert list(frame.columns) == [*bench.COLUMNS, "sklearn"]
    assert list(frame["part"]) == ["knn_build", "knn_load", "sc", "sc"]
    assert list(frame["method"])[2:] == ["spectral_knn", "sklearn_spectral_clustering"]
    assert (frame[["n", "n_neighbors", "threads"]].to_numpy() == [600, 10, 1]).all()
    build, load = frame.iloc[0], frame.iloc[1]
    assert 0 < load["seconds"] < build["seconds"]
    assert bool(load["identical"]) is True
    sc = frame[frame["part"] == "sc"]
    assert (sc["status"] == "ok").all() and (sc["n_init"] == 10).all()
    assert sc["acc"].between(0.2, 1).all() and sc["nmi"].between(0.1, 1).all()
    assert (sc["ratio_cut"] > 0).all() and (sc["seconds"] > 0).all()


def test_the_second_call_loads_the_built_lists_from_the_cache(tmp_path, monkeypatch):
    """In-process on random points: the load comes from the file (not the memory copy), equals
    the build and the uncached computation, and is faster than the build."""
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, str(tmp_path / "pretrained"))
    X = np.random.default_rng(0).normal(size=(500, 20))
    try:
        rows, built = bench.graph_rows(X, 8, repeats=3)
    finally:
        graphs.forget_in_memory()
    assert [row["part"] for row in rows] == ["knn_build", "knn_load"]
    assert rows[1]["identical"] is True and rows[1]["seconds"] < rows[0]["seconds"]
    np.testing.assert_array_equal(built, graphs.knn_indices(X, 8, use_cache=False))
    assert [p.suffix for p in (tmp_path / "knn").iterdir()] == [".knn"]


def test_a_scikit_learn_fit_past_the_cap_is_recorded_as_not_finished(tmp_path):
    indices = np.random.default_rng(0).integers(0, 50, size=(50, 5))
    job = {"n_neighbors": 5, "n_init": 1, "seed": 0, "solver": "arpack", "threads": 1}
    row = bench.sklearn_spectral(np.zeros(50), None, indices, tmp_path, job, timeout=0.01)
    assert row["status"] == "did not finish in 0.01 s"
    assert "seconds" not in row and "acc" not in row


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (
            ["--n", "600", "--k", "600"],
            "n_neighbors must be below the number of points (600), got 600: lower n_neighbors",
        ),
        (["--k", "60000"], "below the number of points (60000), got 60000: lower n_neighbors"),
        (["--seed", "-1"], "--seed must be ≥ 0, got -1"),  # a usage error: the usage line first
    ],
)
def test_a_bad_argument_ends_the_benchmark_before_any_work(words, message, tmp_path):
    out = tmp_path / "out"
    done = script("bench_spectral_knn", *words, "--out", str(out), data_folder=tmp_path / "no-data")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("bench_spectral_knn.py: error: ") and lines[-1].endswith(message)
    assert "Traceback" not in done.stderr
    assert len(lines) == 1 or lines[0].startswith("usage: ")  # a user error in one line
    assert not (out / "spectral_knn_cpu.csv").exists()

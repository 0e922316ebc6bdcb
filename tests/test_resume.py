"""A finished sweep resumes without launching its jobs (hydra_plugins/clusterbench_sweeper), a
partly finished one launches only the rest, and a failure is reported, not fitted again."""

from __future__ import annotations

import pytest

from tests.helpers import cli, record_files

pytestmark = pytest.mark.slow

SWEEP = ("run", "-m", "dataset=iris", "method=kmeans", "seed=0,1,2", "profile=smoke")


def launched_jobs(sweep_dir) -> list[str]:
    """The jobs Hydra launched into ``sweep_dir`` (each gets a numbered folder)."""
    return sorted(path.name for path in sweep_dir.iterdir() if path.is_dir()) if sweep_dir.exists() else []


def sweep(tmp_path, name: str, *words: str):
    return cli(*SWEEP, f"results_dir={tmp_path}", f"hydra.sweep.dir={tmp_path}/{name}", *words)


def test_a_finished_sweep_launches_no_job_and_counts_its_points(tmp_path):
    first = sweep(tmp_path, "first")
    assert first.returncode == 0, first.stderr
    assert launched_jobs(tmp_path / "first") == ["0", "1", "2"]
    written = {path: path.read_bytes() for path in record_files(tmp_path)}

    again = sweep(tmp_path, "again")
    assert again.returncode == 0, again.stderr
    assert launched_jobs(tmp_path / "again") == []
    assert "3 of 3 jobs are recorded already: not launched" in again.stdout + again.stderr
    assert f"3 point(s): 3 cached; records under {tmp_path / 'runs' / 'smoke' / 'adhoc'}" in again.stdout
    assert {path: path.read_bytes() for path in record_files(tmp_path)} == written


def test_a_partly_finished_sweep_launches_only_the_jobs_left(tmp_path):
    assert sweep(tmp_path, "first").returncode == 0
    removed = sorted(record_files(tmp_path))[0]
    removed.unlink()
    again = sweep(tmp_path, "again")
    assert again.returncode == 0, again.stderr
    assert launched_jobs(tmp_path / "again") == ["0"]
    assert "3 point(s): 1 fitted, 2 cached" in again.stdout
    assert removed.exists()


def test_force_launches_every_job_again(tmp_path):
    assert sweep(tmp_path, "first").returncode == 0
    again = sweep(tmp_path, "again", "force=true")
    assert again.returncode == 0, again.stderr
    assert launched_jobs(tmp_path / "again") == ["0", "1", "2"]
    assert "3 point(s): 3 fitted" in again.stdout


def test_a_failed_sweep_is_reported_again_not_fitted_again_unless_retry_failed(tmp_path):
    exploding = "method.estimator._target_=tests.helpers.Exploding"
    first = sweep(tmp_path, "first", exploding)
    assert first.returncode == 1 and "3 grid point(s) failed;" in first.stderr
    failed = {path: path.read_bytes() for path in record_files(tmp_path)}

    again = sweep(tmp_path, "again", exploding)
    assert again.returncode == 1
    assert launched_jobs(tmp_path / "again") == []
    assert "3 grid point(s) failed (3 recorded earlier; retry_failed=true fits them again)" in again.stderr
    assert {path: path.read_bytes() for path in record_files(tmp_path)} == failed  # nothing rewritten

    retried = sweep(tmp_path, "retried", exploding, "retry_failed=true")
    assert retried.returncode == 1 and launched_jobs(tmp_path / "retried") == ["0", "1", "2"]
    assert "3 grid point(s) failed;" in retried.stderr

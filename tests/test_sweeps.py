"""Real multirun sweeps in subprocesses: one record per job and grid point, SIGKILL and resume, launchers."""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import time

import pandas as pd
import pytest
from omegaconf import OmegaConf
from sklearn.model_selection import ParameterGrid

from clusterbench.catalog import CONF_DIR
from clusterbench.results import COLUMNS, load_records, read_record
from tests.helpers import REPO, cli_env, clusterbench_command, record_files, require_cached, run_cli

pytestmark = pytest.mark.slow


def jobs_and_points(frame: pd.DataFrame) -> list[tuple]:
    """(dataset, method, seed, params) of each record, one per record file."""
    return sorted(
        frame.groupby("config_hash")[["dataset", "method", "seed", "params"]].first().itertuples(index=False)
    )


def assert_one_ok_record_per_file(results_dir) -> pd.DataFrame:
    files = record_files(results_dir)
    for file in files:
        frame = read_record(file)
        assert list(frame.columns) == COLUMNS, file
        assert set(frame["status"]) == {"ok"}, (file, frame["error"].tolist())
        assert set(frame["config_hash"]) == {file.stem}
    return load_records(results_dir, "smoke")


def test_multirun_writes_one_record_per_job(tmp_path):
    require_cached("zoo", "ecoli")
    result = run_cli(
        "run",
        "-m",
        "method=kmeans,agglomerative",
        "dataset=zoo,ecoli",
        "seed=0,1",
        "profile=smoke",
        f"results_dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    frame = assert_one_ok_record_per_file(tmp_path)
    jobs = sorted(frame.groupby("config_hash")[["dataset", "method", "seed"]].first().itertuples(index=False))
    expected = sorted(itertools.product(["ecoli", "zoo"], ["agglomerative", "kmeans"], [0, 1]))
    assert [tuple(job) for job in jobs] == expected
    assert len(record_files(tmp_path)) == 8
    assert len(frame) == 8 * 7  # the default suite's 7 metrics per record
    assert result.stdout.count(" | SC ") == 8


def expected_points(datasets: list[str], methods: list[str]) -> int:
    grids = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "experiment" / "clam_baselines.yaml").grids)
    return len(datasets) * sum(len(ParameterGrid(grids[method])) for method in methods)


def test_a_sigkilled_sweep_leaves_no_partial_record_and_resumes(tmp_path):
    datasets, methods = ["zoo", "ecoli"], ["spectral", "kmeans"]
    require_cached(*datasets)
    total = expected_points(datasets, methods)
    assert total == 2 * (28 + 2)  # CLAM Table 7: 10 gammas x 2 + 4 n_neighbors x 2 for spectral; 2 inits
    command = [
        *clusterbench_command(),
        "run",
        "-m",
        "experiment=clam_baselines",
        "profile=smoke",
        f"dataset={','.join(datasets)}",
        f"method={','.join(methods)}",
        f"results_dir={tmp_path}",
    ]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not record_files(tmp_path) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, "the sweep ended before it could be killed"
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == -signal.SIGKILL
    # The killed run's notes, if it wrote any before the kill, and as a run of its pid would name them.
    (tmp_path / "runs" / ".journal" / f"{socket.gethostname()}-{process.pid}-{'0' * 32}").mkdir(parents=True)

    done = record_files(tmp_path)
    assert 1 <= len(done) < total
    assert_one_ok_record_per_file(tmp_path)  # every CSV is whole: it parses, with the right columns
    # A kill between a record's temp file and its rename can leave at most that one hidden temp file,
    # which is never read as a record (records are *.csv).
    temps = list((tmp_path / "runs").rglob("*.tmp"))
    assert len(temps) <= 1 and all(t.name.startswith(".") for t in temps), temps

    rerun = subprocess.run(command, cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert not (tmp_path / "runs" / ".journal").exists()  # the next run on this host cleared them
    frame = assert_one_ok_record_per_file(tmp_path)
    files = record_files(tmp_path)
    assert len(files) == total
    points = jobs_and_points(frame)
    assert len(points) == total == len(set(points))
    assert sorted(frame.groupby(["dataset", "method"]).config_hash.nunique().items()) == [
        (("ecoli", "kmeans"), 2),
        (("ecoli", "spectral"), 28),
        (("zoo", "kmeans"), 2),
        (("zoo", "spectral"), 28),
    ]
    # A sweep prints a line per point it fits and counts the cached ones in its summary.
    lines = [line for line in rerun.stdout.splitlines() if " | SC " in line]
    assert len(lines) == total - len(done) and not any(line.endswith("(cached)") for line in lines)
    assert f"{total} point(s): {total - len(done)} fitted, {len(done)} cached" in rerun.stdout
    assert set(done) <= set(files)


def test_a_sigterm_ends_a_sweep_as_a_ctrl_c_does(tmp_path):
    """kill (SIGTERM) ended a run without a word and left its notes folder (runs/.journal/<id>)."""
    require_cached("zoo")
    command = [
        *clusterbench_command(), "run", "-m", "experiment=clam_baselines", "profile=smoke", "dataset=zoo",
        "method=spectral", f"results_dir={tmp_path}",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=REPO, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not record_files(tmp_path) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, "the sweep ended before it could be stopped"
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 143, stderr[-3000:]
    assert stderr.strip().splitlines()[-1].startswith("clusterbench: interrupted; finished points are kept")
    assert not list((tmp_path / "runs" / ".journal").glob("*"))
    done = record_files(tmp_path)
    assert 1 <= len(done) < 28
    assert_one_ok_record_per_file(tmp_path)


HYDRA_INFO = "hydra.hydra_logging.root.level=INFO"


def two_seed_sweep(tmp_path, *launcher: str) -> str:
    """k-means on iris for seeds 0 and 1 under ``launcher``; asserts both records, returns the output."""
    result = run_cli(
        "run", "-m", *launcher, "dataset=iris", "method=kmeans", "seed=0,1", "profile=smoke",
        f"results_dir={tmp_path}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    frame = assert_one_ok_record_per_file(tmp_path)
    assert len(record_files(tmp_path)) == 2
    assert sorted(frame["seed"].unique()) == [0, 1]
    return result.stdout + result.stderr


def test_joblib_launcher_runs_jobs_in_parallel_processes(tmp_path):
    # Hydra's own INFO lines (quiet by default) say which launcher ran the jobs.
    output = two_seed_sweep(tmp_path, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", HYDRA_INFO)
    assert "Joblib.Parallel(n_jobs=2" in output


def test_submitit_local_launcher_writes_both_records(tmp_path):
    output = two_seed_sweep(
        tmp_path,
        "hydra/launcher=submitit_local",
        "hydra.launcher.timeout_min=5",
        "hydra.launcher.cpus_per_task=1",
        HYDRA_INFO,
    )
    assert "Submitit 'local' sweep output dir" in output
    # the jobs really ran under submitit: each left its own log folder
    assert len(list((tmp_path / "hydra" / "multirun").rglob("*_0_log.out"))) == 2


@pytest.mark.parametrize(
    "launcher",
    [("hydra/launcher=joblib", "hydra.launcher.n_jobs=2"), ("hydra/launcher=submitit_local",)],
    ids=["joblib", "submitit_local"],
)
def test_a_finished_sweep_rerun_under_a_parallel_launcher_launches_nothing(tmp_path, launcher):
    two_seed_sweep(tmp_path, *launcher)
    before = {path: path.stat().st_mtime_ns for path in record_files(tmp_path)}
    output = two_seed_sweep(tmp_path, *launcher, HYDRA_INFO)
    assert "2 of 2 jobs are recorded already: not launched" in output
    assert "Joblib.Parallel" not in output and "Submitit" not in output
    assert {path: path.stat().st_mtime_ns for path in record_files(tmp_path)} == before


def test_the_slurm_gpu_preset_asks_one_gpu_and_the_profiles_time_and_memory(tmp_path):
    from hydra import compose, initialize_config_dir

    from clusterbench.catalog import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for profile, minutes, memory in (("paper", 720, 32), ("smoke", 30, 8)):
            overrides = ["hydra/launcher=slurm_gpu", f"profile={profile}", "experiment=kr_table3"]
            launcher = compose("config", overrides=overrides, return_hydra_config=True).hydra.launcher
            assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
            assert (launcher.gpus_per_node, launcher.timeout_min, launcher.mem_gb) == (1, minutes, memory)


def test_a_deep_method_sweeps_end_to_end_under_submitit_local(tmp_path):
    """What the slurm_gpu preset does on a cluster, on this machine: submitit runs each job in its
    own process, pretraining goes through the cache, and the records resume."""
    words = ["run", "-m", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10"]
    words += ["dataset=wine", "method=dkm,kr_dkm", "profile=smoke", f"results_dir={tmp_path}"]
    result = run_cli(*words, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    frame = assert_one_ok_record_per_file(tmp_path)
    assert sorted(frame["method"].unique()) == ["dkm", "kr_dkm"]
    accuracy = frame[frame["metric"] == "acc"].set_index("method")["value"]
    assert (accuracy > 0.5).all(), accuracy  # wine's three classes, far above chance (0.40)
    again = run_cli(*words, timeout=600)
    assert "2 of 2 jobs are recorded already: not launched" in again.stdout + again.stderr

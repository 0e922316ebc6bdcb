"""The scripts under scripts/ and what they share (clusterbench.scripting): user errors in one
line, arguments checked before the work, outputs that land whole."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure

from clusterbench.catalog import dataset_spec
from clusterbench.data import load_dataset
from clusterbench.errors import UserError
from clusterbench.figures import save_figure
from clusterbench.methods import KhatriRaoKMeans, SpectralKNN
from clusterbench.metrics import acc
from clusterbench.results import UMASK
from clusterbench.scripting import output_folder, positive_int
from clusterbench.timing import interleaved_seconds_per_iteration
from tests.helpers import REPO, cli_env, load_script, require_cached, script


@pytest.mark.parametrize(
    ("name", "words", "message"),
    [
        ("sc_spaces", ["nosuch"], "sc_spaces.py: error: unknown dataset 'nosuch'; known dataset options: "),
        ("sc_spaces", ["kdd_protein"], "sc_spaces.py: error: not in the data cache"),
        ("prcut_balance", ["nosuch"], "prcut_balance.py: error: unknown dataset 'nosuch'; known dataset"),
        ("prcut_balance", ["mnist", "--beta", "-1"], "prcut_balance.py: error: --beta must be ≥ 0"),
        ("sc_selection", ["nosuch"], "sc_selection.py: error: unknown dataset 'nosuch'; known dataset"),
        ("bench_clam", ["--sizes", "1000", "5"], "bench_clam.py: error: cannot draw a class-stratified"),
        pytest.param(
            "bench_clam",
            ["--device", "cuda"],
            "bench_clam.py: error: device='cuda' but no CUDA GPU is visible",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible"),
        ),
    ],
)
def test_a_script_ends_a_user_error_in_one_line_with_exit_status_2(name, words, message, tmp_path):
    """Refused before any work: nothing printed, nothing written (bench_clam's --out is a scratch
    folder, so that a check that let the benchmark run could not write into the checkout)."""
    if "--sizes" in words:
        require_cached("fashion_mnist")  # its sizes are checked against the file, which OpenML would fetch
    out = tmp_path / "out"
    result = script(
        name,
        *words,
        *(["--out", str(out)] if name == "bench_clam" else []),
        data_folder=None if name == "bench_clam" else tmp_path / "empty",  # kdd_protein: not cached
    )
    assert result.returncode == 2
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1  # no traceback
    assert result.stdout == "" and not out.exists()


def test_a_script_run_by_python_ends_a_user_error_in_one_line():
    """The same, in a fresh interpreter, as a user runs a script (the tests above run it in-process)."""
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "sc_selection.py"), "nosuch"],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("sc_selection.py: error: unknown dataset 'nosuch'; known dataset")
    assert len(result.stderr.strip().splitlines()) == 1


def test_positive_int_takes_integers_from_one():
    assert positive_int("3") == 3
    for text in ("0", "-1", "2.5", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="an integer ≥ 1"):
            positive_int(text)


def test_an_output_folder_is_checked_before_the_work(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="bench")
    assert output_folder(parser, tmp_path / "new" / "folder") == tmp_path / "new" / "folder"
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit) as stop:
        output_folder(parser, tmp_path / "file" / "sub")
    assert stop.value.code == 2
    assert "--out '" in capsys.readouterr().err


def test_a_figure_that_fails_to_render_leaves_the_previous_file_whole(tmp_path):
    figure = Figure()
    figure.add_subplot().plot([0, 1], [1, 0])
    png, pdf = save_figure(figure, tmp_path, "fig")
    previous = png.read_bytes()
    assert previous.startswith(b"\x89PNG") and pdf.read_bytes().startswith(b"%PDF")
    assert png.stat().st_mode & 0o777 == 0o666 & ~UMASK  # as open() would leave it, not mkstemp's 0600

    def half_written(target, **options):
        target.write(b"\x89PNG half")
        raise KeyboardInterrupt  # a kill mid-render

    figure.savefig = half_written
    with pytest.raises(KeyboardInterrupt):
        save_figure(figure, tmp_path, "fig")
    assert png.read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.pdf", "fig.png"]  # no temporary left


def test_compare_records_fails_when_it_compared_nothing(tmp_path, capsys):
    compare_records = load_script("compare_records")
    (tmp_path / "fresh" / "runs" / "paper").mkdir(parents=True)
    (tmp_path / "committed" / "runs").mkdir(parents=True)
    fresh, committed = str(tmp_path / "fresh"), str(tmp_path / "committed")
    assert compare_records.main([fresh, "--against", committed]) == 1
    assert "nothing was checked" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # the runs/ folder itself instead of its results_dir
        compare_records.main([str(tmp_path / "fresh" / "runs"), "--against", committed])
    assert stop.value.code == 2
    assert "holds no runs/ folder" in capsys.readouterr().err


def test_the_clam_benchmark_replaces_only_the_part_it_ran(tmp_path):
    bench = load_script("bench_clam")
    path = tmp_path / "clam_speed_cpu.csv"
    rows = pd.DataFrame(
        {
            "benchmark": ["zoo 10 restarts x 200 epochs", *["fashion_mnist 1 restart(s), 3 epochs"] * 2],
            "n": [101, 1000, 10000],
            "seconds": [4.0, 0.1, 1.0],
        }
    )
    rows.to_csv(path, index=False)
    zoo = rows.iloc[:1].assign(seconds=5.0)
    earlier = bench.earlier_rows(path)
    assert bench.merged(earlier, zoo, ["zoo"])["seconds"].tolist() == [5.0, 0.1, 1.0]
    fmnist = rows.iloc[1:2].assign(n=60000, seconds=7.0)
    assert bench.merged(earlier, fmnist, ["fmnist"])["n"].tolist() == [101, 60000]
    assert bench.earlier_rows(tmp_path / "none.csv") is None
    assert np.array_equal(bench.merged(None, zoo, ["zoo"]), zoo)
    # A file that cannot take the rows (emptied by a kill under the old non-atomic write) is
    # refused before the benchmark runs, not after.
    path.write_text("")
    with pytest.raises(UserError, match="is not a benchmark CSV"):
        bench.earlier_rows(path)


def test_the_kr_benchmarks_scikit_learn_fit_reports_where_it_stopped_so_the_timing_rejects_it():
    # tol=0: scikit-learn stops only at an iteration that changes no label, 27 here (a centre-shift
    # tolerance of 1e-4 stops at 17); the fit returns that count, not its cap, so a stop inside the
    # timed window fails the benchmark instead of making its iterations look cheaper.
    bench = load_script("bench_kr")
    X = np.random.default_rng(0).uniform(size=(1000, 2))
    fit = bench.lloyd(X, X[:10])
    assert fit(100) == 27
    with pytest.raises(RuntimeError, match="kmeans stopped after 27 of 100 iterations"):
        interleaved_seconds_per_iteration({"kmeans": fit}, low=1, high=100, repeats=1)


@pytest.mark.parametrize("memory_efficient", [False, True])
def test_the_kr_benchmarks_khatri_rao_fits_run_their_cap_after_converging(memory_efficient):
    # Started at the planted protocentroids the fit converges at once (the default tol stops it
    # after 2 iterations); the benchmark's fits take tol=0 and run every capped iteration.
    bench = load_script("bench_kr")
    rng = np.random.default_rng(1)
    sets = [rng.normal(scale=3.0, size=(h, 4)) for h in (2, 3)]
    y = np.repeat(np.arange(6), 20)
    X = sets[0][y // 3] + sets[1][y % 3] + 0.05 * rng.standard_normal((len(y), 4))
    assert KhatriRaoKMeans(h=[2, 3], init=sets, device="cpu").fit(X).n_iter_ == 2
    assert bench.khatri_rao(X, (2, 3), "sum", memory_efficient, sets)(30) == 30


# scikit-learn warns when its fit ends with fewer than 400 distinct clusters: not this test's concern
@pytest.mark.filterwarnings("ignore:Number of distinct clusters")
def test_the_kr_benchmarks_quick_run_has_no_fit_stop_before_its_caps():
    # The --quick group (n = 4000, d = 100, k = 400): scikit-learn finds no label change at its 4th
    # iteration here (at its 5th on the full benchmark's data), so HIGH can be no higher.
    bench = load_script("bench_kr")
    fits = bench.group_fits(4000, 100, 20, "float64")
    for name in ("kmeans_sklearn_h1h2", "kr_kmeans_sum_time_efficient"):
        assert [fits[name](cap) for cap in (bench.LOW, bench.HIGH)] == [bench.LOW, bench.HIGH], name
    assert bench.LOW < bench.HIGH <= fits["kmeans_sklearn_h1h2"](50)


@pytest.mark.parametrize(
    ("picked", "scripts"),
    [
        ([], ["clam_figures", "kr_figures", "kcprime_figures", "sr_figures"]),
        (["FIGURES=4"], ["clam_figures"]),
        (["SR_FIGURES=1"], ["sr_figures"]),
        (["KR_FIGURES=6 9", "KC_FIGURES=S2"], ["kr_figures", "kcprime_figures"]),
    ],
)
def test_make_figures_draws_only_the_papers_picked_from(picked, scripts):
    called = [command[1].removeprefix("scripts/").removesuffix(".py") for command in make_figures(*picked)]
    assert called == scripts


def make_env(*unset: str) -> dict[str, str]:
    """The environment of a `make` a test runs: under `make test` the calling make's variables are
    in it, left out, as are ``unset``, the Makefile's variables the test sets or leaves at default."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k not in ("MFLAGS", *unset)}


def make_dry_run(target: str, *variables: str, unset: tuple[str, ...] = ()) -> str:
    """What `make -n TARGET` would run with ``variables``, as text."""
    command = ["make", "--no-print-directory", "-n", target, *variables]
    return subprocess.run(
        command, cwd=REPO, env=make_env(*unset), capture_output=True, text=True, check=True
    ).stdout


def make_figures(*variables: str) -> list[list[str]]:
    """The commands `make figures` would run with ``variables``, each as its words."""
    return [line.split() for line in make_dry_run("figures", *variables, unset=("QUICK",)).splitlines()]


def out_folders(commands: list[list[str]]) -> list[str]:
    return [command[command.index("--out") + 1] for command in commands]


def test_make_figures_quick_draws_into_its_own_folder_never_over_the_committed_figures():
    quick = make_figures("QUICK=1")
    assert len(quick) == 4 and all("--quick" in command for command in quick)
    assert out_folders(quick) == ["results/figures/quick"] * 4
    # No word names results/figures itself (or a file in it): only the quick folder and below.
    for command in quick:
        for word in command:
            assert "results/figures" not in word or word.startswith("results/figures/quick"), command
    full = make_figures()
    assert out_folders(full) == ["results/figures"] * 4 and not any("--quick" in c for c in full)
    picked = make_figures("QUICK=1", "RESULTS=/tmp/elsewhere", "KR_FIGURES=6")
    assert out_folders(picked) == ["/tmp/elsewhere/figures/quick"]


class ChosenFolder(Exception):
    """Stops a figure script at its output check, before any work, with the folder it chose."""


@pytest.mark.parametrize("name", ["clam_figures", "kr_figures", "kcprime_figures"])
@pytest.mark.parametrize(
    ("words", "folder"),
    [
        (["--quick"], "results/figures/quick"),
        ([], "results/figures"),
        (["--quick", "--out", "elsewhere"], "elsewhere"),
    ],
)
def test_a_figure_script_run_by_hand_draws_quick_figures_into_their_own_folder(
    name, words, folder, monkeypatch
):
    script = load_script(name)

    def chosen(parser, out):
        raise ChosenFolder(out)

    monkeypatch.setattr(script, "output_folder", chosen)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *words])
    with pytest.raises(ChosenFolder) as stop:
        script.main()
    assert stop.value.args[0] == Path(folder)


def make_tables(*variables: str) -> str:
    """What `make -n tables` would run with ``variables``, as text."""
    return make_dry_run("tables", *variables, unset=("JOBS",))


def test_make_tables_runs_a_job_per_core_at_smoke_and_one_at_a_time_at_paper():
    cores = len(os.sched_getaffinity(0))  # what nproc counts
    smoke = make_tables("PROFILE=smoke")
    assert (f"hydra.launcher.n_jobs={cores}" in smoke) is (cores > 1)
    assert "hydra/launcher=joblib" not in make_tables("PROFILE=paper")
    assert "hydra.launcher.n_jobs=3" in make_tables("PROFILE=paper", "JOBS=3")


def make_tables_with(tmp_path: Path, exits: dict[str, int], *variables: str) -> subprocess.CompletedProcess:
    """Run `make tables` with a stand-in ``clusterbench`` on the PATH: its `run` of an experiment
    exits with ``exits[experiment]`` (default 0), its `table` with 0; the commands it was given
    are in ``tmp_path/called``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cases = "".join(f"    *experiment={name}\\ *) exit {code} ;;\n" for name, code in exits.items())
    stub = bin_dir / "clusterbench"
    stub.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "called"}\ncase "$* " in\n{cases}esac\nexit 0\n')
    stub.chmod(0o755)
    env = make_env("JOBS")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    command = ["make", "--no-print-directory", "tables", "PROFILE=smoke", "JOBS=1", *variables]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)


def test_make_tables_exits_2_naming_an_experiment_that_did_not_run_after_building_the_tables(tmp_path):
    """A misspelt experiment (`run` exits 2) is not a success: the tables are built from the others,
    then it is named again and `make tables` exits 2."""
    result = make_tables_with(tmp_path, {"clam_tabel10": 2}, "EXPERIMENTS=clam_tabel10 kr_restart_odds")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "make tables: did not run or did not finish: clam_tabel10 (the errors above)" in result.stderr
    called = (tmp_path / "called").read_text().splitlines()
    assert [line.split()[0] for line in called] == ["run", "run", "table"]


def test_make_tables_builds_the_tables_and_exits_0_when_only_points_failed(tmp_path):
    """Failed points (`run` exits 1) are recorded as such and the tables mark them: as documented."""
    result = make_tables_with(tmp_path, {"clam_baselines": 1}, "EXPERIMENTS=clam_baselines")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "make tables: some points of clam_baselines failed" in result.stdout


def test_make_tables_stops_at_an_interrupted_run(tmp_path):
    result = make_tables_with(tmp_path, {"clam_baselines": 130}, "EXPERIMENTS=clam_baselines kr_table2")
    assert result.returncode == 2  # make's own status for a failed recipe
    assert [line.split()[0] for line in (tmp_path / "called").read_text().splitlines()] == ["run"]


def test_make_tables_names_a_killed_run_and_goes_on(tmp_path):
    # Killed (137: out of memory) is neither a user error nor an interrupt: its finished points are
    # kept, the other experiments run, and the end names it.
    result = make_tables_with(tmp_path, {"clam_baselines": 137}, "EXPERIMENTS=clam_baselines kr_table2")
    assert result.returncode == 2
    assert "make tables: clam_baselines was stopped (exit 137: killed, out of memory?)" in result.stdout
    assert "did not run or did not finish: clam_baselines (the errors above)" in result.stderr
    called = (tmp_path / "called").read_text().splitlines()
    assert [line.split()[0] for line in called] == ["run", "run", "table"]


def make_report(*variables: str) -> str:
    return make_dry_run("report", *variables, unset=("PROFILE",))


def test_make_report_reads_the_profile_given_and_the_paper_s_by_default():
    """`make report PROFILE=smoke` after `make tables PROFILE=smoke`; a bare `make report` stays the
    committed paper page (the Makefile's PROFILE default, smoke, is for `make tables`)."""
    assert "--profile" not in make_report()
    assert "--profile smoke" in make_report("PROFILE=smoke")


def test_sc_selection_prints_the_run_spectral_knn_keeps_and_the_best_by_acc():
    """The script's runs are the estimator's: its "kept" run is fit's (same seeds, same data
    preparation), and "best ACC" is the run of highest ACC among them."""
    result = script("sc_selection", "digits", "--n-init", "4")
    assert result.returncode == 0, result.stderr
    lines = {line.split(" run ")[0].strip(): line for line in result.stdout.splitlines()[1:4]}
    data = load_dataset(dataset_spec("digits", "prcut_table2"))
    model = SpectralKNN(10, n_init=4, random_state=0)
    runs = list(model.iter_runs(data.X))
    model.fit(data.X)
    assert f"RC {model.ratio_cut_:.1f}  ACC {acc(data.y, model.labels_):.3f}" in lines["kept (least RC)"]
    best = max(acc(data.y, labels) for _, labels in runs)
    assert f"ACC {best:.3f}" in lines["best ACC"]
    assert result.stdout.startswith("digits, unnormalized Laplacian, 4 k-means runs\n")

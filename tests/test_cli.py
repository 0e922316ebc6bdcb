"""The ``clusterbench`` command: output, exit codes and one-line errors. Most tests run it in
this process (``tests.helpers.cli``); a few run the installed script in a subprocess."""

from __future__ import annotations

import importlib.abc
import os
import re
import shutil
import sys
import time
from datetime import datetime

import numpy as np
import pytest
import yaml

from clusterbench.catalog import (
    CONF_DIR,
    CONFIG_DIR_ENV,
    check_distinct,
    options,
)
from clusterbench.errors import INTERRUPTED, UserError
from clusterbench.results import check_writable, load_records
from tests.helpers import DATA_FOLDER, REPO, cli, record_files, require_cached, run_cli

pytestmark = pytest.mark.slow

SUMMARY = re.compile(
    r"^zoo  kmeans  seed=0 \| SC (?P<sc>[-\d.]+)  NMI (?P<nmi>[\d.]+)  ARI (?P<ari>[-\d.]+)  "
    r"ACC (?P<acc>[\d.]+) \| fit (?P<fit>[\d.]+) s$",
    re.MULTILINE,
)


def run_exploding(*words: str):
    """``clusterbench run`` of one iris point whose fit raises (tests.helpers.Exploding)."""
    return cli(
        "run", *words, "dataset=iris", "profile=smoke", "method.estimator._target_=tests.helpers.Exploding"
    )


def assert_one_line_error(result, *fragments: str) -> str:
    """Exit 2, a single ``clusterbench: error:`` line on stderr naming ``fragments``, no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("clusterbench: error: ")
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def test_run_prints_a_summary_line_and_writes_the_record(tmp_path):
    require_cached("zoo")
    result = run_cli("run", "method=kmeans", "dataset=zoo", "profile=smoke", f"results_dir={tmp_path}")
    assert result.returncode == 0 and result.stderr == "", result.stderr  # no warning, no log line
    match = SUMMARY.search(result.stdout)
    assert match, result.stdout
    frame = load_records(tmp_path, "smoke")
    recorded = dict(zip(frame["metric"], frame["value"], strict=True))
    for name in ("sc", "nmi", "ari", "acc"):
        assert float(match[name]) == pytest.approx(recorded[name], abs=5e-5)
    assert float(match["fit"]) == pytest.approx(frame["fit_seconds"].iloc[0], abs=5e-3)
    assert recorded["sc"] == pytest.approx(0.374, abs=0.01)

    again = run_cli("run", "method=kmeans", "dataset=zoo", "profile=smoke", f"results_dir={tmp_path}")
    assert again.returncode == 0 and SUMMARY.search(again.stdout.replace(" (cached)", ""))
    assert again.stdout.strip().splitlines()[-1] == (
        f"1 point(s): 1 cached; records under {tmp_path / 'runs' / 'smoke' / 'adhoc' / 'zoo' / 'kmeans'}"
    )
    assert len(record_files(tmp_path)) == 1


def test_a_swept_hyperparameter_is_named_on_each_jobs_line(tmp_path):
    sweep = ("run", "-m", "method=kmeans", "dataset=iris", "profile=smoke", f"results_dir={tmp_path}")
    result = cli(*sweep, "method.estimator.n_init=1,3", "+grids.kmeans.init=[random]")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("iris")]
    assert [line.split(" | ")[0] for line in lines] == [
        f"iris  kmeans  seed=0  n_init={n} init=random" for n in (1, 3)
    ]


def test_runs_started_in_the_same_second_keep_their_logs_apart():
    """Hydra names a run's log folder by ``${now:...}``: two sweeps started side by side in one
    second shared one at second resolution, the later's overrides.yaml and cli.log over the
    earlier's."""
    hydra = yaml.safe_load((CONF_DIR / "config.yaml").read_text())["hydra"]
    first, second = datetime(2026, 11, 28, 8, 40, 10, 1), datetime(2026, 11, 28, 8, 40, 10, 2)
    for mode in ("run", "sweep"):
        pattern = re.search(r"\$\{now:([^}]*)\}", hydra[mode]["dir"])[1]
        assert first.strftime(pattern) != second.strftime(pattern), mode


@pytest.mark.parametrize(
    ("group", "known"),
    [("dataset", "zoo"), ("method", "kmeans"), ("metrics", "default"), ("profile", "smoke")],
)
def test_unknown_group_option_exits_2_listing_the_known_names(tmp_path, group, known):
    result = cli("run", f"{group}=nope", f"results_dir={tmp_path}")
    line = assert_one_line_error(result, f"unknown {group} 'nope'", known)
    for name in options(group):
        assert name in line


def test_unknown_name_inside_a_sweep_list_is_caught_before_anything_runs(tmp_path):
    result = cli("run", "-m", "dataset=zoo,nope", f"results_dir={tmp_path}")
    assert_one_line_error(result, "unknown dataset 'nope'")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("override", "fragments"),
    [
        # Hydra's advice to append (+nope=3) would be refused as read by nothing: not given
        ("nope=3", ["could not override 'nope'", "not in the config", "'nope' is not a setting"]),
        ("sed=3", ["could not override 'sed'", "did you mean seed?"]),
        ("method.estimatr.tol=1", ["did you mean method.estimator.tol?"]),
        ("hydra.launcher.n_jobs=2", ["Hydra's basic launcher reads no settings", "hydra/launcher=joblib"]),
        ("kmeans", ["'kmeans' is not an override (key=value)", "did you mean method=kmeans?"]),
        ("1", ["'1' is not an override (key=value)", "without spaces (-m seed=0,1,2)"]),
        ("grids.clam.beta=[1", ["cannot parse the overrides", "'[1'", "override_grammar"]),
        ("experiment=clam_table10,null", ["experiment=null selects nothing", "~experiment"]),
        (
            'hydra.sweeper.params.dataset="iris,"',
            ["cannot parse hydra.sweeper.params.dataset", "override_grammar"],
        ),
        ("hydra/launcher=nope", ["Could not find 'hydra/launcher/nope'", "known options: basic, joblib"]),
        ("hydra.sweeper.params.dataset=iris,wine", ["quote a sweep", '="iris,wine"', "-m dataset=a,b"]),
        ('hydra.sweeper.params.dataset="iris"', ["resets the sweep of one experiment", "-m dataset=a,b"]),
        ("hydra.sweeper.params.seed='0,1'", ["seed resets the sweep of one experiment", "-m seed=a,b"]),
    ],
)
def test_an_override_hydra_refuses_exits_2_in_one_line(tmp_path, override, fragments):
    result = cli("run", "-m", "dataset=iris,zoo", override, "profile=smoke", f"results_dir={tmp_path}")
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("words", "fragments"),
    [
        (["seed=0,1"], ["seed=0,1 is a sweep", "run it with -m"]),
        # named as typed, not as rewritten for Hydra (++method.estimator.n_init=1,2)
        (["method.n_init=1,2"], ["error: method.n_init=1,2 is a sweep", "run it with -m"]),
        (["dataset.subsample=50,60"], ["error: dataset.subsample=50,60 is a sweep"]),
        (["hydra.sweeper.params.seed='0,1'"], ["seed resets the sweep of one experiment", "-m seed=a,b"]),
        (["dataset=glob(zo*)"], ["dataset=glob(zo*) is a sweep", "-m"]),
        (["-m", "seed=range(3,0)"], ["seed=range(3,0) selects nothing", "at least one value"]),
        (["-m", "seed=range(0,2,0)"], ["cannot read seed=range(0,2,0)", "must not be zero"]),
        (["-m", "dataset=glob(xyz*)"], ["dataset=glob(xyz*) selects nothing", "clusterbench list"]),
        (["-m", "method=glob(kmaens*)"], ["method=glob(kmaens*) selects nothing"]),
        (["-m", "seed=interval(0,1)"], ["interval() needs a sampling sweeper", "range()"]),
        (["results_dir="], ["results_dir is empty"]),
        (["results_dir=null"], ["results_dir is empty"]),
        (["-m", "seed=glob(*)"], ["cannot list the values of seed=glob(*)", "override_grammar"]),
        (
            ["results_dir=${oc.env:CLUSTERBENCH_NO_SUCH_VARIABLE}"],
            ["results_dir cannot be resolved", "NO_SUCH"],
        ),
        (["dataset.n_clusters=abc"], ["dataset.n_clusters must be an integer ≥ 1", "'abc'"]),
        (["dataset.n_clusters=2.7"], ["dataset.n_clusters must be an integer ≥ 1", "2.7"]),
        (["+grids.kmean.n_init=[1,2]"], ["grids.kmean names no method", "kmeans"]),
        (["timeout_s={clma: 0.3}"], ["timeout_s.clma names no method", "clam"]),
        (["+metrics.nmi.labels=3"], ["metric 'nmi' has no option 'labels'", "average_method, ignore_label"]),
        # not Hydra's +metrics.ratio_cut.k=3, which adds a metric without its _target_
        (
            ["metrics.ratio_cut.k=3"],
            ["metric 'ratio_cut' is in suite prcut, not this run's: add metrics=prcut"],
        ),
        (["+metrics.nmi.ignore_label=[1,2]"], ["ignore_label must be one integer label or null"]),
        (
            ["metrics=khatri_rao", "+metrics.inertia.ignore_label=1"],
            ["metric 'inertia' reads no per-point array", "only the fitted model"],
        ),
    ],
)
def test_a_mistyped_run_exits_2_in_one_line_before_any_record(tmp_path, words, fragments):
    # results_dir first: a later results_dir= among the words wins, as in Hydra
    result = cli("run", "dataset=iris", "profile=smoke", f"results_dir={tmp_path}", *words, cwd=tmp_path)
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "runs").exists() and not any(tmp_path.rglob("*.csv"))


def test_a_results_dir_reaching_hydra_through_another_key_is_left_to_the_app(tmp_path):
    words = [
        "run",
        "dataset=iris",
        "profile=smoke",
        f"+base={tmp_path}/${{hydra:job.name}}",
        "results_dir=${base}",
    ]
    result = cli(*words)
    assert result.returncode == 0, result.stderr
    assert len(list(tmp_path.glob("*/runs/smoke/adhoc/iris/kmeans/*.csv"))) == 1


def test_a_cached_file_that_differs_from_its_config_shape_exits_2(tmp_path):
    require_cached("zoo")
    cache = tmp_path / "cache"
    cache.mkdir()
    with np.load(os.path.join(DATA_FOLDER, "zoo.npz")) as full:
        np.savez(cache / "zoo.npz", X=full["X"][:50], y=full["y"][:50])
    result = cli("run", "dataset=zoo", "profile=smoke", f"results_dir={tmp_path}", data_folder=cache)
    assert_one_line_error(
        result, "dataset 'zoo'", "holds X [50, 16]", "declares shape [101, 16]", "data verify"
    )
    assert not (tmp_path / "runs").exists()


def test_a_glob_sweep_which_only_hydra_can_expand_still_runs(tmp_path):
    require_cached("zoo")
    result = cli("run", "-m", "dataset=glob(zo*)", "profile=smoke", f"results_dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("zoo  kmeans  seed=0 |") == 1 and len(record_files(tmp_path)) == 1


@pytest.mark.parametrize("k", ["1", "1000"])
def test_n_clusters_out_of_range_exits_2_naming_it(tmp_path, k):
    require_cached("zoo")
    # One in a real process: the error is raised inside Hydra's app, whose own output stays out.
    run = run_cli if k == "1" else cli
    result = run("run", f"method.estimator.n_clusters={k}", "profile=smoke", f"results_dir={tmp_path}")
    assert_one_line_error(result, "n_clusters", k)
    assert record_files(tmp_path) == []


def test_unknown_hyperparameter_exits_2_listing_the_valid_ones(tmp_path):
    require_cached("zoo")
    result = cli("run", "method.estimator.n_iter=3", "profile=smoke", f"results_dir={tmp_path}")
    assert_one_line_error(result, "'n_iter'", "max_iter", "n_init")


def test_missing_import_only_data_exits_2_pointing_at_data_import(tmp_path):
    empty = tmp_path / "cache"
    empty.mkdir()
    result = cli("run", "dataset=yale", "profile=smoke", f"results_dir={tmp_path}", data_folder=empty)
    assert_one_line_error(result, "yale", "clusterbench data import")


def test_a_sweep_names_every_missing_dataset_before_any_job_runs(tmp_path):
    empty = tmp_path / "cache"
    empty.mkdir()
    result = cli(
        "run",
        "-m",
        "experiment=clam_table10,clam_table1",
        "profile=smoke",
        f"results_dir={tmp_path}",
        data_folder=empty,
    )
    line = assert_one_line_error(
        result,
        "yale (yale.npz), mice_protein_clam (mice_protein_clam.npz), usps_2007 (usps_2007.npz); put them",
        "data import",
    )
    assert "zoo" not in line.split("source: ")[1].split(";")[0]  # zoo has an OpenML source: fetched
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "narrowing",
    [
        ["dataset=glob(iri*)"],
        ["hydra.sweeper.params.dataset=iris"],
        ['hydra.sweeper.params.dataset="iris,wine"'],
        ["dataset=iris", 'hydra.sweeper.params.dataset="yale"'],  # dataset= wins, as in Hydra
    ],
)
def test_a_sweep_narrowed_to_available_datasets_runs_with_the_others_missing(tmp_path, narrowing):
    empty = tmp_path / "cache"
    empty.mkdir()
    words = ["run", "-m", "experiment=clam_baselines", *narrowing, "method=kmeans", "profile=smoke"]
    result = cli(*words, f"results_dir={tmp_path}", data_folder=empty)
    assert result.returncode == 0, result.stderr
    assert "iris  kmeans  seed=0" in result.stdout and len(record_files(tmp_path)) >= 1


def test_unsupported_device_exits_2(tmp_path):
    result = cli("run", "dataset=iris", "device=gpu", "profile=smoke", f"results_dir={tmp_path}")
    assert_one_line_error(result, "device", "gpu")


@pytest.mark.parametrize("threads", ["0", "two"])
def test_invalid_threads_exits_2_naming_it(tmp_path, threads):
    result = cli("run", "dataset=iris", f"threads={threads}", "profile=smoke", f"results_dir={tmp_path}")
    assert_one_line_error(result, "threads must be an integer ≥ 1 or null", threads)


def test_a_failed_point_is_reported_and_makes_run_exit_1(tmp_path):
    result = run_exploding(f"results_dir={tmp_path}")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "iris  kmeans  seed=0 | FAILED: method 'kmeans': RuntimeError: boom in fit" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert list(load_records(tmp_path, "smoke")["status"]) == ["failed"]


def test_list_shows_datasets_with_shape_and_k_and_the_methods():
    result = cli("list")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines() if line.startswith("  ")}
    assert rows["zoo"][1:4] == ["101", "16", "7"]
    assert rows["iris"][1:4] == ["150", "4", "3"]
    assert rows["ecoli"][1:4] == ["336", "7", "8"]
    assert rows["mnist_test"][1:4] == ["10000", "784", "10"]  # its split's rows, not the file's 70000
    assert set(options("dataset")) <= set(rows)
    methods = next(line for line in result.stdout.splitlines() if line.startswith("method: "))
    assert methods.removeprefix("method: ").split(", ") == options("method")


def test_data_import_copies_npz_files_into_the_cache(tmp_path):
    source, cache = tmp_path / "src", tmp_path / "cache"
    source.mkdir()
    X, y = np.arange(12.0).reshape(6, 2), np.array([0, 0, 1, 1, 2, 2])
    np.savez(source / "toy.npz", X=X, y=y)
    np.savez(source / "other.npz", X=X[:4], y=y[:4])
    (source / "notes.txt").write_text("not data")
    result = cli("data", "import", str(source), data_folder=cache)
    assert result.returncode == 0, result.stderr
    assert "imported 2 file(s)" in result.stdout
    assert sorted(p.name for p in cache.iterdir()) == ["other.npz", "toy.npz"]
    with np.load(cache / "toy.npz") as copied:
        np.testing.assert_array_equal(copied["X"], X)
        np.testing.assert_array_equal(copied["y"], y)


def test_data_import_refuses_a_folder_without_npz_files(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "zoo.csv").write_text("a,b\n1,2\n")
    result = cli("data", "import", str(tmp_path / "src"), data_folder=tmp_path / "cache")
    assert_one_line_error(result, "no .npz files")
    assert not (tmp_path / "cache").exists()


def test_data_import_checks_every_file_before_copying_any(tmp_path):
    source, cache = tmp_path / "src", tmp_path / "cache"
    source.mkdir()
    np.savez(source / "a_good.npz", X=np.zeros((4, 2)), y=np.zeros(4))
    np.savez(source / "b_bad.npz", X=np.zeros((4, 2)))  # no y
    result = cli("data", "import", str(source), data_folder=cache)
    assert_one_line_error(result, "b_bad.npz", "'y'")
    assert not cache.exists() or list(cache.iterdir()) == []


@pytest.mark.parametrize(
    ("words", "fragments"),
    [
        (
            ["experiment=clam_baselines", 'hydra.sweeper.params.dataset="glob(yal*)"'],
            ["no OpenML source: yale (yale.npz); put it in a folder"],
        ),
        (
            ["experiment=clam_table10,clam_baselines", 'hydra.sweeper.params.dataset="iris"'],
            ["one experiment"],
        ),
    ],
)
def test_a_sweeper_dataset_override_is_checked_as_hydra_reads_it(tmp_path, words, fragments):
    empty = tmp_path / "cache"
    empty.mkdir()
    result = cli(
        "run", "-m", *words, "method=kmeans", "profile=smoke", f"results_dir={tmp_path}", data_folder=empty
    )
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "runs").exists()


def test_a_glob_that_matches_missing_datasets_is_refused_before_any_job(tmp_path):
    empty = tmp_path / "cache"
    empty.mkdir()
    result = cli(
        "run", "-m", "dataset=glob(y*)", "profile=smoke", f"results_dir={tmp_path}", data_folder=empty
    )
    assert_one_line_error(result, "no OpenML source: yale (yale.npz); put it in a folder")


def test_a_results_dir_behind_a_broken_link_is_refused(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UserError, match="not a writable folder"):
        check_writable(tmp_path / "link" / "results", "results_dir")
    check_writable(tmp_path / "new" / "results", "results_dir")  # a folder yet to be made is fine
    assert not (tmp_path / "new").exists()  # and checking it creates nothing


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (b"PK\x03\x04 truncated", ["cannot read", "bad.npz"]),  # a zip cut short
        (b"x,y\n1,2\n", ["cannot read", "bad.npz"]),  # a CSV renamed to .npz
        (b"", ["cannot read", "bad.npz", "EOFError"]),  # an empty file
    ],
)
def test_data_import_refuses_a_file_that_is_not_an_npz(tmp_path, content, fragments):
    source = tmp_path / "src"
    source.mkdir()
    (source / "bad.npz").write_bytes(content)
    assert_one_line_error(cli("data", "import", str(source), data_folder=tmp_path / "cache"), *fragments)


def test_data_import_refuses_arrays_of_the_wrong_shape(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    np.savez(source / "toy.npz", X=np.zeros((4, 2)), y=np.zeros(5))
    result = cli("data", "import", str(source), data_folder=tmp_path / "cache")
    assert_one_line_error(result, "toy.npz holds X (4, 2) and y (5,)")


def test_a_results_dir_that_is_not_a_writable_folder_exits_2_before_any_fit(tmp_path):
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    result = cli("run", "dataset=iris", "profile=smoke", f"results_dir={blocked}")
    assert_one_line_error(result, f"results_dir '{blocked}' is not a writable folder")
    table = cli("table", "clam_table1", "--results-dir", str(blocked))
    assert_one_line_error(table, "is not a writable folder")


def test_a_table_without_records_exits_2_naming_where_it_looked(tmp_path):
    result = cli("table", "clam_table1", "--results-dir", str(tmp_path), "--profile", "smoke")
    assert_one_line_error(
        result,
        "no records of clam_baselines, clam_table1",
        "runs/smoke",
        "--profile",
        # the run it suggests writes where this table reads
        f"clusterbench run -m experiment=clam_baselines profile=smoke results_dir={tmp_path})",
    )
    assert not list((tmp_path / "tables").rglob("*.md"))


def test_a_table_without_records_of_its_profile_names_the_profile_that_holds_some(tmp_path):
    held = tmp_path / "runs" / "smoke" / "clam_baselines" / "zoo" / "kmeans"
    held.mkdir(parents=True)
    (held / "0.csv").write_text("")
    result = cli("table", "clam_table1", "--results-dir", str(tmp_path))
    assert_one_line_error(
        result,
        "no records of clam_baselines, clam_table1",
        "runs/paper",
        "profile smoke holds some (--profile smoke)",
    )


def test_all_tables_without_any_records_exit_2_naming_where_they_looked(tmp_path):
    result = cli("table", "--all", "--results-dir", str(tmp_path), "--profile", "smoke")
    assert_one_line_error(
        result,
        f"no table's experiments have records under {tmp_path}/runs/smoke",
        "--results-dir",
        f"experiment=NAME profile=smoke results_dir={tmp_path})",
    )


def test_all_tables_build_every_table_they_can_and_then_name_the_one_refused(tmp_path):
    """--all stopped at the first table it refused and built none of the later ones."""
    import pandas as pd

    runs = tmp_path / "runs" / "paper"
    for experiment in ("prcut_table1", "sr_table3"):
        shutil.copytree(REPO / "results" / "runs" / "paper" / experiment, runs / experiment)
    for path in (runs / "sr_table3").rglob("*.csv"):  # records scored without ACC, which its table reads
        records = pd.read_csv(path)
        records[records["metric"] != "acc"].to_csv(path, index=False)
    result = cli("table", "--all", "--results-dir", str(tmp_path))
    assert_one_line_error(
        result,
        "table sr_table3: no record of sr_table3 holds metric 'acc'",
        "the 1 other table(s) with records were built",
    )
    assert sorted(path.name for path in (tmp_path / "tables" / "paper").iterdir()) == [
        "prcut_table1.csv",
        "prcut_table1.md",
        "prcut_table1.tex",
    ]


@pytest.mark.parametrize(
    ("words", "fragments"),
    [
        (["table", "clam_table1", "--profile", "smok"], ["unknown profile 'smok'", "paper, smoke"]),
        (["report", "--profile", "smok"], ["unknown profile 'smok'"]),
        (["summary", "--profile", "smok"], ["unknown profile 'smok'"]),
        (
            ["summary", "clam_baseline"],
            ["unknown experiment 'clam_baseline'", "did you mean clam_baselines?"],
        ),
        (
            ["data", "pull", "iris"],
            ["data pull fetches OpenML datasets; 'iris' comes from", "sklearn_bundled"],
        ),
    ],
)
def test_a_mistyped_name_outside_run_exits_2_in_one_line(tmp_path, words, fragments):
    result = cli(*words, "--results-dir", str(tmp_path)) if words[0] != "data" else cli(*words)
    assert_one_line_error(result, *fragments)


def test_an_estimator_that_cannot_be_imported_exits_2_naming_it(tmp_path):
    result = cli(
        "run",
        "dataset=iris",
        "profile=smoke",
        "method.estimator._target_=sklearn.cluster.Brich",
        f"results_dir={tmp_path}",
    )
    assert_one_line_error(
        result,
        "method 'kmeans': cannot import sklearn.cluster.Brich",
        "module 'sklearn.cluster' has no attribute 'Brich'",
        "PYTHONPATH",
    )
    assert result.stdout == ""  # no log lines either


def test_a_users_module_beside_them_is_named_with_the_pythonpath_fix(tmp_path):
    # The console script does not search the folder it runs from (docs/extending.md).
    (tmp_path / "mymod.py").write_text("from sklearn.cluster import Birch as MyBirch  # noqa: F401\n")
    result = run_cli(
        "run",
        "dataset=iris",
        "profile=smoke",
        "method.estimator._target_=mymod.MyBirch",
        f"results_dir={tmp_path / 'r'}",
        cwd=tmp_path,
    )
    assert_one_line_error(
        result,
        "method 'kmeans': cannot import mymod.MyBirch",
        "mymod.py lies in this folder, which is not searched: run with PYTHONPATH=$PWD",
    )


@pytest.fixture
def config_folder(tmp_path, monkeypatch):
    """A user's folder of configs of their own (``$CLUSTERBENCH_CONFIG_DIR``): a one-file method
    (only its estimator), a dataset read from an .npz of theirs, an experiment and a table."""
    folder = tmp_path / "my_configs"
    for group in ("method", "dataset", "experiment", "table"):
        (folder / group).mkdir(parents=True)
    (folder / "method" / "my_birch.yaml").write_text("estimator:\n  _target_: sklearn.cluster.Birch\n")
    (folder / "dataset" / "my_zoo.yaml").write_text(
        "n_clusters: 7\nsource:\n  _target_: clusterbench.data.sources.npz_file\n"
        f"  path: {require_cached('zoo') / 'zoo.npz'}\npreprocess: standardize\n"
    )
    (folder / "experiment" / "my_sweep.yaml").write_text(
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n"
        "      dataset: my_zoo,iris\n      method: kmeans,my_birch\n      seed: 0,1\n"
    )
    (folder / "table" / "my_table.yaml").write_text(
        "title: k-means against Birch\nexperiments: [my_sweep]\nmetrics: [nmi]\nprotocol: {kind: mean_std}\n"
        "rows: {my_zoo: My zoo, iris: Iris}\n"
        "columns:\n  kmeans: {label: k-means, method: kmeans}\n  birch: {label: Birch, method: my_birch}\n"
    )
    monkeypatch.setenv(CONFIG_DIR_ENV, str(folder))
    return folder


def test_configs_of_ones_own_run_sweep_and_make_a_table_without_a_file_in_the_checkout(
    tmp_path, config_folder
):
    result = cli("run", "-m", "experiment=my_sweep", "profile=smoke", f"results_dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert "my_zoo  my_birch  seed=1 | SC" in result.stdout
    records = load_records(tmp_path, "smoke")
    jobs = records[["dataset", "method", "seed"]].drop_duplicates()
    assert len(jobs) == 8 and set(records["experiment"]) == {"my_sweep"}
    # a method file may leave out its name and variant: the file's name and "default"
    assert set(records["method"]) == {"kmeans", "my_birch"} and set(records["variant"]) == {"default"}
    birch = records.query("method == 'my_birch' and dataset == 'iris' and metric == 'nmi'")
    assert birch["value"].round(4).tolist() == [0.7331, 0.7331]  # Birch ignores the seed
    result = cli("table", "my_table", "--profile", "smoke", "--results-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (iris,) = [line for line in result.stdout.splitlines() if line.startswith("| Iris ")]
    assert [cell.strip() for cell in iris.split("|")[2:4]] == ["0.659 ± 0.000", "**0.733 ± 0.000**"]
    # the report renders a table without paper values (ours alone; it raised before)
    page = tmp_path / "r.html"
    result = cli("report", "--results-dir", str(tmp_path), "--profile", "smoke", "--out", str(page))
    assert result.returncode == 0, result.stderr
    assert '<td class="ours" data-cell="iris/nmi/birch"><strong>0.733 ± 0.000</strong>' in page.read_text()
    listed = cli("list").stdout
    assert "my_birch" in listed and "my_zoo" in listed and "my_table" in listed
    (my_zoo,) = [line for line in listed.splitlines() if line.split()[:1] == ["my_zoo"]]
    assert my_zoo.split()[-3:] == ["its", "path", str(require_cached("zoo") / "zoo.npz")]
    assert my_zoo.split()[1:4] == ["101", "16", "7"]  # no shape in the config: the file's header
    (embeddings,) = [line for line in listed.splitlines() if line.split()[:1] == ["embeddings"]]
    assert "dataset.path" in embeddings and embeddings.endswith("a file of yours")
    # one job, without -m; and a glob selects the folder's options too (Hydra's own matches conf/ alone)
    result = cli("run", "method=my_birch", "dataset=my_zoo", f"results_dir={tmp_path / 'one'}")
    assert result.returncode == 0 and "my_zoo  my_birch  seed=0 | SC" in result.stdout, result.stderr
    result = cli("run", "-m", "method=glob(my_*)", "dataset=glob(*zoo)", f"results_dir={tmp_path / 'glob'}")
    assert result.returncode == 0, result.stderr
    assert set(load_records(tmp_path / "glob", "paper")["dataset"]) == {"zoo", "my_zoo"}


def test_list_reads_a_split_of_ones_own_file_as_a_run_reads_it(tmp_path, monkeypatch):
    # 80 training rows of 5 classes, then 20 test rows of class 0; the file holds its n_train.
    y = np.concatenate([np.arange(80) % 5, np.zeros(20, dtype=int)])
    np.savez(tmp_path / "split.npz", X=np.zeros((100, 4)), y=y, n_train=80)
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "my_split.yaml").write_text(
        "n_clusters: null\nsplit: test\nsource:\n  _target_: clusterbench.data.sources.npz_file\n"
        f"  path: {tmp_path / 'split.npz'}\n"
    )
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path))
    (line,) = [line for line in cli("list").stdout.splitlines() if line.split()[:1] == ["my_split"]]
    assert line.split()[1:4] == ["20", "4", "1"]


def test_a_method_copied_without_a_name_of_its_own_is_refused_before_its_records_mix(tmp_path, monkeypatch):
    # docs/extending.md's first step: cp conf/method/kmeans.yaml …, then edit name; left unedited,
    # its runs would be recorded, summarised and tabled as k-means.
    (tmp_path / "method").mkdir()
    (tmp_path / "experiment").mkdir()
    copied = (CONF_DIR / "method" / "kmeans.yaml").read_text()  # the estimator left too, for brevity
    (tmp_path / "method" / "mymethod.yaml").write_text(copied)
    (tmp_path / "experiment" / "myexp.yaml").write_text(
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n"
        "      method: kmeans,mymethod\n      dataset: zoo\n"
    )
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path))
    own = tmp_path / "method" / "mymethod.yaml"
    refusal = (
        "clusterbench: error: method 'mymethod' records as name=kmeans, variant=default, as "
        f"conf/method/kmeans.yaml does, so their results would mix; give {own} a name of its own "
        "(name: mymethod)"
    )
    for words in (["-m", "method=kmeans,mymethod"], ["method=mymethod"], ["-m", "experiment=myexp"]):
        result = cli("run", *words, "dataset=zoo", f"results_dir={tmp_path / 'r'}")
        assert result.returncode == 2 and result.stderr.strip() == refusal, (words, result.stderr)
    assert not (tmp_path / "r").exists()  # refused before any job
    # A copy without its variant line gets the runner's variant=default: the same records.
    own.write_text("\n".join(line for line in copied.splitlines() if not line.startswith("variant:")))
    result = cli("run", "method=mymethod", "dataset=zoo", f"results_dir={tmp_path / 'r'}")
    assert result.returncode == 2 and result.stderr.strip() == refusal
    # The file copied from runs; so does the copy renamed on the command line.
    result = cli("run", "method=kmeans", "dataset=zoo", "profile=smoke", f"results_dir={tmp_path / 'k'}")
    assert result.returncode == 0, result.stderr
    result = cli(
        "run",
        "method=mymethod",
        "method.name=mine",
        "dataset=zoo",
        "profile=smoke",
        f"results_dir={tmp_path / 'm'}",
    )
    assert result.returncode == 0, result.stderr
    monkeypatch.delenv(CONFIG_DIR_ENV)  # the shipped methods' variants are all told apart
    check_distinct("method", options("method"))


def test_a_dataset_copied_without_a_name_of_its_own_is_refused_before_its_records_mix(tmp_path, monkeypatch):
    # cp conf/dataset/iris.yaml …/iris_raw.yaml with preprocess: none and the name left (or a file
    # extending iris): both record as 'iris' into one folder, where a point and seed count once, so
    # one configuration's runs would hide the other's (a summary showed 2 runs of 4 fitted).
    (tmp_path / "dataset").mkdir()
    copied = (
        (CONF_DIR / "dataset" / "iris.yaml")
        .read_text()
        .replace("preprocess: standardize", "preprocess: none")
    )
    own = tmp_path / "dataset" / "iris_raw.yaml"
    own.write_text(copied)
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path))
    refusal = (
        "clusterbench: error: dataset 'iris_raw' records as name=iris, as conf/dataset/iris.yaml does, so "
        f"their results would mix; give {own} a name of its own (name: iris_raw)"
    )
    for words in (["-m", "dataset=iris,iris_raw"], ["dataset=iris_raw"]):
        result = cli("run", *words, "method=kmeans", "profile=smoke", f"results_dir={tmp_path / 'r'}")
        assert result.returncode == 2 and result.stderr.strip() == refusal, (words, result.stderr)
    assert not (tmp_path / "r").exists()  # refused before any job
    own.write_text("defaults:\n  - iris\n  - _self_\npreprocess: none\n")  # extends iris: its name too
    result = cli("run", "dataset=iris_raw", "method=kmeans", "profile=smoke", f"results_dir={tmp_path / 'r'}")
    assert result.returncode == 2 and result.stderr.strip() == refusal, result.stderr
    # The file copied from runs; so does the copy renamed on the command line, and named in its file.
    for words in (["dataset=iris"], ["dataset=iris_raw", "dataset.name=raw"]):
        result = cli("run", *words, "method=kmeans", "profile=smoke", f"results_dir={tmp_path / 'k'}")
        assert result.returncode == 0, (words, result.stderr)
    own.write_text(copied.replace("name: iris", "name: iris_raw"))
    result = cli("run", "dataset=iris_raw", "method=kmeans", "profile=smoke", f"results_dir={tmp_path / 'k'}")
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in (tmp_path / "k" / "runs" / "smoke" / "adhoc").iterdir()) == [
        "iris",
        "iris_raw",
        "raw",
    ]
    monkeypatch.delenv(CONFIG_DIR_ENV)  # the shipped datasets all record under names of their own
    check_distinct("dataset", options("dataset"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "defaults:\n  - loop_b\n  - _self_\n",
            "its defaults extend it again (loop_a -> loop_b -> loop_a); remove the loop",
        ),
        ("- just\n- a list\n", "holds a list, not a mapping of keys"),
        ("name: [unclosed\n", "is not valid YAML"),
    ],
)
def test_a_broken_method_file_is_named_in_one_line_not_a_traceback(tmp_path, monkeypatch, text, expected):
    (tmp_path / "method").mkdir()
    (tmp_path / "method" / "loop_a.yaml").write_text(text)
    (tmp_path / "method" / "loop_b.yaml").write_text("defaults:\n  - loop_a\n  - _self_\n")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path))
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'method' / 'loop_a.yaml'}")) as error:
        check_distinct("method", ["kmeans"])
    assert expected in str(error.value)


def test_a_config_folder_that_is_missing_or_shadows_conf_exits_2_naming_it(
    tmp_path, config_folder, monkeypatch
):
    (config_folder / "method" / "kmeans.yaml").write_text("estimator:\n  _target_: sklearn.cluster.Birch\n")
    result = cli("run", "dataset=iris", f"results_dir={tmp_path}")
    assert_one_line_error(
        result, "method 'kmeans' is defined twice", str(config_folder / "method" / "kmeans.yaml")
    )
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "nowhere"))
    result = cli("list")
    assert_one_line_error(result, f"{CONFIG_DIR_ENV}: {tmp_path / 'nowhere'} is not a folder")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(config_folder))
    for flag in (
        ["-cd", str(config_folder)],
        [f"-cd={config_folder}"],
        [f"--config-dir={config_folder}"],
        ["--config-d", str(config_folder)],
        ["hydra.searchpath=[file:///x]"],
    ):
        result = cli("run", *flag, "dataset=iris", f"results_dir={tmp_path}")
        assert_one_line_error(result, f"give folders of your own configs as {CONFIG_DIR_ENV}=FOLDER")
    assert not (tmp_path / "runs").exists()


def test_data_verify_reports_an_unreadable_file_and_checks_the_others(tmp_path):
    shutil.copyfile(require_cached("ecoli") / "ecoli.npz", tmp_path / "ecoli.npz")
    (tmp_path / "zoo.npz").write_bytes(b"")
    result = cli("data", "verify", data_folder=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith("  ")}
    assert "MISMATCH: cannot read" in rows["zoo"] and rows["ecoli"].endswith(" ok")


def test_unknown_command_exits_2():
    result = run_cli("frobnicate")
    assert_one_line_error(result, "unknown command 'frobnicate'", "run", "table", "list", "data")


def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("run", "table", "list", "data import"):
        assert command in result.stdout


def test_run_counts_its_own_failures_and_no_other_process_s(tmp_path):
    # A failed record written by some other run in the same folder (as a sweep in another terminal
    # would, while this run goes on) is not this run's failure.
    other = run_exploding(f"++results_dir={tmp_path}")  # the ++ form names the folder too
    assert other.returncode == 1, (other.stdout, other.stderr)
    (failed,) = record_files(tmp_path)
    future = time.time() + 600
    os.utime(failed, (future, future))  # as if written during the next run
    mine = cli("run", "dataset=iris", "method=kmeans", "profile=smoke", f"results_dir={tmp_path}")
    assert mine.returncode == 0, (mine.stdout, mine.stderr)
    assert not (tmp_path / "runs" / ".journal").exists()  # each run clears its journal


def test_a_results_dir_only_hydra_resolves_still_counts_failures(tmp_path):
    result = run_exploding(f"results_dir={tmp_path}/${{hydra:runtime.choices.dataset}}")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "1 grid point(s) failed" in result.stderr and "Traceback" not in result.stderr
    assert len(record_files(tmp_path / "iris")) == 1


def test_a_swept_results_dir_counts_the_failures_of_every_folder(tmp_path):
    folders = [tmp_path / "a", tmp_path / "b"]
    result = run_exploding("-m", f"results_dir={folders[0]},{folders[1]}")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "2 grid point(s) failed" in result.stderr
    assert [len(record_files(folder)) for folder in folders] == [1, 1]


def test_hydra_flags_after_the_overrides_still_work(tmp_path):
    result = cli("run", "dataset=iris", "profile=smoke", f"results_dir={tmp_path}", "--cfg", "job")
    assert result.returncode == 0, result.stderr
    assert "name: iris" in result.stdout and not record_files(tmp_path)
    # The printed config is the whole output (a run summary after it, "0 point(s): none", was
    # a stray YAML key in a saved config).
    assert yaml.safe_load(result.stdout)["dataset"]["name"] == "iris"
    assert "point(s)" not in result.stdout


@pytest.mark.parametrize(
    ("words", "fragments"),
    [
        (
            ["summary", "kr_table2", "--csv", "{folder}"],
            ["--csv {folder} is a folder", "{folder}/summary.csv"],
        ),
        (["report", "--out", "{folder}"], ["--out {folder} is a folder", "{folder}/index.html"]),
        (["summary", "kr_table2", "--metrics", ","], ["--metrics names no metric, got ','"]),
    ],
    ids=["summary --csv", "report --out", "summary --metrics"],
)
def test_an_output_path_that_is_a_folder_or_no_metric_exits_2_in_one_line(tmp_path, words, fragments):
    """A folder given for the output file was a traceback (IsADirectoryError), and --metrics ','
    a table without metric columns."""
    words = [word.format(folder=tmp_path) for word in words]
    result = cli(*words, "--results-dir", str(REPO / "results"))
    assert_one_line_error(result, *(fragment.format(folder=tmp_path) for fragment in fragments))
    assert not any(tmp_path.iterdir())


def test_ctrl_c_during_a_command_exits_130_with_one_line(monkeypatch, capsys):
    import clusterbench.cli

    def interrupted(words):
        raise KeyboardInterrupt

    monkeypatch.setitem(clusterbench.cli.COMMANDS, "run", interrupted)
    assert clusterbench.cli.main(["run"]) == 130
    assert capsys.readouterr().err == INTERRUPTED + "\n"


def test_ctrl_c_while_the_command_line_imports_exits_130_with_one_line(monkeypatch, capsys):
    """The script's entry point imports the CLI (Hydra, pandas, scikit-learn) inside its guard."""
    import clusterbench.__main__
    import clusterbench.cli  # imported, so that the test can take it away

    class InterruptCliImport(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "clusterbench.cli":
                raise KeyboardInterrupt

    monkeypatch.delitem(sys.modules, "clusterbench.cli")
    monkeypatch.delattr(clusterbench, "cli")
    monkeypatch.setattr(sys, "meta_path", [InterruptCliImport(), *sys.meta_path])
    try:
        code = clusterbench.__main__.main()
    except KeyboardInterrupt:  # escaping, it would stop the whole test session
        pytest.fail("Ctrl-C during the import escaped the entry point")
    assert code == 130
    assert capsys.readouterr().err == INTERRUPTED + "\n"


def test_a_dataset_key_that_its_config_does_not_read_is_refused_before_any_fit(tmp_path):
    # Before, a key some dataset file held (embeddings' path, or one file's typo) was accepted on
    # every dataset, where nothing read it.
    for word, refusal in [
        ("dataset.path=x.npz", "dataset 'iris' (conf/dataset/ or an override): 'path' is not a dataset key"),
        ("dataset.preproces=none", "'preproces' is not a dataset key, so nothing would read it"),
    ]:
        result = cli("run", "dataset=iris", word, f"results_dir={tmp_path}")
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert refusal in result.stderr
    assert not (tmp_path / "runs").exists()


def test_an_experiments_config_is_printed_without_m(tmp_path):
    result = cli("run", "experiment=prcut_table2", f"results_dir={tmp_path}", "--cfg", "job")
    assert result.returncode == 0, result.stderr
    assert "metrics:" in result.stdout


def test_a_sweeping_experiment_without_m_runs_only_a_job_of_its_own_sweep(tmp_path):
    result = cli("run", "experiment=prcut_table2", "profile=smoke", f"results_dir={tmp_path}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        "experiment prcut_table2 sweeps dataset mnist,fashion_mnist, not zoo: run its sweep with -m, "
        "or one of its jobs with dataset=mnist"
    ) in result.stderr
    result = cli("run", "experiment=prcut_table2", "dataset=mnist", "method=prcut", f"results_dir={tmp_path}")
    assert result.returncode == 2 and "sweeps metrics prcut, not default" in result.stderr
    assert not (tmp_path / "runs").exists()
    result = cli(
        "run",
        "experiment=clam_table1",
        "dataset=zoo",
        "method=clam",
        "profile=smoke",
        f"results_dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr
    assert "without -m only the one job" in result.stderr
    assert set(load_records(tmp_path, "smoke")["method"]) == {"clam"}


def test_a_sweep_refuses_a_knn_graph_larger_than_a_dataset_before_its_first_fit(tmp_path):
    result = cli("run", "-m", "method=kmeans,spectral_knn", "dataset=iris", f"results_dir={tmp_path}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().endswith(
        "method 'spectral_knn' on dataset 'iris': SpectralKNN n_neighbors must be below the number of "
        "points (150), got 150: lower n_neighbors (method.n_neighbors=...)"
    )
    assert not (tmp_path / "runs").exists()  # kmeans, the sweep's first job, was not fitted either


def test_a_misspelt_name_is_answered_with_the_closest_option(tmp_path):
    result = cli("run", "method=kmean", "dataset=iris", f"results_dir={tmp_path}")
    assert result.returncode == 2
    assert "unknown method 'kmean'; did you mean 'kmeans'? known method options: " in result.stderr


def test_a_text_file_given_as_embeddings_is_named_not_an_npz(tmp_path):
    points = tmp_path / "points.csv"
    points.write_text("0.0,1.0\n1.0,0.0\n")
    result = cli("run", "dataset=embeddings", f"dataset.path={points}", f"results_dir={tmp_path}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        f"cannot read {points} (not an .npz archive, as numpy.savez writes); give dataset.path=FILE.npz"
        in result.stderr
    )

"""Overrides never accepted and ignored: ``method.K=V`` sets hyperparameter K; an added key that
nothing reads, a source argument its function does not take, ``device=cuda`` without a GPU and a
results folder that cannot be made are one-line errors (exit 2) before any record."""

from __future__ import annotations

import json
import re

import pytest
from omegaconf import OmegaConf

from clusterbench import catalog, overrides
from clusterbench.errors import UserError
from clusterbench.overrides import rewrite_overrides, unread_key_hint
from clusterbench.results import load_records
from tests.helpers import cli
from tests.test_cli import assert_one_line_error

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("word", "rewritten"),
    [
        ("method.beta=3", "++method.estimator.beta=3"),
        ("+method.beta=3", "++method.estimator.beta=3"),
        ("++method.beta=3", "++method.estimator.beta=3"),
        ("method.estimator.beta=3", "++method.estimator.beta=3"),
        ("+method.estimator.h=[2,3]", "++method.estimator.h=[2,3]"),
        ("method.n_init=1,3", "++method.estimator.n_init=1,3"),
        ("~method.beta", "~method.estimator.beta"),
        # what a method file holds itself is left to Hydra
        ("method.name=mine", "method.name=mine"),
        ("method.max_samples=100", "method.max_samples=100"),
        ("method.estimator._target_=x.Y", "++method.estimator._target_=x.Y"),
        ("method=clam", "method=clam"),
        ("-m", "-m"),
        # a key some dataset file holds is set whether or not the chosen file holds it
        ("dataset.subsample=60", "++dataset.subsample=60"),
        ("+dataset.impute=mean", "++dataset.impute=mean"),
        ("dataset.subsample=60,90", "++dataset.subsample=60,90"),
        ("dataset.source.path=x.csv", "dataset.source.path=x.csv"),
        ("dataset.beta=3", "dataset.beta=3"),  # no dataset reads it: refused by the check
        ("dataset=iris", "dataset=iris"),
        # an entry of a map keyed by method name, whatever the experiment holds
        ("grids.clam={beta_scale:[1]}", "++grids.clam={beta_scale:[1]}"),
        ("+grids.kmeans.n_init=[1,10]", "++grids.kmeans.n_init=[1,10]"),
        ("method_seeds.dbscan=[0]", "++method_seeds.dbscan=[0]"),
        ("timeout_s.spectral=60", "timeout_s.spectral=60"),  # would replace a number for every method
    ],
)
def test_method_and_dataset_keys_are_rewritten_to_set_what_the_user_means(word, rewritten):
    assert rewrite_overrides([word]) == [rewritten]


def test_a_key_the_experiment_sweeps_keeps_its_spelling(monkeypatch):
    """Hydra replaces an experiment's swept key by the command line's only under the same key:
    ++dataset.subsample would sweep beside it, in duplicate jobs."""
    from clusterbench import overrides

    monkeypatch.setattr(overrides, "_swept_keys", lambda words: {"dataset.subsample"})
    assert rewrite_overrides(["experiment=mine", "dataset.subsample=50", "dataset.impute=mean"]) == [
        "experiment=mine",
        "dataset.subsample=50",
        "++dataset.impute=mean",
    ]
    monkeypatch.undo()
    assert overrides._swept_keys(["-m", "experiment=prcut_table2"]) == {
        "dataset",
        "method",
        "metrics",
        "seed",
    }


@pytest.mark.parametrize(
    ("key", "read"),
    [
        ("grids.kmeans", True),
        ("metrics.nmi.average_method", True),
        ("method.estimator.beta", True),
        ("dataset.source.name", True),
        ("dataset.impute", True),
        ("profile.epochs", True),
        ("hydra.launcher.n_jobs", True),
        ("hydra.job.env_set.OMP_NUM_THREADS", True),
        ("experiment", True),
        ("beta", False),
        ("dataset.beta", False),
        ("profile.epoch", False),
        ("seed.x", False),
    ],
)
def test_an_added_key_is_allowed_only_where_something_reads_it(key, read):
    assert (unread_key_hint(key, "3", [f"+{key}=3"]) is None) is read


def test_a_variable_another_override_reads_may_be_added():
    assert unread_key_hint("base", "/tmp", ["+base=/tmp", "results_dir=${base}/r"]) is None


@pytest.mark.parametrize("word", ["method.beta=3", "+method.beta=3"])
def test_the_hydra_spelling_of_a_hyperparameter_changes_the_fit(tmp_path, word):
    result = cli("run", "method=clam", "dataset=iris", "profile=smoke", f"results_dir={tmp_path}", word)
    assert result.returncode == 0, result.stderr
    assert "beta=3 |" in result.stdout  # the summary line names the value fitted
    (params,) = set(load_records(tmp_path, "smoke")["params"])
    assert json.loads(params)["beta"] == 3


@pytest.mark.parametrize(
    ("words", "fragments"),
    [
        (["+beta=3"], ["'beta' is not a setting", "method.beta=3", "seed"]),
        (["++beta=3"], ["'beta' is not a setting", "method.beta=3"]),
        (["nope=3"], ["'nope' is not a setting", "method.nope=3"]),
        (
            ["+dataset.beta=3"],
            [
                "'beta' is not a dataset key",
                "n_clusters",
                "(a source's argument: ++dataset.source.beta=3)",
            ],
        ),
        (["+profile.epoch=3"], ["no profile has a key 'epoch'", "epochs"]),
        (["method.bta=3"], ["method 'clam' has no hyperparameter 'bta'", "beta"]),
        (
            [
                "dataset=wine",
                "dataset.source._target_=clusterbench.data.sources.cached",
                "+dataset.source.name=wine",
            ],
            ["dataset 'wine': source clusterbench.data.sources.cached", "'loader'", "~dataset.source.loader"],
        ),
        (["+dataset.source.frobnicate=1"], ["unexpected keyword argument 'frobnicate'"]),
        # the spelling the hint above gives, for an argument the source lacks and for one it has
        (["++dataset.source.frobnicate=1"], ["unexpected keyword argument 'frobnicate'"]),
        (["dataset=blobs", "++dataset.source.n_samples=0"], ["n_samples"]),
        # a dataset file without a name: it goes by the file's
        (["~dataset.name", "+dataset.source.frobnicate=1"], ["dataset 'iris': source"]),
        (["dataset.source.loader=load_irs"], ["no dataset loader 'load_irs'", "load_iris"]),
        (
            ["dataset.source._target_=tests.helpers.unreadable"],
            [
                "dataset 'iris': its source tests.helpers.unreadable failed",
                "FileNotFoundError",
                "load_iris.csv",
            ],
        ),
        (["results_dir=/proc/clusterbench"], ["results_dir '/proc/clusterbench' is not a writable folder"]),
        (["hydra/launcher=joblib"], ["launches a sweep's jobs; add -m"]),
    ],
)
def test_an_override_nothing_would_read_exits_2_in_one_line(tmp_path, words, fragments):
    result = cli(
        "run", "method=clam", "dataset=iris", "profile=smoke", f"results_dir={tmp_path}", *words, cwd=tmp_path
    )
    assert_one_line_error(result, *fragments)
    assert not any(tmp_path.rglob("*.csv"))


@pytest.mark.parametrize("sweep", [[], ["-m", "seed=0,1"]])
def test_a_hyperparameter_without_a_default_exits_2_in_one_line_and_runs_once_given(tmp_path, sweep):
    words = [
        "run",
        *sweep,
        "dataset=iris",
        f"results_dir={tmp_path}",
        "method.estimator._target_=tests.helpers.NeedsBandwidth",
    ]
    result = cli(*words, cwd=tmp_path)
    assert_one_line_error(result, "NeedsBandwidth has no default for 'bandwidth'", "method.bandwidth=VALUE")
    assert not any(tmp_path.rglob("*.csv"))
    result = cli(*words, "method.bandwidth=0.5", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    records = load_records(tmp_path, "paper")
    assert set(records["status"]) == {"ok"}
    assert sorted(set(records["seed"])) == ([0, 1] if sweep else [0])


@pytest.mark.parametrize(
    ("words", "fragments"),
    [
        (["-m", "seed=5,-1"], ["seed must be an integer ≥ 0, got -1"]),
        (["-m", "method.n_init=5,0"], ["method 'kmeans'", "n_init", "Got 0"]),
    ],
)
def test_a_sweep_refuses_a_bad_value_of_a_later_job_before_fitting_any(tmp_path, words, fragments):
    """The sweep's record check swallowed the later job's error: the earlier jobs fitted, then
    the sweep stopped in the middle without its closing summary."""
    result = cli("run", *words, "method=kmeans", "dataset=iris", f"results_dir={tmp_path}", cwd=tmp_path)
    assert_one_line_error(result, *fragments)
    assert not any(tmp_path.rglob("*.csv"))


@pytest.mark.parametrize(
    "words",
    [["-m", "seed=1,2", "+method_seeds.kmeans=[0]"], ["seed=1", "+method_seeds.kmeans=[0]"]],
    ids=["sweep", "one job"],
)
def test_seeds_a_method_does_not_run_at_fit_nothing_and_say_so(tmp_path, words):
    """Exit 0 with "2 of 2 jobs are recorded already" (the sweep) or "0 point(s)" (one job)
    where no record existed: nothing was fitted because method_seeds excluded every seed."""
    result = cli("run", *words, "method=kmeans", "dataset=iris", f"results_dir={tmp_path}", cwd=tmp_path)
    assert_one_line_error(result, "method 'kmeans' runs only at seed(s) [0] (method_seeds)", "use seed=0")
    assert "recorded already" not in result.stdout + result.stderr


def test_a_job_that_raises_outside_its_fits_fails_the_sweep(tmp_path):
    """Under -m a job's error was read by no one: the sweep ended with exit 0 and 0 points."""
    result = cli(
        "run",
        "-m",
        "dataset=iris",
        "seed=0,1",
        f"results_dir={tmp_path}",
        "method.estimator._target_=tests.helpers.NotConstructible",
        cwd=tmp_path,
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "boom in __init__" in result.stderr
    assert not any(tmp_path.rglob("*.csv"))


def test_an_experiment_file_without_the_global_package_header_is_refused(tmp_path, monkeypatch):
    for name in catalog.options("experiment"):
        overrides.check_global_package(name)  # every shipped one has it
    mine = tmp_path / "my_configs" / "experiment" / "mine.yaml"
    mine.parent.mkdir(parents=True)
    monkeypatch.setenv(catalog.CONFIG_DIR_ENV, str(tmp_path / "my_configs"))
    mine.write_text("# my sweep\nhydra:\n  sweeper: {}\n")
    with pytest.raises(UserError, match=re.escape(f"{mine} lacks the header '# @package _global_'")):
        overrides.check_global_package("mine")
    # Hydra reads a header only from the file's first lines: after another comment it is ignored.
    mine.write_text("# my sweep\n# @package _global_\nseed: 1\n")
    with pytest.raises(UserError, match="lacks the header"):
        overrides.check_global_package("mine")
    mine.write_text("\n# @package _global_\n# my sweep\nseed: 1\n")
    overrides.check_global_package("mine")
    assert catalog.option_label("experiment", "mine") == str(mine)  # a user's file by its path
    assert catalog.option_label("experiment", "kr_table2") == "conf/experiment/kr_table2.yaml"


@pytest.mark.parametrize("method", ["kmeans", "clam"])
def test_device_cuda_without_a_gpu_exits_2_for_every_method(tmp_path, method):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    result = cli("run", f"method={method}", "dataset=iris", "device=cuda", f"results_dir={tmp_path}")
    assert_one_line_error(result, "device='cuda' but no CUDA GPU is visible", "device=cpu")
    assert not any(tmp_path.rglob("*.csv"))


@pytest.mark.parametrize(
    ("group", "text", "refusal"),
    [
        (
            "dataset",
            "n_clusters: 3\npreproces: standardize\n",
            "'preproces' is not a dataset key, so nothing would read it; did you mean 'preprocess'?",
        ),
        (
            "method",
            "estimator: {_target_: a.B}\nmax_sample: 50\n",
            "'max_sample' is not a method key, so nothing would read it; did you mean 'max_samples'?",
        ),
        (
            "method",
            "estimator: {_target_: a.B}\nn_init: 5\n",
            "'n_init' is not a method key, so nothing would "
            "read it; a hyperparameter goes under estimator: (method.n_init=V on the command line)",
        ),
        ("dataset", "n_clusters: 3\npath: x.npz\n", "'path' is not a dataset key"),
    ],
)
def test_a_config_key_that_nothing_reads_is_refused_with_its_likely_spelling(group, text, refusal):
    with pytest.raises(UserError, match=re.escape(f"conf/{group}/mine.yaml: {refusal}")):
        catalog.check_file_keys(group, OmegaConf.create(text), f"conf/{group}/mine.yaml")


def test_a_config_key_its_own_values_interpolate_is_read():
    catalog.check_file_keys(
        "dataset", OmegaConf.create("n_clusters: 3\npath: x\nsource: {path: '${..path}'}\n"), ""
    )
    catalog.check_file_keys("method", OmegaConf.create("k: 4\nestimator: {n_clusters: '${method.k}'}\n"), "")


@pytest.mark.parametrize(
    ("text", "words", "refusal"),
    [
        (
            "grid: {kmeans: {n_init: [1, 2]}}\n",
            [],
            "'grid' is not a setting, so nothing would read it; did you mean 'grids'?",
        ),
        # A resolver is no reference: ${seeds:3} reads no key named seeds.
        ("seeds: [0]\nmethod_seeds: {dbscan: '${seeds:3}'}\n", [], "'seeds' is not a setting"),
        ("my_k: 3\n", [], "'my_k' is not a setting"),
        ("my_k: 3\n", ["method.n_clusters=${my_k}"], None),
        ("my_k: 3\ngrids: {kmeans: {n_clusters: ['${my_k}']}}\n", [], None),
        (
            "method: {n_init: 5}\n",
            [],
            "conf/experiment/mine.yaml, its method: block: 'n_init' is not a method key",
        ),
    ],
)
def test_an_experiments_key_that_nothing_reads_is_refused(monkeypatch, text, words, refusal):
    raw = OmegaConf.create(text)
    monkeypatch.setattr(overrides, "load_option", lambda group, name: raw)
    if refusal is None:
        overrides.check_experiment_keys("mine", words)
        return
    with pytest.raises(UserError, match=re.escape(refusal)):
        overrides.check_experiment_keys("mine", words)


@pytest.mark.parametrize("experiment", catalog.options("experiment"))
def test_every_experiments_keyed_maps_name_only_known_methods_and_datasets(experiment):
    # conf/tuned/kr_table3_multipliers.yaml once named har, a dataset with no config: every
    # kr_idec and kr_dkm job of kr_table3 was refused.
    from hydra import compose, initialize_config_dir

    from clusterbench.checks import check_keyed_maps

    raw = catalog.load_option("experiment", experiment)
    datasets = overrides._swept_options(raw, "dataset", []) or ["zoo"]
    methods = overrides._swept_options(raw, "method", []) or ["kmeans"]
    with initialize_config_dir(config_dir=str(catalog.CONF_DIR), version_base="1.3"):
        for method in methods:
            cfg = compose(
                config_name="config",
                overrides=[f"experiment={experiment}", f"dataset={datasets[0]}", f"method={method}"],
            )
            check_keyed_maps(cfg)


@pytest.mark.parametrize(
    ("words", "hint"),
    [
        (["method", "kmeans"], "did you mean method=kmeans?"),
        (["dataset=iris", "seed", "3"], "did you mean seed=3?"),
        (["kmeans"], "did you mean method=kmeans?"),
        (["prcut"], "did you mean method=prcut or metrics=prcut?"),  # an option of two groups
        (["method"], "write key=value"),  # nothing after it to pair with
        (["method", "-m"], "write key=value"),
    ],
)
def test_a_bare_word_is_refused_with_the_override_it_likely_meant(words, hint):
    with pytest.raises(UserError, match="is not an override") as refusal:
        overrides.check_bare_words(words)
    assert hint in str(refusal.value)


def test_a_sweeps_jobs_read_the_dataset_files_once_for_their_keyed_maps(monkeypatch):
    # Each job's check of the maps keyed by dataset name read all 35 dataset files again: a
    # 600-job resume of kcprime_tableS1 spent 80 of its 107 s there.
    from hydra import compose, initialize_config_dir

    from clusterbench.checks import check_keyed_maps

    read, file_spec = [], catalog._file_spec
    monkeypatch.setattr(
        catalog, "_file_spec", lambda group, *args: read.append(group) or file_spec(group, *args)
    )
    catalog.dataset_names.cache_clear()
    with initialize_config_dir(config_dir=str(catalog.CONF_DIR), version_base="1.3"):
        for seed in range(3):
            check_keyed_maps(
                compose(config_name="config", overrides=["experiment=kcprime_tableS1", f"seed={seed}"])
            )
    assert read.count("dataset") == len(catalog.options("dataset"))


def test_a_hyperparameter_some_methods_of_a_sweep_lack_is_refused_naming_the_grid_for_the_others(tmp_path):
    # method.n_neighbors=10 reaches kmeans too, whose job refused it with no way forward.
    words = ["run", "-m", "method=kmeans,spectral_knn,clam_eq8", "dataset=iris", "profile=smoke"]
    result = cli(*words, "method.n_neighbors=10,20", f"results_dir={tmp_path}")
    assert_one_line_error(
        result,
        "method.n_neighbors reaches every method of the sweep, and method 'kmeans' has no "
        "hyperparameter 'n_neighbors'; give it to spectral_knn alone: "
        "'grids.spectral_knn.n_neighbors=[10,20]'",
    )
    # the values as Hydra lists them (a range), not as typed
    result = cli(*words, "method.n_neighbors=range(5,15,5)", f"results_dir={tmp_path}")
    assert_one_line_error(result, "'grids.spectral_knn.n_neighbors=[5,10]'")
    # clam_eq8 extends clam: its estimator, and its records' name for the grid
    result = cli(*words, "method.estimator.beta=3", f"results_dir={tmp_path}")
    assert_one_line_error(result, "give it to clam alone: 'grids.clam.beta=[3]'")
    result = cli(
        *words[:2],
        "method=kmeans,spectral_knn",
        *words[3:],
        "grids.spectral_knn.n_neighbors=[10,20]",
        f"results_dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr
    points = load_records(tmp_path, "smoke").query("method == 'spectral_knn'")["params"].map(json.loads)
    assert sorted(set(points.map(lambda params: params["n_neighbors"]))) == [10, 20]
    # a method that method_seeds keeps from the sweep's seeds does not run: nothing refuses the key
    result = cli(
        *words[:2],
        "method=kmeans,dbscan",
        "dataset=iris",
        "profile=smoke",
        "seed=1",
        "method_seeds.dbscan=[0]",
        "method.n_init=2",
        f"results_dir={tmp_path / 'seeds'}",
    )
    assert result.returncode == 0, result.stderr
    assert set(load_records(tmp_path / "seeds", "smoke")["method"]) == {"kmeans"}
    # a key every method of the sweep takes reaches them all, as before
    assert (
        cli(
            *words[:2],
            "method=kmeans,kmeans_kr_budget",
            "dataset=zoo",
            "profile=smoke",
            "method.n_init=2",
            f"results_dir={tmp_path}",
        ).returncode
        == 0
    )


# From a third mutation audit of the suite: each test below failed with one plausible bug in
# place and passed without it.


def test_a_swept_map_entry_keeps_its_spelling_and_the_source_node_is_not_forced(monkeypatch):

    monkeypatch.setattr(overrides, "_swept_keys", lambda words: {"grids.kmeans.n_init"})
    assert rewrite_overrides(["grids.kmeans.n_init=[1,10]", "method_seeds.dbscan=[0]"]) == [
        "grids.kmeans.n_init=[1,10]",  # swept by the experiment: Hydra replaces it only so spelled
        "++method_seeds.dbscan=[0]",
    ]
    monkeypatch.undo()
    # source is a node (a _target_ and its arguments), never a value to add with ++
    assert rewrite_overrides(["dataset.source=x", "dataset.subsample=50"]) == [
        "dataset.source=x",
        "++dataset.subsample=50",
    ]


def test_a_glob_is_written_out_over_the_users_config_folders(tmp_path, monkeypatch):
    from clusterbench.catalog import CONFIG_DIR_ENV
    from clusterbench.overrides import expand_globs

    (tmp_path / "method").mkdir()
    for name in ("my_a", "my_b"):
        (tmp_path / "method" / f"{name}.yaml").write_text("estimator:\n  _target_: sklearn.cluster.KMeans\n")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path))
    words = ["-m", "method=glob(my_*)", "+method=glob(my_b*)", "dataset=zoo", "seed=0,1"]
    assert expand_globs(words) == ["-m", "method=my_a,my_b", "+method=my_b", "dataset=zoo", "seed=0,1"]
    monkeypatch.delenv(CONFIG_DIR_ENV)
    assert expand_globs(words) == words  # no user folders: Hydra's sweeper expands it over conf/

"""`clusterbench summary` and clusterbench.summary on records of small jobs really run (k-means on
scikit-learn's bundled iris, one random restart, so that seeds differ)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from sklearn.cluster import KMeans

from clusterbench.data.sources import DATA_ENV
from clusterbench.errors import UserError
from clusterbench.results import load_records
from clusterbench.runner import run_job
from clusterbench.summary import format_summary, headline_metrics, load_summary, summarize
from tests import test_tables
from tests.helpers import DATA_FOLDER, cli, compose_config

SEEDS = (0, 1, 2)


class FailsAtSeedTwo(KMeans):
    """k-means (its hyperparameters, so its runs group with k-means') that raises when seeded 2."""

    def fit(self, X, y=None, sample_weight=None):
        if self.random_state == 2:
            raise RuntimeError("boom at seed 2")
        return super().fit(X, y, sample_weight)


def run(results_dir, experiment: str, seeds=SEEDS, *overrides: str) -> None:
    for seed in seeds:
        cfg = compose_config(
            results_dir,
            "method=kmeans",
            "dataset=iris",
            "profile=smoke",
            "method.estimator.n_init=1",
            "method.estimator.init=random",
            f"seed={seed}",
            *overrides,
        )
        run_job(cfg, experiment)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """One results folder: experiment ``adhoc`` (seeds 0-2, then seed 0 rescored under a second
    metric suite), ``grid`` (n_init 1 and 2), ``failing`` (seed 2 failed) and ``variant``."""
    folder = tmp_path_factory.mktemp("results")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DATA_ENV, str(DATA_FOLDER))
        run(folder, "adhoc")
        run(folder, "adhoc", (0,), "metrics=external")  # the same fit, a second record
        run(folder, "grid", SEEDS, "+grids.kmeans.n_init=[1,2]")
        run(folder, "failing", SEEDS, "method.estimator._target_=tests.test_summary.FailsAtSeedTwo")
        run(folder, "variant", (0, 1), "method.variant=tuned")
    return folder


def metric_values(records: pd.DataFrame, metric: str) -> np.ndarray:
    """The metric's values in the records of status ok, one per seed (the latest record of a seed
    scored twice would do as well: one fit gives one value)."""
    rows = records[(records["metric"] == metric) & (records["status"] == "ok")]
    return rows.drop_duplicates("seed")["value"].to_numpy()


def table_cells(markdown: str) -> list[list[str]]:
    """The cells of a Markdown table's header and rows (its alignment line left out)."""
    lines = [line for i, line in enumerate(markdown.splitlines()) if i != 1]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]


def one_run(seed, params, scores, **keywords):
    """A record's rows (tests.test_tables.run) of dataset zoo, method k-means."""
    return test_tables.run("zoo", "kmeans", seed, params, scores, **keywords)


def records_of(*runs) -> pd.DataFrame:
    return test_tables.frame(*runs).assign(timestamp="")


def test_mean_and_std_are_numpys_over_the_seeds_records(results):
    records = load_records(results, "smoke", ["adhoc"])
    summary = summarize(records)
    assert len(summary) == 1
    row = summary.iloc[0]
    # Seed 0 has two records (two metric suites) of one fit: one run, as tables count it.
    assert records["config_hash"].nunique() == 4
    assert (row["runs"], row["ok"], row["failed"], row["skipped"], row["timeout"]) == (3, 3, 0, 0, 0)
    for metric in ("acc", "nmi", "ari", "sc"):
        values = metric_values(records, metric)
        assert len(values) == 3
        assert row[f"{metric}_mean"] == pytest.approx(np.mean(values), rel=1e-12)
        assert row[f"{metric}_std"] == pytest.approx(np.std(values), rel=1e-12)
        assert row[f"{metric}_n"] == 3
    assert row["nmi_std"] > 0  # the seeds differ: a std of 0 would not tell the population std apart
    assert (row["dataset"], row["method"], row["variant"], row["hyperparameters"]) == (
        "iris",
        "kmeans",
        "default",
        "",
    )
    assert "random_state" not in json.loads(row["params"])


def test_failed_runs_are_counted_as_failed_and_left_out_of_the_means(results):
    records = load_records(results, "smoke", ["failing"])
    (row,) = summarize(records, ["nmi"]).itertuples()
    assert (row.runs, row.ok, row.failed) == (3, 2, 1)
    nmi = metric_values(records, "nmi")
    assert len(nmi) == 2
    assert row.nmi_mean == pytest.approx(np.mean(nmi)) and row.nmi_n == 2
    assert row.nmi_mean != pytest.approx(np.sum(nmi) / 3)  # a failure is no 0
    header, line = table_cells(format_summary(summarize(records, ["nmi"])))
    assert dict(zip(header, line, strict=True)) == {
        "dataset": "iris",
        "method": "kmeans",
        "runs": "3",
        "ok": "2",
        "failed": "1",
        "skipped": "0",
        "NMI": f"{np.mean(nmi):.3f} ± {np.std(nmi):.3f}",
    }


def test_each_hyperparameter_set_is_its_own_row(results):
    records = load_records(results, "smoke", ["grid"])
    summary = summarize(records, ["nmi"])
    assert summary["hyperparameters"].tolist() == ["n_init=1", "n_init=2"]
    assert summary["runs"].tolist() == [3, 3]
    for row in summary.itertuples():
        n_init = json.loads(row.params)["n_init"]
        of_set = records[records["params"].map(lambda p, n=n_init: json.loads(p)["n_init"] == n)]
        assert row.nmi_mean == pytest.approx(np.mean(metric_values(of_set, "nmi")))
    # by_params names every hyperparameter, not only those that vary; the rows stay the same.
    named = summarize(records, ["nmi"], by_params=True)
    assert named["nmi_mean"].tolist() == summary["nmi_mean"].tolist()
    for row in named.itertuples():
        everything = sorted(json.loads(row.params).items())
        assert row.hyperparameters == " ".join(f"{name}={value}" for name, value in everything)
    assert "algorithm=lloyd" in named["hyperparameters"].iloc[0]
    # A whole float reads as its integer: a grid's 1 and a default's 1.0 are shown alike.
    floats = records.assign(params=records["params"].str.replace('"n_init": 1,', '"n_init": 1.0,'))
    assert '"n_init": 1.0,' in floats["params"].iloc[0]
    assert summarize(floats, ["nmi"])["hyperparameters"].tolist() == ["n_init=1", "n_init=2"]


def test_headline_metrics_are_those_held_among_acc_nmi_ari_sc_ratio_cut_else_all(results):
    records = load_records(results, "smoke", ["adhoc"])
    assert headline_metrics(records) == ["acc", "nmi", "ari", "sc"]
    cut = records[records["metric"] == "sc"].assign(metric="ratio_cut")  # PRCut Table 2's metric
    assert headline_metrics(pd.concat([cut, records])) == ["acc", "nmi", "ari", "sc", "ratio_cut"]
    assert headline_metrics(records[records["metric"] != "sc"]) == ["acc", "nmi", "ari"]
    others = records[records["metric"].isin(["inertia", "n_found"])]
    assert headline_metrics(others) == ["inertia", "n_found"]
    assert summarize(others).columns[-3:].tolist() == ["n_found_mean", "n_found_std", "n_found_n"]


def test_the_text_table_names_variants_and_shows_mean_plus_minus_std(results):
    records = load_records(results, "smoke", ["adhoc", "variant"])
    summary = summarize(records, ["nmi", "sc"])
    text = format_summary(summary)
    header, first, second = table_cells(text)
    assert header == ["experiment", "dataset", "method", "runs", "ok", "failed", "skipped", "NMI", "SC"]
    adhoc = summary[summary["experiment"] == "adhoc"].iloc[0]
    assert first[:3] == ["adhoc", "iris", "kmeans"]
    assert first[-2] == f"{adhoc['nmi_mean']:.3f} ± {adhoc['nmi_std']:.3f}"
    assert second[:3] == ["variant", "iris", "kmeans[tuned]"]
    assert "timeout" not in header  # no run timed out: the column would say nothing
    # An SC undefined for one run (a labeling of one cluster): the mean of the others, saying so.
    undefined = records.copy()
    undefined.loc[(undefined["metric"] == "sc") & (undefined["seed"] == 0), "value"] = np.nan
    row = summarize(undefined[undefined["experiment"] == "adhoc"], ["sc"]).iloc[0]
    assert row["sc_n"] == 2 and row["ok"] == 3
    assert "(n=2)" in format_summary(summarize(undefined[undefined["experiment"] == "adhoc"], ["sc"]))


def test_a_metric_no_record_holds_is_a_user_error(results):
    with pytest.raises(UserError, match="holds metric 'nosuch'; they hold acc, ari"):
        load_summary(results, "smoke", ["adhoc"], ["nmi", "nosuch"])
    assert load_summary(results, "smoke", ["adhoc"], ["fit_seconds"])["fit_seconds_n"].tolist() == [3]


def test_no_records_is_a_user_error_naming_the_profile_that_holds_some(results):
    with pytest.raises(UserError, match=r"profile smoke holds some \(--profile smoke\)"):
        load_summary(results, "paper", ["adhoc"])


def test_the_cli_prints_the_table_and_writes_the_csv(results, tmp_path):
    out = tmp_path / "summary.csv"
    result = cli(
        "summary", "adhoc", "failing", "--profile", "smoke", "--results-dir", str(results), "--csv", str(out)
    )
    assert result.returncode == 0, result.stderr
    written = pd.read_csv(out, keep_default_na=False, na_values={"sc_std": [""]})
    expected = load_summary(results, "smoke", ["adhoc", "failing"])
    assert written["experiment"].tolist() == ["adhoc", "failing"]
    assert written[["runs", "ok", "failed"]].to_numpy().tolist() == [[3, 3, 0], [3, 2, 1]]
    assert written["nmi_mean"].to_numpy() == pytest.approx(expected["nmi_mean"].to_numpy(), rel=1e-12)
    assert format_summary(expected) in result.stdout


def test_the_cli_names_the_other_profiles_holding_records_of_the_experiments(results):
    result = cli("summary", "adhoc", "--profile", "smoke", "--results-dir", str(results))
    assert result.returncode == 0 and "--profile" not in result.stdout  # smoke alone holds them
    shutil.copytree(results / "runs" / "smoke", results / "runs" / "paper")  # a paper run beside it
    result = cli("summary", "adhoc", "--profile", "smoke", "--results-dir", str(results))
    assert result.stdout.rstrip().endswith(
        f"(profile paper holds records of these experiments too: --profile paper --results-dir {results})"
    )


def test_other_profiles_are_named_as_the_subject_of_one_sentence():
    from clusterbench.results import held_by

    assert held_by(["smoke"]) == "profile smoke holds"
    assert held_by(["paper", "smoke"]) == "profiles paper and smoke hold"
    assert held_by(["a", "b", "c"]) == "profiles a, b and c hold"


def test_the_cli_names_an_experiment_asked_for_that_holds_no_records(results):
    """Beside one that holds records, an experiment without any (a config whose sweep has not run
    into this folder) was left out of the table without a word."""
    result = cli("summary", "adhoc", "kr_table2", "--profile", "smoke", "--results-dir", str(results))
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith(f"(no records of kr_table2 under {results / 'runs' / 'smoke'})")
    assert (
        "no records of"
        not in cli("summary", "adhoc", "--profile", "smoke", "--results-dir", str(results)).stdout
    )


def test_the_cli_with_no_records_exits_2_in_one_line(tmp_path):
    result = cli("summary", "--results-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.startswith("clusterbench: error: no records of adhoc under ")
    assert "`clusterbench run -m method=kmeans dataset=zoo" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""


@pytest.mark.parametrize("place", [{"device": "cpu"}, {"n_threads": 1}, {"device": "cpu", "n_threads": 1}])
def test_a_summary_row_pools_seeds_that_ran_on_other_devices_or_threads(place):
    """Where a fit ran is not a hyperparameter: a sweep resumed with another ``threads=`` (which the
    runner writes into every record's params) or on a GPU had its seeds split over rows, each
    mean ± std over part of them, while the tables pool them."""
    other = {"device": "cuda", "n_threads": 2}
    records = records_of(
        one_run(0, {"k": 3, **place}, {"sc": 0.2}),
        one_run(1, {"k": 3, **{key: other[key] for key in place}}, {"sc": 0.4}),
    )
    summary = summarize(records)
    assert len(summary) == 1 and summary["runs"].iloc[0] == 2
    assert summary["sc_mean"].iloc[0] == pytest.approx(0.3)
    assert summary["sc_std"].iloc[0] == pytest.approx(0.1)


# From mutation audit 13 (the summary and the report): each test below failed with one plausible bug in
# place and passed without it.


def test_a_row_of_one_run_has_no_std_and_shows_its_value_alone():
    """A std over one seed is no spread: NaN, not 0, and the text shows the value without a ±."""
    summary = summarize(records_of(one_run(0, {"k": 3}, {"sc": 0.25})))
    row = summary.iloc[0]
    assert row["sc_mean"] == pytest.approx(0.25) and row["sc_n"] == 1
    assert np.isnan(row["sc_std"])
    header, line = table_cells(format_summary(summary))
    assert dict(zip(header, line, strict=True))["SC"] == "0.250"


def test_a_configuration_whose_runs_all_failed_has_no_mean_rather_than_0():
    """No successful run defines no mean: NaN and "—", never a mean of 0 beside a real one."""
    records = records_of(
        one_run(0, {"k": 3}, {"sc": 0.25}),
        one_run(0, {"k": 5}, {}, status="failed"),
        one_run(1, {"k": 5}, {}, status="failed"),
    )
    summary = summarize(records)
    assert summary["hyperparameters"].tolist() == ["k=3", "k=5"]
    failed = summary.iloc[1]
    assert (failed["runs"], failed["ok"], failed["failed"], failed["sc_n"]) == (2, 0, 2, 0)
    assert np.isnan(failed["sc_mean"]) and np.isnan(failed["sc_std"])
    assert [line[-1] for line in table_cells(format_summary(summary))[1:]] == ["0.250", "—"]


def test_rows_of_a_grid_follow_its_values_in_numeric_order():
    """k = 2 before k = 10 (the order of wide_runs), not the order of the params' JSON text."""
    records = records_of(
        one_run(0, {"k": 10}, {"sc": 0.1}),
        one_run(0, {"k": 2}, {"sc": 0.2}),
        one_run(0, {"k": 3}, {"sc": 0.3}),
    )
    summary = summarize(records)
    assert summary["hyperparameters"].tolist() == ["k=2", "k=3", "k=10"]
    assert summary["sc_mean"].tolist() == pytest.approx([0.2, 0.3, 0.1])


def test_hyperparameters_are_told_apart_within_a_variant_not_across_variants():
    """A variant has a row of its own already: its hyperparameters are named only where they vary
    among that variant's rows, so one set per variant names none."""
    records = records_of(
        one_run(0, {"k": 3}, {"sc": 0.2}), one_run(0, {"k": 5}, {"sc": 0.3}, variant="tuned")
    )
    summary = summarize(records)
    assert summary["variant"].tolist() == ["default", "tuned"]
    assert summary["hyperparameters"].tolist() == ["", ""]


def test_fit_seconds_keeps_its_name_as_the_column_heading():
    """Metrics are upper-cased (NMI, SC) but fit_seconds is a name, not an acronym."""
    records = records_of(one_run(0, {"k": 3}, {"sc": 0.2}), one_run(1, {"k": 3}, {"sc": 0.4}))
    summary = summarize(records.assign(fit_seconds=[1.0, 3.0]), ["sc", "fit_seconds"])
    header, line = table_cells(format_summary(summary))
    shown = dict(zip(header, line, strict=True))
    assert (shown["SC"], shown["fit_seconds"]) == ("0.300 ± 0.100", "2.000 ± 1.000")


def test_headline_metrics_fall_back_to_the_successful_runs_metrics_only():
    """A failed run's record holds no metric (an empty name): it is no metric of the summary."""
    records = records_of(one_run(0, {"k": 3}, {"inertia": 5.0}), one_run(1, {"k": 3}, {}, status="failed"))
    assert headline_metrics(records) == ["inertia"]
    assert headline_metrics(records.iloc[::-1]) == ["inertia"]


def test_a_metric_asked_of_records_that_all_failed_is_no_user_error(monkeypatch, tmp_path):
    """Where no run succeeded there are no metrics to check a name against: the table of counts
    is shown (every run failed) rather than an error that the metric is unknown."""
    import clusterbench.summary as summary_module

    records = records_of(one_run(0, {"k": 3}, {}, status="failed"), one_run(1, {"k": 3}, {}, status="failed"))
    monkeypatch.setattr(summary_module, "load_records", lambda *arguments: records)
    row = load_summary(tmp_path, "smoke", ["exp"], ["nmi"]).iloc[0]
    assert (row["runs"], row["failed"], row["nmi_n"]) == (2, 2, 0)


def test_a_runs_closing_table_names_the_rows_left_out_only_when_some_are(monkeypatch, tmp_path):
    """RUN_SUMMARY_ROWS rows exactly are all shown: no "(0 more rows …)" line."""
    import clusterbench.results
    import clusterbench.summary as summary_module

    records = records_of(one_run(0, {"k": 3}, {"sc": 0.2}), one_run(0, {"k": 5}, {"sc": 0.3}))
    monkeypatch.setattr(clusterbench.results, "read_records", lambda paths: records)
    folder = tmp_path / "results" / "runs" / "smoke" / "exp" / "zoo" / "kmeans"
    entries = [("ok", False, folder / "a.csv"), ("ok", False, folder / "b.csv")]
    monkeypatch.setattr(summary_module, "RUN_SUMMARY_ROWS", 2)
    assert "more rows" not in summary_module.run_summary(entries, table=True)
    monkeypatch.setattr(summary_module, "RUN_SUMMARY_ROWS", 1)
    assert summary_module.run_summary(entries, table=True).endswith(
        f"(1 more rows: clusterbench summary exp --profile smoke --results-dir {tmp_path / 'results'})"
    )


def test_a_hyperparameter_only_some_sets_hold_tells_their_rows_apart():
    """A set with a hyperparameter the others lack (an override of one sweep) differs in it."""
    records = records_of(one_run(0, {"k": 3}, {"sc": 0.2}), one_run(0, {"k": 3, "tol": 0.1}, {"sc": 0.3}))
    assert summarize(records)["hyperparameters"].tolist() == ["", "tol=0.1"]


def test_timed_out_runs_are_counted_and_their_column_shown():
    """The timeout column is left out of the text only when no run timed out."""
    records = records_of(one_run(0, {"k": 3}, {"sc": 0.2}), one_run(1, {"k": 3}, {}, status="timeout"))
    summary = summarize(records)
    assert summary[["runs", "ok", "failed", "skipped", "timeout"]].iloc[0].tolist() == [2, 1, 0, 0, 1]
    header, line = table_cells(format_summary(summary))
    assert dict(zip(header, line, strict=True))["timeout"] == "1"


def test_the_hyperparameters_column_is_shown_when_any_row_has_some():
    """One dataset's grid beside another's single set: the grid's rows still need telling apart."""
    records = records_of(
        one_run(0, {"k": 3}, {"sc": 0.2}),
        one_run(0, {"k": 5}, {"sc": 0.3}),
        test_tables.run("iris", "kmeans", 0, {"k": 3}, {"sc": 0.4}),
    )
    header, *lines = table_cells(format_summary(summarize(records)))
    column = header.index("hyperparameters")
    assert [line[column] for line in lines] == ["", "k=3", "k=5"]


def test_load_summary_by_params_names_every_hyperparameter(monkeypatch, tmp_path):
    """`clusterbench summary --by-params` reaches summarize: one set is named, not left blank."""
    import clusterbench.summary as summary_module

    records = records_of(one_run(0, {"k": 3}, {"sc": 0.2}), one_run(1, {"k": 3}, {"sc": 0.4}))
    monkeypatch.setattr(summary_module, "load_records", lambda *arguments: records)
    assert load_summary(tmp_path, "smoke", ["exp"])["hyperparameters"].tolist() == [""]
    assert load_summary(tmp_path, "smoke", ["exp"], by_params=True)["hyperparameters"].tolist() == ["k=3"]

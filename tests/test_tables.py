"""The tables engine: selection protocols, cells beside the paper, gains, W/L rows, outputs."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from clusterbench.errors import UserError
from clusterbench.results import COLUMNS, load_records, write_record
from clusterbench.runs import wide_runs
from clusterbench.tables import (
    FEWER_MARK,
    PARTIAL_MARK,
    SEEDS_MARK,
    best_of_weights,
    build_table,
    compute_cells,
    relative_gain,
    render,
    select,
    table_spec,
    win_loss,
    write_table,
)
from clusterbench.tables.cells import _column_runs
from clusterbench.tables.spec import check_spec
from tests.helpers import spec_changed

REPO = Path(__file__).resolve().parents[1]


def run(dataset, method, seed, params, scores, variant="default", status="ok"):
    """The rows of one record, as the runner writes them."""
    params = {**params, "random_state": seed}
    key = f"{dataset}-{method}-{variant}-{seed}-{json.dumps(params, sort_keys=True)}"
    base = dict.fromkeys(COLUMNS, "")
    base |= {
        "experiment": "exp",
        "profile": "smoke",
        "dataset": dataset,
        "method": method,
        "variant": variant,
        "seed": seed,
        "params": json.dumps(params, sort_keys=True),
        "config_hash": key,
        "status": status,
    }
    if status != "ok":
        return [base | {"error": "boom"}]
    return [base | {"metric": name, "value": value} for name, value in scores.items()]


def frame(*runs) -> pd.DataFrame:
    rows = pd.DataFrame([row for r in runs for row in r])
    rows["value"] = pd.to_numeric(rows["value"])
    return rows


def spec(**overrides):
    base = {
        "name": "toy",
        "title": "Toy",
        "note": "",
        "experiments": ["exp"],
        "metrics": ["sc"],
        "protocol": {"kind": "best", "by": "sc", "mode": "max"},
        "digits": 3,
        "rows": {"zoo": "Zoo", "ecoli": "Ecoli"},
        "columns": {
            "kmeans": {"label": "k-means", "method": "kmeans"},
            "clam": {"label": "CLAM", "method": "clam"},
        },
        "gain": {"reference": "clam"},
        "win_loss": ["clam"],
        "paper": {"sc": {"zoo": {"kmeans": 0.374, "clam": 0.412}, "ecoli": {"kmeans": 0.262, "clam": None}}},
    }
    return OmegaConf.create(base | overrides)


GRID = frame(
    run("zoo", "kmeans", 0, {"init": "k-means++"}, {"sc": 0.30, "nmi": 0.9}),
    run("zoo", "kmeans", 0, {"init": "random"}, {"sc": 0.40, "nmi": 0.5}),
    run("zoo", "kmeans", 1, {"init": "k-means++"}, {"sc": 0.36, "nmi": 0.7}),
    run("zoo", "kmeans", 1, {"init": "random"}, {"sc": 0.20, "nmi": 0.1}),
)


def test_best_reports_the_metric_of_the_run_with_the_best_criterion():
    chosen = select(wide_runs(GRID), OmegaConf.create({"kind": "best", "by": "sc"}), "nmi")
    assert chosen["ours"] == 0.5  # NMI of the best-SC run, not the best NMI
    assert chosen["selected"] == "init=random"
    least = select(wide_runs(GRID), OmegaConf.create({"kind": "best", "by": "sc", "mode": "min"}), "sc")
    assert least["ours"] == 0.20


@pytest.mark.parametrize("hashes", [["a", "b", "c"], ["c", "b", "a"]])
def test_of_tied_runs_best_chooses_by_hyperparameter_value_not_by_hash(hashes):
    tied = [
        run("zoo", "dec", 0, {"update_interval": u}, {"sc": 0.37, "nmi": n})
        for u, n in [(100, 0.1), (3, 0.2), (20, 0.3)]
    ]
    records = frame(*tied)
    records["config_hash"] = records["params"].map(dict(zip(records["params"].unique(), hashes, strict=True)))
    records = records.sort_values("config_hash", kind="stable")  # load_records reads files by name
    chosen = select(wide_runs(records), OmegaConf.create({"kind": "best", "by": "sc"}), "nmi")
    assert chosen["selected"] == "update_interval=3" and chosen["ours"] == 0.2


@pytest.mark.parametrize(
    ("values", "first"),
    [
        ([{"h": [2, 10]}, {"h": [2, 3]}], "h=[2, 3]"),  # lists element by element, not as text
        ([{"tol": float("nan")}, {"tol": 1.0}, {"tol": 0.5}], "tol=0.5"),  # NaN after the numbers
        # not the machine, nor named: where a fit ran is no choice of the grid
        ([{"u": 100, "device": "cpu", "n_threads": 1}, {"u": 1, "device": "cuda", "n_threads": 2}], "u=1"),
    ],
)
def test_of_tied_runs_the_first_by_value_is_chosen_in_any_input_order(values, first):
    for order in itertools.permutations(values):
        records = frame(*[run("zoo", "dec", 0, params, {"sc": 0.37}) for params in order])
        chosen = select(wide_runs(records), OmegaConf.create({"kind": "best", "by": "sc"}), "sc")
        assert chosen["selected"] == first


def test_best_mean_picks_the_grid_point_with_the_best_mean_over_seeds():
    # k-means++: mean SC 0.33 over seeds 0 and 1; random: 0.30 — k-means++ wins despite the best single run.
    chosen = select(wide_runs(GRID), OmegaConf.create({"kind": "best_mean", "by": "sc"}), "nmi")
    assert chosen["selected"] == "init=k-means++"
    assert chosen["ours"] == pytest.approx(0.8)
    assert chosen["ours_std"] == pytest.approx(0.1)


def test_best_of_does_not_pool_runs_of_other_settings_as_restarts():
    """Restarts are seeds of one setting: runs of two inits (a grid run into the table's folder)
    say so, as under mean_std, instead of a best-of-2 over eight runs of both."""
    runs = frame(
        *(
            run("zoo", "kmeans", seed, {"init": init}, {"inertia": inertia, "ari": ari})
            for seed in range(4)
            for init, inertia, ari in [("k-means++", 1.0 + seed, 0.9), ("random", 5.0 + seed, 0.1)]
        )
    )
    protocol = OmegaConf.create({"kind": "best_of", "restarts": 2, "by": "inertia", "mode": "min"})
    assert select(wide_runs(runs), protocol, "ari") == {
        "status": "mixed init: give the column params, or move the other runs"
    }
    one_setting = wide_runs(runs)[lambda r: r["params"].str.contains("k-means")]
    assert select(one_setting, protocol, "ari")["ours"] == pytest.approx(0.9)


def test_a_mean_over_fewer_runs_than_finished_with_a_value_is_marked():
    """A run that finished without a value of the cell's metric (SC of a one-cluster labeling) is
    left out of the mean, which is then of two seeds of three: marked † (n_ok 2 of n_runs 3), not
    shown as a mean over all three."""
    records = frame(
        run("zoo", "kmeans", 0, {}, {"sc": 0.30}),
        run("zoo", "kmeans", 1, {}, {"sc": 0.40}),
        run("zoo", "kmeans", 2, {}, {"sc": math.nan}),
    )
    table = spec(
        rows={"zoo": "Zoo"},
        columns={"kmeans": {"label": "k-means", "method": "kmeans"}},
        protocol={"kind": "mean_std"},
        gain=None,
        win_loss=[],
        paper=None,
    )
    (cell,) = compute_cells(table, wide_runs(records)).to_dict("records")
    assert (cell["ours"], cell["n_ok"], cell["n_runs"]) == (pytest.approx(0.35), 2, 3)
    assert (
        render(table, compute_cells(table, wide_runs(records)), latex=False).iloc[0]["k-means"].endswith("†")
    )


def test_best_mean_counts_the_seeds_of_the_grid_point_it_chose():
    """A grid point with one seed recorded (a sweep stopped) beats one with three by its mean: the
    cell's value is of one seed, so it says one (a table naming seeds [0, 1, 2] marks it §)."""
    params = [json.dumps({"a": 1, "random_state": seed}) for seed in (0, 1, 2)] + [json.dumps({"a": 2})]
    runs = pd.DataFrame({"params": params, "seed": [0, 1, 2, 0], "sc": [0.5, 0.5, 0.5, 0.9], "status": "ok"})
    chosen = select(runs, OmegaConf.create({"kind": "best_mean", "by": "sc"}), "sc")
    assert (chosen["selected"], chosen["ours"], chosen["n_seeds"]) == ("a=2", 0.9, 1)
    runs.loc[3, "sc"] = 0.1  # the point of three seeds chosen: three
    assert select(runs, OmegaConf.create({"kind": "best_mean", "by": "sc"}), "sc")["n_seeds"] == 3


def test_best_mean_counts_a_seed_of_its_grid_point_once_when_two_records_hold_it():
    """Seed 0 of a grid point recorded by two of the table's experiments (its other config hash:
    a dataset's config edited between them) is one seed of the point's two, not two of three.
    Guards the count of distinct seeds: the mutant ``len(chosen)`` said 3."""
    records = frame(
        run("zoo", "dec", 0, {"u": 1}, {"sc": 0.5}),
        run("zoo", "dec", 0, {"u": 1}, {"sc": 0.5}),
        run("zoo", "dec", 1, {"u": 1}, {"sc": 0.7}),
    )
    records.loc[records.index[1], ["experiment", "config_hash"]] = ["exp2", "edited"]
    chosen = select(wide_runs(records), OmegaConf.create({"kind": "best_mean", "by": "sc"}), "sc")
    assert (chosen["selected"], chosen["n_seeds"]) == ("", 2)


def test_best_mean_averages_a_points_seeds_wherever_they_ran():
    """A grid point's seeds fitted on CPU and on CUDA (or at two thread counts) are one point:
    its mean is over both (u=1: 0.5, so u=2's 0.6 wins), not one group per machine (u=1 on the
    CPU alone: 0.9)."""
    records = frame(
        run("zoo", "dec", 0, {"u": 1, "device": "cpu", "n_threads": 1}, {"sc": 0.9}),
        run("zoo", "dec", 1, {"u": 1, "device": "cuda", "n_threads": 2}, {"sc": 0.1}),
        run("zoo", "dec", 0, {"u": 2, "device": "cpu", "n_threads": 1}, {"sc": 0.6}),
        run("zoo", "dec", 1, {"u": 2, "device": "cpu", "n_threads": 2}, {"sc": 0.6}),
    )
    chosen = select(wide_runs(records), OmegaConf.create({"kind": "best_mean", "by": "sc"}), "sc")
    assert chosen["selected"] == "u=2" and chosen["ours"] == pytest.approx(0.6)
    assert chosen["ours_std"] == pytest.approx(0.0) and chosen["n_seeds"] == 2


def test_best_mean_gives_a_tie_to_the_smaller_value_not_the_earlier_text():
    # "100" sorts before "3" as text; update_interval 3 must win the tie, as protocol best does
    records = frame(
        *[
            run("zoo", "dec", seed, {"update_interval": interval}, {"sc": sc})
            for interval in (3, 100)
            for seed, sc in ((0, 0.5), (1, 0.7))
        ]
    )
    for kind in ("best_mean", "best"):
        chosen = select(wide_runs(records), OmegaConf.create({"kind": kind, "by": "sc"}), "sc")
        assert chosen["selected"] == "update_interval=3", kind


SEEDS_OF_ONE_SETTING = frame(
    *(
        run("zoo", "kmeans", seed, {"init": "k-means++"}, {"sc": sc})
        for seed, sc in enumerate([0.30, 0.40, 0.36, 0.20])
    )
)


def test_mean_std_and_mean_best():
    summary = select(wide_runs(SEEDS_OF_ONE_SETTING), OmegaConf.create({"kind": "mean_std"}), "sc")
    assert summary["ours"] == pytest.approx(0.315)
    assert summary["ours_std"] == pytest.approx(pd.Series([0.30, 0.40, 0.36, 0.20]).std(ddof=0))
    runs = wide_runs(GRID)
    both = select(runs, OmegaConf.create({"kind": "mean_best", "by": "sc"}), "nmi")
    assert both["ours"] == pytest.approx(0.55)
    assert both["ours_best"] == 0.5


def test_mean_std_does_not_average_runs_of_other_settings():
    """A run of another setting in the column's folder (a curve's point, an override) is not
    averaged in: the cell names the hyperparameters that differ. The place of a fit (device,
    threads) and its seed are not a setting."""
    extra = run("zoo", "kmeans", 0, {"init": "k-means++", "max_iter": 5}, {"sc": 0.9})
    mixed = select(wide_runs(frame(*[SEEDS_OF_ONE_SETTING.to_dict("records")], extra)), MEAN_STD, "sc")
    assert mixed == {"status": "mixed max_iter: give the column params, or move the other runs"}
    assert "ours" not in select(wide_runs(GRID), MEAN_STD, "sc")
    placed = [
        run("zoo", "kmeans", seed, {"init": "k-means++", "device": device, "n_threads": threads}, {"sc": sc})
        for seed, device, threads, sc in [(0, "cuda", 2, 0.2), (1, "cpu", 1, 0.4)]
    ]
    assert select(wide_runs(frame(*placed)), MEAN_STD, "sc")["ours"] == pytest.approx(0.3)


def test_a_hyperparameter_that_only_some_runs_name_makes_them_differ():
    """A run with an option the cell's first run (by value order) lacks (``tol`` added by an
    override, or an option added later) is another setting: mean_std says so, and best names the
    option of the run it chose. Guards names taken from every run's params: the mutant that read
    the names of the first run only averaged the three and named no grid point."""
    records = frame(
        run("zoo", "kmeans", 0, {"init": "random"}, {"sc": 0.3}),
        run("zoo", "kmeans", 1, {"init": "random"}, {"sc": 0.4}),
        run("zoo", "kmeans", 2, {"init": "random", "tol": 0.1}, {"sc": 0.9}),
    )
    runs = wide_runs(records)
    assert select(runs, MEAN_STD, "sc") == {
        "status": "mixed tol: give the column params, or move the other runs"
    }
    assert select(runs, OmegaConf.create({"kind": "best", "by": "sc"}), "sc")["selected"] == "tol=0.1"


MEAN_STD = OmegaConf.create({"kind": "mean_std"})

# Seven single restarts: (inertia, ARI); the protocol keeps the least inertia of 3 of them.
INERTIA_ARI = [(5.0, 0.2), (1.0, 1.0), (3.0, 0.6), (2.0, 0.9), (7.0, 0.1), (4.0, 0.4), (6.0, 0.3)]
RESTARTS = frame(
    *(
        run("zoo", "kmeans", seed, {"n_init": 1}, {"inertia": inertia, "ari": ari})
        for seed, (inertia, ari) in enumerate(INERTIA_ARI)
    )
)


def test_best_of_is_the_exact_distribution_over_every_subset_of_restarts():
    kept = [min(subset)[1] for subset in itertools.combinations(INERTIA_ARI, 3)]  # 35 subsets
    protocol = OmegaConf.create({"kind": "best_of", "restarts": 3, "by": "inertia", "mode": "min"})
    chosen = select(wide_runs(RESTARTS), protocol, "ari", paper=0.9)
    assert chosen["ours"] == pytest.approx(np.mean(kept))
    assert chosen["ours_std"] == pytest.approx(np.std(kept))
    assert chosen["reach"] == pytest.approx(np.mean(np.array(kept) >= 0.9))  # 25 of 35 subsets
    assert best_of_weights(300, 20).sum() == pytest.approx(1.0)
    lenient = select(wide_runs(RESTARTS), OmegaConf.merge(protocol, {"reach_within": 0.35}), "ari", paper=0.9)
    assert lenient["reach"] == pytest.approx(np.mean(np.array(kept) >= 0.55))
    # A metric where less is better reaches the paper from above: the kept inertia ≤ 2 (30 of 35).
    inertias = [min(subset)[0] for subset in itertools.combinations(INERTIA_ARI, 3)]
    least = select(wide_runs(RESTARTS), protocol, "inertia", paper=2.0, better="min")
    assert least["reach"] == pytest.approx(np.mean(np.array(inertias) <= 2.0))


def test_best_of_over_exactly_restarts_runs_keeps_the_best_of_them_all():
    """With as many runs as restarts, the one subset is all of them: the kept run is the best,
    without spread, and reaches the paper or not (0 or 1). Guards ``len(ranked) < restarts``: the
    mutant ``<=`` called the cell '7 runs, fewer than restarts=7'."""
    protocol = OmegaConf.create({"kind": "best_of", "restarts": 7, "by": "inertia", "mode": "min"})
    chosen = select(wide_runs(RESTARTS), protocol, "ari", paper=0.9)
    assert chosen == {"ours": 1.0, "ours_std": 0.0, "reach": 1.0, "n_seeds": 7}


def test_best_of_cells_say_when_there_are_too_few_runs_and_print_the_chance():
    from clusterbench.errors import UserError

    table = spec(
        metrics=["ari"],
        protocol={"kind": "best_of", "restarts": 3, "by": "inertia", "mode": "min"},
        columns={"kmeans": {"label": "k-means", "method": "kmeans"}},
        gain=None,
        win_loss=[],
        paper={"ari": {"zoo": {"kmeans": 1.0}}},
    )
    few = frame(*(run("ecoli", "kmeans", s, {}, {"inertia": 1.0 + s, "ari": 0.5}) for s in range(2)))
    cells = compute_cells(table, wide_runs(pd.concat([RESTARTS, few]))).set_index("dataset")
    assert cells.loc["zoo", "reach"] == pytest.approx(15 / 35)  # the best restart is in 15 of 35 subsets
    assert cells.loc["ecoli", "status"] == "2 runs, fewer than restarts=3"
    shown = render(table, cells.reset_index(), latex=False).set_index("Dataset")
    assert shown.loc["Zoo", "k-means (ours)"].endswith("[P 0.43]")
    with pytest.raises(UserError, match="restarts, an integer"):
        compute_cells(spec(protocol={"kind": "best_of", "by": "inertia"}), wide_runs(RESTARTS))


def test_unknown_protocol_is_a_user_error():
    from clusterbench.errors import UserError

    with pytest.raises(UserError, match="best, best_mean, mean_std, mean_best, best_of"):
        select(wide_runs(GRID), OmegaConf.create({"kind": "median"}), "sc")


def test_cells_put_ours_beside_the_paper_and_say_why_a_cell_is_empty():
    records = frame(
        run("zoo", "kmeans", 0, {}, {"sc": 0.3758}),
        run("zoo", "clam", 0, {}, {"sc": 0.4100}),
        run("ecoli", "clam", 0, {}, {}, status="failed"),
    )
    cells = compute_cells(spec(), wide_runs(records)).set_index(["dataset", "column"])
    assert cells.loc[("zoo", "kmeans"), "ours"] == 0.3758
    assert cells.loc[("zoo", "kmeans"), "paper"] == 0.374
    assert cells.loc[("zoo", "kmeans"), "delta"] == pytest.approx(0.0018)
    assert cells.loc[("ecoli", "kmeans"), "status"] == "missing"
    assert cells.loc[("ecoli", "clam"), "status"] == "failed"
    assert math.isnan(cells.loc[("ecoli", "clam"), "paper"])
    mixed = frame(
        run("zoo", "clam", 0, {}, {}, status="skipped"),
        run("zoo", "clam", 1, {}, {}, status="timeout"),
        run("zoo", "kmeans", 0, {}, {"sc": math.nan}),  # finished, with no value
    )
    cells = compute_cells(spec(), wide_runs(mixed)).set_index(["dataset", "column"])
    assert cells.loc[("zoo", "clam"), "status"] == "skipped/timeout"
    assert cells.loc[("zoo", "kmeans"), "status"] == "no value"


def test_a_table_without_paper_values_shows_ours_only_under_the_plain_labels():
    records = frame(run("zoo", "kmeans", 0, {}, {"sc": 0.3758}), run("zoo", "clam", 0, {}, {"sc": 0.4100}))
    table = spec(rows={"zoo": "Zoo"}, gain=None, win_loss=[])
    del table["paper"]
    shown = render(table, compute_cells(table, wide_runs(records)), latex=False)
    assert list(shown.columns) == ["Dataset", "k-means", "CLAM"]
    assert shown.iloc[0].tolist() == ["Zoo", "0.376", "**0.410**"]
    with_paper = render(
        spec(rows={"zoo": "Zoo"}), compute_cells(spec(rows={"zoo": "Zoo"}), wide_runs(records)), False
    )
    assert list(with_paper.columns)[1:3] == ["k-means (ours)", "k-means (paper)"]


def test_relative_gain_is_clams_formula():
    assert relative_gain(0.412, 0.374) == pytest.approx(10.16, abs=0.01)  # CLAM Table 1, Zoo: ▲10%
    assert relative_gain(0.331, 0.381) == pytest.approx(-13.12, abs=0.01)  # Ecoli, spectral: ▼13%
    assert math.isnan(relative_gain(0.4, math.nan))


def test_a_column_equal_to_the_reference_prints_no_loss():
    """Equal unrounded values (two methods that found one partition) are a gain of 0: ▲0%, while
    a loss under half a percent keeps its ▼0%. Guards ``gain >= 0``: the mutant ``> 0`` printed a
    tie as a loss, ▼0%."""
    table = spec(rows={"zoo": "Zoo"})
    for kmeans, printed in ((0.412, "**0.412** ▲0%"), (0.4128, "**0.413** ▼0%")):
        records = frame(run("zoo", "kmeans", 0, {}, {"sc": kmeans}), run("zoo", "clam", 0, {}, {"sc": 0.412}))
        shown = render(table, compute_cells(table, wide_runs(records)), latex=False).iloc[0]
        assert shown["k-means (ours)"] == printed


def test_win_loss_compares_printed_values_and_ignores_ties():
    cells = pd.DataFrame(
        [
            {"dataset": d, "metric": "sc", "column": c, "ours": v, "paper": v}
            for d, c, v in [
                ("zoo", "kmeans", 0.3741),
                ("zoo", "clam", 0.4120),  # win
                ("ecoli", "kmeans", 0.2620),
                ("ecoli", "clam", 0.2619),  # tie at 3 digits
                ("yale", "kmeans", 0.1200),
                ("yale", "clam", 0.1100),  # loss
            ]
        ]
    )
    rows = win_loss(spec(rows={"zoo": "Zoo", "ecoli": "Ecoli", "yale": "Yale"}), cells, "ours")
    assert rows[("clam", "sc")] == {"kmeans": "1/1"}


def test_paper_side_prints_the_papers_own_gains_and_win_loss_and_gain_columns_limit_the_arrows(tmp_path):
    records = frame(
        run("zoo", "kmeans", 0, {}, {"sc": 0.374}),
        run("zoo", "clam", 0, {}, {"sc": 0.412}),
        run("zoo", "clam_eq8", 0, {}, {"sc": 0.382}),
    )
    columns = {
        "kmeans": {"label": "k-means", "method": "kmeans"},
        "clam": {"label": "CLAM", "method": "clam"},
        "clam_eq8": {"label": "w/ (8)", "method": "clam_eq8"},
    }
    table = spec(
        rows={"zoo": "Zoo"},
        columns=columns,
        gain={"reference": "clam", "columns": ["kmeans"]},
        paper={"sc": {"zoo": {"kmeans": 0.374, "clam": 0.412, "clam_eq8": 0.382}}},
        paper_gain={"sc": {"zoo": {"kmeans": 9}}},  # not (0.412 - 0.374)/0.374 = 10%: printed as given
        paper_win_loss={"sc": {"clam": {"kmeans": "10/0", "clam_eq8": "7/3"}}},
    )
    lines = write_table(table, records, tmp_path, "smoke").markdown.splitlines()
    zoo = next(line for line in lines if line.startswith("| Zoo")).split("|")[2:-1]
    assert [cell.strip() for cell in zoo] == [
        "0.374 ▲10%",
        "0.374 ▲9%",
        "**0.412**",
        "**0.412**",
        "0.382",
        "0.382",
    ]
    wl = next(line for line in lines if line.startswith("| CLAM W/L")).split("|")[2:-1]
    assert [cell.strip() for cell in wl] == ["1/0", "10/0", "—", "—", "1/0", "7/3"]
    computed = write_table(spec(), records, tmp_path, "smoke").markdown.splitlines()  # no paper_gain
    zoo = next(line for line in computed if line.startswith("| Zoo")).split("|")[2:4]
    assert [cell.strip() for cell in zoo] == ["0.374 ▲10%", "0.374 ▲10%"]


def paper_lines(file: str) -> list[str]:
    """The lines of a paper's text (``../shared/papers/<file>``, or beside $CLUSTERBENCH_DATA); the
    test is skipped where the texts are absent."""
    beside = [REPO.parent / "shared" / "papers"]
    if os.environ.get("CLUSTERBENCH_DATA"):  # the datasets' folder of ../shared lies beside the papers
        beside.append(Path(os.environ["CLUSTERBENCH_DATA"]).parent / "papers")
    text_path = next((folder / file for folder in beside if (folder / file).exists()), None)
    if text_path is None:
        pytest.skip("the papers' texts are not beside the repository or the data folder")
    return text_path.read_text().splitlines()


def test_committed_clam_table1_paper_side_is_the_papers_table_1():
    """Every value, gain and W/L cell of the spec's paper side against Table 1 in the paper's text."""
    lines = paper_lines("clam.txt")
    start = next(i for i, line in enumerate(lines) if line.startswith("Dataset\tk -means\tSpectral"))
    table = OmegaConf.load(REPO / "conf" / "table" / "clam_table1.yaml")
    names = {label: key for key, label in table.rows.items()}
    order = list(table.columns)
    for line in lines[start + 1 : start + 11]:
        name, *cells = line.split("\t")
        dataset = names[name]
        for column, cell in zip(order, cells, strict=True):
            value = re.match(r"[\d.]+", cell)
            assert table.paper.sc[dataset][column] == (float(value.group()) if value else None), (
                dataset,
                column,
            )
            arrow = re.search(r"\\blacktriangle(down)?\^\{(\d+)\\%\}", cell)
            printed = (-1 if arrow.group(1) else 1) * int(arrow.group(2)) if arrow else None
            assert table.paper_gain.sc[dataset].get(column) == printed, (dataset, column)
    for line, reference in zip(lines[start + 11 : start + 13], ["clam", "clam_eq8"], strict=True):
        printed = dict(zip(order, line.split("\t")[1:], strict=True))
        assert dict(table.paper_win_loss.sc[reference]) == {c: v for c, v in printed.items() if v != "—"}


MISSING = "not given"


def printed_number(cell: str) -> float | None:
    """One cell of a paper's table as a number: markup (<u>, <i>) and thousands' commas dropped,
    None for the paper's N/A or —."""
    text = re.sub(r"<[^>]+>", "", cell).replace(",", "").strip()
    if text in ("N/A", "—"):
        return None
    assert re.fullmatch(r"-?\d+(\.\d+)?", text), f"not a printed number: {cell!r}"
    return float(text)


def printed_label(label: str) -> str:
    """A row or column label with markup and spaces dropped, and CLAM for the CLAM paper's C1AM."""
    return re.sub(r"<[^>]+>|\s", "", label).replace("C1AM", "CLAM")


def keys_by_label(items) -> dict[str, str]:
    """A spec's rows (key: label) or columns (key: {label: ...}) by their printed label."""
    return {printed_label(item if isinstance(item, str) else item.label): key for key, item in items.items()}


def put(printed: dict, metric: str, dataset: str, column: str, value) -> None:
    """Set ``printed[metric][dataset][column]``."""
    printed.setdefault(metric, {}).setdefault(dataset, {})[column] = value


def paper_side_differences(table, printed: dict) -> list[tuple]:
    """(dataset, column, metric, spec's value, paper's value) of each cell where the spec's paper side
    and the values printed in the paper (metric -> dataset -> column -> value) differ, a cell that
    one side lacks included. Within the spec's metrics, rows and columns; a column with
    ``paper_column`` against that column's printed values."""
    given = {
        (dataset, column, metric): value
        for metric, by_dataset in OmegaConf.to_container(table.get("paper") or {}).items()
        for dataset, by_column in by_dataset.items()
        for column, value in by_column.items()
    }
    expected = {}
    for metric, dataset, (column, column_spec) in itertools.product(
        table.metrics, table.rows, table.columns.items()
    ):
        source = column_spec.get("paper_column", column)
        if source in printed.get(metric, {}).get(dataset, {}):
            expected[(dataset, column, metric)] = printed[metric][dataset][source]
    assert expected, "nothing parsed from the paper's text"
    return [
        (*key, given.get(key, MISSING), expected.get(key, MISSING))
        for key in sorted(given.keys() | expected.keys())
        if given.get(key, MISSING) != expected.get(key, MISSING)
    ]


def printed_grid(lines: list[str], header: str, n_lines: int, table, by_metric: bool) -> dict:
    """A table of the CLAM paper whose rows are data sets (a row of each metric where ``by_metric``:
    its second cell names the metric, its first is empty after the first) and whose columns are
    the spec's columns, as metric -> dataset -> column -> value."""
    start = lines.index(header)
    rows = keys_by_label(table.rows)
    rows[printed_label("Mice Protien Exp")] = "mice_protein_clam"  # Tables 8 and 9 misspell it
    by_label = keys_by_label(table.columns)
    columns = [by_label[printed_label(label)] for label in header.split("\t")[1 + by_metric :]]
    printed, dataset = {}, None
    for line in lines[start + 1 : start + 1 + n_lines]:
        name, *cells = line.split("\t")
        dataset = rows[printed_label(name)] if name else dataset
        metric = cells.pop(0).lower() if by_metric else table.metrics[0]
        values = dict(zip(columns, map(printed_number, cells), strict=True))
        printed.setdefault(metric, {})[dataset] = values
    return printed


@pytest.mark.parametrize(
    "name, header, n_lines",
    [
        ("clam_table2", "Data\tk -m\tSpec\tAggl\tDC\tD\tD ^r\tC1AM", 10),
        ("clam_table8", "Dataset\tMetric\tk -means\tSpectral\tAgglomerative", 20),
        (
            "clam_table9",
            "Dataset\tMetric\t<i>k</i> -means\tSpectral\tAgglomerative\tDCEC\tDEC\tDEC ^r\tCLAM",
            20,
        ),
    ],
)
def test_committed_clam_tables_2_8_9_paper_sides_are_the_papers_tables(name, header, n_lines):
    """Every paper value of the spec (N/A as null) against its table in the paper's text."""
    lines = paper_lines("clam.txt")
    table = table_spec(name)
    printed = printed_grid(lines, header, n_lines, table, by_metric="\tMetric\t" in header)
    assert paper_side_differences(table, printed) == []


def test_committed_clam_table3_paper_side_is_the_papers_table_3():
    """Every SC and time of the spec against Table 3 in the paper's text (SC, then time, each for
    k-means and CLAM)."""
    lines = paper_lines("clam.txt")
    start = lines.index("Dataset\tSilhouette Coefficient (SC)\t\tTime in second\t")
    table = table_spec("clam_table3")
    rows, by_label = keys_by_label(table.rows), keys_by_label(table.columns)
    columns = [by_label[printed_label(label)] for label in lines[start + 1].split("\t")[1:]]
    metrics = ["sc", "sc", "fit_seconds", "fit_seconds"]
    printed = {}
    for line in lines[start + 2 : start + 8]:
        name, *cells = line.split("\t")
        for metric, column, cell in zip(metrics, columns, cells, strict=True):
            put(printed, metric, rows[printed_label(name)], column, printed_number(cell))
    assert paper_side_differences(table, printed) == []


def test_committed_clam_table10_paper_side_is_the_papers_table_10_and_its_text():
    """The SC cells against Table 10 (methods as rows, the clean and noisy data as columns), and
    CLAM's NMI and ARI on the noisy data against Appendix B.8's sentence that gives them."""
    lines = paper_lines("clam.txt")
    start = lines.index("Method\tSC (clean data)\tSC (noisy data)")
    table = table_spec("clam_table10")
    columns = keys_by_label(table.columns)
    datasets = ["clam_elongated", "clam_outliers"]  # SC (clean data), SC (noisy data)
    printed = {}
    for line in lines[start + 1 : start + 3]:
        name, *cells = line.split("\t")
        for dataset, cell in zip(datasets, cells, strict=True):
            put(printed, "sc", dataset, columns[printed_label(name)], printed_number(cell))
    sentence = [m for line in lines for m in re.findall(r"with NMI and ARI both equal to (\d\.\d+)", line)]
    assert len(sentence) == 1
    for metric in ["nmi", "ari"]:
        put(printed, metric, "clam_outliers", "clam", float(sentence[0]))
    assert paper_side_differences(table, printed) == []


def test_committed_kcprime_table_s1_paper_side_is_the_papers_table_s1():
    """Every [mean, best] pair of the spec against Table S1 in the paper's text; DBSCAN's — cells
    (no centres, no ℒ or φ) are left out of the spec and of the comparison."""
    lines = paper_lines("kmeans_cprime.txt")
    start = next(i for i, line in enumerate(lines) if line.startswith("Algorithm\tBIRCH 5×5 (grid)"))
    datasets = {"BIRCH 5×5 (grid)": "birch_grid", "BIRCH ($25 \\times$ random positions)": "birch_random"}
    metrics = {"\\mathcal{L}": "log_likelihood", "ϕ": "quantization_error", "purity": "purity", "NMI": "nmi"}
    methods = {"k -means": "kmeans", "k -means- C'": "kcprime", "lazy- k -means": "lazy", "DBSCAN": "dbscan"}
    where = []  # (dataset, metric, 0 for the mean or 1 for the best) of each value column
    dataset = metric = None
    for top, middle, bottom in zip(*(lines[start + i].split("\t")[1:] for i in range(3)), strict=True):
        dataset, metric = datasets.get(top, dataset), metrics.get(middle, metric)
        where.append((dataset, metric, ["mean", "best"].index(bottom.rstrip("*"))))
    printed = {}
    for line in lines[start + 3 : start + 7]:
        name, *cells = line.split("\t")
        for (dataset, metric, index), cell in zip(where, cells, strict=True):
            if (value := printed_number(cell)) is not None:
                pair = printed.get(metric, {}).get(dataset, {}).get(methods[name], [None, None])
                pair[index] = value
                put(printed, metric, dataset, methods[name], pair)
    assert paper_side_differences(table_spec("kcprime_tableS1"), printed) == []


# The Khatri-Rao paper's text is OCR: its Table 2's row names as they read there.
KR_TABLE2_ROWS = {
    "MNIST": "mnist",
    "DousLe MNIST": "double_mnist",
    "HAR": "har",
    "OLvETTI FACES": "olivetti",
    "CMU Faces": "cmu_faces",
    "SYMBOLS": "symbols",
    "STICKFIGURES": "stickfigures",
    "OPTDIGITS": "optdigits",
    "CLASSIFICATION": "classification",
    "CHAMELEON": "chameleon",
    "SOYBEAN LARGE": "soybean_large",
    "BLoBs": "blobs",
    "R15": "r15",
}


@pytest.mark.parametrize("name", ["kr_table2", "kr_table2_seeds", "kr_restart_odds"])
def test_committed_khatri_rao_paper_sides_are_the_papers_table_2(name):
    """Every paper value of the spec, as the harness reads it (what it extends or borrows from
    kr_table2 merged in, a paper_column's values copied), against Table 2 in the paper's text."""
    lines = paper_lines("khatri_rao.txt")
    caption = next(i for i, line in enumerate(lines) if line.startswith("Table 2: Experiments on synthetic"))
    header = next(i for i in range(caption, len(lines)) if lines[i].split()[1:2] == ["ARI"])
    # "Dataset ‘ KHATRI-RAO-k-MEANS-+ (h; + hy)  KHATRI-RAO-k-MEANSs-X (hy + hy) k-MEeaNs (b1 + hy) ...":
    # the sum, the product, k-means (h1 + h2) and k-means (h1·h2), four metrics each, then Params.
    assert re.search(r"MEANS-\+.*MEANSs?-X.*\(b1 \+ hy\).*\(h1hy\) Params$", lines[header - 1])
    assert lines[header].split()[1:] == ["ARI", "ACC", "NMI", "Inertia"] * 4
    groups = ["kr_sum", "kr_product", "kmeans_budget", "kmeans"]
    cells = list(itertools.product(groups, ["ari", "acc", "nmi", "inertia"]))
    printed = {}
    for line in lines[header + 1 : header + 14]:
        tokens = [token for token in line.split() if token != "|"]
        first = next(i for i, token in enumerate(tokens) if re.fullmatch(r"\d+\.\d+", token))
        dataset, numbers = KR_TABLE2_ROWS[" ".join(tokens[:first])], list(map(float, tokens[first:]))
        assert len(numbers) == 17, line
        for (column, metric), value in zip(cells, numbers[:16], strict=True):
            put(printed, metric, dataset, column, value)
        # Params applies to the three h1 + h2 columns; k-means (h1·h2) against itself is 1 by definition.
        for column in groups:
            put(printed, "n_params", dataset, column, 1.0 if column == "kmeans" else numbers[16])
    assert len(printed["ari"]) == len(KR_TABLE2_ROWS)
    assert paper_side_differences(table_spec(name), printed) == []


def test_two_method_configs_with_one_config_hash_stay_two_runs():
    # The hash leaves out the method's name: a copy of a method config under a new name shares it.
    records = frame(run("zoo", "kmeans", 0, {}, {"sc": 0.30}), run("zoo", "clam", 0, {}, {"sc": 0.41}))
    records["config_hash"] = "same"
    cells = compute_cells(spec(), wide_runs(records)).set_index(["dataset", "column"])
    assert cells.loc[("zoo", "kmeans"), "ours"] == 0.30 and cells.loc[("zoo", "clam"), "ours"] == 0.41


def test_bold_and_win_loss_compare_the_values_as_printed():
    # 0.2875 prints 0.287 (its binary value is 0.28749...), numpy rounds it to 0.288: as printed it
    # loses to 0.2876 (0.288), so it is neither bold nor a tie
    records = frame(run("zoo", "kmeans", 0, {}, {"sc": 0.2876}), run("zoo", "clam", 0, {}, {"sc": 0.2875}))
    table = spec(win_loss=["clam"], rows={"zoo": "Zoo"})
    cells = compute_cells(table, wide_runs(records))
    assert win_loss(table, cells, "ours")[("clam", "sc")] == {"kmeans": "0/1"}
    shown = render(table, cells, latex=False).iloc[0]
    assert shown["k-means (ours)"].startswith("**0.288**") and shown["CLAM (ours)"] == "0.287"


def test_win_loss_counts_less_as_a_win_for_a_metric_where_less_is_better():
    cells = pd.DataFrame(
        [
            {"dataset": d, "metric": "inertia", "column": c, "ours": v, "paper": v}
            for d, c, v in [
                ("zoo", "kmeans", 10.0),
                ("zoo", "clam", 5.0),
                ("ecoli", "kmeans", 8.0),
                ("ecoli", "clam", 9.0),
            ]
        ]
    )
    table = spec(metrics=["inertia"], better={"inertia": "min"})
    assert win_loss(table, cells, "ours")[("clam", "inertia")] == {"kmeans": "1/1"}
    cells.loc[cells["column"] == "clam", "ours"] = [4.0, 7.0]
    assert win_loss(table, cells, "ours")[("clam", "inertia")] == {"kmeans": "2/0"}


def test_written_table_has_gains_bold_best_and_a_cell_csv(tmp_path):
    records = frame(run("zoo", "kmeans", 0, {}, {"sc": 0.374}), run("zoo", "clam", 0, {}, {"sc": 0.412}))
    outputs = write_table(spec(), records, tmp_path, "smoke")
    assert [p.name for p in outputs.paths] == ["toy.md", "toy.tex", "toy.csv"]
    markdown = (tmp_path / "toy.md").read_text()
    zoo = next(line for line in markdown.splitlines() if line.startswith("| Zoo"))
    assert "0.374 ▲10%" in zoo and "**0.412**" in zoo
    assert "$\\blacktriangle$10\\%" in (tmp_path / "toy.tex").read_text()
    table = pd.read_csv(tmp_path / "toy.csv")
    assert {"ours", "paper", "delta"} <= set(table.columns)
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_cell_chosen_without_some_of_its_runs_is_marked_and_counted(tmp_path):
    records = frame(
        run("zoo", "kmeans", 0, {}, {"sc": 0.30}),
        run("zoo", "kmeans", 1, {}, {"sc": 0.40}),
        run("zoo", "kmeans", 2, {}, {}, status="timeout"),
        run("zoo", "clam", 0, {}, {"sc": 0.41}),
    )
    outputs = write_table(spec(protocol={"kind": "mean_std"}), records, tmp_path, "smoke")
    cells = outputs.cells.set_index(["dataset", "column"])
    assert cells.loc[("zoo", "kmeans"), ["n_runs", "n_ok"]].tolist() == [3, 2]
    zoo = next(line for line in outputs.markdown.splitlines() if line.startswith("| Zoo"))
    assert "0.350 ± 0.050† ▲17%" in zoo and "**0.410**" in zoo  # clam: one full run, no mark
    assert "0.410 ±" not in zoo  # one run has no spread to show
    assert f"{PARTIAL_MARK}: chosen from the runs that finished" in outputs.markdown
    latex = (tmp_path / "toy.tex").read_text()
    assert (
        "$^\\dagger$" in latex and "\\caption{Toy. $^\\dagger$: chosen from the runs that finished" in latex
    )
    assert "n\\_ok of n\\_runs" in latex  # escaped for LaTeX


def test_a_cell_from_fewer_of_the_tables_seeds_is_marked_and_counted(tmp_path):
    """A table of seeds 0 and 1 where one column ran seed 0 only: its cell is one run's value, not
    a mean over the two, and says so; a failed seed counts as missing (and is † too)."""
    records = frame(
        run("zoo", "kmeans", 0, {}, {"sc": 0.30}),
        run("zoo", "kmeans", 1, {}, {"sc": 0.40}),
        run("zoo", "kmeans", 2, {}, {"sc": 0.90}),  # not one of the table's seeds
        run("zoo", "clam", 0, {}, {"sc": 0.41}),
        run("zoo", "clam", 1, {}, {}, status="failed"),
    )
    outputs = write_table(spec(protocol={"kind": "mean_std"}, seeds=[0, 1]), records, tmp_path, "smoke")
    cells = outputs.cells.set_index(["dataset", "column"])
    assert cells.loc[("zoo", "kmeans"), "n_seeds"] == 2 and cells.loc[("zoo", "clam"), "n_seeds"] == 1
    zoo = next(line for line in outputs.markdown.splitlines() if line.startswith("| Zoo")).split("|")[2:-1]
    assert [cell.strip() for cell in zoo][::2] == ["0.350 ± 0.050 ▲17%", "**0.410**†§"]
    assert f"{SEEDS_MARK}: from fewer seeds than its table (or column) names" in outputs.markdown
    latex = (tmp_path / "toy.tex").read_text()
    assert "$^\\S$" in latex and "n\\_seeds of n\\_seeds\\_named" in latex
    assert cells.loc[("zoo", "clam"), "n_seeds_named"] == 2
    # a finished run without a value of the metric is no candidate: its seed is not in the mean,
    # and the cell is chosen without it (†)
    valueless = records[~((records["method"] == "clam") & (records["seed"] == 1))]
    valueless = pd.concat([valueless, frame(run("zoo", "clam", 1, {}, {"n_found": 7}))])
    again = write_table(spec(protocol={"kind": "mean_std"}, seeds=[0, 1]), valueless, tmp_path, "v")
    assert again.cells.set_index(["dataset", "column"]).loc[("zoo", "clam"), "n_seeds"] == 1
    assert "**0.410**†§" in again.markdown
    # the same runs in a table that names no seeds, or only seed 0: no mark
    for table in (spec(protocol={"kind": "mean_std"}), spec(protocol={"kind": "mean_std"}, seeds=[0])):
        assert SEEDS_MARK not in write_table(table, records, tmp_path, "x").markdown


def test_a_column_that_names_its_own_seeds_reads_and_counts_those(tmp_path):
    """A method that ignores the seed runs at one seed (``method_seeds``): its column names
    ``seeds: [0]``, so in a table of seeds 0 and 1 its cell is that seed's run, unmarked; a run
    at another seed is not read."""
    records = frame(
        run("zoo", "kmeans", 0, {}, {"sc": 0.30}),
        run("zoo", "kmeans", 1, {}, {"sc": 0.40}),
        run("zoo", "kmeans", 2, {}, {"sc": 0.90}),  # not the table's seed: the other column still filters
        run("zoo", "clam", 0, {}, {"sc": 0.41}),
        run("zoo", "clam", 1, {}, {"sc": 0.90}),  # not the column's seed
    )
    table = spec(protocol={"kind": "mean_std"}, seeds=[0, 1])
    table.columns.clam.seeds = [0]
    outputs = write_table(table, records, tmp_path, "smoke")
    cells = outputs.cells.set_index(["dataset", "column"])
    assert cells.loc[("zoo", "clam"), ["ours", "n_seeds", "n_seeds_named"]].tolist() == [0.41, 1, 1]
    assert cells.loc[("zoo", "kmeans"), ["ours", "n_seeds", "n_seeds_named"]].tolist() == [0.35, 2, 2]
    assert SEEDS_MARK not in outputs.markdown
    table.columns.clam.seeds = [0, 2]  # a seed the column names and has no run of: marked
    again = write_table(table, records, tmp_path, "again")
    assert again.cells.set_index(["dataset", "column"]).loc[("zoo", "clam"), "n_seeds_named"] == 2
    assert "**0.410**§" in again.markdown
    table.columns.clam.seeds = None  # null keeps the table's seeds (an extending table drops its base's)
    inherited = write_table(table, records, tmp_path, "null").cells.set_index(["dataset", "column"])
    assert inherited.loc[("zoo", "clam"), ["ours", "n_seeds_named"]].tolist() == [pytest.approx(0.655), 2]
    # the agreement protocol's reference column is read through the same function, its own seeds first
    reference = OmegaConf.create({"method": "kmeans", "seeds": [2]})
    runs, named = _column_runs(wide_runs(records), "zoo", reference, [0, 1])
    assert runs["seed"].astype(int).tolist() == [2] and named == 1


def test_a_cell_whose_selected_labeling_found_fewer_clusters_is_marked_and_counted(tmp_path):
    records = frame(
        run("zoo", "kmeans", 0, {"n_clusters": 7}, {"sc": 0.37, "n_found": 7}),
        run("zoo", "clam", 0, {"n_clusters": 7, "beta": 1}, {"sc": 0.41, "n_found": 5}),
        run("zoo", "clam", 0, {"n_clusters": 7, "beta": 2}, {"sc": 0.40, "n_found": 7}),
    )
    outputs = write_table(spec(), records, tmp_path, "smoke")
    cells = outputs.cells.set_index(["dataset", "column"])
    assert cells.loc[("zoo", "clam"), ["n_found", "n_clusters"]].tolist() == [5, 7]  # the best-SC run's
    assert cells.loc[("zoo", "kmeans"), ["n_found", "n_clusters"]].tolist() == [7, 7]
    zoo = next(line for line in outputs.markdown.splitlines() if line.startswith("| Zoo")).split("|")[2:-1]
    assert [cell.strip() for cell in zoo][::2] == ["0.370 ▲11%", "**0.410**‡"]
    assert f"{FEWER_MARK}: the selected run's labeling has fewer clusters than asked" in outputs.markdown
    assert "$^\\ddagger$" in (tmp_path / "toy.tex").read_text()
    without_five = records[~records["params"].str.contains('"beta": 1,')]
    plain = write_table(spec(), without_five, tmp_path, "x")
    assert FEWER_MARK not in plain.markdown


def test_clam_table1_from_real_records(tmp_path):
    """Records written by the runner flow into the committed spec's cells (k-means on zoo)."""
    scores = {"sc": 0.3735, "nmi": 0.8331, "n_found": 7}
    records = frame(run("zoo", "kmeans", 0, {"init": "k-means++", "n_clusters": 7}, scores))
    records["experiment"] = "clam_baselines"
    path = tmp_path / "runs" / "smoke" / "clam_baselines" / "zoo" / "kmeans" / "x.csv"
    write_record(path, records.to_dict("records"))
    outputs = build_table("clam_table1", tmp_path, "smoke")
    cell = outputs.cells.set_index(["dataset", "column"]).loc[("zoo", "kmeans")]
    assert cell["ours"] == 0.3735 and cell["paper"] == 0.374
    assert (tmp_path / "tables" / "smoke" / "clam_table1.md").exists()


@pytest.mark.parametrize("dataset", ["zoo", "ecoli", "segment", "ctg"])
def test_committed_paper_records_reproduce_clam_table1_kmeans(dataset, tmp_path):
    """Issue 2's bar: under profile=paper our k-means SC is within 0.01 of CLAM Table 1."""
    if load_records(REPO / "results", "paper", ["clam_baselines"]).empty:
        pytest.skip("no committed paper records")
    records = load_records(REPO / "results", "paper", ["clam_baselines"])
    table = OmegaConf.load(REPO / "conf" / "table" / "clam_table1.yaml")
    table.name = "clam_table1"
    cells = write_table(table, records, tmp_path, "paper").cells.set_index(["dataset", "column"])
    assert abs(cells.loc[(dataset, "kmeans"), "delta"]) <= 0.01


COMMITTED_TABLES = sorted(path.stem for path in (REPO / "results" / "tables" / "paper").glob("*.csv"))


@pytest.mark.parametrize("name", COMMITTED_TABLES)
def test_a_committed_paper_table_is_what_its_committed_records_build(name, tmp_path):
    """results/tables/paper/<name>.{md,csv} are the table its spec builds from the committed
    records today: a record, a spec note or the tables code changed without `clusterbench table`
    leaves a stale table, which fails here."""
    spec = table_spec(name)
    records = load_records(REPO / "results", "paper", list(spec.experiments))
    write_table(spec, records, tmp_path, "paper", REPO / "results")
    for suffix in (".md", ".tex", ".csv"):
        committed = (REPO / "results" / "tables" / "paper" / name).with_suffix(suffix)
        fresh = (tmp_path / committed.name).read_text(encoding="utf-8")
        assert fresh == committed.read_text(encoding="utf-8"), (
            f"{committed.name} is stale: clusterbench table {name}"
        )


def test_require_all_clusters_drops_labelings_that_merged_clusters():
    """Spectral on Ecoli: a 2-cluster labeling has the best SC (0.836) but CLAM reports 0.381."""
    records = frame(
        run("ecoli", "spectral", 0, {"gamma": 2, "n_clusters": 8}, {"sc": 0.836, "n_found": 2}),
        run("ecoli", "spectral", 0, {"gamma": 0.1, "n_clusters": 8}, {"sc": 0.381, "n_found": 8}),
    )
    protocol = OmegaConf.create({"kind": "best", "by": "sc"})
    assert select(wide_runs(records), protocol, "sc")["ours"] == 0.836
    protocol.require_all_clusters = True
    chosen = select(wide_runs(records), protocol, "sc")
    assert chosen["ours"] == 0.381 and chosen["selected"] == "gamma=0.1"


def test_ratio_to_divides_by_the_reference_column_and_unavailable_rows_say_so():
    records = frame(
        run("zoo", "kr", 0, {}, {"inertia": 12.0, "n_params": 60.0}),
        run("zoo", "kr", 1, {}, {"inertia": 14.0, "n_params": 60.0}),
        run("zoo", "kmeans", 0, {}, {"inertia": 10.0, "n_params": 90.0}),
        run("zoo", "kmeans", 1, {}, {"inertia": 10.0, "n_params": 90.0}),
    )
    table = spec(
        metrics=["inertia", "n_params"],
        protocol={"kind": "mean_std"},
        columns={"kr": {"label": "KR", "method": "kr"}, "kmeans": {"label": "k-means", "method": "kmeans"}},
        ratio_to={"inertia": "kmeans", "n_params": "kmeans"},
        unavailable={"ecoli": "not in the data folder"},
        paper={"inertia": {"zoo": {"kr": 1.2, "kmeans": 1.0}}},
        gain=None,
        win_loss=[],
    )
    cells = compute_cells(table, wide_runs(records)).set_index(["dataset", "metric", "column"]).sort_index()
    assert cells.loc[("zoo", "inertia", "kr"), "ours"] == pytest.approx(1.3)  # mean 13 / 10
    assert cells.loc[("zoo", "inertia", "kr"), "ours_std"] == pytest.approx(0.1)
    assert cells.loc[("zoo", "inertia", "kr"), "delta"] == pytest.approx(0.1)
    assert cells.loc[("zoo", "inertia", "kmeans"), "ours"] == 1.0
    assert cells.loc[("zoo", "n_params", "kr"), "ours"] == pytest.approx(2 / 3)
    assert (cells.loc["ecoli", "status"] == "not available").all()
    # a ratio whose reference run is missing says so rather than showing a number or "ok"
    lone = compute_cells(
        table, wide_runs(frame(run("zoo", "kr", 0, {}, {"inertia": 12.0, "n_params": 60.0})))
    )
    lone = lone.set_index(["dataset", "metric", "column"]).sort_index()
    assert math.isnan(lone.loc[("zoo", "inertia", "kr"), "ours"])
    assert lone.loc[("zoo", "inertia", "kr"), "status"] == "no kmeans value"
    assert (cells.loc["ecoli", "selected_params"] == "not in the data folder").all()
    # mean_best: the best run's ratio (12 / 10) and its delta to the paper's best are ratios too
    best_table = OmegaConf.merge(
        table,
        {"protocol": {"kind": "mean_best", "by": "inertia", "mode": "min"}},
        {"paper": {"inertia": {"zoo": {"kr": [1.3, 1.1]}}}},
    )
    both = compute_cells(best_table, wide_runs(records)).set_index(["dataset", "metric", "column"])
    assert both.loc[("zoo", "inertia", "kr"), "ours_best"] == pytest.approx(1.2)
    assert both.loc[("zoo", "inertia", "kr"), "delta_best"] == pytest.approx(0.1)


def test_seeds_restricts_a_table_to_those_runs():
    table = spec(protocol={"kind": "mean_std"}, seeds=[1, 3])
    cells = compute_cells(table, wide_runs(SEEDS_OF_ONE_SETTING)).set_index(["dataset", "column"])
    assert cells.loc[("zoo", "kmeans"), "ours"] == pytest.approx(0.3)  # seeds 1 and 3: 0.40 and 0.20


def test_a_table_that_extends_another_changes_only_its_own_keys():
    from clusterbench.tables import table_spec

    base, seeds = table_spec("kr_table2"), table_spec("kr_table2_seeds")
    assert seeds.name == "kr_table2_seeds" and base.name == "kr_table2"
    assert list(seeds.seeds) == [0, 1, 2, 3, 4] and list(base.seeds) == [42]
    assert seeds.protocol.kind == "mean_std" and base.protocol.kind == "best"
    assert seeds.paper == base.paper and seeds.columns == base.columns


def test_paper_from_borrows_another_tables_values_for_its_own_cells_only():
    from clusterbench.tables import table_spec

    odds, table2 = table_spec("kr_restart_odds"), table_spec("kr_table2")
    assert odds.paper_from == "kr_table2" and set(odds.paper) == {"ari", "acc", "nmi"}
    for metric, by_dataset in odds.paper.items():
        assert set(by_dataset) == set(odds.rows)  # no MNIST, no HAR: rows of kr_table2 only
        for dataset, by_column in by_dataset.items():
            assert set(by_column) == set(odds.columns)  # no k-means (h1+h2) column
            for column, value in by_column.items():
                source = odds.columns[column].get("paper_column", column)  # a variant: its method's cell
                assert value == table2.paper[metric][dataset][source]
    assert odds.paper.ari.r15.kr_product == 0.919
    assert odds.paper.ari.stickfigures.kr_sum_centred == odds.paper.ari.stickfigures.kr_sum == 1.0


def test_a_tables_own_paper_values_stand_over_the_borrowed_ones(monkeypatch):
    import clusterbench.tables.spec as tables

    specs = {
        "source": {
            "metrics": ["sc"],
            "rows": {"zoo": "Zoo", "ecoli": "Ecoli"},
            "columns": {"kmeans": {"method": "kmeans"}, "clam": {"method": "clam"}},
            "paper": {"sc": {"zoo": {"kmeans": 0.3, "clam": 0.4}, "ecoli": {"kmeans": 0.2}}},
        },
        "reader": {
            "metrics": ["sc"],
            "rows": {"zoo": "Zoo"},
            "columns": {"kmeans": {"method": "kmeans"}},
            "paper_from": "source",
            "paper": {"sc": {"zoo": {"kmeans": 0.35}}},
        },
    }
    monkeypatch.setattr(tables, "load_option", lambda group, name: OmegaConf.create(specs[name]))
    assert OmegaConf.to_container(tables.table_spec("reader").paper) == {"sc": {"zoo": {"kmeans": 0.35}}}


def test_a_paper_column_fills_only_the_cells_a_spec_leaves_empty(monkeypatch):
    import clusterbench.tables.spec as tables

    columns = {"kmeans": {"method": "kmeans"}, "clam": {"method": "clam"}}
    specs = {
        "base": {
            "metrics": ["sc"],
            "rows": {"zoo": "Zoo", "ecoli": "Ecoli", "yale": "Yale"},
            "columns": {**columns, "variant": {"method": "clam", "paper_column": "clam"}},
            "paper": {"sc": {"zoo": {"clam": 0.4}, "ecoli": {"clam": 0.3, "variant": 0.9}, "yale": None}},
        },
        "off": {"extends": "base", "columns": {"variant": {"paper_column": None}}},
    }
    monkeypatch.setattr(tables, "load_option", lambda group, name: OmegaConf.create(specs[name]))
    paper = OmegaConf.to_container(tables.table_spec("base").paper)
    assert paper == {
        "sc": {"zoo": {"clam": 0.4, "variant": 0.4}, "ecoli": {"clam": 0.3, "variant": 0.9}, "yale": None}
    }
    off = OmegaConf.to_container(tables.table_spec("off").paper)  # an extending table turns it off
    assert off["sc"]["zoo"] == {"clam": 0.4}


def test_mean_best_ranks_by_a_sum_of_metrics_and_per_metric_modes():
    # k-means-C′ Table S1: φ's best is its least value; purity and NMI come from the run with
    # the highest purity + NMI, which need not hold the best NMI.
    records = frame(
        run("zoo", "kmeans", 0, {}, {"phi": 5.0, "purity": 0.90, "nmi": 0.95}),
        run("zoo", "kmeans", 1, {}, {"phi": 3.0, "purity": 0.99, "nmi": 0.90}),
        run("zoo", "kmeans", 2, {}, {"phi": 4.0, "purity": 0.80, "nmi": 0.96}),
    )
    protocol = OmegaConf.create(
        {
            "kind": "mean_best",
            "by": {"purity": ["purity", "nmi"], "nmi": ["purity", "nmi"]},
            "mode": {"phi": "min"},
        }
    )
    runs = wide_runs(records)
    assert select(runs, protocol, "phi")["ours_best"] == 3.0
    assert select(runs, protocol, "nmi")["ours_best"] == 0.90  # the run with purity + NMI 1.89
    chosen = select(runs, protocol, "purity")
    assert chosen["ours"] == pytest.approx(2.69 / 3) and chosen["ours_best"] == 0.99


def test_column_params_filter_and_mean_best_pairs_beside_the_paper():
    records = frame(
        run("zoo", "kcp", 0, {"c_prime": 1}, {"sc": 0.2}),
        run("zoo", "kcp", 0, {"c_prime": 2}, {"sc": 0.6}),
        run("zoo", "kcp", 1, {"c_prime": 1}, {"sc": 0.4}),
        run("zoo", "kcp", 1, {"c_prime": 2}, {"sc": 0.8}),
        run("zoo", "dbscan", 0, {"eps": 0.5}, {"sc": 0.1}),
        run("zoo", "dbscan", 0, {"eps": 1.0}, {"sc": 0.3}),
    )
    table = spec(
        protocol={"kind": "mean_best", "by": "sc"},
        rows={"zoo": "Zoo"},
        columns={
            "one": {"label": "C′ = 1", "method": "kcp", "params": {"c_prime": 1}},
            "two": {"label": "C′ = 2", "method": "kcp", "params": {"c_prime": 2}},
            "db": {"label": "DBSCAN", "method": "dbscan", "protocol": {"kind": "best", "by": ["sc"]}},
        },
        gain=None,
        win_loss=[],
        paper={"sc": {"zoo": {"one": [0.25, 0.45], "db": [0.3, 0.3]}}},
    )
    cells = compute_cells(table, wide_runs(records)).set_index("column")
    assert cells.loc["one", ["ours", "ours_best"]].tolist() == pytest.approx([0.3, 0.4])
    assert cells.loc["two", ["ours", "ours_best"]].tolist() == pytest.approx([0.7, 0.8])
    assert cells.loc["db", ["ours", "ours_best"]].tolist() == pytest.approx([0.3, 0.3])  # its one tuned run
    assert cells.loc["one", ["paper", "paper_best", "delta", "delta_best"]].tolist() == pytest.approx(
        [0.25, 0.45, 0.05, -0.05]
    )
    from clusterbench.tables import render

    shown = render(table, compute_cells(table, wide_runs(records)), latex=False).iloc[0]
    assert shown["C′ = 1 (ours)"] == "0.300 / 0.400" and shown["C′ = 1 (paper)"] == "0.250 / 0.450"


def test_committed_paper_records_reproduce_table_s1():
    """Issue 5's bar: on BIRCH 5x5 grid the mean ℒ of k-means and of k-means-C′ (C′ = 2) over 100
    runs is within 0.05 of Table S1, and on BIRCH random k-means-C′'s best ℒ beats k-means'."""
    from clusterbench.tables import table_spec

    records = load_records(REPO / "results", "paper", ["kcprime_tableS1"])
    if records.empty:
        pytest.skip("no committed paper records")
    cells = compute_cells(table_spec("kcprime_tableS1"), wide_runs(records))
    cells = cells.set_index(["dataset", "metric", "column"]).sort_index()
    grid = cells.loc["birch_grid", "log_likelihood"]
    assert grid.loc["kmeans", "n_runs"] == grid.loc["kcprime", "n_runs"] == 100
    assert abs(grid.loc["kmeans", "ours"] - (-6.127)) <= 0.05
    assert abs(grid.loc["kcprime", "ours"] - (-6.117)) <= 0.05
    random = cells.loc["birch_random", "log_likelihood"]
    assert random.loc["kcprime", "ours_best"] > random.loc["kmeans", "ours_best"]


def test_the_restart_odds_note_names_each_profile_s_restarts():
    """The note of kr_restart_odds named the paper profile's 300 restarts on the smoke table too (40)."""

    def last(profile: str) -> int:
        return OmegaConf.load(REPO / "conf" / "profile" / f"{profile}.yaml").restart_odds_runs - 1

    note = " ".join(table_spec("kr_restart_odds")["note"].split())
    assert f"(random_state 0-{last('paper')} at profile paper, 0-{last('smoke')} at smoke)" in note


def test_committed_restart_odds_show_the_khatri_rao_cells_are_a_restart_lottery():
    """Issue 4's cells: the least inertia of all 300 single restarts gives the paper's Stickfigures
    and R15 values, but one run of the protocol (best of 20) reaches them only part of the time."""
    from clusterbench.tables import table_spec

    records = load_records(REPO / "results", "paper", ["kr_restart_odds"])
    if records.empty:
        pytest.skip("no committed paper records")
    runs = wide_runs(records)
    for dataset, variant, paper in (("stickfigures", "sum", 1.000), ("r15", "product", 0.919)):
        cell = runs[(runs["dataset"] == dataset) & (runs["variant"] == variant)]
        assert len(cell) == 300
        assert round(cell.sort_values("inertia", kind="stable")["ari"].iloc[0], 3) == paper
    cells = compute_cells(table_spec("kr_restart_odds"), runs).set_index(["dataset", "metric", "column"])
    assert 0.6 <= cells.loc[("stickfigures", "ari", "kr_sum"), "reach"] <= 0.8  # measured 0.72
    assert 0.25 <= cells.loc[("r15", "ari", "kr_product"), "reach"] <= 0.45  # measured 0.34
    # Reseeding an empty protocentroid so that its centroids are centred on the drawn point (ours,
    # not the paper's rule) is what most of the Stickfigures lottery is about.
    assert cells.loc[("stickfigures", "ari", "kr_sum_centred"), "reach"] >= 0.9  # measured 0.95
    # CMU faces' k-means (h1·h2) cell, 0.695 at seed 42 against the paper's 0.754, is the spread
    # of one run: over all runs of the protocol its mean is the paper's value.
    cmu = cells.loc[("cmu_faces", "ari", "kmeans")]
    assert abs(cmu["ours"] - cmu["paper"]) <= 0.02 and cmu["ours_std"] >= 0.03  # measured 0.755 ± 0.049


def write_toy_record(results_dir, dataset, method, scores, status="ok"):
    records = frame(run(dataset, method, 0, {"n_clusters": 7}, scores, status=status))
    records["experiment"] = "clam_baselines"
    path = results_dir / "runs" / "smoke" / "clam_baselines" / dataset / method / "x.csv"
    write_record(path, records.to_dict("records"))


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"gain": {"reference": "clamm"}}, "gain.reference names 'clamm', which is no column"),
        ({"gain": {"columns": "kmeans"}}, "gain.columns must be a list of columns, got 'kmeans'"),
        ({"win_loss": ["clam", "nope"]}, "win_loss names 'nope'"),
        ({"paper": {"sc": {"iriss": {"kmeans": 0.1}}}}, "paper.sc.iriss names no row of the table"),
        ({"paper": {"sc": {"zoo": {"brich": 0.1}}}}, "paper.sc.zoo.brich names no column"),
        ({"paper": {"sc": {"zoo": 0.5}}}, "paper.sc.zoo must map each column to its entries, got 0.5"),
        ({"paper": {"nmi": {"zoo": {"kmeans": 0.1}}}}, "paper.nmi names no metric of the table (sc)"),
        ({"paper_gain": {"sc": {"zoo": {"dce": 3}}}}, "paper_gain.sc.zoo.dce names no column"),
        ({"paper_win_loss": {"sc": {"dec": {"kmeans": "1/0"}}}}, "paper_win_loss.sc.dec names no W/L row"),
        (
            {"columns": {"clam": {"paper_column": "clamm"}}},
            "columns.clam.paper_column names 'clamm', which is no column",
        ),
        ({"seeds": 0}, "seeds must be a list of integers (seeds: [0, 1]), got 0"),
        ({"seeds": "0,1"}, "seeds must be a list of integers (seeds: [0, 1]), got '0,1'"),
        ({"seeds": [0, "one"]}, "seeds must be a list of integers"),
        (
            {"columns": {"clam": {"seeds": 0}}},
            "columns.clam.seeds must be a list of integers (seeds: [0, 1]), got 0",
        ),
        (
            {"protocol": {"reference": {"method": "kmeans", "seeds": "0,1"}}},
            "protocol.reference.seeds must be a list of integers (seeds: [0, 1]), got '0,1'",
        ),
    ],
)
def test_a_spec_naming_what_does_not_exist_is_a_user_error(monkeypatch, change, fragment):
    spec_changed(monkeypatch, "clam_table1", change)
    with pytest.raises(UserError, match=re.escape(fragment)):
        table_spec("clam_table1")


def test_not_run_rows_say_so_until_they_have_runs_and_must_be_rows():
    table = spec(not_run={"ecoli": "needs a GPU"}, protocol={"kind": "mean_std"})
    records = frame(run("zoo", "kmeans", 0, {}, {"sc": 0.5}))
    cells = compute_cells(table, wide_runs(records)).set_index(["dataset", "column"])
    assert (cells.loc["ecoli", "status"] == "not run").all()
    assert (cells.loc["ecoli", "selected_params"] == "needs a GPU").all()
    assert cells.loc[("zoo", "clam"), "status"] == "missing"  # not listed: no reason given
    ran = frame(run("ecoli", "kmeans", 0, {}, {"sc": 0.4}))  # once it has runs, they show
    later = compute_cells(table, wide_runs(ran)).set_index(["dataset", "column"])
    assert later.loc[("ecoli", "kmeans"), "ours"] == 0.4
    with pytest.raises(UserError, match=r"not_run\.iris names no row of the table"):
        check_spec(spec(not_run={"iris": "x"}))


def test_a_row_listed_as_not_run_or_unavailable_that_has_runs_keeps_their_status_and_point():
    """Once a not_run (or unavailable) row has runs, its cells are theirs: status ok, the chosen
    grid point and the † of a failed run, not the listed reason. Guards ``n_runs == 0`` in that
    rule: the mutant put 'not run' and 'needs a GPU' over cells with values, and lost the †."""
    records = frame(
        run("ecoli", "kmeans", 0, {"init": "random"}, {"sc": 0.4}),
        run("ecoli", "kmeans", 0, {"init": "k-means++"}, {"sc": 0.3}),
        run("ecoli", "kmeans", 1, {"init": "random"}, {}, status="failed"),
    )
    for key in ("not_run", "unavailable"):
        table = spec(**{key: {"ecoli": "needs a GPU"}})
        cells = compute_cells(table, wide_runs(records))
        kmeans = cells.set_index(["dataset", "column"]).loc[("ecoli", "kmeans")]
        assert (kmeans["status"], kmeans["selected_params"], kmeans["ours"]) == ("ok", "init=random", 0.4)
        shown = render(table, cells, latex=False).set_index("Dataset")
        assert shown.loc["Ecoli", "k-means (ours)"] == "**0.400**†"


def test_unavailable_rows_and_paper_only_columns_pass_the_spec_check(monkeypatch):
    # GCM has no dataset config; a column without a method shows the paper's values only.
    spec_changed(monkeypatch, "clam_table1", {"columns": {"paper_only": {"label": "Theirs"}}})
    spec = table_spec("clam_table1")
    assert "gcm" in spec.unavailable and spec.columns.paper_only.get("method") is None


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (
            {"rows": {"zooo": "Zoo"}},
            "row 'zooo' is no dataset (see `clusterbench list`) and in none of its records",
        ),
        (
            {"columns": {"kmeans": {"label": "k-means", "method": "kmean"}}},
            "columns.kmeans reads method 'kmean'",
        ),
        ({"rows": {"zoo_part": "Zoo"}, "columns": {"mine": {"label": "Mine", "method": "mine"}}}, None),
    ],
)
def test_rows_and_methods_must_name_a_config_or_a_record(tmp_path, monkeypatch, change, fragment):
    write_toy_record(tmp_path, "zoo_part", "mine", {"sc": 0.37, "n_found": 7})  # dataset.name=, method.name=
    spec_changed(monkeypatch, "clam_table3", change)
    if fragment is None:
        cells = build_table("clam_table3", tmp_path, "smoke").cells.set_index(["dataset", "column", "metric"])
        assert cells.loc[("zoo_part", "mine", "sc"), "ours"] == 0.37
    else:
        with pytest.raises(UserError, match=re.escape(fragment)):
            build_table("clam_table3", tmp_path, "smoke")


def test_a_table_whose_runs_all_stopped_is_built_with_their_status(tmp_path):
    write_toy_record(tmp_path, "zoo", "kmeans", {}, status="skipped")
    cells = build_table("clam_table3", tmp_path, "smoke").cells.set_index(["dataset", "column", "metric"])
    assert cells.loc[("zoo", "kmeans", "sc"), "status"] == "skipped"


def test_a_table_metric_that_no_record_holds_is_a_user_error(tmp_path):
    write_toy_record(tmp_path, "zoo", "kmeans", {"sc": 0.37})  # clam_table2 reads nmi
    with pytest.raises(UserError, match=re.escape("holds metric 'nmi' (they hold sc)")):
        build_table("clam_table2", tmp_path, "smoke")


# From a mutation audit of the suite: each test below failed with one plausible bug in place
# (named in its docstring) and passed without it.


def test_best_mean_ranks_grid_points_by_their_mean_not_their_sum_over_seeds():
    """A partial grid (a seed failed at u=2): ranking by the sum over seeds picked u=1."""
    records = frame(
        run("zoo", "dec", 0, {"u": 1}, {"sc": 0.3}),
        run("zoo", "dec", 1, {"u": 1}, {"sc": 0.3}),
        run("zoo", "dec", 0, {"u": 2}, {"sc": 0.5}),
    )
    chosen = select(wide_runs(records), OmegaConf.create({"kind": "best_mean", "by": "sc"}), "sc")
    assert chosen["selected"] == "u=2" and chosen["ours"] == pytest.approx(0.5)


def test_a_seed_named_twice_counts_once():
    """seeds [0, 1, 1] name two seeds: counted as three, a full cell would carry the § mark."""
    records = frame(run("zoo", "kmeans", 0, {}, {"sc": 0.3}), run("zoo", "kmeans", 1, {}, {"sc": 0.4}))
    runs = wide_runs(records)
    column = OmegaConf.create({"label": "k-means", "method": "kmeans"})
    cell_runs, named = _column_runs(runs, "zoo", column, OmegaConf.create([0, 1, 1]))
    assert len(cell_runs) == 2 and named == 2


def test_a_columns_params_must_all_match():
    """A column's params select the runs that match every one of them, not any."""
    records = frame(
        run("zoo", "kcp", 0, {"c_prime": 1, "n_init": 1}, {"sc": 0.2}),
        run("zoo", "kcp", 0, {"c_prime": 1, "n_init": 5}, {"sc": 0.9}),
        run("zoo", "kcp", 0, {"c_prime": 2, "n_init": 1}, {"sc": 0.8}),
    )
    column = OmegaConf.create({"label": "C′ = 1", "method": "kcp", "params": {"c_prime": 1, "n_init": 1}})
    cell_runs, _ = _column_runs(wide_runs(records), "zoo", column, None)
    assert cell_runs["sc"].tolist() == [0.2]


def test_a_mean_best_ratio_divides_the_best_by_the_reference_columns_best():
    """Under mean_best with ratio_to, ours is mean over mean and ours_best best over best: the
    reference's runs differ (10, 14), so dividing the best by the reference's mean shows."""
    records = frame(
        run("zoo", "kr", 0, {}, {"inertia": 12.0}),
        run("zoo", "kr", 1, {}, {"inertia": 14.0}),
        run("zoo", "kmeans", 0, {}, {"inertia": 10.0}),
        run("zoo", "kmeans", 1, {}, {"inertia": 14.0}),
    )
    table = spec(
        metrics=["inertia"],
        rows={"zoo": "Zoo"},
        protocol={"kind": "mean_best", "by": "inertia", "mode": "min"},
        columns={"kr": {"label": "KR", "method": "kr"}, "kmeans": {"label": "k-means", "method": "kmeans"}},
        ratio_to={"inertia": "kmeans"},
        paper={"inertia": {"zoo": {"kr": [1.1, 1.2]}}},
        gain=None,
        win_loss=[],
    )
    cells = compute_cells(table, wide_runs(records)).set_index("column")
    assert cells.loc["kr", "ours"] == pytest.approx(13 / 12)  # mean 13 over the reference's mean 12
    assert cells.loc["kr", "ours_best"] == pytest.approx(12 / 10)  # best 12 over its best 10


def test_relative_gain_over_a_negative_baseline_is_positive_when_ours_is_higher():
    """SC can be negative: 0.1 over −0.2 is a gain of |0.1 − (−0.2)| / 0.2 = 150 %; / b would
    print it as a drop (the paper's / b, over its positive baselines, reads the same as / |b|)."""
    assert relative_gain(0.1, -0.2) == pytest.approx(150.0)
    assert relative_gain(-0.3, -0.2) == pytest.approx(-50.0)


def test_one_fit_under_two_suites_is_its_latest_successful_record_with_the_latest_values():
    """One fit (one fit hash) scored three times: ok, ok again with another value, then a suite
    whose scoring failed. Its run is ok with the latest successful value; keeping the oldest or
    the failed record would drop the run from a table or show a stale value."""

    def scored(config_hash, status, timestamp, sc=None):
        rows = frame(run("zoo", "kmeans", 0, {}, {} if sc is None else {"sc": sc}, status=status))
        return rows.assign(config_hash=config_hash, fit_hash="f", timestamp=timestamp)

    records = pd.concat(
        [
            scored("a", "ok", "2024-01-01T00:00:01", 0.1),
            scored("b", "ok", "2024-01-01T00:00:02", 0.2),
            scored("c", "failed", "2024-01-01T00:00:03"),
        ],
        ignore_index=True,
    )
    runs = wide_runs(records)
    assert len(runs) == 1
    assert runs["status"].iloc[0] == "ok" and runs["sc"].iloc[0] == pytest.approx(0.2)


def test_twins_fitted_elsewhere_keep_the_kept_records_values_and_fill_its_gaps_from_the_latest_twin():
    """One point and seed fitted in three places: the latest record (CUDA, rescored without SC)
    keeps its own NMI, and its SC is the latest twin's (two threads), not the oldest's. Guards the
    fill ``update(..., overwrite=False)`` from ``last()``: the mutant ``overwrite=True`` put an
    older twin's NMI over the kept one, ``first()`` took the oldest twin's SC."""
    records = frame(
        run("zoo", "kmeans", 0, {"device": "cpu", "n_threads": 1}, {"sc": 0.30, "nmi": 0.5}),
        run("zoo", "kmeans", 0, {"device": "cpu", "n_threads": 2}, {"sc": 0.35, "nmi": 0.5}),
        run("zoo", "kmeans", 0, {"device": "cuda", "n_threads": 2}, {"nmi": 0.6}),
    )
    records["timestamp"] = records["config_hash"].map(
        dict(zip(records["config_hash"].unique(), "123", strict=True))
    )
    (kept,) = wide_runs(records).to_dict("records")
    assert (json.loads(kept["params"])["device"], kept["sc"], kept["nmi"]) == ("cuda", 0.35, 0.6)


def test_an_earlier_record_of_a_point_run_again_after_an_edit_lends_it_no_metric():
    """A point fitted again after an edit of its dataset's config (same params, other config hash)
    under a suite without SC: the earlier record is another configuration, so its SC is not the
    kept run's, as a twin fitted elsewhere's would be. Guards the twins being those whose params
    differ (where they ran): the mutant that took every earlier record gave the run SC 0.3."""
    records = pd.concat(
        [
            frame(run("zoo", "kmeans", 0, {"init": "random"}, {"sc": 0.3, "nmi": 0.5})).assign(
                config_hash="old"
            ),
            frame(run("zoo", "kmeans", 0, {"init": "random"}, {"nmi": 0.6})).assign(config_hash="edited"),
        ],
        ignore_index=True,
    )
    records["timestamp"] = records["config_hash"].map({"old": "1", "edited": "2"})
    (kept,) = wide_runs(records).to_dict("records")
    assert (kept["config_hash"], kept["nmi"]) == ("edited", 0.6) and math.isnan(kept["sc"])


def test_a_point_and_seed_recorded_by_two_experiments_of_a_table_is_a_user_error(tmp_path):
    """Within one experiment a point counts once; across two the records may be fits of data
    configured differently, so the table names the point instead of counting its seed twice."""
    kmeans = run("zoo", "kmeans", 0, {"init": "random"}, {"sc": 0.30})
    other = [row | {"experiment": "other", "config_hash": "other-" + row["config_hash"]} for row in kmeans]
    table = spec(experiments=["exp", "other"], protocol={"kind": "mean_std"})
    with pytest.raises(UserError) as error:
        write_table(table, frame(kmeans, other, run("zoo", "clam", 0, {}, {"sc": 0.41})), tmp_path, "smoke")
    message = str(error.value)
    assert message.startswith(
        'table toy: kmeans on zoo at seed 0 (hyperparameters {"init": "random", "random_state": 0})'
    )
    assert "is recorded by experiments exp and other, and 2 records in all" in message
    assert not list(tmp_path.iterdir())  # nothing written
    # The same point at another seed, or another point, in the second experiment is no clash.
    at_seed_1 = [
        row | {"experiment": "other"} for row in run("zoo", "kmeans", 1, {"init": "random"}, {"sc": 0.2})
    ]
    cells = write_table(table, frame(kmeans, at_seed_1), tmp_path, "smoke").cells.set_index(
        ["dataset", "column"]
    )
    assert cells.loc[("zoo", "kmeans"), "n_runs"] == 2

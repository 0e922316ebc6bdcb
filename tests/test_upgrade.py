"""`clusterbench records upgrade`: records of earlier code brought to today's names and columns in one
pass, on a small synthetic results folder; a second pass changes nothing. A rerun's ledger reads
records only in today's form: these are the facts of a rerun over records of earlier code once they
are upgraded."""

from __future__ import annotations

import pytest

from clusterbench import runner
from clusterbench.catalog import CONFIG_DIR_ENV
from clusterbench.cli import main
from clusterbench.data.sources import DATA_ENV
from clusterbench.results import labels_path, read_record, typed_hash
from clusterbench.runner import run_job
from tests.helpers import DATA_FOLDER, record_files
from tests.test_runner import OnDevice, count_kmeans_fits, iris


@pytest.fixture(autouse=True)
def data_env(monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(DATA_FOLDER))


@pytest.fixture
def kmeans_fits(monkeypatch):
    return count_kmeans_fits(monkeypatch)


def as_earlier_code(path) -> None:
    """Make a record as code before records kept their fit hash and data digest wrote it."""
    read_record(path).drop(columns=["fit_hash", "data_digest"]).to_csv(path, index=False)


def run_with_typed_hashes(monkeypatch, cfg):
    """Run a job as the code before numbers were hashed by value did: its records get typed names
    (and, as then, no fit hash or data digest)."""
    with monkeypatch.context() as old_code:
        old_code.setattr(runner, "config_hash", typed_hash)
        outcomes = run_job(cfg)
    for outcome in outcomes:
        as_earlier_code(outcome.path)
    return outcomes


def earlier_records(tmp_path, monkeypatch):
    """A folder as earlier code left it, its records lacking their fit hash and data digest, one of
    them named by the typed hash (tol=1.0); returns (typed record, the other, its text when complete)."""
    (typed,) = run_with_typed_hashes(monkeypatch, iris(tmp_path, "+method.estimator.tol=1.0"))
    (incomplete,) = run_job(iris(tmp_path, "seed=1"))
    complete = incomplete.path.read_text()
    as_earlier_code(incomplete.path)
    return typed.path, incomplete.path, complete


def upgrade(results_dir, capsys) -> list[str]:
    assert main(["records", "upgrade", "--results-dir", str(results_dir)]) == 0
    return capsys.readouterr().out.splitlines()


def test_records_of_earlier_code_are_upgraded_once(tmp_path, monkeypatch, capsys):
    typed, incomplete, complete = earlier_records(tmp_path, monkeypatch)
    lines = upgrade(tmp_path, capsys)
    assert len(lines) == 3 and lines[-1].startswith("2 record(s) upgraded, 0 left")
    assert any(line.startswith(f"{typed.relative_to(tmp_path)}: renamed to ") for line in lines)
    assert f"{incomplete.relative_to(tmp_path)}: given its fit hash and data digest" in lines
    assert incomplete.read_text() == complete  # as today's code writes it
    assert not typed.exists() and not labels_path(typed).exists()

    # Upgraded: a rerun finds every point, and fits none.
    (renamed,) = run_job(iris(tmp_path, "+method.estimator.tol=1.0"))
    (found,) = run_job(iris(tmp_path, "seed=1"))
    assert renamed.status == found.status == "cached" and found.path == incomplete
    assert set(read_record(renamed.path)["config_hash"]) == {renamed.path.stem}
    assert labels_path(renamed.path).exists()

    written = {path: path.read_bytes() for path in record_files(tmp_path)}
    assert upgrade(tmp_path, capsys) == [f"every record under {tmp_path}/runs is current: nothing to upgrade"]
    assert {path: path.read_bytes() for path in record_files(tmp_path)} == written


def test_a_record_named_by_the_typed_hash_is_renamed_and_found(tmp_path, kmeans_fits, monkeypatch, capsys):
    # A folder written before numbers were hashed by value: tol=1.0 named apart from tol=1.
    (old,) = run_with_typed_hashes(monkeypatch, iris(tmp_path, "+method.estimator.tol=1.0"))
    assert old.status == "ok" and labels_path(old.path).exists()
    upgrade(tmp_path, capsys)
    (again,) = run_job(iris(tmp_path, "+method.estimator.tol=1.0"))
    assert again.status == "cached" and len(kmeans_fits) == 1 and again.path != old.path
    assert record_files(tmp_path) == [again.path] and not labels_path(old.path).exists()
    assert labels_path(again.path).exists()
    assert set(read_record(again.path)["config_hash"]) == {again.path.stem}
    assert again.scores == pytest.approx(old.scores)


def test_a_point_recorded_under_both_hashes_keeps_one_record(tmp_path, kmeans_fits, monkeypatch, capsys):
    # A folder rerun by code that hashed by value before its typed records were renamed: two records.
    (old,) = run_with_typed_hashes(monkeypatch, iris(tmp_path, "+method.estimator.tol=1.0"))
    (refit,) = run_job(iris(tmp_path, "+method.estimator.tol=1.0"))
    assert len(record_files(tmp_path)) == 2 and len(kmeans_fits) == 2
    lines = upgrade(tmp_path, capsys)
    assert f"{old.path.relative_to(tmp_path)}: removed: {refit.path.name} holds the point's record" in lines
    (again,) = run_job(iris(tmp_path, "+method.estimator.tol=1.0"))
    assert again.status == "cached" and len(kmeans_fits) == 2
    assert record_files(tmp_path) == [refit.path] and not labels_path(old.path).exists()
    assert labels_path(refit.path).exists()


@pytest.fixture
def on_device_method(tmp_path, monkeypatch):
    """A method ``on_device`` of the user's config folder (OnDevice, its max_iter a float: its
    typed hash differs), so that the upgrade composes the configuration its records were run with."""
    (tmp_path / "my_configs" / "method").mkdir(parents=True)
    (tmp_path / "my_configs" / "method" / "on_device.yaml").write_text(
        "name: on_device\nvariant: default\n"
        "estimator:\n  _target_: tests.test_runner.OnDevice\n  max_iter: 300.0\n"
    )
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "my_configs"))
    monkeypatch.setattr(OnDevice, "fits", 0)
    return "method=on_device"


def test_a_typed_record_from_the_other_device_is_renamed_and_reused(
    tmp_path, monkeypatch, capsys, on_device_method
):
    run_cpu = iris(tmp_path, on_device_method, "+method.estimator.device=cpu")
    (cpu,) = run_with_typed_hashes(monkeypatch, run_cpu)
    upgrade(tmp_path, capsys)
    (cuda,) = run_job(iris(tmp_path, on_device_method, "+method.estimator.device=cuda"))
    assert cuda.status == "cached" and OnDevice.fits == 1
    assert record_files(tmp_path) == [cuda.path] and cuda.path != cpu.path


def test_a_record_of_earlier_code_learns_its_fit_and_data_and_lends_its_labels(tmp_path, kmeans_fits, capsys):
    (first,) = run_job(iris(tmp_path))
    written = first.path.read_text()
    as_earlier_code(first.path)
    assert "fit_hash" not in read_record(first.path)
    upgrade(tmp_path, capsys)
    assert first.path.read_text() == written  # the same record, the two fields filled in
    (again,) = run_job(iris(tmp_path))
    assert again.status == "cached" and len(kmeans_fits) == 1
    (external,) = run_job(iris(tmp_path, "metrics=external"))
    assert external.status == "rescored" and len(kmeans_fits) == 1


def test_a_rerun_reads_a_record_of_earlier_code_as_it_is(tmp_path, kmeans_fits):
    # Not upgraded: the point is done, as a finished sweep sees it and as its job finds it, and its
    # record is left as earlier code wrote it (the upgrade, not the ledger, completes it).
    (first,) = run_job(iris(tmp_path))
    as_earlier_code(first.path)
    earlier = first.path.read_bytes()
    assert runner.recorded_outcomes(iris(tmp_path), "adhoc") == [("cached", True, first.path)]
    (again,) = run_job(iris(tmp_path))
    assert again.status == "cached" and again.path == first.path and len(kmeans_fits) == 1
    assert first.path.read_bytes() == earlier


def test_a_record_its_configuration_does_not_name_is_left_as_it_is(tmp_path, monkeypatch, capsys):
    _, incomplete, _ = earlier_records(tmp_path, monkeypatch)
    stranger = incomplete.with_name("0123456789abcdef0123.csv")
    incomplete.rename(stranger)  # composed today, its hash is another name: not this point's record
    text = stranger.read_text()
    lines = upgrade(tmp_path, capsys)
    assert any(line.startswith(f"{stranger.relative_to(tmp_path)}: left as it is: ") for line in lines)
    assert lines[-1].startswith("1 record(s) upgraded, 1 left")
    assert stranger.read_text() == text


def test_records_upgrade_without_records_is_a_one_line_error(tmp_path, capsys):
    assert main(["records", "upgrade", "--results-dir", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_completing_a_record_fills_only_its_empty_fields(tmp_path):
    """`records upgrade` gives an old record its fit hash and data digest where it lacks them, and
    never overwrites one it holds: today's digest over a stored one would hide that the data
    changed (overwriting passed every other test)."""
    import csv

    from clusterbench.migrations import complete_record
    from clusterbench.results import COLUMNS

    path = tmp_path / "0123456789abcdef.csv"
    row = dict.fromkeys(COLUMNS, "")
    row |= {"dataset": "iris", "metric": "nmi", "value": "0.5", "status": "ok", "data_digest": "old"}
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerow(row)
    complete_record(path, fit_hash="fit", data_digest="today")
    with path.open(newline="") as handle:
        (read,) = list(csv.DictReader(handle))
    assert (read["fit_hash"], read["data_digest"], read["value"]) == ("fit", "old", "0.5")


# From a third mutation audit of the suite: each test below failed with one plausible bug in
# place and passed without it.


def test_a_record_being_written_is_not_an_outdated_record(tmp_path):
    from clusterbench.results import records_folder
    from clusterbench.upgrade import outdated_records

    folder = records_folder(tmp_path, "smoke", "e", "iris", "kmeans")
    folder.mkdir(parents=True)
    header = "profile,experiment,dataset,method,seed,fit_hash,data_digest\n"
    (folder / "abc.csv").write_text(header + "smoke,e,iris,kmeans,0,,\n")
    (folder / ".def.csv").write_text(header + "smoke,e,iris,kmeans,0,,\n")  # being written
    (folder / "ghi.csv").write_text(header + "smoke,e,iris,kmeans,0,f,d\n")  # today's form
    assert [path.name for path, _ in outdated_records(tmp_path)] == ["abc.csv"]

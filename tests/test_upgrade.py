"""`clusterbench records upgrade`: records of earlier code brought to today's names and columns in one
pass, on a small synthetic results folder; a second pass changes nothing."""

from __future__ import annotations

import pytest

from clusterbench import resume, runner
from clusterbench.cli import main
from clusterbench.data.sources import DATA_ENV
from clusterbench.results import labels_path, read_record, typed_hash
from clusterbench.runner import run_job
from tests.helpers import DATA_FOLDER, record_files
from tests.test_runner import iris


@pytest.fixture(autouse=True)
def data_env(monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(DATA_FOLDER))


def earlier_records(tmp_path, monkeypatch):
    """A folder as earlier code left it, its records lacking their fit hash and data digest, one of
    them named by the typed hash (tol=1.0); returns (typed record, the other, its text when complete)."""
    with monkeypatch.context() as old_code:
        old_code.setattr(runner, "config_hash", typed_hash)
        (typed,) = run_job(iris(tmp_path, "+method.estimator.tol=1.0"))
    (incomplete,) = run_job(iris(tmp_path, "seed=1"))
    complete = incomplete.path.read_text()
    for path in (typed.path, incomplete.path):  # written before records kept these columns
        read_record(path).drop(columns=["fit_hash", "data_digest"]).to_csv(path, index=False)
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

    # Upgraded: a rerun with the ledger's own migrations off finds every point, and fits none.
    with monkeypatch.context() as no_migrations:
        no_migrations.setattr(resume, "adopt_typed_record", lambda path, key: None)
        no_migrations.setattr(resume, "complete_record", lambda path, **values: None)
        (renamed,) = run_job(iris(tmp_path, "+method.estimator.tol=1.0"))
        (found,) = run_job(iris(tmp_path, "seed=1"))
    assert renamed.status == found.status == "cached" and found.path == incomplete
    assert set(read_record(renamed.path)["config_hash"]) == {renamed.path.stem}
    assert labels_path(renamed.path).exists()

    written = {path: path.read_bytes() for path in record_files(tmp_path)}
    assert upgrade(tmp_path, capsys) == [f"every record under {tmp_path}/runs is current: nothing to upgrade"]
    assert {path: path.read_bytes() for path in record_files(tmp_path)} == written


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

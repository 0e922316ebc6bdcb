"""Where datasets are read from: the data folders' search order ($CLUSTERBENCH_DATA, the user cache,
the bundled copies), the bundled files themselves, `data where` / `pull` / `verify` / `list`, and
``clusterbench.load_dataset``.

Every test sets both ``$CLUSTERBENCH_DATA`` (or unsets it) and ``HOME``: the user cache
``~/.cache/clusterbench`` is part of the search order, and a test must not read the real one.
"""

from __future__ import annotations

import csv
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import clusterbench
from clusterbench.catalog import check_in_cache
from clusterbench.cli import main
from clusterbench.data.sources import (
    BUNDLED_DIR,
    DATA_ENV,
    RawData,
    cache_dir,
    cached,
    data_folders,
    find_npz,
)
from clusterbench.errors import UserError
from tests.helpers import DATA_FOLDER, REPO, cli_env, clusterbench_command, record_files

BUNDLED = ["ctg", "ecoli", "movement_libras", "optdigits", "segment", "soybean_large", "zoo"]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty home folder, and no $CLUSTERBENCH_DATA: a fresh machine."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv(DATA_ENV, raising=False)
    return folder


def user_cache(home: Path) -> Path:
    return home / ".cache" / "clusterbench"


def save_zoo(folder: Path, fill: float) -> None:
    """A zoo.npz of zoo's shape whose features are all ``fill``: tells apart which copy was read."""
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "zoo.npz", X=np.full((101, 16), fill), y=np.arange(101) % 7)


def manifest(path: Path) -> dict[str, dict]:
    with path.open(newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the bundled files -------------------------------------------------------------------------


def test_the_bundled_files_are_the_seven_small_uci_datasets_with_their_manifest_sha256():
    assert sorted(path.stem for path in BUNDLED_DIR.glob("*.npz")) == BUNDLED
    rows = manifest(BUNDLED_DIR / "MANIFEST.csv")
    assert sorted(rows) == BUNDLED
    for name in BUNDLED:
        assert sha256(BUNDLED_DIR / f"{name}.npz") == rows[name]["sha256_of_npz"], name
        assert "CC BY 4.0" in rows[name]["license_note"], name
        assert (BUNDLED_DIR / f"{name}.npz").stat().st_size <= 250_000, name


def test_the_bundled_files_are_the_shared_copies_byte_for_byte():
    shared_manifest = DATA_FOLDER / "MANIFEST.csv"
    if not shared_manifest.exists():
        pytest.skip(f"no MANIFEST.csv in {DATA_FOLDER} (set {DATA_ENV})")
    shared_rows, bundled_rows = manifest(shared_manifest), manifest(BUNDLED_DIR / "MANIFEST.csv")
    for name in BUNDLED:
        assert bundled_rows[name] == shared_rows[name], name  # the shared row, copied as it is
        assert sha256(BUNDLED_DIR / f"{name}.npz") == shared_rows[name]["sha256_of_npz"], name


def test_the_bundled_licence_names_each_files_source_licence_and_citation():
    text = (BUNDLED_DIR / "LICENSE.md").read_text()
    assert "CC BY 4.0" in text and "creativecommons.org/licenses/by/4.0" in text
    rows = manifest(BUNDLED_DIR / "MANIFEST.csv")
    for name in BUNDLED:
        line = next(line for line in text.splitlines() if line.startswith(f"| `{name}.npz`"))
        assert rows[name]["source_repo"] in line, name  # where the copy was taken from
        assert "archive.ics.uci.edu/dataset/" in line, name  # the dataset's UCI page
        assert re.search(r"\(\d{4}\)\.", line), name  # a citation: authors (year). title


def test_git_tracks_the_bundled_files_and_no_other_npz():
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", "clusterbench/data/bundled/zoo.npz"], cwd=REPO
    )
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.returncode == 1  # 1: not ignored
    other = subprocess.run(["git", "check-ignore", "-q", "--no-index", "results/zoo.npz"], cwd=REPO)
    assert other.returncode == 0


def test_setuptools_ships_the_bundled_files_as_package_data():
    import tomllib

    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = package_data["clusterbench.data"]
    shipped = {path for pattern in patterns for path in (REPO / "clusterbench" / "data").glob(pattern)}
    assert shipped == {*BUNDLED_DIR.glob("*.npz"), BUNDLED_DIR / "MANIFEST.csv", BUNDLED_DIR / "LICENSE.md"}


# --- the search order --------------------------------------------------------------------------


def test_a_fresh_machine_reads_the_bundled_copy(home):
    assert [folder.label for folder in data_folders()] == ["cache", "bundled"]
    assert cache_dir() == user_cache(home)
    folder, path = find_npz("zoo")
    assert (folder.label, path) == ("bundled", BUNDLED_DIR / "zoo.npz")
    raw = cached("zoo")
    assert raw.X.shape == (101, 16) and set(np.unique(raw.X[:, 0])) == {0.0, 1.0}
    assert find_npz("yale") is None
    assert not user_cache(home).exists()  # reading creates nothing


def test_a_cached_copy_wins_over_the_bundled_one(home):
    save_zoo(user_cache(home), 7.0)
    assert find_npz("zoo")[0].label == "cache"
    assert (cached("zoo").X == 7.0).all()


def test_the_variables_folder_wins_over_the_user_cache_which_is_still_searched(home, tmp_path, monkeypatch):
    env_folder = tmp_path / "env"
    env_folder.mkdir()
    monkeypatch.setenv(DATA_ENV, str(env_folder))
    save_zoo(user_cache(home), 7.0)
    assert [folder.label for folder in data_folders()] == [f"${DATA_ENV}", "cache", "bundled"]
    assert cache_dir() == env_folder  # where pull and import write
    assert (cached("zoo").X == 7.0).all()  # the variable's folder lacks it: the user cache is next
    save_zoo(env_folder, 3.0)
    assert find_npz("zoo")[0].label == f"${DATA_ENV}"
    assert (cached("zoo").X == 3.0).all()


def test_an_openml_fetch_writes_into_the_writable_folder(home, monkeypatch):
    fetched = RawData(X=np.ones((4, 2)), y=np.arange(4) % 2)
    monkeypatch.setattr("clusterbench.data.sources.fetch_openml", lambda *args, **kwargs: fetched)
    assert cached("toy", openml_id=1).X.shape == (4, 2)
    assert (user_cache(home) / "toy.npz").is_file()


def test_check_in_cache_accepts_a_bundled_import_only_dataset_and_names_the_folders(home):
    check_in_cache(["ctg", "soybean_large"])  # no OpenML id, and bundled
    with pytest.raises(
        UserError, match=r"not in the data cache or the bundled copies \(.*bundled\)"
    ) as error:
        check_in_cache(["ctg", "yale"])
    message = str(error.value)
    assert "and with no OpenML source: yale (yale.npz); put it in a folder" in message
    assert message.endswith("or choose another dataset (dataset=NAME)")  # a single run's fix
    with pytest.raises(UserError) as error:
        check_in_cache(["yale", "ctg", "kdd_protein"], sweep=True)
    message = str(error.value)
    assert "source: yale (yale.npz), kdd_protein (kdd_protein.npz); put them in a folder" in message
    assert message.endswith("or sweep without them (dataset=...)")
    with pytest.raises(UserError) as error:
        check_in_cache(["yale"], sweep=True)  # sweeping without it would leave nothing
    assert str(error.value).endswith("or choose another dataset (dataset=NAME)")


def test_a_missing_import_only_file_names_the_folders_searched(home):
    with pytest.raises(UserError, match=r"'yale' is in no data folder \(.*\.cache/clusterbench, .*bundled\)"):
        cached("yale")


# --- the commands ------------------------------------------------------------------------------


def test_data_where_prints_the_folders_in_order_marking_which_exist(home, tmp_path, monkeypatch, capsys):
    assert main(["data", "where"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        f"  1. cache               {user_cache(home)}  (missing; data import and data pull write here)",
        f"  2. bundled             {BUNDLED_DIR}  (exists)",
    ]
    env_folder = tmp_path / "env"
    env_folder.mkdir()
    monkeypatch.setenv(DATA_ENV, str(env_folder))
    user_cache(home).mkdir(parents=True)
    assert main(["data", "where"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        f"  1. ${DATA_ENV}  {env_folder}  (exists; data import and data pull write here)",
        f"  2. cache               {user_cache(home)}  (exists)",
        f"  3. bundled             {BUNDLED_DIR}  (exists)",
    ]
    assert main(["data", "path"]) == 0
    assert capsys.readouterr().out == f"{env_folder}\n"


def test_data_pull_of_a_held_dataset_skips_without_the_network(home, monkeypatch, capsys):
    def offline(*args, **kwargs):
        raise AssertionError("data pull fetched a dataset a data folder holds")

    monkeypatch.setattr("clusterbench.data.sources.fetch_openml", offline)
    assert main(["data", "pull", "zoo"]) == 0  # bundled
    assert "zoo is already held (bundled: " in capsys.readouterr().out
    save_zoo(user_cache(home), 7.0)
    assert main(["data", "pull", "zoo"]) == 0
    out = capsys.readouterr().out
    assert f"already held (cache: {user_cache(home) / 'zoo.npz'}); skipped (--force" in out
    assert (cached("zoo").X == 7.0).all()  # left as it was


def test_data_pull_force_fetches_again_into_the_cache(home, monkeypatch, capsys):
    calls = []

    def fetch(name, openml_id, *args, **kwargs):
        calls.append((name, openml_id))
        return RawData(X=np.full((101, 16), 5.0), y=np.arange(101) % 7)

    monkeypatch.setattr("clusterbench.data.sources.fetch_openml", fetch)
    assert main(["data", "pull", "zoo", "--force"]) == 0
    assert calls == [("zoo", 62)]
    assert f"wrote {user_cache(home) / 'zoo.npz'}" in capsys.readouterr().out
    assert find_npz("zoo")[0].label == "cache" and (cached("zoo").X == 5.0).all()


def test_data_verify_checks_the_bundled_copies_and_says_how_to_fill_an_empty_cache(home, capsys):
    assert main(["data", "verify"]) == 0
    out = capsys.readouterr().out
    assert f"bundled ({BUNDLED_DIR}):" in out
    for name in BUNDLED:
        assert f"  {name:<20} ok" in out
    hint = [line for line in out.splitlines() if line.startswith("the data cache")]
    assert hint == [
        f"the data cache {user_cache(home)} holds no datasets: copy .npz files in with "
        "`clusterbench data import FOLDER`, or fetch one with `clusterbench data pull NAME`"
    ]
    # Each dataset held nowhere is named with a way to get it that works: yale has no OpenML id.
    (nowhere,) = [line for line in out.splitlines() if line.startswith("held nowhere: ")]
    downloadable, local = nowhere.removeprefix("held nowhere: ").split("; ")
    assert downloadable.endswith(" (data pull NAME or data import FOLDER)") and "mnist" in downloadable
    assert local.endswith(" (data import FOLDER only: no OpenML id)") and "yale" in local
    assert "yale" not in downloadable and "mnist" not in local


def test_data_verify_of_a_dataset_held_nowhere_exits_1_naming_the_fix(home, capsys):
    assert main(["data", "verify", "mnist", "yale", "zoo"]) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "clusterbench: mnist is held in no data folder; get it with `clusterbench data pull mnist` (OpenML) "
        "or `clusterbench data import FOLDER`",
        "clusterbench: yale is held in no data folder; get it with `clusterbench data import FOLDER` "
        "(a folder holding yale.npz)",
    ]
    assert "  zoo                  ok" in captured.out


def test_data_verify_of_a_dataset_that_reads_a_users_own_file_says_where_it_is_checked(home, capsys):
    """embeddings (npz_file) has a file, the user's, outside every data folder: "no file to check"
    misled (a new-user scenario audit)."""
    assert main(["data", "verify", "embeddings", "blobs"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"  {'embeddings':<20} reads its own .npz where it lies: checked when a run loads it" in out
    assert any(line.startswith(f"  {'blobs':<20} no file to check (made by ") for line in out)


def test_data_verify_checks_a_cached_copy_against_its_folders_manifest(home, capsys):
    folder = user_cache(home)
    save_zoo(folder, 0.0)
    (folder / "MANIFEST.csv").write_text((BUNDLED_DIR / "MANIFEST.csv").read_text())
    assert main(["data", "verify", "zoo"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"cache ({folder}):", "  zoo                  MISMATCH: sha256 differs from MANIFEST.csv"]


def test_data_verify_reports_a_broken_copy_that_an_earlier_folder_hides(home, tmp_path, monkeypatch, capsys):
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    for name in ("zoo", "ecoli"):
        (bundled / f"{name}.npz").write_bytes((BUNDLED_DIR / f"{name}.npz").read_bytes())
    (bundled / "MANIFEST.csv").write_text((BUNDLED_DIR / "MANIFEST.csv").read_text())
    monkeypatch.setattr("clusterbench.data.sources.BUNDLED_DIR", bundled)
    assert main(["data", "verify", "zoo", "ecoli"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [f"bundled ({bundled}):", "  zoo                  ok", "  ecoli                ok"]
    save_zoo(user_cache(home), 1.0)  # read first now; a good copy hidden behind it says nothing
    assert main(["data", "verify", "zoo", "ecoli"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"cache ({user_cache(home)}):",
        "  zoo                  ok",
        f"bundled ({bundled}):",
        "  ecoli                ok",
    ]
    (bundled / "zoo.npz").write_bytes(b"")  # a broken hidden copy is still reported
    assert main(["data", "verify", "zoo", "ecoli"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[3].startswith("  zoo                  MISMATCH: cannot read ")
    assert out[3].endswith(" (not read: cache holds it first)")


@pytest.mark.parametrize("words", [["verify", "mnist", "nope"], ["pull", "nope"]])
def test_an_unknown_dataset_name_is_a_one_line_error(home, capsys, words):
    assert main(["data", *words]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("clusterbench: error: unknown dataset 'nope'; known dataset options:")
    assert len(captured.err.splitlines()) == 1


def test_list_says_where_each_dataset_is_read_from(home, capsys):
    save_zoo(user_cache(home), 7.0)
    assert main(["list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
    expected = {
        "zoo": "cache",
        "ecoli": "bundled",
        "ctg": "bundled",
        "mnist": "not held",
        "yale": "not held",
        "iris": "sklearn",
        "blobs": "generated",
    }
    for name, read_from in expected.items():
        assert rows[name].split(None, 4)[4].startswith(read_from + " "), rows[name]


# --- `clusterbench run` on a fresh machine -----------------------------------------------------


def run_zoo(results_dir: Path, env: dict) -> str:
    """Run k-means on zoo in a subprocess; the data_digest of its record."""
    result = subprocess.run(
        [*clusterbench_command(), "run", "method=kmeans", "dataset=zoo", f"results_dir={results_dir}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    (record,) = record_files(results_dir)
    with record.open(newline="") as handle:
        digests = {row["data_digest"] for row in csv.DictReader(handle)}
    assert len(digests) == 1
    return digests.pop()


@pytest.mark.slow
def test_run_on_zoo_works_with_empty_data_folders_and_reads_the_shared_bytes(tmp_path):
    if not (DATA_FOLDER / "zoo.npz").exists():
        pytest.skip(f"zoo.npz is not in {DATA_FOLDER} (set {DATA_ENV})")
    empty, home = tmp_path / "data", tmp_path / "home"
    empty.mkdir()
    home.mkdir()
    fresh = cli_env(empty)
    fresh["HOME"] = str(home)
    bundled_digest = run_zoo(tmp_path / "fresh", fresh)
    assert not any(home.iterdir()) and not any(empty.iterdir())  # nothing fetched or cached
    shared = cli_env(DATA_FOLDER)
    shared["HOME"] = str(home)
    assert bundled_digest == run_zoo(tmp_path / "shared", shared)


# --- clusterbench.load_dataset ------------------------------------------------------------------


def test_load_dataset_prepares_zoo_as_its_config_does(home):
    X, y = clusterbench.load_dataset("zoo")
    assert X.shape == (101, 16) and y.shape == (101,)
    assert X.dtype == np.float64 and y.dtype == np.int64
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)  # standardize
    np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=1e-12)
    assert np.bincount(y).tolist() == [41, 20, 5, 13, 4, 8, 10]


def test_load_dataset_gives_the_raw_arrays_or_another_preprocessing(home):
    raw = np.load(BUNDLED_DIR / "zoo.npz")
    X, y = clusterbench.load_dataset("zoo", preprocess=False)
    np.testing.assert_array_equal(X, raw["X"])
    np.testing.assert_array_equal(y, raw["y"])
    X, _ = clusterbench.load_dataset("zoo", preprocess="minmax")
    np.testing.assert_array_equal(X.min(axis=0), 0.0)
    np.testing.assert_array_equal(X.max(axis=0), 1.0)
    X, y = clusterbench.load_dataset("segment", max_samples=70)
    assert X.shape == (70, 19) and np.bincount(y).tolist() == [10] * 7  # stratified
    with pytest.raises(UserError, match="unknown dataset 'zo'"):
        clusterbench.load_dataset("zo")
    with pytest.raises(UserError, match="unknown preprocess 'z'"):
        clusterbench.load_dataset("zoo", preprocess="z")
    with pytest.raises(UserError, match="unknown experiment 'nope'"):
        clusterbench.load_dataset("zoo", experiment="nope")


def test_load_dataset_merges_the_experiments_overrides(monkeypatch):
    if not (DATA_FOLDER / "stickfigures.npz").exists():
        pytest.skip(f"stickfigures.npz is not in {DATA_FOLDER} (set {DATA_ENV})")
    monkeypatch.setenv(DATA_ENV, str(DATA_FOLDER))
    X, _ = clusterbench.load_dataset("stickfigures", experiment="kr_table2")  # preprocess: max_scale
    raw, _ = clusterbench.load_dataset("stickfigures", preprocess=False)
    np.testing.assert_allclose(X, raw / raw.max())
    assert not np.allclose(clusterbench.load_dataset("stickfigures")[0], X)  # standardize without it


def test_import_clusterbench_loads_no_heavy_library():
    heavy = ["torch", "pandas", "hydra", "omegaconf", "sklearn", "numpy"]
    code = f"import sys, clusterbench; print([m for m in {heavy!r} if m in sys.modules])"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert result.stdout.strip() == "[]"
    assert callable(clusterbench.load_dataset) and clusterbench.load_dataset.__doc__.count(">>>") >= 2

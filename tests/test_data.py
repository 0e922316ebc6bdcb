"""Datasets: cache files against MANIFEST.csv, preparation steps, the OpenML route, generators, configs.

Tests that need the cache files read the shared data folder (``$CLUSTERBENCH_DATA``, else
``../shared/datasets``: tests/helpers.py) and skip, saying why, when a file is absent. The data
folders, bundled copies and ``clusterbench.load_dataset`` are tested in test_data_folders.py.
"""

from __future__ import annotations

import csv
import inspect
import math
import re

import numpy as np
import pandas as pd
import pytest
from hydra.utils import get_method
from numpy.testing import assert_array_equal
from omegaconf import OmegaConf

from clusterbench.catalog import CONF_DIR, load_option, options
from clusterbench.data import data_digest, generators, load_dataset, stratified_subsample
from clusterbench.data.cache import import_folder
from clusterbench.data.preprocess import PREPROCESSORS
from clusterbench.data.sources import DATA_ENV, RawData, cached, npz_header, read_npz
from clusterbench.errors import UserError
from tests.helpers import DATA_FOLDER

CACHED_SOURCE = "clusterbench.data.sources.cached"
USER_FILE_SOURCE = "clusterbench.data.sources.npz_file"
RAW_DATA = "clusterbench.data.sources.RawData"  # a source returning its arguments as they are
REQUIRED_KEYS = {
    "name",
    "description",
    "shape",
    "n_clusters",
    "source",
    "preprocess",
    "impute",
    "split",
    "subsample",
    "subsample_seed",
}


@pytest.fixture(autouse=True)
def shared_data_folder(tmp_path_factory, monkeypatch):
    """Read the shared data folder first (as `make test` and CI set it), and an empty home: the
    search order's user cache (~/.cache/clusterbench) must not hold a file a test expects missing."""
    monkeypatch.setenv(DATA_ENV, str(DATA_FOLDER))
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


def require_cached(name: str) -> None:
    """Skip the calling test unless ``<name>.npz`` is in the shared data folder."""
    if not (DATA_FOLDER / f"{name}.npz").exists():
        pytest.skip(f"{name}.npz is not in {DATA_FOLDER} (set {DATA_ENV})")


def manifest_rows() -> list:
    path = DATA_FOLDER / "MANIFEST.csv"
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no MANIFEST.csv in {DATA_FOLDER}"))]
    with path.open(newline="") as handle:
        return [pytest.param(row, id=row["name"]) for row in csv.DictReader(handle)]


def dataset_config(name: str, **overrides):
    spec = load_option("dataset", name)
    for key, value in overrides.items():
        spec[key] = value
    return spec


def call_source(spec) -> RawData:
    source = OmegaConf.to_container(spec.source, resolve=True)
    return get_method(source.pop("_target_"))(**source)


# --- cache files -------------------------------------------------------------------------------


@pytest.mark.parametrize("row", manifest_rows())
def test_cache_file_matches_manifest_and_config(row):
    name = row["name"]
    require_cached(name)
    n, d, k = int(row["n"]), int(row["d"]), int(row["k"])
    raw = cached(name)
    assert raw.X.shape == (n, d)
    assert raw.y.shape == (n,)
    assert len(np.unique(raw.y)) == k
    spec = load_option("dataset", name)
    assert spec.source.name == name
    assert list(spec.shape) == [n, d]
    assert spec.n_clusters == k
    if spec.source.get("n_train") is not None:  # the OpenML fallback must agree with the cached file
        assert raw.n_train == spec.source.n_train


def test_fashion_mnist_train_split_has_the_60000_train_rows():
    require_cached("fashion_mnist")
    data = load_dataset(dataset_config("fashion_mnist", split="train", preprocess="none"))
    assert data.X.shape == (60000, 784)
    assert np.bincount(data.y).tolist() == [6000] * 10


def test_usps_test_split_is_the_2007_row_usps_subset():
    require_cached("usps")
    require_cached("usps_2007")
    test_part = load_dataset(dataset_config("usps", split="test", preprocess="none"))
    subset = load_dataset(dataset_config("usps_2007", preprocess="none"))
    np.testing.assert_array_equal(test_part.X, subset.X)
    np.testing.assert_array_equal(test_part.y, subset.y)


def test_optdigits_test_split_is_sklearn_digits():
    require_cached("optdigits")
    test_part = load_dataset(dataset_config("optdigits", split="test", preprocess="none"))
    digits = load_dataset(dataset_config("digits", preprocess="none"))
    np.testing.assert_array_equal(test_part.X, digits.X)
    np.testing.assert_array_equal(test_part.y, digits.y)


def test_split_without_a_train_boundary_is_a_user_error():
    with pytest.raises(UserError, match="n_train"):
        load_dataset(dataset_config("iris", split="train"))
    with pytest.raises(UserError, match="split must be train, test or null, got 'val'"):
        load_dataset(dataset_config("iris", split="val"))  # the value is named before the boundary


def test_an_imported_file_without_n_train_takes_the_configs_boundary(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    X, y = np.arange(20.0).reshape(10, 2), np.arange(10) % 2
    np.savez(tmp_path / "toy.npz", X=X, y=y)  # as `clusterbench data import` copies a user's file
    assert cached("toy", openml_id=1, n_train=6).n_train == 6
    assert cached("toy").n_train is None
    # A config meant for the full dataset: fine unless a split uses the boundary.
    assert cached("toy", openml_id=1, n_train=60).n_train == 60
    toy = {"name": "toy", "n_clusters": 2, "preprocess": "none"}
    source = {"_target_": CACHED_SOURCE, "name": "toy", "openml_id": 1, "n_train": 60}
    assert load_dataset({**toy, "source": source}).X.shape == (10, 2)
    with pytest.raises(UserError, match="n_train=60 does not split its 10 rows"):
        load_dataset({**toy, "source": source, "split": "test"})
    np.savez(tmp_path / "toy.npz", X=X, y=y, n_train=4)  # the file's own boundary wins
    assert cached("toy", openml_id=1, n_train=6).n_train == 4


def test_missing_cache_file_without_openml_id_names_data_import(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    spec = dataset_config("yale")
    assert spec.source.openml_id is None
    with pytest.raises(UserError, match="clusterbench data import") as error:
        load_dataset(spec)
    assert "yale" in str(error.value)


# --- preparation -------------------------------------------------------------------------------

PIXELS = np.array([[0.0, 255.0], [255.0, 0.0], [51.0, 255.0]])


@pytest.mark.parametrize(
    "name, expected",
    [
        ("minmax", [[0.0, 1.0], [1.0, 0.0], [0.2, 1.0]]),
        ("max_scale", [[0.0, 1.0], [1.0, 0.0], [0.2, 1.0]]),
        ("pixels_unit", [[0.0, 1.0], [1.0, 0.0], [0.2, 1.0]]),
        ("pixels_symmetric", [[-1.0, 1.0], [1.0, -1.0], [-0.6, 1.0]]),
        ("none", PIXELS),
    ],
)
def test_each_preprocessor_maps_pixels_as_its_paper_does(name, expected):
    np.testing.assert_allclose(PREPROCESSORS[name](PIXELS), expected, atol=1e-12)
    halved = PIXELS / 2  # per-feature minmax rescales to the range; the pixel maps do not
    if name == "minmax":
        np.testing.assert_allclose(PREPROCESSORS[name](halved), expected, atol=1e-12)


@pytest.mark.parametrize("name", ["digits", "zoo", "segment"])
def test_standardize_gives_zero_mean_and_unit_std_per_feature(name):
    if load_option("dataset", name).source._target_ == CACHED_SOURCE:
        require_cached(name)
    raw = call_source(load_option("dataset", name))
    X = load_dataset(dataset_config(name, preprocess="standardize")).X
    varying = np.ptp(raw.X, axis=0) > 0
    np.testing.assert_allclose(X[:, varying].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X[:, varying].std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(X[:, ~varying], 0.0)


def test_mice_protein_mean_imputation_fills_the_observed_column_means():
    require_cached("mice_protein")
    raw = cached("mice_protein")
    missing = np.isnan(raw.X)
    assert missing.sum() == 1396
    X = load_dataset(dataset_config("mice_protein", impute="mean", preprocess="none")).X
    assert not np.isnan(X).any()
    rows, columns = np.nonzero(missing)
    observed_means = np.nanmean(raw.X, axis=0)
    np.testing.assert_allclose(X[rows, columns], observed_means[columns], rtol=1e-12)
    np.testing.assert_array_equal(X[~missing], raw.X[~missing])


def test_mice_protein_without_imputation_is_a_user_error_naming_the_setting():
    require_cached("mice_protein")
    with pytest.raises(UserError, match=r"dataset\.impute"):
        load_dataset(dataset_config("mice_protein", impute=None))


@pytest.mark.parametrize(("name", "size"), [("wine", 60), ("ctg", 500)])
def test_stratified_subsample_keeps_class_proportions_and_is_seeded(name, size):
    if load_option("dataset", name).source._target_ == CACHED_SOURCE:
        require_cached(name)
    full = load_dataset(dataset_config(name, preprocess="none"))
    first = load_dataset(dataset_config(name, preprocess="none", subsample=size, subsample_seed=3))
    again = load_dataset(dataset_config(name, preprocess="none", subsample=size, subsample_seed=3))
    other = load_dataset(dataset_config(name, preprocess="none", subsample=size, subsample_seed=4))
    assert first.X.shape == (size, full.X.shape[1])
    expected = np.bincount(full.y) * size / len(full.y)
    assert np.all(np.abs(np.bincount(first.y, minlength=len(expected)) - expected) <= 1)
    np.testing.assert_array_equal(first.X, again.X)
    np.testing.assert_array_equal(first.y, again.y)
    assert not np.array_equal(first.X, other.X)


# --- the OpenML route (no network: openml.datasets.get_dataset is replaced) ---------------------


class FakeOpenMLDataset:
    default_target_attribute = "kind"
    labels = ("mammal", "fish", "crab", "bird", "fish")

    def get_data(self, target, dataset_format):
        assert (target, dataset_format) == ("kind", "dataframe")
        frame = pd.DataFrame(
            {
                "animal": ["aardvark", "bass", "crab", "dove", "eel"],  # a string id: dropped
                "legs": [4.0, 0.0, 6.0, 2.0, np.nan],
                "hair": [True, False, False, False, False],
                "size": pd.Categorical(["big", "small", None, "small", "big"], categories=["small", "big"]),
            }
        )
        labels = pd.Series(list(self.labels), name="kind")
        return frame, labels, [False, False, False, True], list(frame.columns)


@pytest.fixture
def fake_openml(tmp_path, monkeypatch):
    """An empty data cache in ``tmp_path`` and a stub ``get_dataset`` that records the ids asked for."""
    import openml

    requested = []

    def get_dataset(dataset_id, **_):
        requested.append(dataset_id)
        return FakeOpenMLDataset()

    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    monkeypatch.setattr(openml.datasets, "get_dataset", get_dataset)
    return requested


def test_openml_fetch_encodes_columns_and_writes_the_cache(tmp_path, fake_openml, monkeypatch):
    import openml

    raw = cached("toy_zoo", openml_id=4242, drop_columns=("animal",), n_train=3)
    assert fake_openml == [4242]
    expected_X = np.array(
        [  # legs, hair (bool -> 0/1), size (category code; missing -> NaN)
            [4.0, 1.0, 1.0],
            [0.0, 0.0, 0.0],
            [6.0, 0.0, np.nan],
            [2.0, 0.0, 0.0],
            [np.nan, 0.0, 1.0],
        ]
    )
    np.testing.assert_array_equal(raw.X, expected_X)
    np.testing.assert_array_equal(raw.y, [3, 2, 1, 0, 2])  # bird, crab, fish, mammal in sorted order
    assert raw.n_train == 3

    stored = read_npz(tmp_path / "toy_zoo.npz")
    np.testing.assert_array_equal(stored.X, expected_X)
    np.testing.assert_array_equal(stored.y, raw.y)
    assert stored.n_train == 3

    # A second load reads the cache file and never reaches OpenML.
    monkeypatch.setattr(openml.datasets, "get_dataset", lambda *_, **__: pytest.fail("fetched twice"))
    spec = OmegaConf.create(
        {
            "name": "toy_zoo",
            "n_clusters": 4,
            "source": {"_target_": CACHED_SOURCE, "name": "toy_zoo", "openml_id": 4242, "n_train": 3},
            "preprocess": "none",
            "impute": "zero",
            "split": "train",
        }
    )
    train = load_dataset(spec)
    np.testing.assert_array_equal(train.X, np.nan_to_num(expected_X[:3]))
    np.testing.assert_array_equal(train.y, [3, 2, 1])


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["10", "2", "2", "1", "10"], [2, 1, 1, 0, 2]),  # numbers sort as numbers
        (["1", "1.0", "1", "2", "1.0"], [0, 1, 0, 2, 1]),  # two spellings stay two classes
        (["b", "10", "a", "2", "b"], [3, 0, 2, 1, 3]),  # mixed: as text
    ],
)
def test_openml_targets_are_numbered_one_class_per_value(fake_openml, monkeypatch, labels, expected):
    monkeypatch.setattr(FakeOpenMLDataset, "labels", labels)
    np.testing.assert_array_equal(cached("toy_zoo", openml_id=1, drop_columns=("animal",)).y, expected)


@pytest.mark.parametrize("missing", [None, np.nan])
def test_an_openml_target_with_missing_values_is_a_user_error(fake_openml, monkeypatch, missing):
    monkeypatch.setattr(FakeOpenMLDataset, "labels", ["a", missing, "b", "a", "b"])
    with pytest.raises(UserError, match=r"OpenML dataset 1 has 1 rows without a target \('kind'\)"):
        cached("toy_zoo", openml_id=1, drop_columns=("animal",))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, r"column 'animal' is not numeric.*source\.drop_columns in conf/dataset/toy_zoo\.yaml$"),
        ({"drop_columns": ("animal",), "n_train": 5}, r"n_train=5"),
    ],
)
def test_openml_data_that_cannot_be_encoded_is_a_user_error(tmp_path, fake_openml, kwargs, message):
    with pytest.raises(UserError, match=message):
        cached("toy_zoo", openml_id=4242, **kwargs)
    assert not (tmp_path / "toy_zoo.npz").exists()


def test_drop_columns_hint_names_a_user_dataset_file(tmp_path, fake_openml, monkeypatch):
    from clusterbench.catalog import CONFIG_DIR_ENV

    own = tmp_path / "own"
    (own / "dataset").mkdir(parents=True)
    (own / "dataset" / "toy_zoo.yaml").write_text("name: toy_zoo\n")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(own))
    own_file = re.escape(str(own / "dataset" / "toy_zoo.yaml"))
    with pytest.raises(UserError, match=rf"source\.drop_columns in {own_file}$"):
        cached("toy_zoo", openml_id=4242)


def test_openml_network_failure_is_a_user_error(tmp_path, monkeypatch):
    import openml

    def offline(*_, **__):
        raise ConnectionError("no route to host")

    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    monkeypatch.setattr(openml.datasets, "get_dataset", offline)
    # the message names the offline fix, not just the failure
    fix = r"put toy_zoo\.npz in a folder and run `clusterbench data import FOLDER`"
    with pytest.raises(UserError, match=r"could not fetch dataset 'toy_zoo'.*ConnectionError.*" + fix):
        cached("toy_zoo", openml_id=4242)
    assert list(tmp_path.iterdir()) == []


# --- generators ----------------------------------------------------------------------------------

GENERATED_SHAPES = {  # name: (n, d, number of clusters), as the docstrings state
    "blobs": (5000, 2, 100),
    "classification": (5000, 10, 100),
    "birch_grid": (2500, 2, 25),
    "birch_random": (2500, 2, 25),
    "clam_elongated": (625, 2, 3),
    "clam_outliers": (803, 2, 2),
}


@pytest.mark.parametrize(("name", "size"), GENERATED_SHAPES.items())
def test_generator_is_deterministic_with_its_documented_shape(name, size):
    n, d, k = size
    make = getattr(generators, name)
    first, again = make(), make()
    np.testing.assert_array_equal(first.X, again.X)
    np.testing.assert_array_equal(first.y, again.y)
    assert first.X.shape == (n, d)
    assert first.y.shape == (n,)
    assert first.y.dtype == np.int64
    np.testing.assert_array_equal(np.unique(first.y[first.y < k]), np.arange(k))
    assert not np.array_equal(make(random_state=1).X, first.X)


def test_khatri_rao_generators_have_table_1_imbalance():
    assert np.bincount(generators.blobs().y).tolist() == [50] * 100  # imbalance ratio 1.00
    sizes = np.bincount(generators.classification().y)
    assert round(sizes.min() / sizes.max(), 2) == 0.91


def test_birch_grid_draws_unit_gaussians_on_the_4_sqrt2_grid():
    data = generators.birch_grid()
    steps = (np.arange(5) + 0.5) * 4 * math.sqrt(2)
    centres = np.array([(x, y) for x in steps for y in steps])
    assert np.bincount(data.y).tolist() == [100] * 25
    residuals = data.X - centres[data.y]
    assert np.abs(residuals.std() - 1.0) < 0.03
    means = np.array([residuals[data.y == c].mean(axis=0) for c in range(25)])
    assert np.abs(means).max() < 0.4  # 100 points per cluster: standard error 0.1


def test_birch_random_centres_lie_in_the_grid_square():
    data = generators.birch_random()
    box = 5 * 4 * math.sqrt(2)
    means = np.array([data.X[data.y == c].mean(axis=0) for c in range(25)])
    assert np.all((means > -0.4) & (means < box + 0.4))
    assert np.abs(np.ptp(means, axis=0) - box).max() < 0.3 * box  # spread over the square


def test_clam_outliers_are_the_last_rows_with_their_own_label():
    data = generators.clam_outliers()
    np.testing.assert_array_equal(data.y[-3:], [2, 2, 2])
    np.testing.assert_array_equal(data.X[-3:], generators.CLAM_TOY_OUTLIERS)
    assert np.bincount(data.y[:-3]).tolist() == [400, 400]
    inliers = generators.clam_elongated(n_per_cluster=(400, 400))
    np.testing.assert_array_equal(data.X[:-3], inliers.X)


def test_a_generator_asked_for_an_empty_class_is_a_user_error():
    with pytest.raises(UserError, match=r"needs at least one point, got n_per_cluster=\[10, 0, 10\]"):
        generators.clam_elongated(n_per_cluster=(10, 0, 10))  # labels [0, 2] before
    with pytest.raises(UserError, match="double_mnist needs n_samples ≥ 100"):
        generators.double_mnist(n_samples=99)  # checked before MNIST is read


def test_clam_elongated_clusters_lie_along_the_diagonal():
    data = generators.clam_elongated()
    for c, centre_x in enumerate([0.2, 0.5, 0.8]):
        points = data.X[data.y == c]
        np.testing.assert_allclose(points.mean(axis=0), [centre_x, 0.5], atol=0.03)
        along, across = np.linalg.eigvalsh(np.cov(points.T))[::-1]
        assert along > 20 * across  # covariance eigenvalues 0.0205 and 0.0005


# --- configs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", options("dataset"))
def test_dataset_config_parses_with_the_required_keys(name):
    spec = OmegaConf.load(CONF_DIR / "dataset" / f"{name}.yaml")
    assert set(spec.keys()) >= REQUIRED_KEYS
    assert spec.name == name
    assert isinstance(spec.description, str) and spec.description
    if spec.source._target_ == USER_FILE_SOURCE:  # a user's file: its shape and classes are the file's
        assert spec.shape is None and spec.n_clusters is None
    else:
        n, d = spec.shape
        assert n > 0 and d > 0 and spec.n_clusters >= 2
    source = OmegaConf.to_container(spec.source, resolve=True)
    function = get_method(source.pop("_target_"))
    inspect.signature(function).bind(**source)  # every source key is a parameter of the function
    assert spec.preprocess in PREPROCESSORS
    assert spec.impute in (None, "mean", "zero")
    assert spec.split in (None, "train", "test")


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in options("dataset")
        if load_option("dataset", n).source._target_ not in (CACHED_SOURCE, USER_FILE_SOURCE)
    ],
)
def test_generated_and_bundled_configs_match_their_data(name):
    spec = load_option("dataset", name)
    if name == "double_mnist":  # generated from the cached MNIST
        require_cached("mnist")
    raw = call_source(spec)
    assert list(raw.X.shape) == list(spec.shape)
    labels = set(np.unique(raw.y).tolist())
    k = spec.n_clusters
    assert labels >= set(range(k))
    assert labels - set(range(k)) <= {k}  # at most one extra value: the outlier label k


def test_double_mnist_puts_digit_a_left_of_digit_b():
    require_cached("mnist")
    mnist = load_option("dataset", "mnist")
    digits = call_source(mnist)
    raw = generators.double_mnist(n_samples=250, random_state=3)
    assert raw.X.shape == (250, 28 * 56)
    assert np.bincount(raw.y).tolist() == [3] * 50 + [2] * 50  # n // 100 each, the first n % 100 once more
    images = raw.X.reshape(-1, 28, 56)
    lookup = {row.tobytes(): label for row, label in zip(digits.X.astype(np.float32), digits.y, strict=True)}
    for image, label in zip(images[::25], raw.y[::25], strict=True):
        left = np.ascontiguousarray(image[:, :28]).reshape(-1)
        right = np.ascontiguousarray(image[:, 28:]).reshape(-1)
        assert int(lookup[left.tobytes()]) == label // 10
        assert int(lookup[right.tobytes()]) == label % 10


def test_verify_checks_labels_against_n_classes_where_n_clusters_is_a_choice(tmp_path):
    from clusterbench.data.cache import check_files

    spec = load_option("dataset", "kdd_protein")
    n, d = spec.shape
    y = np.arange(n) % spec.n_classes  # 153 protein blocks, clustered with n_clusters = 50
    np.savez(tmp_path / "kdd_protein.npz", X=np.zeros((n, d), dtype=np.uint8), y=y)
    assert check_files(tmp_path) == {"kdd_protein": "ok"}
    np.savez(tmp_path / "kdd_protein.npz", X=np.zeros((n, d), dtype=np.uint8), y=np.arange(n) % 50)
    assert check_files(tmp_path) == {
        "kdd_protein": "MISMATCH: X [145751, 74], labels 50 (its config: X [145751, 74], labels 153)"
    }


def test_double_mnist_without_mnist_is_a_one_line_user_error(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path))

    def offline(name, *args, **kwargs):
        raise UserError(f"could not fetch dataset '{name}' from OpenML")

    monkeypatch.setattr("clusterbench.data.sources.fetch_openml", offline)
    with pytest.raises(UserError, match="could not fetch dataset 'mnist'"):
        generators.double_mnist(100)


# --- a user's own file -----------------------------------------------------------------------


def own_file(tmp_path, monkeypatch, X, y, **config):
    """Load ``toy.npz`` (X, y) through a minimal dataset config, as a user's one-file dataset."""
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    np.savez(tmp_path / "toy.npz", X=np.asarray(X, dtype=float), y=np.asarray(y))
    return load_dataset(
        {"name": "toy", "n_clusters": 2, "source": {"_target_": CACHED_SOURCE, "name": "toy"}, **config}
    )


@pytest.mark.parametrize(
    ("y", "expected"),
    [
        (["b", "a", "b", "c"], [1, 0, 1, 2]),  # text: numbered in sorted order
        ([0.05, 0.15, 0.05, 0.35], [0, 1, 0, 2]),  # fractional numbers: not truncated to 0
        ([2.0, -1.0, 2.0, 7.0], [2, -1, 2, 7]),  # integer-valued: kept (ignore_label -1 still names it)
        ([3, 1, 3, 0], [3, 1, 3, 0]),
    ],
)
def test_labels_of_any_type_become_integers_that_keep_the_partition(tmp_path, monkeypatch, y, expected):
    data = own_file(tmp_path, monkeypatch, np.arange(8).reshape(4, 2), y)
    assert data.y.dtype == np.int64 and data.y.tolist() == expected


def test_missing_labels_and_infinite_features_are_one_line_user_errors(tmp_path, monkeypatch):
    with pytest.raises(UserError, match="dataset 'toy' has 1 missing or infinite labels in y"):
        own_file(tmp_path, monkeypatch, np.zeros((3, 2)), [0.0, np.nan, 1.0])
    with pytest.raises(UserError, match="dataset 'toy' has 2 infinite values in X"):
        own_file(tmp_path, monkeypatch, [[0, np.inf], [1, 2], [-np.inf, 3]], [0, 1, 1])


def test_the_imputation_hint_is_an_override_that_works_on_the_users_config(tmp_path, monkeypatch):
    X = [[0, np.nan], [1, 2], [2, 3]]
    with pytest.raises(UserError, match=r"set \+dataset\.impute=mean or zero$"):  # the config has no key
        own_file(tmp_path, monkeypatch, X, [0, 1, 1])
    with pytest.raises(UserError, match=r"; set dataset\.impute=mean or zero$"):
        own_file(tmp_path, monkeypatch, X, [0, 1, 1], impute=None)
    assert own_file(tmp_path, monkeypatch, X, [0, 1, 1], impute="zero").X[0, 1] == 0.0


def test_a_feature_with_no_value_cannot_be_mean_imputed(tmp_path, monkeypatch):
    X = [[0, np.nan], [1, np.nan], [2, np.nan]]  # nanmean of the column is NaN: it stayed NaN before
    with pytest.raises(UserError, match=r"1 feature\(s\) with no value \(first: column 1\).*impute=zero$"):
        own_file(tmp_path, monkeypatch, X, [0, 1, 1], impute="mean")


def test_max_scale_refuses_a_maximum_that_is_not_positive():
    with pytest.raises(UserError, match=r"max_scale needs a positive maximum, got 0\.0"):
        PREPROCESSORS["max_scale"](np.zeros((2, 2)))  # NaN everywhere before
    with pytest.raises(UserError, match=r"got -1\.0"):
        PREPROCESSORS["max_scale"](-np.arange(1.0, 5.0).reshape(2, 2))  # every sign flipped before


def test_a_constant_feature_standardizes_to_zero_despite_its_rounding_std():
    X = np.column_stack([np.full(1000, 0.1), np.arange(1000.0)])
    assert X[:, 0].std() > 0  # 1.4e-17: a rounding error, which scaled the column to 100 before
    np.testing.assert_allclose(PREPROCESSORS["standardize"](X)[:, 0], 0.0, atol=1e-12)


def test_import_copies_the_manifest_so_verify_checks_checksums(tmp_path, monkeypatch):
    from clusterbench.data.cache import check_files, import_folder

    folder, cache = tmp_path / "mine", tmp_path / "cache"
    folder.mkdir()
    spec = load_option("dataset", "zoo")
    np.savez(folder / "zoo.npz", X=np.zeros(spec.shape), y=np.arange(spec.shape[0]) % spec.n_clusters)
    rows = pd.DataFrame({"name": ["zoo"], "sha256_of_npz": ["0" * 64]})
    rows.to_csv(folder / "MANIFEST.csv", index=False)
    import_folder(folder, cache)
    assert check_files(cache) == {"zoo": "MISMATCH: sha256 differs from MANIFEST.csv"}
    with pytest.raises(UserError, match="no folder"):
        import_folder(tmp_path / "nowhere", cache)


def test_import_names_the_files_no_dataset_config_reads(tmp_path, capsys):

    folder = tmp_path / "mine"
    folder.mkdir()
    spec = load_option("dataset", "zoo")
    np.savez(folder / "zoo.npz", X=np.zeros(spec.shape), y=np.arange(spec.shape[0]) % spec.n_clusters)
    import_folder(folder, tmp_path / "cache")
    assert "no dataset config" not in capsys.readouterr().out
    np.savez(folder / "mystery.npz", X=np.zeros((4, 2)), y=np.arange(4) % 2)
    import_folder(folder, tmp_path / "cache")
    out = capsys.readouterr().out
    assert "imported 2 file(s)" in out
    assert "no dataset config reads mystery.npz:" in out
    assert f"dataset.path={(tmp_path / 'cache' / 'mystery.npz').resolve()}," in out
    assert "zoo.npz:" not in out


def test_labels_from_a_users_own_source_function_of_mixed_or_missing_objects():
    from clusterbench.data import as_labels

    assert as_labels(np.array([1, "a", 1], dtype=object), "toy").tolist() == [0, 1, 0]
    assert as_labels(np.array([1e19, 0.0]), "toy").tolist() == [1, 0]  # beyond int64: numbered
    with pytest.raises(UserError, match="1 missing or infinite labels"):
        as_labels(np.array(["x", None], dtype=object), "toy")


def _embeddings(path, *overrides):
    cfg = OmegaConf.merge(load_option("dataset", "embeddings"), OmegaConf.from_dotlist([*overrides]))
    if path is not None:
        cfg.path = str(path)
    return load_dataset(cfg)


def test_a_users_embeddings_file_loads_with_its_class_count(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    np.savez(tmp_path / "feats.npz", X=X, y=np.repeat([3, 7, 9], 10))
    data = _embeddings(tmp_path / "feats.npz")
    assert data.n_clusters == 3  # n_clusters: null counts the classes of y
    np.testing.assert_array_equal(data.X, X)  # representations as given: no preprocessing
    assert _embeddings(tmp_path / "feats.npz", "n_clusters=5").n_clusters == 5


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "dataset.path is not set"),
        ("missing", "is no file"),
        (b"not an npz", "cannot read"),
        ({"X": np.zeros((4, 2))}, "lacks array(s) ['y']"),
        ({"X": np.zeros((4, 2)), "y": np.zeros(3)}, "holds X (4, 2) and y (3,)"),
    ],
)
def test_a_missing_or_malformed_embeddings_file_is_one_user_error_naming_the_fix(tmp_path, content, expected):
    path = None if content is None else tmp_path / "feats.npz"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, dict):
        np.savez(path, **content)
    with pytest.raises(UserError) as error:
        _embeddings(path)
    message = str(error.value)
    assert expected in message and "dataset.path=FILE.npz" in message


def test_a_dataset_config_of_ones_own_names_itself_and_its_source_path_when_the_file_is_missing(tmp_path):
    # docs/extending.md's recipe: the path lies in the config's source, so that is the key to fix
    # (dataset.path is embeddings' own key, and would be refused here).
    missing = tmp_path / "nope.npz"
    config = {"name": "myblobs", "n_clusters": 4, "preprocess": "none"}
    config["source"] = {"_target_": USER_FILE_SOURCE, "path": str(missing)}
    with pytest.raises(UserError) as error:
        load_dataset(config)
    assert str(error.value) == (
        f"dataset 'myblobs': dataset.source.path {missing} is no file; "
        "give dataset.source.path=FILE.npz, a file with arrays X (n, d) and y (n,)"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"_target_": "builtins.dict", "X": [[0.0], [1.0]], "y": [0, 1]}, "returned dict"),
        ({"_target_": RAW_DATA, "X": [[0.0], [1.0], [2.0]], "y": [0, 1]}, "returned X (3, 1) and y (2,)"),
        ({"_target_": RAW_DATA, "X": [0.0, 1.0, 2.0], "y": [0, 1, 1]}, "returned X (3,) and y (3,)"),
    ],
)
def test_a_users_source_that_returns_no_raw_data_or_rows_and_labels_that_disagree_is_one_user_error(
    source, expected
):
    config = {"name": "mycsv", "n_clusters": 2, "preprocess": "none", "source": source}
    with pytest.raises(UserError) as error:
        load_dataset(config)
    assert str(error.value) == (
        f"dataset 'mycsv': its source {source['_target_']} {expected}; "
        "return clusterbench.data.sources.RawData(X=..., y=...) with X (n, d) and y (n,)"
    )


def test_an_embeddings_file_named_bare_points_to_the_data_folder_that_holds_it(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    np.savez(tmp_path / "cache" / "feats.npz", X=np.zeros((4, 2)), y=np.arange(4) % 2)
    monkeypatch.chdir(tmp_path)  # where feats.npz is not
    held = tmp_path / "cache" / "feats.npz"
    with pytest.raises(UserError, match=re.escape(f"a data folder holds {held}: give dataset.path={held}")):
        _embeddings("feats.npz")
    with pytest.raises(UserError, match=re.escape("give dataset.path=FILE.npz")):  # held nowhere
        _embeddings("other.npz")


def test_column_major_images_are_loaded_row_major(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    images = np.arange(4 * 2 * 3, dtype=float).reshape(4, 2, 3)  # four 2×3 images, H = 2, W = 3
    stored = images.transpose(0, 2, 1).reshape(4, 6)  # column by column, as Matlab writes them
    np.savez(tmp_path / "faces.npz", X=stored, y=np.array([0, 0, 1, 1]))
    faces = {"name": "faces", "n_clusters": 2, "preprocess": "none"}
    faces["source"] = {"_target_": CACHED_SOURCE, "name": "faces", "openml_id": None}
    assert_array_equal(load_dataset(faces).X, stored)  # untouched without the key
    loaded = load_dataset({**faces, "column_major_images": [2, 3]})
    assert_array_equal(loaded.X, images.reshape(4, 6))
    for wrong, shown in (([3, 3], r"\[3, 3\]"), (6, "6"), ("2x3", "'2x3'"), ([2, 3, 1], r"\[2, 3, 1\]")):
        with pytest.raises(UserError, match=rf"\[H, W\] with H·W = its 6 features, got {shown}; fix"):
            load_dataset({**faces, "column_major_images": wrong})
    assert list(dataset_config("cmu_pie").column_major_images) == [32, 32]


def test_an_npz_header_gives_the_shape_a_run_reads_and_the_labels(tmp_path):
    X, y = np.zeros((6, 3), dtype=np.float32), np.array([4, 4, 1, 1, 9, 9])
    np.savez(tmp_path / "plain.npz", X=X, y=y)
    np.savez_compressed(tmp_path / "packed.npz", X=np.asfortranarray(np.zeros((5, 2))), y=y[:5], n_train=3)
    np.savez(tmp_path / "no_y.npz", X=X)
    np.savez(tmp_path / "flat.npz", X=np.zeros(6), y=y)
    np.savez(tmp_path / "short_y.npz", X=X, y=y[:5])
    np.savez(tmp_path / "objects.npz", X=np.array([[None, 1]] * 6, dtype=object), y=y)
    (tmp_path / "text.npz").write_text("x,y\n1,2\n")
    plain, packed = npz_header(tmp_path / "plain.npz"), npz_header(tmp_path / "packed.npz")
    assert (plain.n, plain.d, plain.n_train) == (6, 3, None) and plain.y.tolist() == y.tolist()
    assert (packed.n, packed.d, packed.n_train) == (5, 2, 3)
    for name in ("no_y", "flat", "short_y", "objects", "text", "absent"):  # a run refuses them: "?"
        assert npz_header(tmp_path / f"{name}.npz") is None, name


# From a second mutation audit of the suite: each test below failed with one plausible bug in
# place and passed without it.


def test_the_smaller_of_dataset_subsample_and_profile_cap_wins_whichever_is_larger():
    """subsample=60 under a profile cap of 1000 had quietly used all 150 rows with max() in place
    of min(): no test gave both limits with one of them above n."""
    cfg = {
        "name": "iris",
        "source": {"_target_": "clusterbench.data.sources.sklearn_bundled", "loader": "load_iris"},
        "n_clusters": None,
    }
    assert len(load_dataset({**cfg, "subsample": 60}, max_samples=1000).y) == 60
    assert len(load_dataset({**cfg, "subsample": 1000}, max_samples=90).y) == 90


def test_the_data_digest_covers_every_row_and_every_label():
    """A record is stale when its data changed anywhere: the last row's last value or the last
    label changes the digest (a digest of the first row alone passed every other test)."""
    X, y = np.arange(12.0).reshape(4, 3), np.array([0, 0, 1, 1])
    later_row, later_label = X.copy(), y.copy()
    later_row[3, 2] += 1.0
    later_label[3] = 2
    assert len({data_digest(X, y), data_digest(later_row, y), data_digest(X, later_label)}) == 3


class _OpenMLWithNumericTargets:
    default_target_attribute = "kind"

    def get_data(self, target, dataset_format):
        frame = pd.DataFrame({"legs": [4.0, 0.0, 6.0, 2.0, 8.0]})
        return frame, pd.Series(["3", "10", "2", "1", "3"], name="kind"), [False], ["legs"]


def test_numeric_openml_targets_are_numbered_by_rank_with_four_classes(tmp_path, monkeypatch):
    """Numeric class names are numbered by value, 1 → 0, 2 → 1, 3 → 2, 10 → 3 (by hand), not in
    text order. Three classes ("1", "10", "2") could not tell the ranks from their inverse, a
    permutation that is its own inverse."""
    import openml

    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    monkeypatch.setattr(openml.datasets, "get_dataset", lambda *_, **__: _OpenMLWithNumericTargets())
    assert_array_equal(cached("toy_ranks", openml_id=1).y, [2, 3, 1, 0, 2])


# From a third mutation audit of the suite (data/): each test below failed with one plausible bug
# in place and passed without it.


def test_minmax_scales_each_feature_from_its_own_minimum_and_maps_a_constant_feature_to_zero():
    """Every feature of PIXELS starts at 0, so a global minimum passed; a constant feature's span
    is 0, and 0/0 made it NaN rather than the documented 0."""
    X = np.array([[10.0, -4.0, 7.0], [20.0, 0.0, 7.0], [15.0, -2.0, 7.0]])
    expected = [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.5, 0.5, 0.0]]
    np.testing.assert_allclose(PREPROCESSORS["minmax"](X), expected, atol=1e-12)


def test_a_stratified_subsample_keeps_the_files_row_order():
    """StratifiedShuffleSplit returns its indices shuffled; unsorted, a subsample reordered the
    rows (and so the digest and any order-dependent method) with no test noticing."""
    y = np.repeat([0, 1, 2], 20)
    index = stratified_subsample(y, 15, seed=0)
    assert len(index) == 15 and np.all(np.diff(index) > 0)
    assert np.bincount(y[index]).tolist() == [5, 5, 5]


def test_the_loaded_digest_is_the_digest_of_the_float64_rows_and_labels_a_method_gets():
    """A digest taken of a float32 copy missed changes below float32 precision (0.1 + 1e-12)."""
    cfg = {
        "name": "iris",
        "source": {"_target_": "clusterbench.data.sources.sklearn_bundled", "loader": "load_iris"},
        "n_clusters": None,
    }
    data = load_dataset(cfg, prepare=False)
    assert data.X.dtype == np.float64
    assert data.digest == data_digest(data.X, data.y)


def test_mean_imputation_comes_before_standardizing(tmp_path, monkeypatch):
    """Standardizing first spread one NaN over its whole feature (its mean is NaN), which mean
    imputation then refused or zero filled: the filled cell must be the observed mean, i.e. 0."""
    X = [[0.0, np.nan], [1.0, 2.0], [2.0, 4.0]]
    data = own_file(tmp_path, monkeypatch, X, [0, 1, 1], impute="mean", preprocess="standardize")
    scale = math.sqrt(1.5)
    np.testing.assert_allclose(data.X[:, 1], [0.0, -scale, scale], atol=1e-12)


def test_the_data_digest_tells_apart_shapes_that_hold_the_same_bytes():
    """The same 12 values as 4 rows of 3 features or 3 rows of 4 are different data; a digest of
    the bytes alone gave them one digest."""
    X, y = np.arange(12.0).reshape(4, 3), np.array([0, 0, 1])
    assert data_digest(X, y) != data_digest(X.reshape(3, 4), y)


def test_features_load_as_float64_whatever_the_file_stores(tmp_path, monkeypatch):
    """Image files store float32 (yale, usps, mnist) or small integers; kept as stored, their X and
    so their digest changed with the file's dtype rather than with the data."""
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    y = np.array([0, 1, 1])
    np.savez(tmp_path / "toy.npz", X=np.array([[0, 255], [51, 3], [7, 8]], dtype=np.uint8), y=y)
    source = {"_target_": CACHED_SOURCE, "name": "toy"}
    data = load_dataset({"name": "toy", "n_clusters": 2, "source": source})
    assert data.X.dtype == np.float64
    assert data.X.tolist() == [[0.0, 255.0], [51.0, 3.0], [7.0, 8.0]]
    assert data.digest == data_digest(data.X, y)


def test_clam_elongated_clusters_have_the_authors_covariance():
    """z @ chol instead of z @ chol.T draws covariance LᵀL ([[0.020, 0.003], [0.003, 0.001]]):
    still a cluster tilted towards the diagonal, but not the authors' shape."""
    X = generators.clam_elongated(n_per_cluster=(4000,), random_state=0).X
    np.testing.assert_allclose(np.cov(X.T), generators.CLAM_TOY_COVARIANCE, atol=1.5e-3)


def test_a_reimported_manifest_row_replaces_the_caches_row_of_that_name(tmp_path):
    """Keeping the cache's older row left a re-imported file's new checksum unrecorded, so that
    `data verify` reported the new, correct file as a mismatch."""
    from clusterbench.data.cache import import_folder

    cache = tmp_path / "cache"
    for version in ("old", "new"):
        folder = tmp_path / version
        folder.mkdir()
        np.savez(folder / "toy.npz", X=np.zeros((2, 1)), y=np.array([0, 1]))
        (folder / "MANIFEST.csv").write_text(f"name,sha256_of_npz\ntoy,{version}\n")
        import_folder(folder, cache)
    assert pd.read_csv(cache / "MANIFEST.csv").set_index("name").loc["toy", "sha256_of_npz"] == "new"

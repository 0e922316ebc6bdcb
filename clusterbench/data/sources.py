"""Where raw data comes from: ``.npz`` files in the data folders (filled from OpenML), scikit-learn,
generators.

Every source is a plain function named by ``_target_`` in ``conf/dataset/*.yaml`` and returns
:class:`RawData`; adding a source is adding a function.
"""

from __future__ import annotations

import inspect
import io
import os
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from hydra.utils import get_method
from omegaconf import DictConfig, OmegaConf

from clusterbench.catalog import option_label
from clusterbench.errors import UserError, first_line
from clusterbench.results import atomic_write_bytes

DATA_ENV = "CLUSTERBENCH_DATA"


@dataclass(frozen=True)
class RawData:
    """Features and labels as the source stores them; ``n_train`` marks a train/test boundary."""

    X: np.ndarray
    y: np.ndarray
    n_train: int | None = None


# The small public datasets shipped inside the package (UCI, CC BY 4.0; see bundled/LICENSE.md), as
# scikit-learn ships iris: a fresh offline install runs them with no data folder set up.
BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"


@dataclass(frozen=True)
class DataFolder:
    """One place a dataset's ``<name>.npz`` is looked for; ``label`` says which (``list``, ``data where``)."""

    label: str
    path: Path


def user_cache_dir() -> Path:
    """The user's data cache, ``~/.cache/clusterbench``."""
    return Path.home() / ".cache" / "clusterbench"


def cache_dir() -> Path:
    """The writable data folder, where ``data pull``, ``data import`` and an OpenML fetch write:
    ``$CLUSTERBENCH_DATA`` if set, else the user cache ``~/.cache/clusterbench``."""
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser() if env else user_cache_dir()


def data_folders() -> list[DataFolder]:
    """Where a dataset's ``<name>.npz`` is looked for, in order; the first folder holding it wins:

    1. ``$CLUSTERBENCH_DATA``, if set;
    2. the user cache ``~/.cache/clusterbench`` (written to when the variable is unset);
    3. the copies bundled with the package (:data:`BUNDLED_DIR`).

    A copy cached by hand or by a fetch therefore wins over the bundled one.
    """
    folders = []
    env = os.environ.get(DATA_ENV)
    if env:
        folders.append(DataFolder(f"${DATA_ENV}", Path(env).expanduser()))
    folders.append(DataFolder("cache", user_cache_dir()))
    folders.append(DataFolder("bundled", BUNDLED_DIR))
    # A variable naming the user cache itself would list it twice.
    unique = {}
    for folder in folders:
        unique.setdefault(folder.path.resolve(), folder)
    return list(unique.values())


def find_npz(name: str) -> tuple[DataFolder, Path] | None:
    """The folder that holds ``<name>.npz`` first in :func:`data_folders`' order, with the file's
    path; None where no folder holds it."""
    for folder in data_folders():
        path = folder.path / f"{name}.npz"
        if path.is_file():
            return folder, path
    return None


def searched_folders() -> str:
    """The data folders in search order, for a message saying where a file was not found."""
    return ", ".join(str(folder.path) for folder in data_folders())


CACHE_FILE_FIX = "a cache file holds X (n, d) and y (n,); replace it (clusterbench data import / data pull)"


def read_npz(path: Path, fix: str = CACHE_FILE_FIX) -> RawData:
    """A cache file's arrays: X (n, d), y (n,) and, optionally, n_train; anything else is a user
    error naming the file and ``fix``."""
    # numpy would read a text file as a pickle (an empty one it names itself: EOFError)
    if path.is_file() and path.stat().st_size and not zipfile.is_zipfile(path):
        raise UserError(f"cannot read {path} (not an .npz archive, as numpy.savez writes); {fix}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = {"X", "y"} - set(archive.files)
            if missing:
                raise UserError(f"{path} lacks array(s) {sorted(missing)}; {fix}")
            raw = RawData(X=archive["X"], y=archive["y"], n_train=_n_train(archive))
    except UserError:
        raise
    except Exception as exc:  # truncated, empty, not an .npz, pickled, corrupt: numpy raises many types
        raise UserError(f"cannot read {path} ({type(exc).__name__}: {first_line(exc)}); {fix}") from None
    if not _shapes_fit(raw.X.shape, raw.y.shape):
        raise UserError(f"{path} holds X {raw.X.shape} and y {raw.y.shape}; {fix}")
    return raw


def _n_train(archive) -> int | None:
    """The training rows an ``.npz`` says it stores first (``n_train``), if it says."""
    return int(archive["n_train"]) if "n_train" in archive.files else None


def _shapes_fit(x_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> bool:
    """X (n, d) and y (n,): the arrays a data file must hold."""
    return len(x_shape) == 2 and y_shape == (x_shape[0],)


@dataclass(frozen=True)
class NpzHeader:
    """What :func:`npz_header` reads of an ``.npz``: X's shape, the labels, the file's ``n_train``."""

    n: int
    d: int
    y: np.ndarray
    n_train: int | None


def npz_header(path: Path) -> NpzHeader | None:
    """An ``.npz`` as :func:`read_npz` would accept it: X's shape and dtype from its header (the
    array itself is not read), y and ``n_train``; None where a run would refuse the file (missing,
    not such an archive, X not a numeric (n, d) array, y not (n,)), which the run then names."""
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        with np.load(path, allow_pickle=False) as archive, archive.zip.open("X.npy") as member:
            read = readers.get(np.lib.format.read_magic(member))
            shape, _, dtype = read(member) if read else ((), False, np.dtype(object))
            labels, n_train = archive["y"], _n_train(archive)
    except Exception:  # missing, not a zip, no X or y, a pickle, a corrupt header: the listing shows "?"
        return None
    if dtype.hasobject or not _shapes_fit(shape, labels.shape):
        return None
    return NpzHeader(n=shape[0], d=shape[1], y=labels, n_train=n_train)


def reads_cache(source) -> bool:
    """Whether a dataset's ``source`` is :func:`cached`: a cache file, fetched from OpenML if it has an id."""
    return source is not None and str(source.get("_target_", "")).endswith(".cached")


def import_only(source) -> bool:
    """Whether a dataset's ``source`` reads the cache with no download to fall back on (no OpenML id)."""
    return reads_cache(source) and not source.get("openml_id")


def call_source(source, dataset: str | None = None) -> RawData:
    """Call a dataset config's ``source`` (``_target_`` and its arguments). Called directly rather
    than through hydra.utils.instantiate, which would wrap a UserError (e.g. "not in the cache")
    in an InstantiationException. Whatever else the source raises (a user's reader given a path
    that is not there, say) is a user error too, naming ``dataset`` and the source."""
    arguments = (
        OmegaConf.to_container(source, resolve=True) if isinstance(source, DictConfig) else dict(source)
    )
    target = arguments.pop("_target_")
    try:
        raw = get_method(target)(**arguments)
    except UserError as exc:
        if dataset is not None and f"'{dataset}'" not in str(exc):  # which dataset, in a sweep
            exc.args = (f"dataset '{dataset}': {exc}", *exc.args[1:])  # its own class kept
        raise
    except Exception as exc:
        raise UserError(
            f"dataset '{dataset}': its source {target} failed ({type(exc).__name__}: {first_line(exc)}); "
            "check the source's arguments (dataset.source.*) and what it reads"
        ) from exc
    # A user's reader may return a tuple, or rows and labels that disagree: refused here, in one
    # line, rather than as a traceback or a fit recorded as failed at scoring.
    fix = "return clusterbench.data.sources.RawData(X=..., y=...) with X (n, d) and y (n,)"
    if not isinstance(raw, RawData):
        raise UserError(f"dataset '{dataset}': its source {target} returned {type(raw).__name__}; {fix}")
    shapes = np.shape(raw.X), np.shape(raw.y)
    if not _shapes_fit(*shapes):
        raise UserError(
            f"dataset '{dataset}': its source {target} returned X {shapes[0]} and y {shapes[1]}; {fix}"
        )
    return raw


def write_npz(path: Path, data: RawData) -> None:
    """Write atomically (:func:`~clusterbench.results.atomic_write_bytes`)."""
    arrays = {"X": data.X, "y": data.y}
    if data.n_train is not None:
        arrays["n_train"] = np.asarray(data.n_train)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def cached(
    name: str,
    openml_id: int | None = None,
    target: str | None = None,
    drop_columns: tuple[str, ...] = (),
    n_train: int | None = None,
    refresh: bool = False,
) -> RawData:
    """``<name>.npz`` from the first data folder holding it (:func:`data_folders`); on a miss (or
    with ``refresh``), fetch OpenML ``openml_id`` into the writable folder (:func:`cache_dir`).

    ``n_train`` marks the train/test boundary of the fetched rows (OpenML stores none); a cache
    file's own ``n_train`` wins over it, and a file without one (imported as X and y) takes it.
    """
    held = find_npz(name)
    if held is not None and not refresh:
        data = read_npz(held[1])
        if data.n_train is None and n_train is not None:
            data = replace(data, n_train=n_train)  # checked against the rows where a split uses it
        return data
    if openml_id is None:
        raise UserError(
            f"dataset '{name}' is in no data folder ({searched_folders()}) and has no OpenML source: "
            f"put {name}.npz (arrays X, y) in a folder and run `clusterbench data import FOLDER`, "
            f"or set {DATA_ENV}"
        )
    data = fetch_openml(name, openml_id, target, drop_columns, n_train)
    write_npz(cache_dir() / f"{name}.npz", data)
    return data


def fetch_openml(
    name: str, openml_id: int, target: str | None, drop_columns=(), n_train: int | None = None
) -> RawData:
    """Download with the ``openml`` client and encode it as numbers.

    Categorical and boolean columns become their category codes; labels are encoded in sorted
    order (numerically where every label is a number). ``n_train`` is passed through to the result:
    OpenML keeps e.g. MNIST's 60000 train rows first but does not record the boundary.
    """
    import openml
    import pandas as pd

    try:
        dataset = openml.datasets.get_dataset(
            int(openml_id), download_data=True, download_qualities=False, download_features_meta_data=False
        )
        target = target or dataset.default_target_attribute
        frame, labels, _, _ = dataset.get_data(target=target, dataset_format="dataframe")
    except Exception as exc:  # the openml client raises many types for network and server faults
        raise UserError(
            f"could not fetch dataset '{name}' from OpenML (id {openml_id}, {type(exc).__name__}); "
            f"without internet, put {name}.npz in a folder and run `clusterbench data import FOLDER`"
        ) from None
    frame = frame.drop(columns=list(drop_columns), errors="ignore")
    columns = []
    for column in frame.columns:
        series = frame[column]
        if isinstance(series.dtype, pd.CategoricalDtype):
            codes = series.cat.codes.astype(float)
            columns.append(codes.where(codes >= 0, np.nan))
        elif series.dtype == bool or pd.api.types.is_numeric_dtype(series):
            columns.append(series.astype(float))
        else:
            raise UserError(
                f"OpenML dataset {openml_id} column '{column}' is not numeric; add it to "
                f"source.drop_columns in {option_label('dataset', name)}"
            )
    X = np.column_stack([c.to_numpy() for c in columns]) if columns else np.empty((len(frame), 0))
    labels = pd.Series(np.asarray(labels, dtype=object))
    if labels.isna().any():  # "nan" would otherwise become a class of its own, or fail to sort
        raise UserError(
            f"OpenML dataset {openml_id} has {int(labels.isna().sum())} rows without a target "
            f"('{target}'); save it without them as {name}.npz and run `clusterbench data import FOLDER`"
        )
    # One class per distinct value ("1" and "1.0" stay two); numeric values sort as numbers ("2"
    # before "10"), others as strings (LabelEncoder order).
    classes, y = np.unique(labels.astype(str), return_inverse=True)
    as_number = pd.to_numeric(pd.Series(classes), errors="coerce")
    if as_number.notna().all() and as_number.is_unique:
        y = np.argsort(np.argsort(as_number.to_numpy()))[y]
    if n_train is not None and not 0 < n_train < len(y):
        raise UserError(f"source.n_train={n_train} for '{name}' must lie between 0 and its {len(y)} rows")
    return RawData(X=X, y=y.astype(np.int64), n_train=n_train)


def npz_file(path: str | None, path_key: str = "dataset.source.path") -> RawData:
    """A user's own ``.npz`` (X (n, d), y (n,)) read where it lies, e.g. a representation model's
    embeddings of a dataset (``dataset=embeddings dataset.path=FILE.npz``); nothing is copied.
    ``path_key``: the override that sets ``path``, as the messages name it (a dataset config of
    the user's gives ``source.path``; ``embeddings`` passes its own ``path`` down)."""
    fix = f"give {path_key}=FILE.npz, a file with arrays X (n, d) and y (n,)"
    if path is None or not str(path).strip():
        raise UserError(f"{path_key} is not set; {fix}")
    file = Path(str(path)).expanduser()
    if not file.is_file():
        held = find_npz(file.stem) if file.parent == Path(".") and file.suffix == ".npz" else None
        if held is not None:  # a bare name, as `data import` copied it: the path is the folder's
            fix = f"a data folder holds {held[1]}: give {path_key}={held[1]}"
        raise UserError(f"{path_key} {file} is no file; {fix}")
    return read_npz(file, fix)


def sklearn_bundled(loader: str) -> RawData:
    """A data set shipped inside scikit-learn, e.g. ``load_digits``."""
    import sklearn.datasets

    def is_loader(name: str) -> bool:  # load_files, load_sample_image, … return no (X, y)
        function = getattr(sklearn.datasets, name, None) if name.startswith("load_") else None
        return function is not None and "return_X_y" in inspect.signature(function).parameters

    if not is_loader(loader):
        loaders = [name for name in dir(sklearn.datasets) if is_loader(name)]
        raise UserError(
            f"scikit-learn has no dataset loader '{loader}'; dataset.source.loader is one of: "
            f"{', '.join(loaders)}"
        )
    X, y = getattr(sklearn.datasets, loader)(return_X_y=True)
    return RawData(X=X, y=y)

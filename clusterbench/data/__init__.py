"""Datasets: a config in ``conf/dataset/`` names a source and how the paper prepared the data.

``load_dataset`` applies, in order: split (train/test part), images stored column by column
(``column_major_images: [H, W]``, Matlab's order) turned to row-major, stratified subsample (seeded),
the profile's size cap, NaN imputation, then the preprocessing (e.g. ``standardize``). A file
source reads ``<name>.npz`` from the first of :func:`data_folders` holding it: ``$CLUSTERBENCH_DATA``,
the user cache ``~/.cache/clusterbench``, the copies bundled with the package.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf
from sklearn.model_selection import StratifiedShuffleSplit

from clusterbench.data.preprocess import impute, preprocess
from clusterbench.data.sources import RawData, cache_dir, call_source, data_folders, find_npz, reads_cache
from clusterbench.errors import UserError, first_line
from clusterbench.validation import is_int

__all__ = [
    "Dataset",
    "as_labels",
    "cache_dir",
    "data_digest",
    "data_folders",
    "find_npz",
    "load_dataset",
    "stratified_subsample",
]


@dataclass(frozen=True)
class Dataset:
    """Prepared features ``X`` (float64), labels ``y`` (int), and the number of clusters to find."""

    name: str
    X: np.ndarray
    y: np.ndarray
    n_clusters: int
    digest: str = ""  # of the rows and labels before imputation and preprocessing (:func:`data_digest`)


def stratified_subsample(y: np.ndarray, size: int, seed: int) -> np.ndarray:
    """Sorted indices of a class-stratified subsample of ``size`` points (StratifiedShuffleSplit)."""
    splitter = StratifiedShuffleSplit(n_splits=1, train_size=size, random_state=seed)
    try:
        index, _ = next(splitter.split(np.zeros(len(y)), y))
    except ValueError as exc:  # every class needs a point on both sides of the split
        n_classes = len(np.unique(y))
        raise UserError(
            f"cannot draw a class-stratified subsample of {size} of {len(y)} points in {n_classes} "
            f"classes ({first_line(exc)}); choose a size from {n_classes} to "
            f"{len(y) - n_classes}, or at least {len(y)} to keep every point"
        ) from None
    return np.sort(index)


def split_slice(split: str, n_train: int) -> slice:
    """The rows of ``split`` ("train" or "test") in a file that stores its ``n_train`` training
    rows first (MNIST-test is ``mnist``'s rows 60000 on)."""
    return slice(None, n_train) if split == "train" else slice(n_train, None)


def _split(raw: RawData, split: str | None, name: str) -> RawData:
    if split is None:
        return raw
    if split not in ("train", "test"):
        raise UserError(f"dataset.split must be train, test or null, got '{split}'")
    if raw.n_train is None:
        raise UserError(f"dataset '{name}' has no train/test boundary (n_train); remove dataset.split")
    if not 0 < raw.n_train < len(raw.y):
        raise UserError(
            f"dataset '{name}': n_train={raw.n_train} does not split its {len(raw.y)} rows; "
            "give source.n_train for this file, or remove dataset.split"
        )
    part = split_slice(split, raw.n_train)
    return RawData(raw.X[part], raw.y[part])


def load_dataset(cfg: DictConfig | Mapping, max_samples: int | None = None, prepare: bool = True) -> Dataset:
    """Load and prepare the dataset that ``cfg`` (one ``conf/dataset/*.yaml``) describes; with
    ``prepare=False``, stop before imputation and preprocessing (the rows and labels its digest covers)."""
    cfg = OmegaConf.create(dict(cfg)) if not isinstance(cfg, DictConfig) else cfg
    if not (cfg.n_clusters is None or (is_int(cfg.n_clusters) and cfg.n_clusters >= 1)):
        raise UserError(
            f"dataset.n_clusters must be an integer ≥ 1, or null for the number of classes in y, "
            f"got {cfg.n_clusters!r}"
        )
    raw = call_source(cfg.source, cfg.get("name"))
    declared = cfg.get("shape")
    if declared is not None and reads_cache(cfg.source) and list(raw.X.shape) != list(declared):
        raise UserError(
            f"dataset '{cfg.name}': the cached file holds X {list(raw.X.shape)}, its config declares shape "
            f"{list(declared)}; check the cache with `clusterbench data verify` (or fix the config's shape)"
        )
    raw = _split(raw, cfg.get("split"), cfg.name)
    X, y = _features(raw.X, cfg.name), as_labels(raw.y, cfg.name)
    X = _row_major(X, cfg.get("column_major_images"), cfg.name)
    n_clusters = len(np.unique(y)) if cfg.n_clusters is None else cfg.n_clusters
    limits = {"dataset.subsample": cfg.get("subsample"), "profile.max_samples": max_samples}
    for key, size in limits.items():
        if size is not None and not (is_int(size) and size >= 1):
            raise UserError(f"{key} must be an integer ≥ 1 or null, got {size!r}")
    sizes = [size for size in limits.values() if size is not None]
    if sizes and min(sizes) < len(y):
        keep = stratified_subsample(y, min(sizes), int(cfg.get("subsample_seed", 0)))
        X, y = X[keep], y[keep]
    digest = data_digest(X, y)
    if not prepare:
        return Dataset(name=cfg.name, X=X, y=y, n_clusters=n_clusters, digest=digest)
    # The fix names the key as a command line sets it: `+` adds a key the config lacks.
    setting = "dataset.impute" if "impute" in cfg else "+dataset.impute"
    X = preprocess(impute(X, cfg.get("impute"), cfg.name, setting), cfg.get("preprocess"))
    return Dataset(name=cfg.name, X=X, y=y, n_clusters=n_clusters, digest=digest)


def _row_major(X: np.ndarray, shape, name: str) -> np.ndarray:
    """Rows holding H×W images stored column by column (a Matlab file's order: CMU-PIE) as row-major
    images, the order every other image dataset has and a convolutional network expects (the
    SR-K-means code reshapes CMU-PIE with order='F'). Distances between rows do not change."""
    if shape is None:
        return X
    listed = isinstance(shape, Sequence) and not isinstance(shape, str)
    pair = listed and len(shape) == 2
    if not (pair and all(is_int(v) and v >= 1 for v in shape) and shape[0] * shape[1] == X.shape[1]):
        shown = list(shape) if listed else repr(shape)
        raise UserError(
            f"dataset '{name}': column_major_images must be [H, W] with H·W = its {X.shape[1]} features, "
            f"got {shown}; fix dataset.column_major_images or set it to null"
        )
    height, width = shape
    return np.ascontiguousarray(X.reshape(len(X), width, height).transpose(0, 2, 1).reshape(len(X), -1))


def data_digest(X: np.ndarray, y: np.ndarray) -> str:
    """A short digest of the rows and labels a method is given, taken before imputation and
    preprocessing (whose floating-point sums may differ in their last bits between machines),
    whose settings the record's hash covers: a record remembers the data it was fitted on."""
    digest = hashlib.blake2b(digest_size=10)
    for array in (X, y):
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def as_labels(y: np.ndarray, name: str) -> np.ndarray:
    """Class labels as int64. Integer-valued labels keep their values (a metric's ``ignore_label``,
    such as -1, still names its class); any others (text, fractional numbers) are numbered
    0..c−1 in sorted order, which no metric of a partition can tell apart."""
    y = np.asarray(y)
    missing = pd.isna(y) | (np.isinf(y) if y.dtype.kind == "f" else False)
    if missing.any():
        raise UserError(
            f"dataset '{name}' has {int(missing.sum())} missing or infinite labels in y; "
            "drop those rows or give each a class"
        )
    if y.dtype.kind in "iub" and (y.dtype.kind != "u" or y.max(initial=0) < 2**63):
        return y.astype(np.int64)
    if y.dtype.kind == "f" and (y == np.round(y)).all() and (np.abs(y) < 2**62).all():
        return y.astype(np.int64)
    if y.dtype.kind == "O":
        y = y.astype(str)  # mixed types (1 and "a") have no order of their own
    return np.unique(y, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _features(X: np.ndarray, name: str) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    infinite = np.isinf(X)
    if infinite.any():  # standardizing would turn their whole feature into NaN
        raise UserError(
            f"dataset '{name}' has {int(infinite.sum())} infinite values in X; replace them in the file "
            "(or make them NaN and set dataset.impute)"
        )
    return X

"""Per-dataset preparation, as each paper did it (see ``shared/notes/reference-implementations.md``)."""

from __future__ import annotations

import numpy as np

from clusterbench.errors import UserError


def standardize(X: np.ndarray) -> np.ndarray:
    """z-score each feature (CLAM, Khatri-Rao); constant features become 0, as StandardScaler does."""
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


def minmax(X: np.ndarray) -> np.ndarray:
    """Scale each feature to [0, 1]; constant features become 0."""
    low, span = X.min(axis=0), np.ptp(X, axis=0)
    return (X - low) / np.where(span > 0, span, 1.0)


def max_scale(X: np.ndarray) -> np.ndarray:
    """Divide by the global maximum (Khatri-Rao on images: X / max(X))."""
    return X / X.max()


def pixels_unit(X: np.ndarray) -> np.ndarray:
    """8-bit pixels to [0, 1]."""
    return X / 255.0


def pixels_symmetric(X: np.ndarray) -> np.ndarray:
    """8-bit pixels to [-1, 1] (SR-K-means, DEPICT)."""
    return X / 127.5 - 1.0


def identity(X: np.ndarray) -> np.ndarray:
    return X


PREPROCESSORS = {
    "standardize": standardize,
    "minmax": minmax,
    "max_scale": max_scale,
    "pixels_unit": pixels_unit,
    "pixels_symmetric": pixels_symmetric,
    "none": identity,
}


def preprocess(X: np.ndarray, name: str | None) -> np.ndarray:
    try:
        return PREPROCESSORS[name or "none"](X)
    except KeyError:
        raise UserError(f"unknown preprocess '{name}'; choose one of {', '.join(PREPROCESSORS)}") from None


def impute(X: np.ndarray, strategy: str | None, dataset: str, setting: str = "dataset.impute") -> np.ndarray:
    """Fill NaNs with the feature mean or with 0; a NaN left without a strategy is an error, whose
    fix names ``setting``, the override that sets the strategy."""
    missing = np.isnan(X)
    if not missing.any():
        return X
    if strategy == "mean":
        return np.where(missing, np.nanmean(X, axis=0), X)
    if strategy == "zero":
        return np.where(missing, 0.0, X)
    raise UserError(
        f"dataset '{dataset}' has {int(missing.sum())} missing values; set {setting}=mean or zero"
    )

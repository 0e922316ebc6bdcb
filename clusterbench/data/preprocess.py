"""Per-dataset preparation, as each paper did it (see ``shared/notes/reference-implementations.md``)."""

from __future__ import annotations

import numpy as np

from clusterbench.errors import UserError


def standardize(X: np.ndarray) -> np.ndarray:
    """z-score each feature (CLAM, Khatri-Rao); constant features become 0, as StandardScaler does.

    A feature counts as constant when its std is within rounding of 0 (n·eps·|mean|, the bound
    StandardScaler uses): a column of 0.1s has std 1.4e-17, not 0, and must not be scaled to ±1.
    """
    mean, std = X.mean(axis=0), X.std(axis=0)
    constant = std <= len(X) * np.finfo(X.dtype).eps * np.abs(mean)
    return (X - mean) / np.where(constant, 1.0, std)


def minmax(X: np.ndarray) -> np.ndarray:
    """Scale each feature to [0, 1]; constant features become 0."""
    low, span = X.min(axis=0), np.ptp(X, axis=0)
    return (X - low) / np.where(span > 0, span, 1.0)


def max_scale(X: np.ndarray) -> np.ndarray:
    """Divide by the global maximum (Khatri-Rao on images: X / max(X)), which must be positive."""
    top = X.max()
    if not top > 0:  # 0 would give NaN everywhere, a negative maximum would flip every sign
        raise UserError(
            f"preprocess max_scale needs a positive maximum, got {top}; choose another preprocess"
        )
    return X / top


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
        empty = np.flatnonzero(missing.all(axis=0))
        if len(empty):  # no mean to fill with
            raise UserError(
                f"dataset '{dataset}' has {len(empty)} feature(s) with no value (first: column "
                f"{empty[0]}), which {setting}=mean cannot fill; use {setting}=zero"
            )
        return np.where(missing, np.nanmean(X, axis=0), X)
    if strategy == "zero":
        return np.where(missing, 0.0, X)
    raise UserError(
        f"dataset '{dataset}' has {int(missing.sum())} missing values; set {setting}=mean or zero"
    )

"""Checks shared by the estimators and the runner: hyperparameter values, the device and torch's
threads. The seeding helpers are in :mod:`clusterbench.methods._seeding`."""

from __future__ import annotations

import contextlib
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np
from sklearn.utils import assert_all_finite
from sklearn.utils.validation import check_is_fitted, validate_data

from clusterbench.errors import HyperparameterError

DEVICES = ("auto", "cpu", "cuda")


def is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


class Constraint(NamedTuple):
    """What a hyperparameter may be: ``valid(value)`` says whether it is, ``allowed`` says it in
    the error message (``... must be {allowed}, got ...``)."""

    valid: Callable[[object], bool]
    allowed: str


# The vocabulary the estimators declare their checks in (as scikit-learn's _parameter_constraints).
POSITIVE_INT = Constraint(lambda v: is_int(v) and v >= 1, "an integer ≥ 1")
AT_LEAST_TWO = Constraint(lambda v: is_int(v) and v >= 2, "an integer ≥ 2")  # n_clusters of most methods
NON_NEGATIVE_INT = Constraint(lambda v: is_int(v) and v >= 0, "an integer ≥ 0")
POSITIVE_REAL = Constraint(lambda v: is_real(v) and v > 0, "a number > 0")
NON_NEGATIVE_REAL = Constraint(lambda v: is_real(v) and v >= 0, "a number ≥ 0")
BOOLEAN = Constraint(lambda v: isinstance(v, bool), "true or false")
_NUMPY_GENERATORS = (np.random.RandomState, np.random.Generator)


def _random_state(bound: int) -> Constraint:
    """``random_state`` as scikit-learn takes it: None, a seed below ``bound`` (torch's generators
    take a signed 64-bit integer, NumPy's legacy RandomState, which scikit-learn seeds, 32 bits),
    or a NumPy RandomState or Generator, from which each fit draws its seed."""
    return Constraint(
        lambda v: v is None or (is_int(v) and 0 <= v < bound) or isinstance(v, _NUMPY_GENERATORS),
        f"None, an integer in [0, 2**{bound.bit_length() - 1}), or a NumPy RandomState or Generator",
    )


TORCH_RANDOM_STATE = _random_state(2**63)
NUMPY_RANDOM_STATE = _random_state(2**32)

_BRACKETS = {"neither": "()", "left": "[)", "right": "(]", "both": "[]"}


def one_of(options: Sequence) -> Constraint:
    """One of ``options`` (compared with ``in``)."""
    return Constraint(lambda v: v in options, f"one of {', '.join(options)}")


def in_interval(low, high, closed: str = "neither", high_name: str | None = None) -> Constraint:
    """A finite number between ``low`` and ``high``, each end included where ``closed`` says
    (``neither``, ``left``, ``right`` or ``both``). ``high_name``: the hyperparameter ``high``
    comes from, named in the message as ``name=high``."""
    left, right = _BRACKETS[closed]
    low_ok = (lambda v: low <= v) if left == "[" else (lambda v: low < v)
    high_ok = (lambda v: v <= high) if right == "]" else (lambda v: v < high)
    shown = high if high_name is None else f"{high_name}={high}"
    return Constraint(lambda v: is_real(v) and low_ok(v) and high_ok(v), f"in {left}{low}, {shown}{right}")


def optional(constraint: Constraint, none: str = "None") -> Constraint:
    """None (spelled ``none`` in the message) or what ``constraint`` allows."""
    return Constraint(lambda v: v is None or constraint.valid(v), f"{none} or {constraint.allowed}")


def check_hyperparameters(estimator, checks: Iterable[tuple[str, Constraint]]) -> None:
    """Raise HyperparameterError naming the first invalid hyperparameter and its allowed values.

    ``checks`` holds ``(name, constraint)``; they run in order, so a check may rely on the ones
    before it.
    """
    for name, (valid, allowed) in checks:
        value = getattr(estimator, name)
        if not valid(value):
            raise HyperparameterError(f"{type(estimator).__name__} {name} must be {allowed}, got {value!r}")


# The last checks of every torch estimator's list (its seed, device and n_threads, those it takes).
SEED_AND_DEVICE_CHECKS = (
    ("random_state", TORCH_RANDOM_STATE),
    ("device", one_of(DEVICES)),
    ("n_threads", optional(POSITIVE_INT)),
)


class TorchHyperparameters:
    """Mixin (before ``BaseEstimator``) of the torch estimators, which declare their checks as
    data: ``_checks()`` gives the ordered ``(name, constraint)`` entries of the estimator's own
    hyperparameters (a family extends its base's), and ``_validate_params`` (scikit-learn's hook:
    fit and the runner's grid check call it) runs them, then those of :data:`SEED_AND_DEVICE_CHECKS`
    whose hyperparameter the estimator has (a user's estimator may take no ``n_threads``).

    An entry that depends on another hyperparameter (``min_lr`` ≤ ``lr``) reads it from ``self``
    and comes after that one's entry, so it sees a valid value."""

    def _checks(self) -> list[tuple[str, Constraint]]:
        return []

    def _validate_params(self) -> None:
        own = [(name, check) for name, check in SEED_AND_DEVICE_CHECKS if hasattr(self, name)]
        check_hyperparameters(self, [*self._checks(), *own])

    def __setstate__(self, state):
        """A fitted model loads on the device it was fitted on, or on the CPU where that is a GPU
        this machine lacks (:func:`loading_device`): ``predict`` works on ``device_``."""
        state = dict(state)
        if "device_" in state:
            state["device_"] = loading_device(state["device_"])
        super().__setstate__(state)


@contextlib.contextmanager
def torch_threads(n_threads: int | None):
    """Within the block torch runs ``n_threads`` intra-op CPU threads, and the count it had
    before after it; None leaves torch's count as it is (by default one per core)."""
    if n_threads is None:
        yield
        return
    import torch  # only here: validation is imported by the runner, which CPU-only jobs use too

    before = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def denormals_flushed() -> bool:
    """Whether torch flushes denormal floats to zero on the CPU: torch has a setter and no getter,
    so the state is read by a float32 product that a flush makes 0 (1e-39 is a denormal)."""
    import torch

    return torch.tensor([1e-39]).mul(1.0).item() == 0.0


@contextlib.contextmanager
def flush_denormals():
    """Within the block torch flushes denormal floats to zero on the CPU, as it did or did not
    before after it: denormals slowed small-network training steps 20x (notes, C)."""
    import torch

    before = denormals_flushed()
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(before)


def check_enough_points(estimator, n_points: int, n_centroids: int | None = None) -> None:
    """Every centroid needs a point: raise HyperparameterError when the estimator's ``n_clusters``
    (or ``n_centroids``, a Khatri-Rao layout's count) exceeds ``n_points``, naming the fix. Without
    ``n_centroids``, the count the estimator's ``_clusters_asked()`` gives where it has one (set
    sizes h that override n_clusters), as the runner's check against a dataset reads it."""
    name = type(estimator).__name__
    if n_centroids is None and hasattr(estimator, "_clusters_asked"):
        asked = estimator._clusters_asked()
        n_centroids = None if asked is None else asked[1]
    if n_centroids is None and estimator.n_clusters > n_points:
        raise HyperparameterError(
            f"{name} n_clusters must be at most the number of points ({n_points}), got {estimator.n_clusters}"
        )
    if n_centroids is not None and n_centroids > n_points:
        raise HyperparameterError(
            f"{name} needs at least as many points as its {n_centroids} centroids, "
            f"got {n_points}: lower n_clusters (or h)"
        )


# How the estimators take X (validate_data's options; the finite check is made apart, below).
_FLOAT_INPUT = dict(dtype=[np.float64, np.float32], force_writeable=True, ensure_all_finite=False)


def check_fit_input(estimator, X, ensure_all_finite: bool = True) -> np.ndarray:
    """``X`` for ``estimator.fit``: a 2-D float64 or float32 array that torch takes, writeable,
    with ``n_features_in_`` and, from a DataFrame, ``feature_names_in_`` set (scikit-learn's
    ``validate_data``), so that predict refuses columns in another order as scikit-learn's
    estimators do. NaN or infinity is refused in scikit-learn's one line (``Input X contains
    NaN.``), without the paragraph of advice it adds for a named estimator."""
    X = validate_data(estimator, X, reset=True, **_FLOAT_INPUT)
    if ensure_all_finite:
        assert_all_finite(X, input_name="X")
    return without_negative_strides(X)


def check_predict_input(estimator, X, fitted_attribute: str) -> np.ndarray:
    """``X`` for ``estimator.predict``: fitted, as :func:`check_fit_input` gives it, with the
    fitted number of features (and the fitted feature names, where fit had them)."""
    check_is_fitted(estimator, fitted_attribute)
    X = validate_data(estimator, X, reset=False, **_FLOAT_INPUT)
    assert_all_finite(X, input_name="X")
    return without_negative_strides(X)


def without_negative_strides(X: np.ndarray) -> np.ndarray:
    """``X``, or its C-ordered copy where it is a view with a negative stride (``X[::-1]``, a
    DataFrame's columns reversed), which ``torch.as_tensor`` refuses. Other layouts are kept:
    a Fortran-ordered file (Yale's, say) reaches the estimators as it always has."""
    return np.ascontiguousarray(X) if any(stride < 0 for stride in X.strides) else X


def check_device(device: str) -> None:
    """A device name is one of DEVICES (checked without importing torch)."""
    if device not in DEVICES:
        raise HyperparameterError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")


def loading_device(fitted_on: str) -> str:
    """Where a fitted model loads (unpickled): the device it was fitted on, or the CPU, with a
    warning, when that is ``cuda`` and no GPU is visible here (a GPU server's model on a laptop)."""
    import torch

    if fitted_on == "cuda" and not torch.cuda.is_available():
        warnings.warn(
            "this model was fitted on cuda, and no CUDA GPU is visible here: it is loaded on the CPU",
            UserWarning,
            stacklevel=3,
        )
        return "cpu"
    return fitted_on


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without a GPU is an error."""
    check_device(device)
    if device == "cpu":
        return "cpu"
    import torch  # only where a device is really asked for: CPU-only baselines never load torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise HyperparameterError("device='cuda' but no CUDA GPU is visible; use device=auto or device=cpu")
    return "cpu"

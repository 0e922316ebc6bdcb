"""Checks shared by the estimators and the runner: hyperparameter values, the seed and the device."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable

import numpy as np

from clusterbench.errors import HyperparameterError

DEVICES = ("auto", "cpu", "cuda")


def is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check_hyperparameters(estimator, checks: Iterable[tuple[str, Callable, str]]) -> None:
    """Raise HyperparameterError naming the first invalid hyperparameter and its allowed values.

    ``checks`` holds ``(name, is_valid, allowed)``; they run in order, so a check may rely on the
    ones before it.
    """
    for name, valid, allowed in checks:
        value = getattr(estimator, name)
        if not valid(value):
            raise HyperparameterError(f"{type(estimator).__name__} {name} must be {allowed}, got {value!r}")


def resolve_seed(random_state: int | None) -> int:
    """``random_state`` itself, or a fresh random 63-bit seed when it is None."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0]) >> 1
    return int(random_state)


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without a GPU is an error."""
    if device not in DEVICES:
        raise HyperparameterError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cpu":
        return "cpu"
    import torch  # only where a device is really asked for: CPU-only baselines never load torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise HyperparameterError("device='cuda' but no CUDA GPU is visible; use device=auto or device=cpu")
    return "cpu"


def restart_seeds(random_state: int | None, restarts: int) -> list[int]:
    """The torch seed of each restart.

    Restart 0 takes ``random_state`` itself, so ``restarts=1`` is the plain seeded run; restart
    r > 0 takes a 63-bit hash of (random_state, r), so jobs with neighbouring seeds share no
    restart. A fit with ``restarts=1, random_state=restart_seeds(s, R)[r]`` repeats restart r of a
    fit with ``random_state=s`` exactly, and adding restarts leaves the existing ones unchanged.
    """
    base = resolve_seed(random_state)
    hashed = [
        int(np.random.SeedSequence([base, r]).generate_state(1, np.uint64)[0]) >> 1
        for r in range(1, restarts)
    ]
    return [base, *hashed]

"""Timing helpers for the benchmark scripts (``scripts/bench_*.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def seconds_per_iteration(fit: Callable[[int], object], low: int, high: int, repeats: int) -> float:
    """One iteration's wall time: ``fit(iterations)`` capped at ``low`` and at ``high`` iterations,
    the least time of ``repeats`` fits at each cap, their difference over the difference in
    iterations run (``n_iter_``).

    Set-up, initialisation and the final assignment cancel in the difference; dividing by the
    iterations really run covers fits that stop early (scikit-learn stops once no label changes).
    The least time at each cap is the one least disturbed by the machine; a least difference of
    pairs would reward a slow short fit.
    """
    fit(low)  # warm-up: first calls pay for lazy initialisation
    times, counts = {low: np.inf, high: np.inf}, {}
    for _ in range(repeats):
        for iterations in (low, high):
            start = time.perf_counter()
            counts[iterations] = fit(iterations).n_iter_
            times[iterations] = min(times[iterations], time.perf_counter() - start)
    if counts[high] <= counts[low]:
        return np.inf
    return (times[high] - times[low]) / (counts[high] - counts[low])


def interleaved_seconds_per_iteration(
    fits: dict[str, Callable[[int], int]], low: int, high: int, repeats: int
) -> dict[str, float]:
    """Per method, one iteration's wall time: ``fits[name](cap)`` runs a fit capped at ``cap``
    iterations and returns the iterations it ran, which must be the cap. Every repeat runs every
    method at both caps in turn; each (method, cap) keeps its least time over the repeats."""
    for fit in fits.values():
        fit(low)  # warm-up: first calls pay for lazy initialisation
    best = {(name, cap): np.inf for name in fits for cap in (low, high)}
    for _ in range(repeats):
        for name, fit in fits.items():
            for cap in (low, high):
                start = time.perf_counter()
                ran = fit(cap)
                best[name, cap] = min(best[name, cap], time.perf_counter() - start)
                if ran != cap:
                    raise RuntimeError(f"{name} stopped after {ran} of {cap} iterations: choose lower caps")
    # A difference at or below 0 is the machine's noise, not a time: NaN, never a ratio.
    seconds = {name: (best[name, high] - best[name, low]) / (high - low) for name in fits}
    return {name: value if value > 0 else np.nan for name, value in seconds.items()}

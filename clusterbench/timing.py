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

"""Timing helpers for the benchmark scripts (``scripts/bench_*.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def seconds_per_iteration(fit: Callable[[int], object], low: int, high: int, repeats: int) -> float:
    """One iteration's wall time: ``fit(iterations)`` capped at ``low`` and at ``high`` iterations,
    the difference in time over the difference in iterations run (``n_iter_``), best of ``repeats``.

    Set-up, initialisation and the final assignment cancel in the difference; dividing by the
    iterations really run covers fits that stop early (scikit-learn stops once no label changes).
    """
    fit(low)  # warm-up: first calls pay for lazy initialisation
    best = np.inf
    for _ in range(repeats):
        times, counts = [], []
        for iterations in (low, high):
            start = time.perf_counter()
            counts.append(fit(iterations).n_iter_)
            times.append(time.perf_counter() - start)
        if counts[1] > counts[0]:
            best = min(best, (times[1] - times[0]) / (counts[1] - counts[0]))
    return best

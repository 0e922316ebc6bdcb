"""Timing helpers for the benchmark scripts (``scripts/bench_*.py``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from time import perf_counter

import numpy as np
import pandas as pd


def interleaved_seconds_per_iteration(
    fits: dict[str, Callable[[int], int]], low: int, high: int, repeats: int
) -> dict[str, float]:
    """Per method, one iteration's wall time: ``fits[name](cap)`` runs a fit capped at ``cap``
    iterations and returns the iterations it ran, which must be the cap. Every repeat runs every
    method in turn, an untimed fit at the low cap and then a timed fit at each cap; each (method,
    cap) keeps its least time over the repeats, and their difference over ``high − low`` is the
    time of an iteration (set-up, initialisation and the final assignment cancel).

    The untimed fit takes what the method before leaves behind (the first call's lazy
    initialisation too): without it that fell on the low cap alone and made an iteration look
    cheaper. After scikit-learn's GaussianMixture at two threads (its BLAS's threads spinning on
    after its last call, presumably) k-means-C′'s low cap took 158-201 ms against 130-150 ms,
    and C′ = 1 with ℒ timed faster than without it (9.1 against 10.4 ms an iteration; with the
    untimed fit 13.2 against 9.7 ms).
    """
    best = {(name, cap): np.inf for name in fits for cap in (low, high)}
    for _ in range(repeats):
        for name, fit in fits.items():
            fit(low)
            for cap in (low, high):
                start = perf_counter()
                ran = fit(cap)
                best[name, cap] = min(best[name, cap], perf_counter() - start)
                if ran != cap:
                    raise RuntimeError(f"{name} stopped after {ran} of {cap} iterations: choose lower caps")
    # A difference at or below 0 is the machine's noise, not a time: NaN, never a ratio.
    seconds = {name: (best[name, high] - best[name, low]) / (high - low) for name in fits}
    return {name: value if value > 0 else np.nan for name, value in seconds.items()}


def time_in_rounds(
    groups: dict[Hashable, tuple[str, int, Callable[[], dict[str, Callable[[int], int]]]]],
    rounds: int,
    low: int,
    high: int,
    repeats: int,
    reference: str,
) -> dict[Hashable, Rounds]:
    """Time every group ``rounds`` times, the groups in turn each round (see :class:`Rounds`):
    ``groups`` maps a key to (label, threads, a function building the group's fits anew, so that
    no group's data is held through the others'). Torch and the BLAS/OpenMP pools get ``threads``;
    each round of a group prints its times and ratios to ``reference``."""
    import torch
    from threadpoolctl import threadpool_limits

    timed = {key: Rounds() for key in groups}
    for round_number in range(1, rounds + 1):
        for key, (label, threads, make_fits) in groups.items():
            torch.set_num_threads(threads)
            with threadpool_limits(threads):
                timed[key].time(make_fits(), low, high, repeats)
            seconds = timed[key].seconds[-1]
            times = ", ".join(
                f"{name} {value * 1e3:.1f} ms ({value / seconds[reference]:.2f}x)"
                for name, value in seconds.items()
            )
            print(f"round {round_number}, {label}: {times}", flush=True)
    return timed


class Rounds:
    """Independent timings of one group of methods (:func:`interleaved_seconds_per_iteration`
    once per round), with the load average read around each.

    :func:`time_in_rounds` runs the rounds over all the groups in turn, so one group's rounds lie minutes
    apart: a busy spell of a shared machine that outlasts a round's repeats (which the least time
    of a round cannot remove) then moves one round's ratio, and shows as the spread of the
    group's ratios instead of as its value.
    """

    def __init__(self) -> None:
        self.seconds: list[dict[str, float]] = []
        self.loads: list[float] = []
        self.repeats = 0

    def time(self, fits: dict[str, Callable[[int], int]], low: int, high: int, repeats: int) -> None:
        self.loads.append(os.getloadavg()[0])
        self.repeats = repeats
        self.seconds.append(interleaved_seconds_per_iteration(fits, low, high, repeats))
        self.loads.append(os.getloadavg()[0])

    def frame(self, references: dict[str, str]) -> pd.DataFrame:
        """Per method (rows in the fits' order): the median over the rounds of the seconds per
        iteration, and per ``references`` column (name → reference method) the median, least and
        greatest of the rounds' ratios to the reference's time in the same round (``<column>``,
        ``<column>_low``, ``<column>_high``), NaN rounds left out; ``rounds``, those with a time for
        the method; ``repeats`` (of the last round) and the load average's least and greatest
        reading (``load_low``, ``load_high``)."""
        seconds = pd.DataFrame(self.seconds)  # a row per round, a column per method
        median = seconds.median().to_numpy()
        frame = pd.DataFrame({"method": seconds.columns, "seconds_per_iteration": median})
        for column, reference in references.items():
            ratios = seconds.div(seconds[reference], axis=0)
            frame[column] = ratios.median().to_numpy()
            frame[f"{column}_low"] = ratios.min().to_numpy()
            frame[f"{column}_high"] = ratios.max().to_numpy()
        frame = frame.assign(rounds=seconds.notna().sum().to_numpy(), repeats=self.repeats)
        return frame.assign(load_low=min(self.loads), load_high=max(self.loads))

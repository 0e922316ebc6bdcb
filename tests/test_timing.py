"""The benchmark scripts' per-iteration timing (``clusterbench.timing``)."""

from __future__ import annotations

import math
import time

import pytest

from clusterbench.timing import Rounds, interleaved_seconds_per_iteration


def sleeping_fit(per_iteration: float, set_up: float = 0.05, stops_at: int | None = None):
    def fit(iterations: int) -> int:
        ran = iterations if stops_at is None else min(iterations, stops_at)
        time.sleep(set_up + per_iteration * ran)
        return ran

    return fit


def test_interleaved_timing_cancels_set_up_and_divides_by_the_caps_difference():
    seconds = interleaved_seconds_per_iteration(
        {"fast": sleeping_fit(0.01), "slow": sleeping_fit(0.03)}, low=2, high=6, repeats=2
    )
    assert list(seconds) == ["fast", "slow"]
    assert seconds["fast"] == pytest.approx(0.01, abs=0.004)
    assert seconds["slow"] == pytest.approx(0.03, abs=0.004)


def test_a_fit_that_stops_before_its_cap_fails_the_timing():
    with pytest.raises(RuntimeError, match="early stopped after 4 of 6 iterations"):
        interleaved_seconds_per_iteration(
            {"steady": sleeping_fit(0.001, 0.0), "early": sleeping_fit(0.001, 0.0, stops_at=4)},
            low=2,
            high=6,
            repeats=1,
        )


def test_a_time_that_does_not_grow_with_the_cap_is_nan_not_a_ratio():
    seconds = interleaved_seconds_per_iteration({"flat": sleeping_fit(0.0, 0.01)}, low=1, high=3, repeats=1)
    # Two sleeps of the same length differ by the scheduler's noise, either way: NaN or tiny.
    assert math.isnan(seconds["flat"]) or seconds["flat"] < 0.002


def test_rounds_take_each_ratio_within_its_round_then_the_median_and_range():
    timed = Rounds()
    # The reference's time doubles in round 2 (a busy spell), ours with it: the ratio holds.
    timed.seconds = [
        {"reference": 1.0, "ours": 2.0},
        {"reference": 2.0, "ours": 2.0},
        {"reference": 1.0, "ours": 1.5},
        {"reference": 1.0, "ours": math.nan},  # a difference lost to noise: left out
    ]
    timed.loads, timed.repeats = [0.5, 1.5, 2.5, 0.7], 3
    frame = timed.frame({"ratio": "reference"}).set_index("method")
    assert frame.loc["ours", "ratio"] == pytest.approx(1.5)  # the median of 2.0, 1.0 and 1.5
    assert (frame.loc["ours", "ratio_low"], frame.loc["ours", "ratio_high"]) == (1.0, 2.0)
    assert frame.loc["ours", "seconds_per_iteration"] == pytest.approx(2.0)  # median seconds
    assert frame.loc["reference", "ratio"] == 1.0
    # A ratio of the rounds' medians would mix rounds: 2.0 / 1.0, not 1.5.
    assert frame.loc["ours", "ratio"] != frame.loc["ours", "seconds_per_iteration"] / 1.0
    assert frame.loc["ours", ["rounds", "repeats", "load_low", "load_high"]].tolist() == [4, 3, 0.5, 2.5]


def test_rounds_time_every_method_once_per_round_and_read_the_load_around_it():
    timed = Rounds()
    fits = {"a": sleeping_fit(0.002, 0.0), "b": sleeping_fit(0.004, 0.0)}
    for _ in range(2):
        timed.time(fits, low=1, high=3, repeats=1)
    assert len(timed.seconds) == 2 and len(timed.loads) == 4 and timed.repeats == 1
    assert all(set(round_seconds) == {"a", "b"} for round_seconds in timed.seconds)
    frame = timed.frame({"ratio_to_a": "a"}).set_index("method")
    assert frame.loc["b", "ratio_to_a"] == pytest.approx(2.0, rel=0.5)

"""The benchmark scripts' per-iteration timing (``clusterbench.timing``), on a fake clock that
the fits advance, so every time is exact."""

from __future__ import annotations

import math

import pytest

from clusterbench import timing
from clusterbench.timing import Rounds, interleaved_seconds_per_iteration, time_in_rounds


class Clock:
    """``perf_counter`` for the timing module: it moves only when a fit says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(timing, "perf_counter", fake)
    return fake


def timed_fit(clock: Clock, per_iteration: float, set_up: float = 0.5, stops_at=None, busy=()):
    """A fit that takes ``set_up`` + ``per_iteration`` a run iteration; its calls numbered in
    ``busy`` take 10 s more (the machine busy then)."""
    calls = []

    def fit(iterations: int) -> int:
        ran = iterations if stops_at is None else min(iterations, stops_at)
        calls.append(iterations)
        clock.now += set_up + per_iteration * ran + (10.0 if len(calls) in busy else 0.0)
        return ran

    return fit


def test_interleaved_timing_keeps_each_caps_least_time_and_divides_by_the_caps_difference(clock):
    # Each repeat calls a fit three times: untimed at the low cap, then timed at each cap. Calls 2
    # and 3 (the first repeat's caps) are busy for "fast", call 6 (the second repeat's high cap)
    # for "slow": the least times ignore both.
    fits = {
        "fast": timed_fit(clock, 0.01, busy=(2, 3)),
        "slow": timed_fit(clock, 0.03, busy=(6,)),
    }
    seconds = interleaved_seconds_per_iteration(fits, low=2, high=6, repeats=2)
    assert list(seconds) == ["fast", "slow"]
    assert seconds["fast"] == pytest.approx(0.01)  # the 0.5 s of set-up cancels
    assert seconds["slow"] == pytest.approx(0.03)


def test_what_the_method_before_leaves_behind_falls_on_an_untimed_fit(clock):
    """A fit called right after another method's takes 5 s more (that method's threads still
    spinning, say): timed at its low cap, that would cut the iteration's time by 5 s / 4."""
    last = []

    def fit_after(name: str, per_iteration: float):
        def fit(iterations: int) -> int:
            clock.now += 0.5 + per_iteration * iterations + (5.0 if last and last[-1] != name else 0.0)
            last.append(name)
            return iterations

        return fit

    fits = {name: fit_after(name, per) for name, per in (("a", 2.0), ("b", 3.0))}
    seconds = interleaved_seconds_per_iteration(fits, low=2, high=6, repeats=3)
    assert seconds == {"a": pytest.approx(2.0), "b": pytest.approx(3.0)}


def test_a_fit_that_stops_before_its_cap_fails_the_timing(clock):
    fits = {"steady": timed_fit(clock, 0.01), "early": timed_fit(clock, 0.01, stops_at=4)}
    with pytest.raises(RuntimeError, match="early stopped after 4 of 6 iterations"):
        interleaved_seconds_per_iteration(fits, low=2, high=6, repeats=1)


def test_a_time_that_does_not_grow_with_the_cap_is_nan_not_a_ratio(clock):
    fits = {"flat": timed_fit(clock, 0.0), "shrinking": timed_fit(clock, -0.01)}
    fits["growing"] = timed_fit(clock, 0.01)
    seconds = interleaved_seconds_per_iteration(fits, low=1, high=3, repeats=1)
    assert math.isnan(seconds["flat"]) and math.isnan(seconds["shrinking"])
    assert seconds["growing"] == pytest.approx(0.01)


def test_rounds_take_each_ratio_within_its_round_then_the_median_and_range():
    timed = Rounds()
    # The reference's time doubles in round 2 (a busy spell), ours with it: that round's ratio is 1.
    timed.seconds = [
        {"reference": 1.0, "ours": 2.0},
        {"reference": 2.0, "ours": 2.0},
        {"reference": 1.0, "ours": 1.2},
        {"reference": 1.0, "ours": math.nan},  # a difference lost to noise: left out
        {"reference": math.nan, "ours": 5.0},  # no reference: no ratio, but ours has a time
    ]
    timed.loads, timed.repeats = [0.5, 1.5, 2.5, 0.7], 3
    frame = timed.frame({"ratio": "reference"}).set_index("method")
    # The median of the ratios 2.0, 1.0 and 1.2 (their mean is 1.4; the ratio of the median
    # times, 2.0 / 1.0, mixes rounds).
    assert frame.loc["ours", "ratio"] == pytest.approx(1.2)
    assert (frame.loc["ours", "ratio_low"], frame.loc["ours", "ratio_high"]) == (1.0, 2.0)
    assert frame.loc["ours", "seconds_per_iteration"] == pytest.approx(2.0)  # of 2, 2, 1.2, 5
    assert frame.loc["reference", "ratio"] == 1.0
    assert frame.loc["ours", ["rounds", "repeats", "load_low", "load_high"]].tolist() == [4, 3, 0.5, 2.5]
    assert frame.loc["reference", "rounds"] == 4


def test_rounds_time_every_method_once_per_round_and_read_the_load_around_it(clock):
    timed = Rounds()
    fits = {"a": timed_fit(clock, 0.002), "b": timed_fit(clock, 0.004)}
    for _ in range(2):
        timed.time(fits, low=1, high=3, repeats=1)
    assert len(timed.seconds) == 2 and len(timed.loads) == 4 and timed.repeats == 1
    frame = timed.frame({"ratio_to_a": "a"}).set_index("method")
    assert frame.loc["b", "ratio_to_a"] == pytest.approx(2.0)
    assert frame["rounds"].tolist() == [2, 2]


def test_time_in_rounds_times_the_groups_in_turn_each_round_with_their_threads(clock, monkeypatch, capsys):
    import torch

    order, threads_seen = [], []
    monkeypatch.setattr(torch, "set_num_threads", threads_seen.append)

    def builder(key: str):
        def make_fits():  # built anew each round
            order.append(key)
            return {"reference": timed_fit(clock, 0.01), "ours": timed_fit(clock, 0.02)}

        return make_fits

    groups = {"a": ("group a", 1, builder("a")), "b": ("group b", 2, builder("b"))}
    timings = time_in_rounds(groups, rounds=2, low=1, high=3, repeats=1, reference="reference")
    assert order == ["a", "b", "a", "b"] and threads_seen == [1, 2, 1, 2]
    assert [len(timings[key].seconds) for key in "ab"] == [2, 2]
    assert timings["b"].frame({"ratio": "reference"}).set_index("method").loc[
        "ours", "ratio"
    ] == pytest.approx(2.0)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "round 1, group a: reference 10.0 ms (1.00x), ours 20.0 ms (2.00x)"
    assert printed[3].startswith("round 2, group b: ")


# From a third mutation audit of the suite: each test below failed with one plausible bug in
# place and passed without it.


def test_rounds_report_the_least_and_greatest_load_reading(monkeypatch):
    import itertools

    readings = itertools.chain([3.0, 1.0, 2.0, 4.0])
    monkeypatch.setattr(timing.os, "getloadavg", lambda: (next(readings), 0.0, 0.0))
    clock = [0.0]
    monkeypatch.setattr(timing, "perf_counter", lambda: clock[0])

    def fit(iterations):
        clock[0] += 0.5 + 0.01 * iterations
        return iterations

    timed = Rounds()
    for _ in range(2):
        timed.time({"a": fit}, low=1, high=3, repeats=1)
    frame = timed.frame({})
    assert (frame["load_low"].iloc[0], frame["load_high"].iloc[0]) == (1.0, 4.0)

"""The benchmark scripts' per-iteration timing."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from clusterbench.timing import seconds_per_iteration


def test_seconds_per_iteration_cancels_set_up_and_divides_by_iterations_run():
    def fit(iterations):
        ran = min(iterations, 6)  # stops early after 6, as scikit-learn does once no label changes
        time.sleep(0.05 + 0.01 * ran)  # 50 ms of set-up that must cancel
        return SimpleNamespace(n_iter_=ran)

    assert seconds_per_iteration(fit, 2, 10, repeats=2) == pytest.approx(0.01, abs=0.004)

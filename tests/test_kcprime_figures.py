"""The k-means-C′ paper's figures: run bookkeeping, the example-run and best-run rules, drawing."""

from __future__ import annotations

import numpy as np
import pytest

from clusterbench.figures import kcprime as figures


def test_found_clusters_matches_one_to_one_within_the_radius():
    truth = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    assert figures.found_clusters(truth + 0.5, truth, radius=1.0) == 3
    # Two centres on one true cluster count once; the far one is not found.
    centres = np.array([[0.1, 0.0], [-0.1, 0.0], [0.0, 10.2]])
    assert figures.found_clusters(centres, truth, radius=1.0) == 2


def toy_runs():
    histories = [
        {
            "log_likelihood": np.array([-3.0, -2.0]),
            "free_energy": np.array([-3.5, -2.5]),
            "quantization_error": np.array([9.0, 5.0]),
        },
        {
            "log_likelihood": np.array([-3.0, -2.5, -1.5]),
            "free_energy": np.array([-3.2, -2.6, -1.6]),
            "quantization_error": np.array([8.0, 6.0, 6.0]),
        },
        {
            "log_likelihood": np.array([-2.8, -2.2]),
            "free_energy": np.array([-2.9, -2.3]),
            "quantization_error": np.array([7.0, 4.0]),
        },
    ]
    truth = np.array([[0.0, 0.0], [10.0, 0.0]])
    centres = [truth.copy(), truth.copy(), np.array([[0.0, 0.0], [50.0, 0.0]])]
    return figures.Runs(
        histories, centres, purity=np.array([0.9, 0.8, 0.95]), nmi=np.array([0.85, 0.99, 0.7])
    ), truth


def test_runs_pad_early_converged_runs_and_scores_follow_table_s1():
    runs, _ = toy_runs()
    np.testing.assert_array_equal(runs.padded("log_likelihood")[0], [-3.0, -2.0, -2.0])
    scores = figures.final_scores(runs)
    assert scores["log_likelihood"] == pytest.approx((-1.9, -1.5))
    assert scores["quantization_error"] == pytest.approx((5.0, 4.0))  # best φ: the least
    # Purity and NMI: both of run 1, the highest purity + NMI (1.79), not each its own best.
    assert scores["purity"][1] == 0.8 and scores["nmi"][1] == 0.99


def test_example_runs_pick_the_best_and_runs_with_fewer_clusters_found():
    runs, truth = toy_runs()
    chosen = figures.example_runs(runs, truth, radius=1.0)
    assert chosen == {"best run (2 found)": 1, "1 found": 2}


def test_birch_sweep_and_drawings(tmp_path):
    sweeps, data = figures.birch_sweeps(runs=2, c_primes=(1, 2))
    assert set(sweeps) == {"birch_grid", "birch_random"} and set(sweeps["birch_grid"]) == {1, 2}
    runs = sweeps["birch_grid"][1]
    assert len(runs.histories) == 2 and runs.centres[0].shape == (25, 2)
    assert figures.found_clusters(data["birch_grid"][1], data["birch_grid"][1], 0.1) == 25
    assert len(figures.draw_fig1(sweeps, data, "t").axes) == 8
    assert len(figures.draw_fig_s2(sweeps, "t").axes) == 8

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


# From mutation audit 14 (the figures): each test below failed with one plausible bug in place
# and passed without it.


def _toy_dataset():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    X = np.concatenate([c + rng.standard_normal((10, 2)) for c in centres])
    return figures.Dataset("toy", X, np.repeat(np.arange(3), 10), 3)


def test_c_prime_sweep_keeps_c_prime_equal_to_c_and_run_r_uses_seed_r():
    """C′ = C is k-means-C′'s top value (Fig. 1's C′ = 25 on 25 clusters), and run r is seeded r."""
    data = _toy_dataset()
    sweep = figures.c_prime_sweep(data, c_primes=(1, 3, 4), runs=2)
    assert list(sweep) == [1, 3]
    for seed, history in enumerate(sweep[1].histories):
        model = figures.KMeansCPrime(3, c_prime=1, random_state=seed, device="cpu").fit(data.X)
        np.testing.assert_array_equal(history["log_likelihood"], model.history_["log_likelihood"])


def _runs(final_ll, final_free, centres, purity=None, nmi=None):
    histories = [
        {
            "log_likelihood": np.array([-9.0, ll]),
            "free_energy": np.array([-9.5, free]),
            "quantization_error": np.array([9.0, -ll]),
        }
        for ll, free in zip(final_ll, final_free, strict=True)
    ]
    count = len(histories)
    purity = np.full(count, 0.5) if purity is None else np.asarray(purity)
    nmi = np.full(count, 0.5) if nmi is None else np.asarray(nmi)
    return figures.Runs(histories, list(centres), purity, nmi)


def test_example_runs_rank_by_final_free_energy_and_count_found_clusters_exactly():
    """Fig. 1A's best run is the highest final F (not ℒ); a run that finds two fewer is no '1 fewer'."""
    truth = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    two = truth.copy()
    two[2] = [50.0, 50.0]
    one = two.copy()
    one[1] = [50.0, -50.0]
    # Run 0 has the best ℒ, run 1 the best F; both find all three.
    runs = _runs([-1.0, -2.0, -3.0], [-3.0, -2.5, -4.0], [truth, truth, one])
    assert figures.example_runs(runs, truth, radius=1.0) == {"best run (3 found)": 1, "1 found": 2}
    runs = _runs([-1.0, -2.0, -3.0], [-3.0, -2.5, -4.0], [truth, truth, two])
    assert figures.example_runs(runs, truth, radius=1.0) == {"best run (3 found)": 1, "2 found": 2}


def _sweeps_and_data():
    truth = np.array([[0.0, 0.0], [10.0, 0.0]])
    data = figures.Dataset("toy", np.concatenate([truth, truth + 0.1]), np.array([0, 1, 0, 1]), 2)
    centres = [truth + 1.0, truth + 2.0, truth + 3.0]
    kmeans = _runs(
        [-1.0, -2.0, -3.0], [-3.0, -2.5, -4.0], centres, purity=[0.9, 0.1, 0.5], nmi=[0.1, 0.2, 0.8]
    )
    c_two = _runs([-1.5, -0.5, -2.0], [-2.0, -1.0, -0.5], centres)
    return {"birch_grid": {1: kmeans, 2: c_two}}, {"birch_grid": (data, truth)}


def test_fig1_draws_the_best_free_energy_centres_and_the_best_final_likelihood_curve():
    """Panels C/I/J: centres of the highest final F; panel B dashed: the run of highest final ℒ."""
    sweeps, data = _sweeps_and_data()
    drawing = figures.draw_fig1(sweeps, data, "t")
    kmeans_centres = drawing.axes[2].collections[2].get_offsets()
    np.testing.assert_array_equal(kmeans_centres, data["birch_grid"][1] + 2.0)
    c_two_centres = drawing.axes[3].collections[2].get_offsets()
    np.testing.assert_array_equal(c_two_centres, data["birch_grid"][1] + 3.0)
    mean_ll = [line for line in drawing.axes[0].get_lines() if line.get_label() == "ℒ, mean of 3"]
    np.testing.assert_array_equal(mean_ll[0].get_ydata(), [-9.0, -2.0])  # ℒ, not F (-3.1667)
    lines = drawing.axes[1].get_lines()
    np.testing.assert_array_equal(lines[0].get_ydata(), [-9.0, -2.0])  # k-means, mean of three
    np.testing.assert_array_equal(lines[1].get_ydata(), [-9.0, -1.0])  # its best final ℒ: run 0
    np.testing.assert_array_equal(lines[3].get_ydata(), [-9.0, -0.5])  # C′ = 2: run 1


def test_fig_s2_draws_the_mean_solid_and_the_best_dashed_against_c_prime():
    """Fig. S2's solid line is the mean over runs, its dashed one the best, at x = C′."""
    sweeps, _ = _sweeps_and_data()
    drawing = figures.draw_fig_s2(sweeps, "t")
    mean, best = drawing.axes[0].get_lines()  # ℒ
    np.testing.assert_array_equal(mean.get_xdata(), [1, 2])
    np.testing.assert_allclose(mean.get_ydata(), [-2.0, -4.0 / 3])
    np.testing.assert_allclose(best.get_ydata(), [-1.0, -0.5])
    _, best_purity = drawing.axes[2].get_lines()
    assert best_purity.get_ydata()[0] == 0.5  # run 2: the highest purity + NMI


def test_kdd_band_is_one_standard_error_of_the_mean():
    """Fig. 1G's band is mean ± SEM (std / √runs), not ± one standard deviation."""
    runs = _runs([-1.0, -3.0, -2.0, -2.0], [-1.0, -3.0, -2.0, -2.0], [np.zeros((2, 2))] * 4)
    drawing = figures.draw_kdd({1: runs}, "t")
    band = drawing.axes[0].collections[0].get_paths()[0].vertices[:, 1]
    sem = np.std([-1.0, -3.0, -2.0, -2.0]) / 2
    assert band.max() == pytest.approx(-2.0 + sem) and band.min() == pytest.approx(-9.0)


def test_the_script_runs_the_papers_100_runs_per_c_prime_unless_quick(tmp_path, monkeypatch):
    """Without ``--quick`` every C′ gets the paper's 100 runs; ``--quick`` 10."""
    import sys

    from tests.helpers import load_script

    script = load_script("kcprime_figures")
    asked = []

    def stop(runs):
        asked.append(runs)
        raise RuntimeError("stop")

    monkeypatch.setattr(figures, "birch_sweeps", stop)
    for words in ([], ["--quick"]):
        monkeypatch.setattr(sys, "argv", ["kcprime_figures.py", "--out", str(tmp_path), *words])
        with pytest.raises(RuntimeError, match="stop"):
            script.main()
    assert asked == [100, 10]

"""Khatri-Rao clustering's figures: the data behind Fig. 6/7 (inertia against h and p), Fig. 8
(one fit measured in a fresh process) and Fig. 9 (colour quantization), and their drawings."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from clusterbench.errors import UserError
from clusterbench.figures import khatri_rao as figures

matplotlib.use("Agg")


def test_more_centroids_lower_inertia_and_khatri_rao_sits_between(one_torch_thread):
    curves = figures.inertia_by_set_size("blobs", set_sizes=(2, 5), n_init=3, max_samples=1000)
    assert curves.x == [2, 5] and set(curves.inertia) == set(figures.LINES)
    inertia = {label: values[1] for label, values in curves.inertia.items()}  # h1 = h2 = 5
    # 25 free centroids beat 25 structured ones, which beat 10 free ones (Fig. 6's ordering)
    assert inertia["k-means (h1·h2)"] < inertia["KR-k-means-× (h1+h2)"] < inertia["k-means (h1+h2)"]
    assert inertia["k-means (h1·h2)"] < inertia["KR-k-means-+ (h1+h2)"] < inertia["k-means (h1+h2)"]
    for values in curves.purity.values():
        assert all(0 < v <= 1 for v in values)
    figure = figures.draw_set_size_curves([curves], "test")
    assert len(figure.axes) == 2


def test_more_sets_represent_more_centroids_for_the_same_budget(one_torch_thread):
    curves = figures.inertia_by_number_of_sets("blobs", n_init=3, max_samples=1000)
    assert curves.x == [2, 3, 4]
    flat = curves.inertia["k-means (h1+h2)"]
    assert flat == [flat[0]] * 3  # the baselines do not depend on p
    # 36, 64 and 81 structured centroids from 12 vectors all beat 12 free centroids
    assert all(v < flat[0] for v in curves.inertia["KR-k-means-+ (h1+h2)"])
    assert len(figures.draw_set_count_curves([curves, curves], "test").axes) == 2


def test_one_fit_in_a_fresh_process_reports_time_memory_and_iterations():
    spec = {"n": 2000, "d": 50, "k": 16, "centers": 16, "sizes": [4, 4], "method": "KR-k-means-× (h1+h2)"}
    spec |= {"memory_efficient": True, "max_iter": 5, "tol": 0.0, "threads": 1}
    measured = figures.fit_in_fresh_process(spec)
    assert measured["n_iter"] == 5
    assert measured["seconds"] > 0 and measured["peak_mib"] >= 0


def test_colour_quantization_codebooks_and_their_inertia(one_torch_thread):
    result = figures.colour_quantization(n_init=2)
    assert result.original.shape == (427, 640, 3)
    for name, image in result.images.items():
        assert image.shape == result.original.shape
        # 12 stored vectors: 12 colours, or 6 x 6 = 36 for the product protocentroids
        palette = 36 if name.startswith("KR") else 12
        assert len(np.unique(image.reshape(-1, 3), axis=0)) <= palette, name
    inertia = result.inertia
    assert inertia["k-means (12)"] < inertia["random (12 pixels)"]
    assert inertia["KR-k-means-× (6+6)"] < inertia["random (12 pixels)"]
    pixels = result.original.reshape(-1, 3)
    recomputed = ((pixels - result.images["k-means (12)"].reshape(-1, 3)) ** 2).sum()
    assert inertia["k-means (12)"] == pytest.approx(recomputed)
    assert len(figures.draw_quantization(result, "test").axes) == 4


def test_scalability_writes_each_fit_and_a_rerun_measures_nothing_again(
    tmp_path, monkeypatch, one_torch_thread
):
    # The fits run here, not each in a fresh process (the test above covers that path): five
    # processes importing torch and scikit-learn were most of this test's time.
    monkeypatch.setattr(figures, "fit_in_fresh_process", figures._fit_here)
    sweeps = {"k": {"values": (64, 100), "fixed": {"n": 400, "d": 8}}}
    measurements = tmp_path / "fig8.csv"
    first = figures.scalability(sweeps=sweeps, max_iter=3, points=1, measurements=measurements)
    rows = pd.read_csv(measurements)
    assert list(rows.columns) == figures.MEASUREMENT_COLUMNS
    assert sorted(rows["method"]) == sorted(figures.SCALABILITY_METHODS)
    assert set(rows["sizes"]) == {"8x8"} and (rows["n_iter"] >= 1).all()

    def no_fit(spec):
        raise AssertionError(f"measured again: {spec['method']}")

    monkeypatch.setattr(figures, "fit_in_fresh_process", no_fit)
    again = figures.scalability(sweeps=sweeps, max_iter=3, points=1, measurements=measurements)
    assert again.sweeps == {"k": [64]}
    assert again.seconds == first.seconds and again.peak_mib == first.peak_mib
    assert all(len(values) == 1 for values in again.per_iteration["k"].values())
    assert len(figures.draw_scalability(again, "test").axes) == 3
    with pytest.raises(AssertionError, match="measured again"):  # a new point is measured
        figures.scalability(sweeps=sweeps, max_iter=3, points=2, measurements=measurements)


def test_each_fit_is_written_as_it_ends_and_a_foreign_csv_is_refused(tmp_path, monkeypatch):
    sweeps = {"k": {"values": (64,), "fixed": {"n": 400, "d": 8}}}
    measurements = tmp_path / "fig8.csv"
    fits = [{"seconds": 1.5, "peak_mib": 2.0, "n_iter": 3}]

    def one_fit_then_a_crash(spec):
        if not fits:
            raise RuntimeError("the second fit crashed")
        return fits.pop()

    monkeypatch.setattr(figures, "fit_in_fresh_process", one_fit_then_a_crash)
    with pytest.raises(RuntimeError, match="second fit crashed"):
        figures.scalability(sweeps=sweeps, max_iter=3, measurements=measurements)
    written = pd.read_csv(measurements)
    assert len(written) == 1 and written.loc[0, "method"] == figures.SCALABILITY_METHODS[0]
    assert written.loc[0, "seconds"] == 1.5 and written.loc[0, "n_iter"] == 3
    measurements.write_text("axis,method\nk,x\n")
    with pytest.raises(UserError, match=r"lacks Fig\. 8's columns n, d, k"):
        figures.scalability(sweeps=sweeps, max_iter=3, measurements=measurements)

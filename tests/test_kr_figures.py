"""Khatri-Rao clustering's figures: the data behind Fig. 6/7 (inertia against h and p), Fig. 8
(one fit measured in a fresh process) and Fig. 9 (colour quantization), and their drawings."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from clusterbench.data import Dataset
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


# From mutation audit 14 (the figures): each test below failed with one plausible bug in place
# and passed without it.


def test_fig6_x_axis_runs_h1_equal_h2_from_2_to_10():
    """Fig. 6 spans 4 to 100 represented centroids (h1·h2), every h in between."""
    assert tuple(range(2, 11)) == figures.SET_SIZES


def test_each_line_is_fitted_with_its_own_centroid_count_and_aggregator():
    """The naive method is the product one; k-means gets h1 + h2 and h1·h2 free centroids."""
    fits = figures._fits((2, 3), n_init=1, seed=0)
    assert [fits[label].aggregator for label in figures.KR_AGGREGATORS] == ["sum", "product"]
    assert fits["naive KR (h1+h2)"].aggregator == "product"
    assert fits["k-means (h1+h2)"].n_clusters == 5 and fits["k-means (h1·h2)"].n_clusters == 6


class _Fitted:
    def __init__(self, label, sizes):
        self.inertia_ = float(1000 * len(sizes) + 10 * sum(sizes) + int(np.prod(sizes)))
        self.label = label

    def fit(self, X):
        return self


def test_fig7_baselines_are_fitted_once_at_six_plus_six_for_every_split(monkeypatch):
    """Fig. 7's flat baselines are h1 = h2 = 6 (12 vectors), one value per split p."""
    data = figures.generators.blobs(n_samples=20, n_features=2, centers=2)
    monkeypatch.setattr(figures, "_dataset", lambda name, max_samples=None: data)
    monkeypatch.setattr(
        figures,
        "_fits",
        lambda sizes, n_init, seed: {label: _Fitted(label, sizes) for label in figures.LINES},
    )
    curves = figures.inertia_by_number_of_sets("blobs", splits={2: (6, 6), 3: (4, 4, 4)})
    assert curves.x == [2, 3]
    assert curves.inertia["k-means (h1+h2)"] == [2156.0, 2156.0]  # 2 sets of 6
    assert curves.inertia["KR-k-means-+ (h1+h2)"] == [2156.0, 3184.0]


def _fake_fits(monkeypatch):
    specs = []

    def fake(spec):
        specs.append(spec)
        return {"seconds": 6.0, "peak_mib": 2.5, "n_iter": 3}

    monkeypatch.setattr(figures, "fit_in_fresh_process", fake)
    return specs


def test_scalability_scales_the_swept_features_and_reports_each_measured_value(monkeypatch):
    """The m sweep varies the features d; x values, spec and centres follow ``scale``; seconds,
    seconds per iteration and peak memory are the fit's own."""
    specs = _fake_fits(monkeypatch)
    sweeps = {"m": {"values": (100, 200), "fixed": {"n": 40, "k": 16}}}
    result = figures.scalability(sweeps=sweeps, scale=0.5)
    assert result.sweeps == {"m": [50, 100]}
    assert [(s["n"], s["d"], s["k"], s["centers"]) for s in specs[::5]] == [(20, 50, 8, 8), (20, 100, 8, 8)]
    method = figures.SCALABILITY_METHODS[0]
    assert result.seconds["m"][method] == [6.0, 6.0]
    assert result.per_iteration["m"][method] == [2.0, 2.0]
    assert result.peak_mib["m"][method] == [2.5, 2.5]


def test_a_resumed_sweep_measures_again_at_another_thread_count(tmp_path, monkeypatch):
    """Rows are reused only for the same fit: one measured with 2 threads is not one with 1."""
    specs = _fake_fits(monkeypatch)
    sweeps = {"k": {"values": (16,), "fixed": {"n": 40, "d": 4}}}
    measurements = tmp_path / "fig8.csv"
    figures.scalability(sweeps=sweeps, threads=1, measurements=measurements)
    figures.scalability(sweeps=sweeps, threads=1, measurements=measurements)
    assert len(specs) == 5
    figures.scalability(sweeps=sweeps, threads=2, measurements=measurements)
    assert [spec["threads"] for spec in specs[5:]] == [2] * 5
    assert len(pd.read_csv(measurements)) == 10


class _Stop(Exception):
    """Ends a figure script at its first computation, with what it was asked."""


def test_the_script_at_quick_scale_shrinks_fig8_and_resumes_its_own_csv(tmp_path, monkeypatch):
    """``--quick`` measures a twentieth of the sizes, two points per sweep, into a CSV in its own
    folder: never into (or resumed from) the committed full-scale measurements."""
    import sys

    from tests.helpers import load_script

    script = load_script("kr_figures")

    def stop(**kwargs):
        raise _Stop(kwargs)

    monkeypatch.setattr(figures, "scalability", stop)
    for words, csv, scale, points in (
        (["--quick"], tmp_path / "kr_fig8_quick.csv", 0.05, 2),
        ([], script.FIG8_MEASUREMENTS, 1.0, None),
    ):
        monkeypatch.setattr(sys, "argv", ["kr_figures.py", "8", "--out", str(tmp_path), *words])
        with pytest.raises(_Stop) as asked:
            script.main()
        kwargs = asked.value.args[0]
        assert (kwargs["measurements"], kwargs["scale"], kwargs["points"]) == (csv, scale, points)


def test_fig6_fits_two_equal_sets_per_h_and_scores_purity_against_the_classes(monkeypatch):
    """Fig. 6 at x = h fits h1 = h2 = h; purity is of the clusters against the classes: one
    cluster over classes 3:1 scores 0.75 (the reverse order would score 1)."""
    data = Dataset("toy", np.arange(8.0).reshape(4, 2), np.array([0, 0, 0, 1]), 2)
    monkeypatch.setattr(figures, "_dataset", lambda name, max_samples=None: data)

    def fake_fits(sizes, n_init, seed):
        fitted = {label: _Fitted(label, sizes) for label in figures.LINES}
        for model in fitted.values():
            model.labels_ = np.zeros(4, dtype=int)
        return fitted

    monkeypatch.setattr(figures, "_fits", fake_fits)
    curves = figures.inertia_by_set_size("blobs", set_sizes=(2, 3))
    assert curves.x == [2, 3]
    assert curves.inertia["k-means (h1+h2)"] == [2044.0, 2069.0]  # (2, 2) and (3, 3)
    assert curves.purity["naive KR (h1+h2)"] == [0.75, 0.75]


def test_each_row_records_the_load_before_and_after_its_fit(tmp_path, monkeypatch):
    """A row's load_before is read before the fit and load_after after it, not the other way."""
    _fake_fits(monkeypatch)
    loads = iter(range(100))
    monkeypatch.setattr(figures.os, "getloadavg", lambda: (float(next(loads)), 0.0, 0.0))
    sweeps = {"k": {"values": (16,), "fixed": {"n": 40, "d": 4}}}
    measurements = tmp_path / "fig8.csv"
    figures.scalability(sweeps=sweeps, measurements=measurements)
    rows = pd.read_csv(measurements)
    assert rows["load_before"].tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert rows["load_after"].tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]

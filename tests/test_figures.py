"""CLAM's figures: the data behind Fig. 4/11/12 (basins), Fig. 6 (prototype evolution) and Fig. 1/13
(toy comparisons), checked against values derived by hand, and the files the drawings write.

Drawing uses matplotlib's Figure objects with the Agg canvas; no test needs a display.
"""

from __future__ import annotations

import dataclasses
import json

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib import image

from clusterbench.figures import clam as figures
from clusterbench.figures import save_figure
from clusterbench.results import COLUMNS
from tests.helpers import REPO, script

matplotlib.use("Agg")

THREE = np.array(figures.THREE_PROTOTYPES)
# Eq. 4 with α = 1/T moves a point x towards Σ_μ w_μ ρ_μ by α per step. As β → 0 every weight is
# 1/k, so after T steps x^T = (1 − α)^T x + (1 − (1 − α)^T) ρ̄, with ρ̄ the prototypes' mean.
SHRINK = (1 - 1 / figures.BASIN_STEPS) ** figures.BASIN_STEPS


def grid_points(basins: figures.Basins) -> np.ndarray:
    xs, ys = np.meshgrid(basins.axis, basins.axis)
    return np.column_stack([xs.ravel(), ys.ravel()])


def nearest(points: np.ndarray, prototypes: np.ndarray) -> np.ndarray:
    return ((points[:, None] - prototypes[None]) ** 2).sum(-1).argmin(1)


@pytest.mark.parametrize("layout", [figures.THREE_PROTOTYPES, figures.FIVE_PROTOTYPES], ids=["k3", "k5"])
def test_large_beta_basins_are_the_voronoi_cells(one_torch_thread, layout):
    """Fig. 4c / 11 / 12 at large β: the softmax picks the nearest prototype, and the segment from
    a point to it stays in its (convex) cell, so basins and Voronoi cells coincide off the edges."""
    basins = figures.basins_of_attraction(layout, [1e4], resolution=80)
    assert basins.labels.shape == (1, 80, 80)
    # The layouts lie on a 0.1 lattice, so some grid points sit exactly on an edge (a tie): a few
    # lines of points, a small share of the grid.
    assert 0 < basins.on_edge.sum() < 0.05 * basins.on_edge.size
    assert np.array_equal(basins.labels[0][~basins.on_edge], basins.voronoi[~basins.on_edge])
    assert basins.disagreement()[0] == 0.0


def test_small_beta_basins_are_the_voronoi_cells_of_the_spread_prototypes(one_torch_thread):
    """At β → 0 a point ends at (1 − α)^T x + (1 − (1 − α)^T) ρ̄, so its basin is its Voronoi cell
    for prototypes pushed away from ρ̄ by 1/(1 − α)^T: a known partition, 32% off Voronoi here."""
    basins = figures.basins_of_attraction(figures.THREE_PROTOTYPES, [1e-6], resolution=80)
    points = grid_points(basins)
    predicted = nearest(SHRINK * points + (1 - SHRINK) * THREE.mean(0), THREE).reshape(80, 80)
    assert np.array_equal(basins.labels[0], predicted)
    off_voronoi = (predicted != basins.voronoi)[~basins.on_edge].mean()
    assert basins.disagreement()[0] == off_voronoi == pytest.approx(0.326, abs=1e-3)


def test_small_beta_sends_a_point_to_its_farthest_prototype(one_torch_thread):
    """Case-III of §3.3 (Fig. 3c, 4a): below the top prototype ρ_1, a point nearer the two outer
    ones is carried to ρ_1, the farthest of the three, at small β, and to its nearest at large β."""
    point = np.array([[0.45, 0.1]])
    distances = ((THREE - point) ** 2).sum(1)
    assert distances.argmin() == 1 and distances.argmax() == 0
    assert figures.basin_labels(point, THREE, 0.001)[0] == 0
    assert figures.basin_labels(point, THREE, 1e4)[0] == 1


@pytest.mark.parametrize("layout", [figures.THREE_PROTOTYPES, figures.FIVE_PROTOTYPES], ids=["k3", "k5"])
def test_basins_approach_voronoi_as_beta_grows(one_torch_thread, layout):
    """§3.3 and B.5: from a non-Voronoi partition at β = 0.001 to (nearly) Voronoi at β = 100."""
    share = figures.basins_of_attraction(layout, figures.SWEEP_BETAS, resolution=60).disagreement()
    assert np.all(np.diff(share) <= 0)
    assert share[0] > 0.3 and share[-1] < 0.02


def test_grid_rows_are_y_and_columns_are_x():
    basins = figures.basins_of_attraction(figures.THREE_PROTOTYPES, [1.0], resolution=10)
    assert np.allclose(basins.axis, np.arange(0.05, 1.0, 0.1))
    # (x, y) = (0.85, 0.35) is column 8, row 3: the cell of ρ_3 = (0.8, 0.4); (0.45, 0.65) of ρ_1.
    assert basins.voronoi[3, 8] == 2 and basins.voronoi[6, 4] == 0


@pytest.mark.parametrize("layout", [figures.THREE_PROTOTYPES, figures.FIVE_PROTOTYPES], ids=["k3", "k5"])
def test_voronoi_segments_are_equidistant_edges(layout):
    """Every drawn point of a Voronoi edge is equally far from its two nearest prototypes."""
    prototypes = np.array(layout)
    segments = figures.voronoi_segments(prototypes)
    # k sites, h of them on the convex hull, have 3k - 3 - h Voronoi edges: all five are on the
    # hull of the five-prototype layout ((0.6, 0.5) on its edge from (0.9, 0.2) to (0.4, 0.7)).
    assert len(segments) == {3: 3, 5: 7}[len(prototypes)]
    for segment in segments:
        points = segment[0] + np.linspace(0, 1, 200)[:, None] * (segment[1] - segment[0])
        points = points[np.all((points >= 0) & (points <= 1), axis=1)]
        closest = np.sort(np.sqrt(((points[:, None] - prototypes[None]) ** 2).sum(-1)), axis=1)
        assert np.allclose(closest[:, 0], closest[:, 1])


def test_prototype_evolution_keeps_the_quick_epochs(one_torch_thread):
    """Fig. 6 at the quick scale: one (k, 784) snapshot per requested epoch, epoch 0 the CLAM
    initialization N(0.1, 0.1²), later epochs moved by training."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 784))
    evolution = figures.prototype_evolution(X, 10, epochs=figures.QUICK.evolution_epochs)
    assert list(evolution.snapshots) == [0, 5, 10]
    assert all(snapshot.shape == (10, 784) for snapshot in evolution.snapshots.values())
    initial = evolution.snapshots[0]
    assert initial.mean() == pytest.approx(0.1, abs=0.01) and initial.std() == pytest.approx(0.1, abs=0.01)
    assert not np.allclose(evolution.snapshots[10], initial)
    assert evolution.n_points == 300 and evolution.restarts == 1


def test_matched_labels_renumbers_clusters_to_their_classes():
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    labels = np.array([5, 5, 7, 7, 7, 3, 3, 3])
    assert figures.matched_labels(y, labels).tolist() == [0, 0, 1, 1, 1, 2, 2, 2]
    # A fourth cluster, with no class left for it, takes the next number.
    extra = np.array([1, 1, 1, 0, 0, 2, 2, 9])
    assert figures.matched_labels(y, extra).tolist() == [0, 0, 0, 1, 1, 2, 2, 3]


def test_toy_data_drops_the_outliers_only():
    """Fig. 1's two clusters: clam_outliers' 800 inliers, as generated for clam_elongated."""
    data = figures.toy_data("clam_outliers")
    assert data.X.shape == (800, 2) and data.n_clusters == 2
    assert np.bincount(data.y).tolist() == [400, 400]


def test_toy_comparison_panels(one_torch_thread):
    """Fig. 13's panels at a tiny scale: the ground truth scores 1, k-means cuts across the
    elongated clusters (the paper's point), and CLAM keeps the grid point of least loss."""
    data = figures.toy_data("clam_elongated")
    tiny = dataclasses.replace(
        figures.QUICK,
        dec_params={"max_iter": 20},
        clam_params={**figures.QUICK.clam_params, "epochs": 3, "restarts": 1},
        clam_grid={"beta": (5.0, 50.0), "lr": (0.1,)},
    )
    result = figures.toy_comparison(data, tiny)
    assert [panel.name for panel in result.panels] == ["ground truth", "k-means", "DEC", "CLAM"]
    truth, kmeans, _, clam = result.panels
    assert truth.nmi == pytest.approx(1.0) and truth.ari == pytest.approx(1.0)
    assert kmeans.nmi < 0.8
    assert kmeans.centers.shape == (3, 2) and clam.centers.shape == (3, 2)
    assert [point["beta"] for point in result.clam_grid] == [5.0, 50.0]
    least = min(result.clam_grid, key=lambda point: point["loss"])
    assert clam.note == f"β = {least['beta']:g}, lr = 0.1"
    assert clam.nmi == pytest.approx(least["nmi"])


def test_figures_are_written_as_png_and_pdf(tmp_path):
    basins = figures.basins_of_attraction(figures.THREE_PROTOTYPES, figures.FIG4_BETAS, resolution=20)
    drawing = figures.draw_basins(basins, "Fig. 4")
    assert len(drawing.axes) == 3
    evolution = figures.Evolution({0: np.zeros((3, 784)), 5: np.ones((3, 784))}, 300, 1, 0.0)
    grid = figures.draw_prototype_evolution(evolution, "Fig. 6")
    assert len(grid.axes) == 2 * 3
    paths = save_figure(drawing, tmp_path / "out", "fig4") + save_figure(grid, tmp_path, "fig6")
    assert [path.name for path in paths] == ["fig4.png", "fig4.pdf", "fig6.png", "fig6.pdf"]
    for path in paths:
        magic = b"\x89PNG" if path.suffix == ".png" else b"%PDF"
        assert path.read_bytes().startswith(magic)
    # 150 dpi: Fig. 6's two rows of three images are wider than tall.
    height, width = image.imread(paths[2]).shape[:2]
    assert width > height > 100


def _record(experiment: str, method: str, params: dict, metric: str, value: float, key: str) -> dict:
    return dict.fromkeys(COLUMNS) | {
        "experiment": experiment,
        "dataset": "zoo",
        "method": method,
        "params": json.dumps(params),
        "metric": metric,
        "value": value,
        "status": "ok",
        "config_hash": key,
    }


def test_search_curves_hold_the_other_hyperparameters_at_table6():
    """Fig. 7 from clam_search records: the β sweep at Zoo's Table 6 values (lr 0.1, mask 0.2,
    mean), one curve per T; a run off that centre (lr 0.01) stays out; a run that found fewer
    than k clusters is flagged; k-means' line is the best SC of its grid (Table 1's cell)."""
    centre = {"beta": 2.4, "lr": 0.1, "mask_prob": 0.2, "mask_value": "mean", "n_clusters": 7}
    runs = [
        ({"beta": 0.5, "steps": 5}, 0.30, 7),
        ({"beta": 2.4, "steps": 5}, 0.40, 7),
        ({"beta": 0.5, "steps": 10}, 0.35, 5),
        ({"beta": 0.5, "steps": 5, "lr": 0.01}, 0.99, 7),  # the lr sweep: not on Fig. 7
    ]
    rows = []
    for index, (change, sc, found) in enumerate(runs):
        params = {**centre, **change}
        rows.append(_record("clam_search", "clam", params, "sc", sc, f"h{index}"))
        rows.append(_record("clam_search", "clam", params, "n_found", found, f"h{index}"))
    rows += [
        _record("clam_baselines", "kmeans", {"init": init}, "sc", sc, init)
        for init, sc in [("a", 0.37), ("b", 0.38)]
    ]
    (curve,) = figures.search_curves(pd.DataFrame(rows), "beta")
    assert (curve.dataset, curve.values, curve.kmeans_sc) == ("zoo", [0.5, 2.4], 0.38)
    np.testing.assert_equal(curve.sc, {5: [0.30, 0.40], 10: [0.35, np.nan]})
    assert curve.partial == {5: [False, False], 10: [True, False]}
    drawing = figures.draw_search_curves([curve], "Fig. 7")
    assert len(drawing.axes) == 1 and drawing.axes[0].get_xscale() == "log"
    # Fig. 8 (lr) holds β at 2.4: of these runs only the centre itself, at T = 5.
    (lr_curve,) = figures.search_curves(pd.DataFrame(rows), "lr")
    assert lr_curve.values == [0.1] and lr_curve.sc == {5: [0.40]}


def test_the_script_draws_fig8_from_the_committed_search_and_refuses_without_records(tmp_path):
    """``scripts/clam_figures.py 8`` fits nothing: it draws the committed clam_search records
    (the lr sweep on MovLib); asked for by name where a results folder has none, it fails in one
    line that says what to run."""
    drawn = script("clam_figures", "8", "--out", str(tmp_path), "--results", str(REPO / "results"))
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "clam_fig8.png").read_bytes().startswith(b"\x89PNG")
    empty = script("clam_figures", "8", "--out", str(tmp_path), "--results", str(tmp_path / "none"))
    assert empty.returncode == 2 and len(empty.stderr.strip().splitlines()) == 1
    assert "run -m experiment=clam_search profile=paper results_dir=" in empty.stderr


# From mutation audit 14 (the figures): each test below failed with one plausible bug in place
# and passed without it.


def test_search_curves_leave_out_failed_runs_and_other_experiments_kmeans():
    """A failed clam_search run is no point of Fig. 7, and k-means' line is clam_baselines' only
    (not, say, a k-means run of another experiment on the same data)."""
    centre = {"beta": 2.4, "lr": 0.1, "mask_prob": 0.2, "mask_value": "mean", "n_clusters": 7, "steps": 5}
    failed = _record("clam_search", "clam", {**centre, "beta": 9.0}, "sc", 0.9, "bad") | {"status": "failed"}
    rows = [
        _record("clam_search", "clam", centre, "sc", 0.40, "ok"),
        failed,
        _record("clam_baselines", "kmeans", {"init": "a"}, "sc", 0.37, "a"),
        _record("clam_table1", "kmeans", {"init": "b"}, "sc", 0.99, "b"),
    ]
    (curve,) = figures.search_curves(pd.DataFrame(rows), "beta")
    assert curve.values == [2.4] and curve.sc == {5: [0.40]}
    assert curve.kmeans_sc == 0.37


def test_figure_beta_is_twice_the_beta_of_eq_4():
    """The figures' β is the authors' code's, exp(−(β/2)‖ρ − x‖²): the point below ρ_1 still goes
    to ρ_1 at figure β = 5 (eq. 4's 2.5), and to its nearest prototype only at eq. 4's β = 5."""
    point = np.array([[0.45, 0.1]])
    assert figures.basin_labels(point, THREE, 5.0)[0] == 0
    assert figures.basin_labels(point, THREE, 5.0, beta_scale=1.0)[0] == 1


def test_mask_value_curves_show_only_the_mask_values_run():
    """Fig. 10's x axis holds the mask values that were searched, in MASK_VALUES' order, no NaN
    placeholders for values never run."""
    centre = {"beta": 2.4, "lr": 0.1, "mask_prob": 0.2, "mask_value": "mean", "n_clusters": 7, "steps": 5}
    rows = [
        _record("clam_search", "clam", {**centre, "mask_value": value}, "sc", sc, value)
        for value, sc in [("max", 0.2), ("mean", 0.4)]
    ]
    (curve,) = figures.search_curves(pd.DataFrame(rows), "mask_value")
    assert curve.values == ["mean", "max"] and curve.sc == {5: [0.4, 0.2]}


def test_toy_panel_scores_the_clustering_not_the_classes():
    """A panel's SC is the silhouette of its clusters (NMI and ARI compare them with the classes)."""
    X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.1, 0.0]])
    y = np.array([0, 0, 1, 1])
    labels = np.array([0, 1, 0, 1])
    panel = figures._panel("mixed", X, y, labels, None)
    assert panel.sc == pytest.approx(figures.silhouette(X, labels, max_samples=None)) and panel.sc < 0
    assert panel.nmi == pytest.approx(0.0) and panel.labels.tolist() == [0, 1, 0, 1]


def test_prototype_rows_share_a_colour_scale_at_the_99th_percentile():
    """Fig. 6's row scale is the 99th percentile of |ρ|, so one extreme pixel does not set it."""
    prototypes = np.ones((2, 784))
    prototypes[0, 0] = 100.0
    grid = figures.draw_prototype_evolution(figures.Evolution({0: prototypes}, 10, 1, 0.0), "Fig. 6")
    scale = np.percentile(np.abs(prototypes), 99)
    assert scale == pytest.approx(1.0)
    assert grid.axes[0].images[0].get_clim() == pytest.approx((-scale, scale))


def test_the_script_draws_basins_at_the_full_grid_unless_quick(tmp_path, monkeypatch):
    """Without ``--quick`` Fig. 4 is the paper's 500 x 500 grid; ``--quick`` the coarse one."""
    import sys

    from tests.helpers import load_script

    script = load_script("clam_figures")
    asked = []

    def stop(prototypes, betas, resolution):
        asked.append(resolution)
        raise RuntimeError("stop")

    monkeypatch.setattr(figures, "basins_of_attraction", stop)
    for words in ([], ["--quick"]):
        monkeypatch.setattr(sys, "argv", ["clam_figures.py", "4", "--out", str(tmp_path), *words])
        with pytest.raises(RuntimeError, match="stop"):
            script.main()
    assert asked == [figures.BASIN_RESOLUTION, figures.QUICK.basin_resolution] == [500, 120]


def test_hollow_markers_sit_on_the_runs_that_left_clusters_empty():
    """Fig. 7-10 ring exactly the runs with fewer than k clusters found, at their SC."""
    curve = figures.SearchCurves(
        "zoo", "beta", [0.5, 1.0, 2.0], {5: [0.1, 0.2, 0.3]}, {5: [False, True, False]}, {"beta": 1.0}, 0.2
    )
    line, ring = figures.draw_search_curves([curve], "Fig. 7").axes[0].get_lines()[:2]
    np.testing.assert_array_equal(line.get_ydata(), [0.1, 0.2, 0.3])
    assert ring.get_xdata().tolist() == [1.0] and ring.get_ydata().tolist() == [0.2]

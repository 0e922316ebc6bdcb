"""The figures of CLAM (Saha et al., ICML 2023): what each one shows, computed, then drawn.

Each figure has a function that computes its data and a ``draw_*`` function that draws it
(see :mod:`clusterbench.figures`).

- Fig. 4, 11, 12 (§3.3, Appendix B.5): basins of attraction of the AM recursion (eq. 4) against
  the Voronoi partition of the same prototypes, for a sweep of β (:func:`basins_of_attraction`).
- Fig. 6 (§4, Q4): CLAM's prototypes on Fashion-MNIST at epochs 0, 5, 10, 20, 50, 100
  (:func:`prototype_evolution`).
- Fig. 1 and 13 (§1, Appendix B.6): k-means, DEC and CLAM on parallel elongated 2-D clusters
  (:func:`toy_comparison`).
- Fig. 7-10 (Appendix B.1): SC against β, the initial learning rate, the mask probability and the
  mask value, one curve per T, k-means as reference, from experiment ``clam_search``'s records
  (:func:`search_curves`).

β follows the authors' code in every figure: their scripts (bsaha205/clam, ``plot_2d_cluster.py``,
``plot_gaussian.py``, ``amc_t.py``) weigh prototypes by exp(−(β/2)‖ρ − x‖²), so the β printed in
the figures and in Table 6 is twice the β of eq. 4; ``FIGURE_BETA_SCALE`` passes β/2 to eq. 4
(see :mod:`clusterbench.methods.clam`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from omegaconf import OmegaConf
from scipy.optimize import linear_sum_assignment
from scipy.spatial import Voronoi
from sklearn.cluster import KMeans

from clusterbench.catalog import dataset_spec, load_option
from clusterbench.data import Dataset, load_dataset
from clusterbench.methods import CLAM, DEC
from clusterbench.methods.clam import MASK_VALUES, am_recursion
from clusterbench.metrics import ari, nmi, silhouette
from clusterbench.runs import wide_runs

# The figures' β is the authors' code's (exp(−(β/2)‖ρ − x‖²)): eq. 4 gets β·FIGURE_BETA_SCALE.
FIGURE_BETA_SCALE = 0.5
# Region colours in the order of the authors' basin script (plot_2d_cluster.py): Fig. 4 speaks
# of green, orange and blue basins.
BASIN_COLOURS = ("#66bb6a", "#42a5f5", "#ffa726", "#a1887f", "#ce93d8")
CLUSTER_COLOURS = ("#2e7d32", "#ef6c00", "#8e24aa", "#1565c0", "#c62828")

# --- Fig. 4, 11, 12: basins of attraction vs the Voronoi partition --------------------------------
# T = 10 (the three captions) with α = 1/T (Table 5; the authors' script sets α = 0.1), on the unit
# square that the authors' script evolves (a 500 x 500 grid of [0, 1)^2).
BASIN_STEPS = 10
BASIN_RESOLUTION = 500
# Five prototypes (Fig. 12): the paper gives no coordinates; these are the memories of the authors'
# basin script (plot_2d_cluster.py, xx_list / yy_list).
FIVE_PROTOTYPES = ((0.1, 0.3), (0.2, 0.1), (0.4, 0.7), (0.6, 0.5), (0.9, 0.2))
# Three prototypes (Fig. 4, 11): neither the paper nor the authors' code gives them. §3.3 says the
# small-β basins of Fig. 4a mirror Case-III (Fig. 3c: a point whose two nearest prototypes cancel
# their pulls is carried to the farthest one) and that the green basin meets both others in
# Fig. 4b. We place one prototype between and above two far-apart ones (an obtuse triangle, its
# circumcentre well below the centroid): points below it, nearer the outer two, fall into its
# basin at small β.
THREE_PROTOTYPES = ((0.45, 0.6), (0.15, 0.3), (0.8, 0.4))
# Fig. 11 and 12 sweep β "from low β value (0.001) to high β value (100)" (Appendix B.5) with
# "non-linear characteristics (β = 10 - 30)" and a match "gradually (β = 50 - 100)"; the panel
# values are not listed, so we take 0.001, 0.1 and 1 (below 0.1 the basins no longer change:
# all weights are equal), then values that B.5 and the authors' script (β lists 5, 15, 30, 40, 75
# and 10, 20, 50, 100) name.
SWEEP_BETAS = (0.001, 0.1, 1.0, 5.0, 10.0, 15.0, 20.0, 30.0, 50.0, 100.0)
# Fig. 4 shows three β: (a) small, not Voronoi; (b) nonlinear boundaries; (c) Voronoi. Its values
# are not printed; we take the ends of B.5's range and β = 20 from its nonlinear range.
FIG4_BETAS = (0.001, 20.0, 100.0)
# Squared distances closer than this are a tie: grid points of the prototypes' lattice fall exactly
# on Voronoi edges (rounding in float64 is far smaller, real gaps on the grid far larger).
EDGE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Basins:
    """Basin and Voronoi labels of a square grid of starting points, one basin map per β.

    ``labels[b, i, j]`` is the prototype whose basin holds the point (``axis[j]``, ``axis[i]``)
    at β = ``betas[b]`` (row i is the i-th y value, so the arrays plot with ``origin='lower'``);
    ``voronoi[i, j]`` is that point's nearest prototype (the lowest index among equals), and
    ``on_edge[i, j]`` says whether that point lies on a Voronoi edge (its two nearest prototypes
    equally far): there the nearest prototype is a tie, which the recursion may break either way.
    """

    prototypes: np.ndarray  # (k, 2)
    betas: tuple[float, ...]
    axis: np.ndarray  # (n,) grid coordinates in [0, 1], both directions
    labels: np.ndarray  # (len(betas), n, n)
    voronoi: np.ndarray  # (n, n)
    on_edge: np.ndarray  # (n, n) bool
    steps: int

    def disagreement(self) -> np.ndarray:
        """Per β, the fraction of grid points off the Voronoi edges whose basin is not their cell."""
        return (self.labels != self.voronoi)[:, ~self.on_edge].mean(axis=1)


def basin_labels(
    points: np.ndarray,
    prototypes: np.ndarray,
    beta: float,
    *,
    steps: int = BASIN_STEPS,
    beta_scale: float = FIGURE_BETA_SCALE,
) -> np.ndarray:
    """The basin of each point: T steps of eq. 4 (α = 1/T), then the nearest prototype.

    This is InferCLAM's assignment (Algorithm 1) with fixed prototypes; ``beta`` is the figures'
    (the authors' code's) β, passed to eq. 4 as ``beta * beta_scale``.
    """
    memories = torch.as_tensor(np.asarray(prototypes), dtype=torch.float32)
    start = torch.as_tensor(np.asarray(points), dtype=torch.float32)
    evolved = am_recursion(
        start.unsqueeze(0), memories.unsqueeze(0), beta=beta * beta_scale, steps=steps, alpha=1.0 / steps
    )[0]
    return torch.cdist(evolved, memories).argmin(1).numpy()


def basins_of_attraction(
    prototypes: Sequence[Sequence[float]],
    betas: Sequence[float],
    *,
    resolution: int = BASIN_RESOLUTION,
    steps: int = BASIN_STEPS,
    beta_scale: float = FIGURE_BETA_SCALE,
) -> Basins:
    """Basins of the AM recursion on a ``resolution`` x ``resolution`` grid of [0, 1]^2 (Fig. 4/11/12).

    Grid points are pixel centres, (i + 1/2)/resolution, so no point sits on the square's edge.
    """
    memories = np.asarray(prototypes, dtype=np.float64)
    axis = (np.arange(resolution) + 0.5) / resolution
    xs, ys = np.meshgrid(axis, axis)
    points = np.column_stack([xs.ravel(), ys.ravel()])
    shape = (resolution, resolution)
    labels = np.stack(
        [
            basin_labels(points, memories, beta, steps=steps, beta_scale=beta_scale).reshape(shape)
            for beta in betas
        ]
    )
    squared = ((points[:, None, :] - memories[None]) ** 2).sum(-1)
    closest = np.sort(squared, axis=1)
    on_edge = (closest[:, 1] - closest[:, 0] < EDGE_TOLERANCE).reshape(shape)
    nearest = squared.argmin(1).reshape(shape)
    return Basins(memories, tuple(float(b) for b in betas), axis, labels, nearest, on_edge, steps)


def voronoi_segments(prototypes: np.ndarray, reach: float = 10.0) -> list[np.ndarray]:
    """The edges of the Voronoi partition of ≥ 3 non-collinear 2-D ``prototypes``, each a (2, 2) array.

    An unbounded edge runs ``reach`` from its vertex, away from the prototypes, far enough to
    cross any plotting window near them.
    """
    diagram = Voronoi(np.asarray(prototypes, dtype=np.float64))
    centre = diagram.points.mean(axis=0)
    segments = []
    for (p, q), (u, v) in zip(diagram.ridge_points, diagram.ridge_vertices, strict=True):
        if u >= 0 and v >= 0:
            segments.append(diagram.vertices[[u, v]])
            continue
        vertex = diagram.vertices[max(u, v)]
        tangent = diagram.points[q] - diagram.points[p]
        normal = np.array([-tangent[1], tangent[0]]) / np.linalg.norm(tangent)
        # The ridge leaves its vertex on the side of the two prototypes' midpoint away from the rest.
        midpoint = diagram.points[[p, q]].mean(axis=0)
        direction = normal if np.dot(midpoint - centre, normal) >= 0 else -normal
        segments.append(np.stack([vertex, vertex + reach * direction]))
    return segments


def draw_basins(basins: Basins, title: str, columns: int = 5) -> Figure:
    """One panel per β: basins as coloured regions, Voronoi edges dashed, prototypes as black dots."""
    count = len(basins.betas)
    columns = min(columns, count)
    rows = -(-count // columns)
    figure = Figure(figsize=(2.6 * columns, 2.75 * rows + 0.4), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    colours = ListedColormap(BASIN_COLOURS[: len(basins.prototypes)])
    segments = voronoi_segments(basins.prototypes)
    for ax, beta, labels, differ in zip(
        axes, basins.betas, basins.labels, basins.disagreement(), strict=False
    ):
        ax.imshow(
            labels,
            cmap=colours,
            vmin=-0.5,
            vmax=len(basins.prototypes) - 0.5,
            origin="lower",
            extent=(0, 1, 0, 1),
            interpolation="nearest",
        )
        for segment in segments:
            ax.plot(segment[:, 0], segment[:, 1], "k--", linewidth=1.2)
        ax.plot(basins.prototypes[:, 0], basins.prototypes[:, 1], "ko", markersize=6)
        ax.set(xlim=(0, 1), ylim=(0, 1), xticks=[], yticks=[], aspect="equal")
        ax.set_title(f"β = {beta:g}  ({100 * differ:.1f}% ≠ Voronoi)", fontsize=9)
    for ax in axes[count:]:
        ax.set_axis_off()
    figure.suptitle(title, fontsize=11)
    return figure


# --- Fig. 6: prototype evolution on Fashion-MNIST ----------------------------------------------------
# Fig. 6's caption fixes T = 10 (Table 6's FMNIST row says 5) and gives nothing else; we take β, lr,
# batch size and mask probability from Table 6's FMNIST row (β with the authors' code's scale, see
# FIGURE_BETA_SCALE) and fill masked pixels with the feature mean, not Table 6's 'max'. Why: with
# 'max' a masked pixel starts at the feature's maximum and keeps (1 − α)^T of it after T steps, so
# the prototypes that complete it best sit far below the data on every pixel (most of all the
# border pixels, whose standardized maximum is large): measured, nearly alike blue blobs at every
# epoch. The mean fill (0 after standardization) gives what §4 Q4 describes: random at epoch 0,
# less random at 5, garment shapes from epoch 10 that sharpen by 50, in red and blue.
FMNIST_CLAM = {
    "beta": 0.0005,
    "steps": 10,
    "lr": 0.01,
    "batch_size": 256,
    "mask_prob": 0.1,
    "mask_value": "mean",
}
EVOLUTION_EPOCHS = (0, 5, 10, 20, 50, 100)
FMNIST_IMAGE = (28, 28)
SCALE_PERCENTILE = 99


@dataclass(frozen=True)
class Evolution:
    """CLAM's prototypes at chosen epochs (0 = the random initialization) and the fit behind them."""

    snapshots: dict[int, np.ndarray]  # epoch: (k, d) prototypes of the kept restart
    n_points: int
    restarts: int
    fit_seconds: float


def fashion_mnist_train(n_points: int | None = None) -> Dataset:
    """Fashion-MNIST's 60k training images, standardized, as CLAM clusters them (§4, Q4).

    ``conf/dataset/fashion_mnist.yaml`` as experiment ``clam_table1`` prepares it (its training
    split); ``n_points`` takes the config's class-stratified, seeded subsample of that split.
    """
    spec = OmegaConf.merge(dataset_spec("fashion_mnist", "clam_table1"), {"subsample": n_points})
    return load_dataset(spec)


def prototype_evolution(
    X: np.ndarray,
    n_clusters: int,
    *,
    epochs: Sequence[int] = EVOLUTION_EPOCHS,
    restarts: int = 1,
    random_state: int = 0,
    device: str = "cpu",
) -> Evolution:
    """Fit CLAM (Algorithm 1, Fig. 6's settings: ``FMNIST_CLAM``) for max(epochs) epochs, keeping the
    prototypes at each of ``epochs`` (Fig. 6)."""
    model = CLAM(
        n_clusters,
        beta_scale=FIGURE_BETA_SCALE,
        epochs=max(epochs),
        restarts=restarts,
        prototype_snapshots=list(epochs),
        random_state=random_state,
        device=device,
        n_threads=None,  # the threads the figure script set (--threads)
        **FMNIST_CLAM,
    )
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    return Evolution(dict(sorted(model.prototype_snapshots_.items())), len(X), restarts, seconds)


def draw_prototype_evolution(
    evolution: Evolution, title: str, image_shape: tuple[int, int] = FMNIST_IMAGE
) -> Figure:
    """One row per epoch, one column per prototype, each reshaped to an image (Fig. 6).

    As in the paper, red is positive, white zero and blue negative. Each row's colour scale is
    symmetric about 0 and spans that epoch's ``SCALE_PERCENTILE``-th percentile of |ρ| (given in
    the row label; larger values take the extreme colour): the initial prototypes (≈ 0.1) are far
    smaller than the trained ones, and a few standardized border pixels, nearly always 0 in the
    data, reach |z| ≈ 100 and would wash out every other pixel under a max-based scale.
    """
    epochs = list(evolution.snapshots)
    count = len(evolution.snapshots[epochs[0]])
    figure = Figure(figsize=(1.0 * count + 1.2, 1.05 * len(epochs) + 0.6), layout="constrained")
    axes = figure.subplots(len(epochs), count, squeeze=False)
    for row, epoch in zip(axes, epochs, strict=True):
        prototypes = evolution.snapshots[epoch]
        scale = float(np.percentile(np.abs(prototypes), SCALE_PERCENTILE))
        for ax, prototype in zip(row, prototypes, strict=True):
            ax.imshow(prototype.reshape(image_shape), cmap="bwr", vmin=-scale, vmax=scale)
            ax.set(xticks=[], yticks=[])
        row[0].set_ylabel(f"epoch {epoch}\n±{scale:.2g}", fontsize=8)
    figure.suptitle(title, fontsize=10)
    return figure


# --- Fig. 1 and 13: k-means, DEC and CLAM on elongated toy clusters ----------------------------------
# k-means restarts as CLAM's baselines (Table 7).
TOY_KMEANS_N_INIT = 1000
# CLAM on the toys follows the authors' toy script (plot_gaussian.py): every coordinate evolves
# from the (barely noised) point and the loss compares it with the clean one, i.e. eq. 8, not the
# masked eq. 9; batches of 32, T = 1/α = 10. Epochs and restarts are Table 5's; the script ran
# 10 epochs and one restart per setting.
TOY_CLAM = {"mask": False, "steps": 10, "batch_size": 32, "epochs": 200, "restarts": 10}
# The paper gives no toy hyperparameters. We search a grid inside Table 5's ranges (β from the
# script's list) and keep the setting with the least training loss, as §B.1 selects.
TOY_CLAM_GRID = {"beta": (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0), "lr": (0.01, 0.1)}


@dataclass(frozen=True)
class ToyPanel:
    """One clustering of the toy data: labels renumbered to best match the classes (colours)."""

    name: str
    labels: np.ndarray
    centers: np.ndarray | None
    nmi: float
    ari: float
    sc: float
    note: str = ""


@dataclass(frozen=True)
class ToyComparison:
    """The data (a), then k-means (b), DEC (c) and CLAM (d), as Fig. 1 / 13 lay them out."""

    X: np.ndarray
    y: np.ndarray
    panels: list[ToyPanel]
    clam_grid: list[dict]  # every CLAM grid point: beta, lr, loss, nmi


def toy_data(name: str) -> Dataset:
    """The toy data set of a config, without its outliers (``clam_outliers`` labels them n_clusters).

    Fig. 13 uses ``clam_elongated`` (three clusters). Fig. 1 has two such clusters; we take the
    two clusters of ``clam_outliers`` (its Table 10 data set, generated like ``clam_elongated``
    with 400 points each) and leave its three outliers out, as Fig. 1 has none.
    """
    data = load_dataset(load_option("dataset", name))
    inliers = data.y < data.n_clusters
    return Dataset(data.name, data.X[inliers], data.y[inliers], data.n_clusters)


def matched_labels(y: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``labels`` renumbered so that each cluster takes the class it overlaps most (Hungarian).

    Clusters left unmatched (more clusters than classes) take numbers after the classes'.
    """
    classes, clusters = np.unique(y), np.unique(labels)
    table = (labels[:, None] == clusters[None]).T.astype(int) @ (y[:, None] == classes[None]).astype(int)
    rows, cols = linear_sum_assignment(table, maximize=True)
    mapping = dict(zip(clusters[rows], classes[cols], strict=True))
    spare = iter(range(int(classes.max()) + 1, int(classes.max()) + 1 + len(clusters)))
    return np.array([mapping[c] if c in mapping else next(spare) for c in labels]).reshape(labels.shape)


def _panel(name: str, X: np.ndarray, y: np.ndarray, labels: np.ndarray, centers, note: str = "") -> ToyPanel:
    return ToyPanel(
        name,
        matched_labels(y, labels),
        centers,
        nmi(y, labels),
        ari(y, labels),
        silhouette(X, labels, max_samples=None),
        note,
    )


def toy_comparison(data: Dataset, scale: Scale | None = None, random_state: int = 0) -> ToyComparison:
    """Cluster the toy data with k-means (Lloyd), DEC (k-means seeded) and CLAM (Fig. 1 / 13).

    ``scale`` (default ``FULL``) sets the k-means restarts, DEC's hyperparameters over its
    defaults (DEC's suggested ones, CLAM Table 7), and CLAM's: every point of its ``clam_grid``
    is fitted with its ``clam_params`` and the least training loss is kept.
    """
    scale = FULL if scale is None else scale
    X, y, k = data.X, data.y, data.n_clusters
    kmeans = KMeans(k, n_init=scale.kmeans_n_init, max_iter=1000, random_state=random_state).fit(X)
    dec = DEC(k, random_state=random_state, device="cpu", n_threads=None, **scale.dec_params).fit(X)
    fits = []
    for beta in scale.clam_grid["beta"]:
        for lr in scale.clam_grid["lr"]:
            model = CLAM(
                k,
                beta=beta,
                beta_scale=FIGURE_BETA_SCALE,
                lr=lr,
                random_state=random_state,
                device="cpu",
                n_threads=None,
                **scale.clam_params,
            )
            fits.append(model.fit(X))
    best = min(fits, key=lambda model: model.loss_)
    records = [{"beta": m.beta, "lr": m.lr, "loss": m.loss_, "nmi": nmi(y, m.labels_)} for m in fits]
    panels = [
        _panel("ground truth", X, y, y, None),
        _panel("k-means", X, y, kmeans.labels_, kmeans.cluster_centers_),
        _panel("DEC", X, y, dec.labels_, dec.cluster_centers_),
        _panel("CLAM", X, y, best.labels_, best.cluster_centers_, f"β = {best.beta:g}, lr = {best.lr:g}"),
    ]
    return ToyComparison(X, y, panels, records)


def draw_toy_comparison(comparison: ToyComparison, title: str) -> Figure:
    """Panels (a)-(d) of Fig. 1 / 13: points coloured by cluster, learned prototypes as black dots.

    Each panel's title gives NMI and ARI against the ground truth and SC. The view is the data's
    range: a prototype that training left outside it is marked by a cross at the panel's edge and
    its coordinates are printed in the panel.
    """
    X = comparison.X
    low, high = X.min(axis=0), X.max(axis=0)
    margin = 0.05 * (high - low)
    low, high = low - margin, high + margin
    figure = Figure(figsize=(3.2 * len(comparison.panels), 3.0), layout="constrained")
    axes = figure.subplots(1, len(comparison.panels), squeeze=False).ravel()
    for letter, ax, panel in zip("abcdefgh", axes, comparison.panels, strict=False):
        colours = np.array(CLUSTER_COLOURS)[panel.labels % len(CLUSTER_COLOURS)]
        ax.scatter(X[:, 0], X[:, 1], c=colours, s=5, linewidths=0)
        if panel.centers is not None:
            inside = np.all((panel.centers >= low) & (panel.centers <= high), axis=1)
            ax.scatter(*panel.centers[inside].T, c="k", s=40, marker="o")
            shown = np.clip(panel.centers[~inside], low, high)
            ax.scatter(*shown.T, c="k", s=60, marker="X", clip_on=False)
            if not inside.all():
                where = ", ".join(f"({x:.2f}, {y:.2f})" for x, y in panel.centers[~inside])
                # Top left: the toys' clusters run from bottom left to top right.
                ax.text(
                    0.02, 0.98, f"× outside the view:\n{where}", transform=ax.transAxes, fontsize=7, va="top"
                )
        heading = f"({letter}) {panel.name}"
        if panel.note:
            heading += f"\n{panel.note}"
        heading += f"\nNMI {panel.nmi:.3f}  ARI {panel.ari:.3f}  SC {panel.sc:.3f}"
        ax.set_title(heading, fontsize=8)
        ax.set(xlim=(low[0], high[0]), ylim=(low[1], high[1]), xticks=[], yticks=[], aspect="equal")
    figure.suptitle(title, fontsize=10)
    return figure


# --- Fig. 7-10: SC along each hyperparameter of the Table 5 search -----------------------------------
# Drawn from the records of experiment clam_search (no fitting here): its sweeps move one
# hyperparameter at a time around Table 6's values, for every T of the profile.
SEARCH_FIGURES = {"7": "beta", "8": "lr", "9": "mask_prob", "10": "mask_value"}
SEARCH_LABELS = {
    "beta": "β",
    "lr": "initial learning rate",
    "mask_prob": "mask probability",
    "mask_value": "mask value",
}


@dataclass(frozen=True)
class SearchCurves:
    """One data set's SC along one searched hyperparameter, one curve per number of steps T."""

    dataset: str
    parameter: str
    values: list  # the hyperparameter's values run, in order
    sc: dict[int, list[float]]  # T: SC at each value (NaN where that point was not run)
    partial: dict[int, list[bool]]  # T: whether that run left clusters empty (fewer than k found)
    centre: dict  # Table 6's values, at which the other searched hyperparameters are held
    kmeans_sc: float  # Table 1's k-means cell (best SC of its grid); NaN if not run


def search_curves(records: pd.DataFrame, parameter: str) -> list[SearchCurves]:
    """SC of clam_search's runs against ``parameter`` (Fig. 7: beta, 8: lr, 9: mask_prob,
    10: mask_value), per data set and T, the other searched hyperparameters at Table 6's values.

    ``records``: tidy records holding experiments clam_search and clam_baselines (k-means' line).
    """
    if parameter not in SEARCH_LABELS:
        raise ValueError(f"parameter must be one of {', '.join(SEARCH_LABELS)}, got '{parameter}'")
    table6 = load_option("tuned", "clam_table6")
    runs = wide_runs(records)
    # A metric that no record holds becomes a NaN column (n_found NaN: the run counts as complete).
    runs = runs[runs["status"] == "ok"].reindex(columns=runs.columns.union(["sc", "n_found"], sort=False))
    search = runs[(runs["experiment"] == "clam_search") & (runs["method"] == "clam")]
    kmeans = runs[(runs["experiment"] == "clam_baselines") & (runs["method"] == "kmeans")]
    held = [name for name in SEARCH_LABELS if name != parameter]
    curves = []
    for dataset in sorted(set(search["dataset"]) & set(table6)):
        centre = OmegaConf.to_container(table6[dataset])
        points, incomplete = {}, {}
        mine = search[search["dataset"] == dataset]
        for params, sc, found in zip(mine["params"], mine["sc"], mine["n_found"], strict=True):
            params = json.loads(params)
            if all(params[name] == centre[name] for name in held):
                point = params["steps"], params[parameter]
                points[point] = sc
                incomplete[point] = found < params["n_clusters"]  # NaN (not recorded): complete
        if not points:
            continue
        order = MASK_VALUES if parameter == "mask_value" else sorted({value for _, value in points})
        values = [value for value in order if any(key[1] == value for key in points)]
        steps = sorted({t for t, _ in points})
        sc = {t: [points.get((t, value), float("nan")) for value in values] for t in steps}
        partial = {t: [incomplete.get((t, value), False) for value in values] for t in steps}
        baseline = kmeans.loc[kmeans["dataset"] == dataset, "sc"]
        curves.append(
            SearchCurves(
                dataset,
                parameter,
                values,
                sc,
                partial,
                centre,
                float(baseline.max()) if len(baseline) else float("nan"),
            )
        )
    return curves


def draw_search_curves(curves: Sequence[SearchCurves], title: str) -> Figure:
    """One panel per data set: SC against the hyperparameter, a line per T, k-means as a red line
    (the paper's "km"), Table 6's value marked by a dotted line (Fig. 7-10). A hollow marker is a
    run that left clusters empty: its SC scores fewer than k clusters."""
    count = max(len(curves), 1)
    columns = min(count, 3)
    rows = -(-count // columns)
    figure = Figure(figsize=(max(4.2 * columns, 8.0), 3.2 * rows + 0.8), layout="constrained")
    axes = np.atleast_1d(figure.subplots(rows, columns, squeeze=False)).ravel()
    # One colour per T across panels (viridis, so that none is k-means' red).
    all_steps = sorted({steps for curve in curves for steps in curve.sc})
    colour = {t: colormaps["viridis"](i / max(len(all_steps) - 1, 1)) for i, t in enumerate(all_steps)}
    for ax, curve in zip(axes, curves, strict=False):
        categorical = curve.parameter == "mask_value"
        x = np.arange(len(curve.values)) if categorical else np.asarray(curve.values, dtype=float)
        for steps, scores in curve.sc.items():
            scores, hollow = np.asarray(scores), np.asarray(curve.partial[steps])
            ax.plot(x, scores, marker="o", markersize=3, linewidth=1, color=colour[steps], label=f"T={steps}")
            ax.plot(x[hollow], scores[hollow], "o", markersize=6, mfc="white", mec=colour[steps])
        if np.isfinite(curve.kmeans_sc):
            ax.axhline(curve.kmeans_sc, color="red", linestyle="--", linewidth=1.2, label="km")
        centre = curve.centre[curve.parameter]
        if not categorical or centre in curve.values:
            at = curve.values.index(centre) if categorical else centre
            ax.axvline(at, color="grey", linestyle=":", linewidth=1)
        if categorical:
            ax.set_xticks(x, curve.values)
        elif curve.parameter in ("beta", "lr"):
            ax.set_xscale("log")
        ax.set(xlabel=SEARCH_LABELS[curve.parameter], ylabel="SC", title=curve.dataset)
        ax.legend(fontsize=6, ncols=2)
    for ax in axes[len(curves) :]:
        ax.set_axis_off()
    figure.suptitle(title, fontsize=10)
    return figure


# --- Scales ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    """How much work each figure does: ``FULL`` is the paper's protocol, ``QUICK`` checks the code."""

    name: str
    basin_resolution: int
    fmnist_points: int | None  # None: all 60k training images
    evolution_epochs: tuple[int, ...]
    kmeans_n_init: int
    dec_params: dict  # over DEC's defaults
    clam_params: dict
    clam_grid: dict  # beta and lr values


FULL = Scale("full", BASIN_RESOLUTION, None, EVOLUTION_EPOCHS, TOY_KMEANS_N_INIT, {}, TOY_CLAM, TOY_CLAM_GRID)
# Under a minute on 2 cores: coarse grids, 2000 images for 10 epochs, short toy fits.
QUICK = Scale(
    "quick",
    120,
    2000,
    (0, 5, 10),
    10,
    {"max_iter": 1000},
    {**TOY_CLAM, "epochs": 20, "restarts": 2},
    {"beta": (2.0, 50.0), "lr": (0.1,)},
)

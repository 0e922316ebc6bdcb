"""The figures of Khatri-Rao clustering (Ciaperoni et al.): what each one shows, computed, then drawn.

- Fig. 6 (§9.2): inertia and purity against the set size h1 = h2 on BLOBS and CLASSIFICATION
  (100 clusters) for Khatri-Rao k-means (sum, product) and the naive two-phase method with
  h1 + h2 vectors, and k-means with h1 + h2 and with h1·h2 centroids (:func:`inertia_by_set_size`).
- Fig. 7 (§9.2): inertia against the number of sets p for a budget of 12 vectors (6 + 6,
  4 + 4 + 4, 3 + 3 + 3 + 3), baselines at h1 = h2 = 6 (:func:`inertia_by_number_of_sets`).
- Fig. 8 (§9.3): runtime and peak memory of one fit against n, the number of features m and k on
  blobs (:func:`scalability`); each fit runs in a fresh process that measures its own peak.
- Fig. 9 (§9.4): colour quantization of scikit-learn's ``china.jpg`` with 12 k-means centroids,
  6 + 6 product protocentroids and 12 random pixels, fitted on 1000 pixels (:func:`colour_quantization`).

Every fit keeps the least inertia of ``n_init`` restarts (the paper: 20), except Fig. 8's single
executions. What the paper leaves open, and our choice, is said where it is decided.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from sklearn.cluster import KMeans

from clusterbench.catalog import load_option
from clusterbench.data import generators, load_dataset
from clusterbench.data.preprocess import standardize
from clusterbench.errors import UserError, first_line
from clusterbench.methods import KhatriRaoKMeans, KhatriRaoNaive
from clusterbench.methods.kr_kmeans import protocentroid_sizes
from clusterbench.metrics import purity
from clusterbench.results import atomic_write_text

# Fig. 6's x-axis: h1 = h2 from 2 to 10, i.e. 4 to 100 represented centroids (the data have 100).
SET_SIZES = tuple(range(2, 11))
# Fig. 7: a budget of 12 vectors split into p equal sets.
BUDGET_SPLITS = {2: (6, 6), 3: (4, 4, 4), 4: (3, 3, 3, 3)}
PAPER_RESTARTS = 20
KR_AGGREGATORS = {"KR-k-means-+ (h1+h2)": "sum", "KR-k-means-× (h1+h2)": "product"}
LINES = {  # label: (colour, marker)
    "KR-k-means-+ (h1+h2)": ("#1565c0", "o"),
    "KR-k-means-× (h1+h2)": ("#2e7d32", "s"),
    "naive KR (h1+h2)": ("#8e24aa", "^"),
    "k-means (h1+h2)": ("#ef6c00", "v"),
    "k-means (h1·h2)": ("#616161", "D"),
}


def _kmeans(k: int, n_init: int, seed: int) -> KMeans:
    """The paper's k-means baseline: scikit-learn, random initial centroids."""
    return KMeans(k, init="random", n_init=n_init, random_state=seed)


def _fits(sizes: tuple[int, ...], n_init: int, seed: int) -> dict:
    """The five methods of Fig. 6 for protocentroid sets of ``sizes``."""
    common = {"n_init": n_init, "random_state": seed, "device": "cpu"}
    return {
        **{
            label: KhatriRaoKMeans(h=list(sizes), aggregator=a, **common)
            for label, a in KR_AGGREGATORS.items()
        },
        "naive KR (h1+h2)": KhatriRaoNaive(h=list(sizes), aggregator="product", **common),
        "k-means (h1+h2)": _kmeans(sum(sizes), n_init, seed),
        "k-means (h1·h2)": _kmeans(int(np.prod(sizes)), n_init, seed),
    }


@dataclass
class Curves:
    """y-values per method along ``x``, for one dataset (Fig. 6, 7)."""

    dataset: str
    x: list[int]
    inertia: dict[str, list[float]] = field(default_factory=dict)
    purity: dict[str, list[float]] = field(default_factory=dict)


def _dataset(name: str, max_samples: int | None = None):
    return load_dataset(load_option("dataset", name), max_samples=max_samples)


def inertia_by_set_size(
    name: str, set_sizes=SET_SIZES, n_init: int = PAPER_RESTARTS, seed: int = 0, max_samples=None
) -> Curves:
    """Fig. 6: each method's inertia and purity for two sets of h protocentroids, h in ``set_sizes``."""
    data = _dataset(name, max_samples)
    curves = Curves(name, list(set_sizes))
    for h in set_sizes:
        for label, model in _fits((h, h), n_init, seed).items():
            model.fit(data.X)
            curves.inertia.setdefault(label, []).append(float(model.inertia_))
            curves.purity.setdefault(label, []).append(purity(data.y, model.labels_))
    return curves


def inertia_by_number_of_sets(
    name: str, splits=BUDGET_SPLITS, n_init: int = PAPER_RESTARTS, seed: int = 0, max_samples=None
) -> Curves:
    """Fig. 7: Khatri-Rao k-means with 12 vectors in p sets; the baselines at h1 = h2 = 6 are flat."""
    data = _dataset(name, max_samples)
    curves = Curves(name, list(splits))
    baselines = {label: m for label, m in _fits((6, 6), n_init, seed).items() if not label.startswith("KR")}
    for label, model in baselines.items():
        model.fit(data.X)
        curves.inertia[label] = [float(model.inertia_)] * len(splits)
    for sizes in splits.values():
        for label, model in _fits(sizes, n_init, seed).items():
            if label.startswith("KR"):
                model.fit(data.X)
                curves.inertia.setdefault(label, []).append(float(model.inertia_))
    return curves


def _draw_lines(axes, x, values: dict[str, list[float]]) -> None:
    for label, ys in values.items():
        colour, marker = LINES[label]
        axes.plot(x, ys, color=colour, marker=marker, markersize=4, label=label)


def draw_set_size_curves(curves: list[Curves], title: str) -> Figure:
    figure = Figure(figsize=(10, 3.6 * len(curves)), layout="constrained")
    grid = figure.subplots(len(curves), 2, squeeze=False)
    for row, data in zip(grid, curves, strict=True):
        _draw_lines(row[0], data.x, data.inertia)
        row[0].set(yscale="log", xlabel="h1 = h2", ylabel="inertia", title=f"{data.dataset}: inertia")
        _draw_lines(row[1], data.x, data.purity)
        row[1].set(xlabel="h1 = h2", ylabel="purity", title=f"{data.dataset}: purity")
    grid[0][1].legend(fontsize=8)
    figure.suptitle(title)
    return figure


def draw_set_count_curves(curves: list[Curves], title: str) -> Figure:
    figure = Figure(figsize=(5 * len(curves), 3.8), layout="constrained")
    axes = figure.subplots(1, len(curves), squeeze=False)[0]
    for ax, data in zip(axes, curves, strict=True):
        _draw_lines(ax, data.x, data.inertia)
        ax.set(yscale="log", xlabel="number of sets p (12 vectors)", ylabel="inertia", title=data.dataset)
        ax.set_xticks(data.x)
    axes[0].legend(fontsize=8)
    figure.suptitle(title)
    return figure


# --- Fig. 8: scalability -------------------------------------------------------------------------
# §9.3: blobs with 100 clusters and 100 features while n varies; 1000 points and 100 clusters
# while the number of features m varies; 20000 points and 100 features while k varies. k-means is
# "an implementation which mirrors" Khatri-Rao k-means: ours with one set (the same code path).
SWEEPS = {
    "n": {"values": (4000, 8000, 12000, 16000), "fixed": {"d": 100, "k": 100}},
    "m": {"values": (10000, 15000, 20000, 25000), "fixed": {"n": 1000, "k": 100}},
    "k": {"values": (2500, 5000, 7500, 10000), "fixed": {"n": 20000, "d": 100}},
}
SWEPT_KEY = {"n": "n", "m": "d", "k": "k"}
# The sum beside the paper's product: its assignment builds no centroid (issue 31).
SCALABILITY_METHODS = (
    "KR-k-means-+ (h1+h2)",
    "KR-k-means-× (h1+h2)",
    "k-means (h1+h2)",
    "k-means (h1·h2)",
    "naive KR (h1+h2)",
)


def fit_in_fresh_process(spec: dict) -> dict:
    """Run one fit described by ``spec`` in a new Python process: seconds, peak MiB, iterations.

    The child loads the data and warms up (imports, thread pools), then resets its peak resident
    size (``/proc/self/clear_refs``), so the peak reported is the fit's own above the data. glibc
    is told to serve every allocation above 64 KiB from fresh pages and hand freed ones back
    (a fixed mmap threshold): otherwise a fit can reuse memory the data preparation freed, and
    its peak would not show it.
    """
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(spec.get("threads", 1)),
        "MALLOC_MMAP_THRESHOLD_": str(64 * 1024),
        "MALLOC_TRIM_THRESHOLD_": str(64 * 1024),
    }
    done = subprocess.run(
        [sys.executable, "-m", "clusterbench.figures.khatri_rao", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def scaled_blobs(n: int, d: int, centers: int) -> np.ndarray:
    """Fig. 8's data: BLOBS (:func:`clusterbench.data.generators.blobs`, seed 42) of the given
    size, z-scored as the paper prepares it."""
    return standardize(generators.blobs(n_samples=n, n_features=d, centers=centers).X)


def _model(spec: dict):
    """The estimator a ``spec`` names (see :func:`scalability`); ``sizes`` are the KR set sizes."""
    sizes, method = spec["sizes"], spec["method"]
    # n_threads=None: the threads this process was given (spec's threads), as k-means gets.
    common = {"n_init": 1, "max_iter": spec["max_iter"], "random_state": 0, "device": "cpu"}
    common["n_threads"] = None
    if method == "sklearn k-means":
        return KMeans(spec["k"], init="random", n_init=1, max_iter=spec["max_iter"], random_state=0)
    lean = {"tol": spec["tol"], "memory_efficient": spec["memory_efficient"], **common}
    if method == "k-means (h1+h2)":
        return KhatriRaoKMeans(n_sets=1, h=[sum(sizes)], **lean)
    if method == "k-means (h1·h2)":
        return KhatriRaoKMeans(n_sets=1, h=[int(np.prod(sizes))], **lean)
    if method == "naive KR (h1+h2)":
        # als_max_iter only in the warm-up's spec: the measured fit keeps the authors' 5000.
        als = {"als_max_iter": spec["als_max_iter"]} if "als_max_iter" in spec else {}
        return KhatriRaoNaive(h=sizes, **common, **als)
    return KhatriRaoKMeans(h=sizes, aggregator=KR_AGGREGATORS[method], **lean)


def _status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    raise KeyError(key)


def _fit_here(spec: dict) -> dict:
    import torch

    torch.set_num_threads(spec.get("threads", 1))
    X = scaled_blobs(spec["n"], spec["d"], spec["centers"])
    warm = dict(spec, sizes=[2, 2], k=4, max_iter=1, als_max_iter=1)
    _model(warm).fit(X[:64])
    model = _model(spec)
    Path("/proc/self/clear_refs").write_text("5")  # peak resident size := current
    before = _status_kib("VmRSS")
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    peak = (_status_kib("VmHWM") - before) / 1024
    return {"seconds": seconds, "peak_mib": peak, "n_iter": int(model.n_iter_)}


@dataclass
class Scalability:
    """Per sweep (n, m, k): the swept values and, per method, seconds, seconds per iteration and
    peak MiB per value (a fit's runtime is mostly how many iterations it takes to converge)."""

    sweeps: dict[str, list[int]]
    seconds: dict[str, dict[str, list[float]]]
    per_iteration: dict[str, dict[str, list[float]]]
    peak_mib: dict[str, dict[str, list[float]]]


# One row per fit of :func:`scalability`: what identifies it, then what was measured.
MEASUREMENT_KEY = ["axis", "method", "n", "d", "k", "sizes", "threads", "max_iter", "tol"]
MEASUREMENT_COLUMNS = [*MEASUREMENT_KEY, "seconds", "n_iter", "peak_mib", "load_before", "load_after"]


def scalability(
    sweeps=SWEEPS,
    max_iter: int = 200,
    threads: int = 1,
    scale: float = 1.0,
    points: int | None = None,
    measurements: Path | None = None,
) -> Scalability:
    """Fig. 8: one fit per method and point, each in a fresh process.

    ``scale`` shrinks n, m and k; ``points`` keeps only the first values of each sweep. With
    ``measurements`` (a CSV), each fit's row is written there as soon as it ends (atomically) and
    a fit whose row is already there is not run again: a sweep of an hour or more resumes where
    it was stopped, and the figure is drawn from the file. Delete the file to measure anew.
    """
    rows = _measured_rows(measurements) if measurements and measurements.exists() else []
    measured_before = {tuple(row[key] for key in MEASUREMENT_KEY): row for row in rows}
    result = Scalability({}, {}, {}, {})
    for axis, sweep in sweeps.items():
        result.seconds[axis], result.per_iteration[axis], result.peak_mib[axis] = {}, {}, {}
        for value in sweep["values"][:points]:
            shape = {"n": 1000, "d": 100, "k": 100, **sweep["fixed"], SWEPT_KEY[axis]: value}
            shape = {key: max(4, round(size * scale)) for key, size in shape.items()}
            result.sweeps.setdefault(axis, []).append(shape[SWEPT_KEY[axis]])
            sizes = list(protocentroid_sizes(shape["k"]))
            for method in SCALABILITY_METHODS:
                spec = {
                    **shape,
                    "centers": shape["k"],
                    "sizes": sizes,
                    "method": method,
                    "memory_efficient": True,
                    "max_iter": max_iter,
                    "tol": 1e-4,
                    "threads": threads,
                }
                identity = {**spec, "axis": axis, "sizes": "x".join(map(str, sizes))}
                key = tuple(identity[name] for name in MEASUREMENT_KEY)
                row = measured_before.get(key)
                if row is None:
                    load_before = os.getloadavg()[0]
                    row = {name: identity[name] for name in MEASUREMENT_KEY} | fit_in_fresh_process(spec)
                    row |= {"load_before": load_before, "load_after": os.getloadavg()[0]}
                    rows.append(row)
                    if measurements:
                        atomic_write_text(
                            measurements, pd.DataFrame(rows, columns=MEASUREMENT_COLUMNS).to_csv(index=False)
                        )
                result.seconds[axis].setdefault(method, []).append(row["seconds"])
                per_iteration = row["seconds"] / max(1, row["n_iter"])
                result.per_iteration[axis].setdefault(method, []).append(per_iteration)
                result.peak_mib[axis].setdefault(method, []).append(row["peak_mib"])
    return result


def _measured_rows(path: Path) -> list[dict]:
    """The rows of an earlier sweep's CSV, refused in one line when it is not one."""
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(
            f"{path} is not a CSV of Fig. 8's fits ({first_line(exc)}); delete it to measure anew"
        ) from None
    missing = [column for column in MEASUREMENT_COLUMNS if column not in frame.columns]
    if missing:
        raise UserError(
            f"{path} lacks Fig. 8's columns {', '.join(missing)}; delete it to measure anew, "
            "or give another file with --measurements"
        )
    return frame.to_dict("records")


def draw_scalability(result: Scalability, title: str) -> Figure:
    figure = Figure(figsize=(13, 10), layout="constrained")
    grid = figure.subplots(3, len(result.sweeps), squeeze=False)
    names = {"n": "data points n", "m": "features m", "k": "centroids k"}
    rows = (
        (result.seconds, "runtime (s)"),
        (result.per_iteration, "seconds per iteration"),
        (result.peak_mib, "peak memory (MiB)"),
    )
    for column, axis in enumerate(result.sweeps):
        for row, (values, label) in enumerate(rows):
            _draw_lines(grid[row][column], result.sweeps[axis], values[axis])
            grid[row][column].set(yscale="log", xlabel=names[axis], ylabel=label)
    grid[0][0].legend(fontsize=8)
    figure.suptitle(title)
    return figure


# --- Fig. 9: colour quantization -----------------------------------------------------------------
# §9.4 follows scikit-learn's colour-quantization example: pixels as RGB in [0, 1], codebooks fitted
# on 1000 random pixels, every pixel of the image mapped to its nearest codeword. The caption's
# inertia is over the whole image (its values, 4686 / 2009 / 1144, fit the 273280 pixels).
QUANTIZATION_PIXELS = 1000


@dataclass
class Quantization:
    original: np.ndarray  # (height, width, 3) in [0, 1]
    images: dict[str, np.ndarray]
    inertia: dict[str, float]


def colour_quantization(n_init: int = PAPER_RESTARTS, seed: int = 0) -> Quantization:
    """Fig. 9: 12 random pixels, k-means with 12 centroids and 6 x 6 product protocentroids."""
    from sklearn.datasets import load_sample_image

    image = load_sample_image("china.jpg").astype(np.float64) / 255.0
    pixels = image.reshape(-1, 3)
    rng = np.random.default_rng(seed)
    sample = pixels[rng.choice(len(pixels), QUANTIZATION_PIXELS, replace=False)]
    kmeans = KMeans(12, n_init=n_init, random_state=seed).fit(sample)
    khatri_rao = KhatriRaoKMeans(
        h=[6, 6], aggregator="product", n_init=n_init, random_state=seed, device="cpu"
    )
    codebooks = {
        "random (12 pixels)": sample[rng.choice(len(sample), 12, replace=False)],
        "k-means (12)": kmeans.cluster_centers_,
        "KR-k-means-× (6+6)": khatri_rao.fit(sample).cluster_centers_,
    }
    images, inertia = {}, {}
    for name, codebook in codebooks.items():
        distances = ((pixels[:, None, :] - codebook[None]) ** 2).sum(-1)
        nearest = distances.argmin(1)
        images[name] = codebook[nearest].reshape(image.shape)
        inertia[name] = float(distances[np.arange(len(pixels)), nearest].sum())
    return Quantization(image, images, inertia)


def draw_quantization(result: Quantization, title: str) -> Figure:
    figure = Figure(figsize=(16, 3.8), layout="constrained")
    axes = figure.subplots(1, 1 + len(result.images))
    axes[0].imshow(result.original)
    axes[0].set_title("original")
    for ax, (name, image) in zip(axes[1:], result.images.items(), strict=True):
        ax.imshow(np.clip(image, 0, 1))
        ax.set_title(f"{name}\ninertia {result.inertia[name]:.0f}")
    for ax in axes:
        ax.axis("off")
    figure.suptitle(title)
    return figure


if __name__ == "__main__":  # one fit of fit_in_fresh_process, in its own process
    print(json.dumps(_fit_here(json.loads(sys.argv[1]))))

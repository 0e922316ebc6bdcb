"""Synthetic data sets of the papers, generated from a seed (same arguments, same arrays).

Each function is a source: ``_target_: clusterbench.data.generators.<name>`` in
``conf/dataset/<name>.yaml``, returning :class:`~clusterbench.data.sources.RawData`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from clusterbench.data.sources import RawData, call_source
from clusterbench.errors import UserError

BIRCH_SPACING = 4 * math.sqrt(2)
# Covariance of each elongated CLAM toy cluster: std 0.143 along the diagonal, 0.022 across it.
CLAM_TOY_COVARIANCE = ((0.0105, 0.01), (0.01, 0.0105))
CLAM_TOY_OUTLIERS = ((-0.05, -0.7), (0.1, 0.1), (0.3, -0.5))
# double_mnist reads its digits through the mnist dataset config's own source, loaded from the
# file (as catalog.load_option loads it) so that this module does not import the catalog.
MNIST_CONFIG = Path(__file__).resolve().parents[2] / "conf" / "dataset" / "mnist.yaml"


def blobs(
    n_samples: int = 5000,
    n_features: int = 2,
    centers: int = 100,
    cluster_std: float = 1.0,
    random_state: int = 42,
) -> RawData:
    """Isotropic Gaussian clusters, ``sklearn.datasets.make_blobs`` (Khatri-Rao paper, BLOBS).

    Khatri-Rao clustering, Appendix A and Table 1: 5000 points in 2 dimensions, 100 clusters of
    standard deviation 1 (imbalance ratio 1.00; centres uniform in make_blobs' default box
    [-10, 10]^2). Used in Fig. 6/7 and Table 2; Fig. 8 varies ``n_samples``, ``n_features`` and
    ``centers``. ``random_state=42`` is the seed of the authors' script
    (maciap/KhatriRaoClustering, ``scripts/run_experiments_utils.py``). Labels are 0..centers-1.
    """
    from sklearn.datasets import make_blobs

    X, y = make_blobs(
        n_samples=n_samples,
        n_features=n_features,
        centers=centers,
        cluster_std=cluster_std,
        random_state=random_state,
    )
    return RawData(X=X, y=y.astype(np.int64))


def classification(
    n_samples: int = 5000,
    n_features: int = 10,
    n_informative: int = 10,
    n_classes: int = 100,
    n_clusters_per_class: int = 1,
    flip_y: float = 0.01,
    random_state: int = 42,
) -> RawData:
    """Gaussian classes on hypercube vertices, ``sklearn.datasets.make_classification``.

    Khatri-Rao clustering, Appendix A and Table 1 (CLASSIFICATION, 5000 x 10, 100 labels): 10
    informative features and no redundant or repeated ones; each class is one cluster. The paper
    does not give the remaining settings; ``n_clusters_per_class=1`` and ``random_state=42`` are
    those of the authors' script (maciap/KhatriRaoClustering, ``scripts/run_experiments_utils.py``),
    and ``flip_y=0.01`` is scikit-learn's default, which the script keeps: 1% of the labels are
    random, giving class sizes 48..53, i.e. the imbalance ratio 0.91 of Table 1.
    """
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=n_samples,
        n_features=n_features,
        n_informative=n_informative,
        n_redundant=0,
        n_repeated=0,
        n_classes=n_classes,
        n_clusters_per_class=n_clusters_per_class,
        flip_y=flip_y,
        random_state=random_state,
    )
    return RawData(X=X, y=y.astype(np.int64))


def _gaussian_clusters(
    centres: np.ndarray, n_per_cluster: int, sigma: float, rng: np.random.Generator
) -> RawData:
    """``n_per_cluster`` points of N(centre, sigma^2 I) per centre, rows ordered by cluster."""
    y = np.repeat(np.arange(len(centres), dtype=np.int64), n_per_cluster)
    X = centres[y] + sigma * rng.standard_normal((len(y), centres.shape[1]))
    return RawData(X=X, y=y)


def birch_grid(
    n_per_cluster: int = 100,
    grid_size: int = 5,
    spacing: float = BIRCH_SPACING,
    sigma: float = 1.0,
    random_state: int = 0,
) -> RawData:
    """BIRCH 5x5 grid: 25 isotropic 2-D Gaussians centred on a square grid (k-means-C′ paper).

    Lücke & Forster, §"numerical verification", Fig. 1A–C/I and Table S1 (left half): C = 25
    clusters on a 5x5 grid, N = 100 points per cluster, one fixed data set for all runs. The
    paper states neither spacing nor variance; we use the BIRCH convention (Zhang et al., 1996,
    DS1): cluster radius √2, i.e. σ = 1 in 2-D, and neighbouring centres 4√2 apart. These
    reproduce Table S1: 30 k-means++ runs on this data give quantization error φ mean 5460 / best
    4883 (paper 5503 / 4836), purity 0.977 (0.971), NMI 0.982 (0.977); best φ ≈ N·D·σ² pins σ ≈ 1.
    Centres sit at (i + 1/2)·spacing, so the grid tiles the square [0, grid_size·spacing]^2 that
    :func:`birch_random` draws its centres from. Rows are ordered by cluster; the centre
    (x_i, y_j) has label i·grid_size + j.
    """
    steps = (np.arange(grid_size) + 0.5) * spacing
    centres = np.array([(x, y) for x in steps for y in steps])
    return _gaussian_clusters(centres, n_per_cluster, sigma, np.random.default_rng(random_state))


def birch_random(
    n_clusters: int = 25,
    n_per_cluster: int = 100,
    box: float = 5 * BIRCH_SPACING,
    sigma: float = 1.0,
    random_state: int = 9,
) -> RawData:
    """BIRCH 25x random: 25 isotropic 2-D Gaussians at uniformly random centres (k-means-C′ paper).

    Lücke & Forster, Fig. 1D–F/J/K and Table S1 (right half): "the same setting as for Fig. 1A but
    with randomly (uniformly) distributed cluster centers", i.e. N = 100 points per cluster and
    σ = 1 as in :func:`birch_grid`. The paper gives no range for the centres; we draw them
    uniformly in the square [0, box]^2 that the 5x5 grid tiles (box = 5·4√2), so each cluster
    has one grid cell's area on average. The paper's own draw is unknown and the overlap varies
    with the seed (20 k-means++ runs on seeds 0–11: φ mean 4070–4780, purity 0.78–0.86), so the
    default seed 9 is the draw among those whose k-means row is closest to Table S1: φ mean 4541 /
    best 4256 (paper 4535 / 4291), purity 0.812 (0.819), NMI 0.885 (0.879). Rows are ordered by
    cluster.
    """
    rng = np.random.default_rng(random_state)
    centres = rng.uniform(0.0, box, size=(n_clusters, 2))
    return _gaussian_clusters(centres, n_per_cluster, sigma, rng)


def _elongated_clusters(n_per_cluster: Sequence[int], spacing: float, rng: np.random.Generator) -> RawData:
    """CLAM's toy clusters: centres on the line y = 0.5, ``spacing`` apart and centred on x = 0.5."""
    if not n_per_cluster or min(n_per_cluster) < 1:  # an empty class would leave a gap in the labels
        raise UserError(f"every cluster needs at least one point, got n_per_cluster={list(n_per_cluster)}")
    k = len(n_per_cluster)
    centres_x = 0.5 + spacing * (np.arange(k) - (k - 1) / 2)
    chol = np.linalg.cholesky(np.array(CLAM_TOY_COVARIANCE))
    y = np.repeat(np.arange(k, dtype=np.int64), n_per_cluster)
    centres = np.column_stack([centres_x, np.full(k, 0.5)])
    X = centres[y] + rng.standard_normal((len(y), 2)) @ chol.T
    return RawData(X=X, y=y)


def clam_elongated(
    n_per_cluster: Sequence[int] = (275, 125, 225), spacing: float = 0.3, random_state: int = 0
) -> RawData:
    """Parallel elongated 2-D Gaussian clusters that k-means cuts across (CLAM Fig. 13, Fig. 1).

    Saha et al., Appendix B.6 / Fig. 13: three elongated clusters (Fig. 1 shows the same with two:
    pass two sizes). The paper gives no numbers; the shape follows the authors' toy script
    (bsaha205/clam, ``plot_gaussian.py``): centres (0.2, 0.5), (0.5, 0.5), (0.8, 0.5) and
    covariance [[0.0105, 0.01], [0.01, 0.0105]] (long axis along the diagonal). That script draws
    each size at random from 250–299, 100–149 and 200–249; we fix the midpoints 275, 125, 225.
    Rows are ordered by cluster, labels 0..k-1 with k = len(n_per_cluster).
    """
    return _elongated_clusters(n_per_cluster, spacing, np.random.default_rng(random_state))


def clam_outliers(
    n_per_cluster: Sequence[int] = (400, 400),
    outliers: Sequence[Sequence[float]] = CLAM_TOY_OUTLIERS,
    spacing: float = 0.3,
    random_state: int = 0,
) -> RawData:
    """Two elongated clusters plus a few far outliers (CLAM Appendix B.8, Table 10, Fig. 15).

    The paper describes "a toy-example with two clusters" and outliers (Fig. 15d) and scores only
    the inliers. It gives no numbers, so we use two clusters as in :func:`clam_elongated` (centres
    (0.35, 0.5) and (0.65, 0.5), 400 points each — our choice) and the three outlier points of the
    authors' toy script (bsaha205/clam ``plot_gaussian.py``): (-0.05, -0.7), (0.1, 0.1),
    (0.3, -0.5). On raw coordinates k-means (k = 2) reaches SC 0.520 on the clean clusters (Table
    10: 0.511), but these three outliers barely move it (inlier SC still 0.520, Table 10: 0.477);
    the paper does not say where its Fig. 15 outliers lie.

    Labels: the clusters are 0..k-1 and every outlier has the label k (= 2 by default), an extra
    value rather than -1 so that label-based metrics still accept ``y``. The outliers are the
    last ``len(outliers)`` rows; Table 10's inlier-only scores use the rows with ``y < k``. Ask
    the methods for k clusters (``n_clusters: 2`` in the config), not k + 1.
    """
    clusters = _elongated_clusters(n_per_cluster, spacing, np.random.default_rng(random_state))
    far = np.asarray(outliers, dtype=np.float64).reshape(-1, 2)
    X = np.vstack([clusters.X, far])
    y = np.concatenate([clusters.y, np.full(len(far), len(n_per_cluster), dtype=np.int64)])
    return RawData(X=X, y=y)


def double_mnist(n_samples: int = 10000, random_state: int = 0) -> RawData:
    """Double MNIST: two MNIST digits side by side, 100 classes "00".."99" (Khatri-Rao paper).

    Khatri-Rao clustering, Appendix A and Table 1: 10000 images of 28 x 56 pixels; each is a
    random image of digit a placed left of a random image of digit b, labelled 10·a + b, with an
    (almost) uniform spread over the 100 pairs: n // 100 of each, and the first n % 100 pairs
    once more (the authors' ``concatenate_mnist``). The digits are drawn from all 70000 MNIST
    images (``mnist`` in the data cache), each class index with replacement. The authors' script
    draws without a seed and builds 25000 images, while Table 1 lists 10000; we build Table 1's
    10000 from ``random_state``. By construction the classes have a Khatri-Rao structure: left
    digit x right digit. Pixels stay 0..255 (the paper divides by the maximum).
    """
    if n_samples < 100:  # fewer would leave some of the 100 classes empty
        raise UserError(f"double_mnist needs n_samples ≥ 100, one image of each class, got {n_samples}")
    mnist = call_source(OmegaConf.load(MNIST_CONFIG).source, "mnist")  # the mnist config's own source
    digits = np.asarray(mnist.y).astype(np.int64)
    rng = np.random.default_rng(random_state)
    y = np.concatenate([np.repeat(np.arange(100), n_samples // 100), np.arange(n_samples % 100)])
    by_digit = [np.flatnonzero(digits == d) for d in range(10)]
    left = np.array([rng.choice(by_digit[label // 10]) for label in y])
    right = np.array([rng.choice(by_digit[label % 10]) for label in y])
    images = np.asarray(mnist.X, dtype=np.float32).reshape(-1, 28, 28)
    X = np.concatenate([images[left], images[right]], axis=2).reshape(len(y), 28 * 56)
    return RawData(X=X, y=y.astype(np.int64))

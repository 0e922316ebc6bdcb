"""Similarity graphs and the ratio cut of PRCut (Ghriss & Monteleoni): the binary k-nearest-neighbour
graph, cached on disk, and the ratio cut of a labelling on it (eq. 1).

**The kNN graph.** Row i of the directed graph marks the ``n_neighbors`` nearest points of point i
(Euclidean, scikit-learn's brute-force ``NearestNeighbors``, the point itself excluded): what the
authors' code builds with ``kneighbors_graph``. The paper's text (§4.4) makes it symmetric with an
OR: W_ij = 1 when either point is among the other's k nearest. ``graph="symmetric"`` (the default)
is the paper's, ``graph="directed"`` the code's. Both come from the same neighbour lists, which are
all that is cached.

**The cache.** Building the lists costs minutes at MNIST scale (60000 x 784, k = 150: 78-95 s on
2 cores), and they depend on the data and k only, so they are kept on disk, keyed by a digest of
the array (:func:`clusterbench.methods.deep.cache.array_digest`: dtype, shape and bytes, after the
dataset's preprocessing and subsampling) and k. Where: ``folder`` if given, else the folder
``knn`` beside the pretrained-weights cache (``$CLUSTERBENCH_CACHE/../knn``, by default
``~/.cache/clusterbench/knn``). One file per key, ``<first 32 hex digits of sha256(key)>.knn``:

    MAGIC (8 bytes) | sha256 of the payload (32 bytes) | payload (an ``.npz``: key, indices)

written atomically (:func:`clusterbench.results.atomic_write_bytes`). A file that is short, has
another magic, fails its checksum, does not load, or holds another key or shape is rebuilt and
rewritten with a warning, never used. The last few lists are also kept in memory, so a fit and
the ``ratio_cut`` metric of the same run read the disk once.

**The ratio cut** (eq. 1, = ½ Tr(Fᵀ L F), eq. 3): ½ Σ_ℓ cut(C_ℓ, C̄_ℓ) / |C_ℓ|. The authors' code
(``ratio_cut_score``) has no ½ and runs on the directed graph; both are options. The reference
values of the notes (A2) on the MNIST training split (pixels / 255, k = 150), true labels / a
k-means partition (KMeans(10, n_init=1, random_state=0)), are reproduced exactly: OR-symmetric
with ½ 181.2 / 220.2, directed without ½ 210.5 / 292.9.
"""

from __future__ import annotations

import hashlib
import io
import json
import warnings
from collections import OrderedDict
from pathlib import Path

import numpy as np
from scipy import sparse
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_array

from clusterbench.errors import HyperparameterError
from clusterbench.methods.deep.cache import array_digest, cache_folder
from clusterbench.results import atomic_write_bytes
from clusterbench.validation import is_int

GRAPHS = ("symmetric", "directed")
MAGIC = b"CBKNN001"  # the format's name and version
DIGEST_BYTES = 32  # sha256
SUFFIX = ".knn"

# Neighbour lists kept in memory: (digest, k) -> (n, k) int32 array; the oldest goes first.
_KEPT: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()
KEPT_IN_MEMORY = 3


def knn_cache_folder(folder: str | Path | None = None) -> Path:
    """``folder``, else ``knn`` beside the pretrained cache's folder (``~/.cache/clusterbench/knn``)."""
    return Path(folder) if folder is not None else cache_folder().parent / "knn"


def check_points(X, who: str = "the kNN graph") -> np.ndarray:
    """``X`` as a 2-D float array, or HyperparameterError in one line for NaN or infinite entries."""
    X = check_array(X, dtype=[np.float64, np.float32], ensure_all_finite=False, force_writeable=True)
    return check_finite(X, who)


def check_finite(X: np.ndarray, who: str) -> np.ndarray:
    """``X`` (an array), or HyperparameterError in one line naming its first row with NaN or
    infinity: the graph estimators' own message, which names the dataset setting that fixes it."""
    finite = np.isfinite(X)
    if not finite.all():
        row = int(np.flatnonzero(~finite.all(1))[0])
        raise HyperparameterError(
            f"{who}: X contains NaN or infinity (first at row {row}); impute or drop those values "
            "(dataset.impute) before clustering"
        )
    return X


def check_n_neighbors(n_neighbors, n_points: int, who: str = "the kNN graph") -> None:
    """1 ≤ n_neighbors < n_points (a point is never its own neighbour)."""
    if not is_int(n_neighbors) or n_neighbors < 1:
        raise HyperparameterError(f"{who} n_neighbors must be an integer ≥ 1, got {n_neighbors!r}")
    if n_neighbors >= n_points:
        raise HyperparameterError(
            f"{who} n_neighbors must be below the number of points ({n_points}), got {n_neighbors}: "
            "lower n_neighbors",
            parameter="n_neighbors",
        )


def _key(digest: str, n_neighbors: int) -> str:
    return json.dumps(
        {"data": digest, "n_neighbors": int(n_neighbors), "metric": "euclidean"}, sort_keys=True
    )


def knn_cache_path(digest: str, n_neighbors: int, folder: str | Path | None = None) -> Path:
    """The file that holds the neighbour lists of the array with ``digest`` at ``n_neighbors``."""
    name = hashlib.sha256(_key(digest, n_neighbors).encode()).hexdigest()[:32]
    return knn_cache_folder(folder) / f"{name}{SUFFIX}"


def _encode(key: str, indices: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, key=np.array(key), indices=indices)
    payload = buffer.getvalue()
    return MAGIC + hashlib.sha256(payload).digest() + payload


def _decode(data: bytes, key: str, shape: tuple[int, int]) -> np.ndarray:
    """The neighbour lists in ``data``; ValueError saying why when the file is not sound for the key."""
    header = len(MAGIC) + DIGEST_BYTES
    if len(data) < header or not data.startswith(MAGIC):
        raise ValueError("no kNN-cache header")
    checksum, payload = data[len(MAGIC) : header], data[header:]
    if hashlib.sha256(payload).digest() != checksum:
        raise ValueError("checksum mismatch (truncated or altered)")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as content:
            stored_key, indices = str(content["key"]), content["indices"]
    except Exception as exc:  # any load failure means the same thing: do not use this file
        raise ValueError(f"unreadable payload ({type(exc).__name__})") from None
    if stored_key != key:
        raise ValueError("written for another key")
    if indices.shape != shape or indices.dtype.kind not in "iu":
        raise ValueError(f"indices of shape {indices.shape}, expected {shape}")
    return indices


def _compute(X: np.ndarray, n_neighbors: int, n_jobs: int | None) -> np.ndarray:
    model = NearestNeighbors(n_neighbors=n_neighbors, algorithm="brute", n_jobs=n_jobs).fit(X)
    # Without a query, kneighbors leaves each point out of its own list.
    return model.kneighbors(return_distance=False).astype(np.int32)


def knn_indices(
    X,
    n_neighbors: int,
    *,
    folder: str | Path | None = None,
    use_cache: bool = True,
    n_jobs: int | None = None,
) -> np.ndarray:
    """(n, n_neighbors) int32: row i lists the ``n_neighbors`` nearest points of point i (itself
    excluded), from the cache when a sound file holds them (module docstring), else computed and
    written there. ``use_cache=False`` computes them and touches no file."""
    X = check_points(X)
    check_n_neighbors(n_neighbors, len(X))
    if not use_cache:
        return _compute(X, n_neighbors, n_jobs)
    digest = array_digest(X)
    memory_key = (digest, int(n_neighbors))
    if memory_key in _KEPT:
        _KEPT.move_to_end(memory_key)
        return _KEPT[memory_key]
    key, shape = _key(digest, n_neighbors), (len(X), int(n_neighbors))
    path = knn_cache_path(digest, n_neighbors, folder)
    indices = None
    if path.exists():
        try:
            indices = _decode(path.read_bytes(), key, shape).astype(np.int32, copy=False)
        except ValueError as exc:
            warnings.warn(f"kNN cache file {path} is corrupt ({exc}); rebuilding it", stacklevel=2)
    if indices is None:
        indices = _compute(X, n_neighbors, n_jobs)
        atomic_write_bytes(path, _encode(key, indices))
    _KEPT[memory_key] = indices
    while len(_KEPT) > KEPT_IN_MEMORY:
        _KEPT.popitem(last=False)
    return indices


def forget_in_memory() -> None:
    """Drop the neighbour lists kept in memory (the disk cache stays)."""
    _KEPT.clear()


def adjacency(indices: np.ndarray, graph: str = "symmetric") -> sparse.csr_matrix:
    """The binary (n, n) adjacency of neighbour lists: ``directed`` W_ij = 1 iff j is among i's
    neighbours (the authors' code); ``symmetric`` the OR of that and its transpose (paper §4.4)."""
    if graph not in GRAPHS:
        raise HyperparameterError(f"graph must be one of {', '.join(GRAPHS)}, got {graph!r}")
    n, k = indices.shape
    rows = np.repeat(np.arange(n, dtype=np.int64), k)
    W = sparse.csr_matrix((np.ones(n * k), (rows, indices.reshape(-1))), shape=(n, n))
    if graph == "symmetric":
        W = W.maximum(W.T).tocsr()
    W.sum_duplicates()
    return W


def knn_graph(
    X,
    n_neighbors: int,
    graph: str = "symmetric",
    *,
    folder: str | Path | None = None,
    use_cache: bool = True,
    n_jobs: int | None = None,
) -> sparse.csr_matrix:
    """The binary kNN graph of ``X`` (module docstring): :func:`knn_indices` then :func:`adjacency`."""
    indices = knn_indices(X, n_neighbors, folder=folder, use_cache=use_cache, n_jobs=n_jobs)
    return adjacency(indices, graph)


def _clusters(labels) -> tuple[np.ndarray, int]:
    """Labels of any values as 0..m-1, and m."""
    codes, inverse = np.unique(np.asarray(labels), return_inverse=True)
    return inverse.reshape(-1), len(codes)


def ratio_cut(W, labels, half: bool = True) -> float:
    """The ratio cut of ``labels`` on the similarity ``W`` (n x n, sparse or dense, W_ii ignored):
    Σ_ℓ cut_ℓ / |C_ℓ|, times ½ when ``half`` (eq. 1, the paper's; the authors' code has no ½).

    cut_ℓ = 1_Cᵀ W (1 − 1_C) = Σ_{i ∈ C_ℓ, j ∉ C_ℓ} W_ij (eq. 2 as written). On a directed kNN
    graph (row i: i's neighbours) that is the neighbour links leaving C_ℓ; this orientation
    reproduces the notes' reference values for the directed graph (MNIST training split, k = 150,
    true labels: 210.5 without the ½; the links entering each cluster instead give 205.8). On a
    symmetric W both orientations agree. Only clusters with points count. For many labellings of
    one graph, :class:`RatioCut` prepares W once.
    """
    return RatioCut(W)(labels, half)


class RatioCut:
    """:func:`ratio_cut` on one graph for many labellings (spectral clustering's best of N k-means
    runs): W without its diagonal and its row degrees are prepared once, then a labelling costs
    one sparse-dense product W F with its (n, m) one-hot F (MNIST, k = 150, one thread: 0.16 s a
    labelling, where preparing W each time cost 0.79 s)."""

    DENSE_ONE_HOT_MAX = 2**23  # entries of F held dense; beyond, the edges are scanned instead

    def __init__(self, W):
        W = sparse.csr_matrix(W, dtype=np.float64)
        W = W - sparse.diags(W.diagonal())  # W_ii: no edge
        W.eliminate_zeros()
        self.W, self.shape = W, W.shape
        self.degrees = np.asarray(W.sum(axis=1)).reshape(-1)  # Σ_j W_ij for each row i

    def __call__(self, labels, half: bool = True) -> float:
        codes, m = _clusters(labels)
        n = len(codes)
        if self.shape != (n, n):
            raise ValueError(f"W has shape {self.shape}, expected ({n}, {n}) for {n} labels")
        out_of = np.bincount(codes, weights=self.degrees, minlength=m)  # Σ_{i ∈ C} Σ_j W_ij
        if n * m <= self.DENSE_ONE_HOT_MAX:
            one_hot = np.zeros((n, m))
            one_hot[np.arange(n), codes] = 1.0
            to_own = (self.W @ one_hot)[np.arange(n), codes]  # Σ_{j ∈ C_i} W_ij
        else:
            rows = np.repeat(codes, np.diff(self.W.indptr))
            to_own = np.bincount(
                np.repeat(np.arange(n), np.diff(self.W.indptr)),
                weights=self.W.data * (rows == codes[self.W.indices]),
                minlength=n,
            )
        within = np.bincount(codes, weights=to_own, minlength=m)  # Σ_{i, j ∈ C} W_ij
        sizes = np.bincount(codes, minlength=m)
        value = float(((out_of - within) / sizes).sum())
        return 0.5 * value if half else value


def label_ratio_cut(y, labels, half: bool = True) -> float:
    """The ratio cut of ``labels`` on the label similarity W_ij = 1 iff y_i = y_j (i ≠ j), without
    building W: cut_ℓ = Σ_c n_cℓ (N_c − n_cℓ), n_cℓ points of class c in cluster ℓ, N_c in class c."""
    classes, c_count = _clusters(y)
    codes, m = _clusters(labels)
    table = np.zeros((c_count, m))
    np.add.at(table, (classes, codes), 1.0)
    cut = (table * (table.sum(1, keepdims=True) - table)).sum(0)
    value = float((cut / table.sum(0)).sum())
    return 0.5 * value if half else value


def knn_ratio_cut(
    X,
    labels,
    n_neighbors: int = 150,
    graph: str = "symmetric",
    half: bool = True,
    *,
    folder: str | Path | None = None,
) -> float:
    """The ratio cut of ``labels`` on the binary kNN graph of ``X`` (cached; defaults: the paper's
    Table 2, k = 150, OR-symmetric, ½)."""
    return ratio_cut(knn_graph(X, n_neighbors, graph, folder=folder), labels, half=half)

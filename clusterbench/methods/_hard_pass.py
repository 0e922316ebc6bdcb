"""k-means-C′'s hard E-step (C′ = 1) on the CPU, compiled with numba.

:class:`clusterbench.methods.kmeans_cprime.KMeansCPrime` with C′ = 1 needs, per point, the
maximum of its scores over the clusters, its nearest cluster (the last label where that still
holds the maximum), the score of its last label, the rows of the points that moved, and for ℒ
the sum of its exponentials. In torch that is a dozen operations per chunk, each a pass or a
fork-join of its own; here a chunk is its score product, the exponential and three calls
without the GIL, so the chunks run in a thread pool (:mod:`clusterbench.methods._chunk_pool`).
At two threads this took C′ = 1 from 1.61x to 1.16x a scikit-learn Lloyd iteration, at one from
1.18x to 1.08x (docs/benchmarks.md). The arithmetic is torch's own (the same maxima and
subtractions, the moves' sums in ``index_add_``'s order), so labels, centres and free energies
are the torch path's at one thread to the bit, at any thread count; ℒ's logs are taken over
products of ``LOG_GROUP`` points (within 1e-14 relative of torch's per-point logs on the
benchmark's and the tests' data).
Imported only on the CPU path, so that importing clusterbench does not import numba.
"""

from __future__ import annotations

import numba
import numpy as np

LOG_GROUP = 16  # points whose ℒ totals are multiplied before one log (log_likelihood)


@numba.njit(nogil=True, cache=True)
def nearest_in_chunk(scores, guess, guessed, labels, best, held, shift):
    """For each restart r and point i of a chunk: the maximum score, the nearest cluster and
    the held score, written into ``best``, ``labels`` and ``held`` (R, m).

    ``scores`` (R, C, m): the chunk's a/σ² (:func:`~clusterbench.methods.kmeans_cprime.affinities`);
    ``guess`` (R, m): the last labels, read when ``guessed``. The nearest cluster is the guess
    where its score equals the maximum, else the first cluster that reaches it (torch's
    ``max(1).indices``); the held score is the guess's, or the maximum without a guess (the
    seeding, where the new sets are held). ``shift``: also subtract each point's maximum from
    its scores in place, the terms of eq. 3 before their exponential.
    """
    restarts, clusters, points = scores.shape
    for r in range(restarts):
        values, top = scores[r], best[r]
        top[:] = values[0]
        for c in range(1, clusters):
            row = values[c]
            for i in range(points):  # elementwise over a contiguous row: vectorised
                if row[i] > top[i]:
                    top[i] = row[i]
        for i in range(points):
            label = guess[r, i] if guessed else 0
            score = values[label, i] if guessed else top[i]
            held[r, i] = score
            if score < top[i] or not guessed:
                label = 0
                while values[label, i] < top[i]:
                    label += 1
            labels[r, i] = label
        if shift:
            for c in range(clusters):
                row = values[c]
                for i in range(points):
                    row[i] -= top[i]


@numba.njit(nogil=True, cache=True)
def log_likelihood(spread, best):
    """Σᵢ (maxᵢ + log Σ_c exp(a_c/σ² − maxᵢ)) per restart (R,): ℒ's sum over a chunk (eq. 3,
    less the terms common to all points), from ``spread`` (R, C, m) = the exponentials, summed
    over the clusters in order, and ``best`` (R, m) = the maxima."""
    restarts, clusters, points = spread.shape
    sums = np.zeros(restarts)
    total = np.empty(points)
    for r in range(restarts):
        values = spread[r]
        total[:] = values[0]
        for c in range(1, clusters):
            row = values[c]
            for i in range(points):
                total[i] += row[i]
        for i in range(points):
            sums[r] += best[r, i]
        # Σ log(total) as the logs of products of LOG_GROUP totals: a scalar log costs as much
        # as the rest of the sum. Each total lies in [1, C] (the maximum's own term is 1), so a
        # product stays finite (C < 10^19) and rounds within 2·10⁻¹⁵ of its terms' product.
        for start in range(0, points, LOG_GROUP):
            product = 1.0
            for i in range(start, min(start + LOG_GROUP, points)):
                product *= total[i]
            sums[r] += np.log(product)
    return sums


@numba.njit(nogil=True, cache=True)
def moved_rows(points, before, after):
    """The points of a chunk whose label changed, copied out in the pool (their reads wait on
    memory): (rows (q, D), restart (q,), arrival (q,), departure (q,)), restart by restart and each
    in point order. ``points`` (m, D); ``before`` and ``after`` (R, m): the held and the new labels."""
    restarts, count = before.shape
    moved = 0
    for r in range(restarts):
        for i in range(count):
            moved += before[r, i] != after[r, i]
    rows = np.empty((moved, points.shape[1]), points.dtype)
    restart = np.empty(moved, np.int64)
    arrival, departure = np.empty(moved, np.int64), np.empty(moved, np.int64)
    q = 0
    for r in range(restarts):
        for i in range(count):
            if before[r, i] != after[r, i]:
                for j in range(points.shape[1]):
                    rows[q, j] = points[i, j]
                restart[q], arrival[q], departure[q] = r, after[r, i], before[r, i]
                q += 1
    return rows, restart, arrival, departure


@numba.njit(nogil=True, cache=True)
def join_points(sums, counts, running, points, labels):
    """Σ y (R, C, D) and the counts (R, C) of hard assignments, from zero, as every point
    joins its cluster: restart ``running[k]``'s labels are ``labels[k]`` (n,). In point order,
    the order (and so the rounding) of torch's ``index_add_`` in the torch path."""
    for k in range(len(running)):
        r = running[k]
        for i in range(points.shape[0]):
            cluster = labels[k, i]
            for j in range(points.shape[1]):
                sums[r, cluster, j] += points[i, j]
            counts[r, cluster] += 1.0


@numba.njit(nogil=True, cache=True)
def move_rows(sums, counts, running, rows, restart, clusters, sign):
    """Σ y and the counts updated in place by one chunk's moved ``rows`` of :func:`moved_rows`
    (``restart`` indexes ``running``): ``sign`` 1 adds them to their ``clusters`` (arrivals),
    −1 takes them away (departures), y·sign added as torch's ``index_add_`` with alpha adds.
    The torch path's order, and so its rounding, is every chunk's arrivals in chunk order, then
    every chunk's departures."""
    for q in range(len(rows)):
        r, cluster = running[restart[q]], clusters[q]
        for j in range(rows.shape[1]):
            sums[r, cluster, j] += sign * rows[q, j]
        counts[r, cluster] += sign

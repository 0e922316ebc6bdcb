"""The sum aggregator's nearest index tuple on the CPU, compiled with numba.

:func:`clusterbench.methods.kr_kmeans.assign_without_centroids` reduces, for each point, the
values T[j1, …, jp] + a_1[j1] + … + a_p[jp] over all index tuples. torch can only do it as a
broadcast add into a tile and a minimum over it: two passes over n·Πh values, the add's inner
loop a run of the h1·…·h_(p−1) prefixes per row. This loop keeps a row's running minimum over the last set
in cache and reads nothing else, 2-4x faster than the tiles on the benchmark's data
(docs/benchmarks.md). numba rather than a C extension: no build step, and the loop stays Python.
Imported only on the CPU path, so that importing clusterbench does not import numba.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def nearest_in_rows(tail, head, table_by_last, labels, best):
    """For each restart r and row i: the row-major first nearest index tuple and its value.

    ``tail`` (R, m, h_p) holds a_p, ``head`` (R, m, P) the prefix sums a_1 + … + a_(p−1) over the
    P = h1·…·h_(p−1) prefixes, ``table_by_last`` (R, h_p, P) the table T by last index. Writes
    ``labels`` (R, m) = prefix·h_p + last index and ``best`` (R, m) = the least value.

    The arithmetic is the torch tiles' own, so the labels are theirs: per prefix q the minimum
    over the last index of T[j, q] + a_p[j], plus head[q]; the first least prefix (strict <);
    then its row again as (T[j, q] + a_p[j]) + head[q], the first least last index. Rounding is
    monotone, so the minimum of the sums is the sum with the minimum.
    """
    restarts, rows, last = tail.shape
    prefixes = table_by_last.shape[2]
    least = np.empty(prefixes, tail.dtype)
    for r in range(restarts):
        table = table_by_last[r]
        for i in range(rows):
            values = tail[r, i]
            prefix_sums = head[r, i]
            first = values[0]
            for q in range(prefixes):
                least[q] = table[0, q] + first
            for j in range(1, last):
                value = values[j]
                for q in range(prefixes):  # elementwise over a contiguous row of the table
                    least[q] = min(least[q], table[j, q] + value)
            prefix = 0
            smallest = least[0] + prefix_sums[0]
            for q in range(1, prefixes):
                total = least[q] + prefix_sums[q]
                if total < smallest:
                    smallest = total
                    prefix = q
            offset = prefix_sums[prefix]
            index = 0
            row_least = (table[0, prefix] + values[0]) + offset
            for j in range(1, last):
                total = (table[j, prefix] + values[j]) + offset
                if total < row_least:
                    row_least = total
                    index = j
            labels[r, i] = prefix * last + index
            best[r, i] = smallest

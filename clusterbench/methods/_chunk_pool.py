"""A CPU pass over row chunks shared out to Python threads, each running torch at one thread.

The compiled passes (the Khatri-Rao sum's nearest tuple, k-means-C′'s hard E-step) do a chunk's
GEMM and then a numba loop without the GIL. On several torch threads the chunks go to as many
Python threads, each doing its chunk's GEMM at one torch thread (scikit-learn's Lloyd loop has
the same shape: per-thread chunks, a single-threaded BLAS); torch is held at one thread
meanwhile, so that its idle OpenMP workers, spinning after a parallel operation, do not take the
cores from them. Every GEMM then runs at one thread whatever the thread count, so the results
do too: a GEMM does not round a row alike at other thread counts or in chunks of other sizes.
The pool's threads take the caller's denormal mode, which is per thread. Holding torch at one
thread is process-wide: another Python thread calling torch meanwhile runs at one thread too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

import torch

from clusterbench.validation import denormals_flushed

Result = TypeVar("Result")


def map_chunks(
    work: Callable[[int], Result], starts: Sequence[int], threads: int | None = None
) -> list[Result]:
    """``[work(start) for start in starts]`` on ``threads`` threads (None: torch's count) as the
    module docstring says: in the caller at one thread, else in a pool (results in order)."""
    threads = threads or torch.get_num_threads()
    if threads == 1:
        return [work(start) for start in starts]
    flushed = denormals_flushed()

    def in_pool(start: int) -> Result:
        # Both are per thread, and the pool's threads outlive a call: the denormal mode, and
        # MKL's thread count (torch sets it with mkl_set_num_threads_local). A pool thread that
        # had not set it ran each GEMM on both cores (measured on k-means-C′'s score product).
        torch.set_flush_denormal(flushed)
        torch.set_num_threads(1)
        return work(start)

    held = torch.get_num_threads()
    torch.set_num_threads(1)
    futures = []
    try:
        pool = _thread_pool(threads)
        futures = [pool.submit(in_pool, start) for start in starts]
    finally:
        # every chunk done before the count is restored, also when one raised: the others still
        # write the caller's buffers, and each sets its thread's count as it starts
        wait(futures)
        torch.set_num_threads(held)
    return [future.result() for future in futures]


_THREAD_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_THREAD_POOLS_LOCK = threading.Lock()


def _thread_pool(threads: int) -> ThreadPoolExecutor:
    """This process's pool of ``threads`` threads, made on first use: a forked child makes its
    own, as the parent's threads do not exist in it."""
    key = (os.getpid(), threads)
    with _THREAD_POOLS_LOCK:
        if key not in _THREAD_POOLS:
            _THREAD_POOLS[key] = ThreadPoolExecutor(threads, thread_name_prefix="chunk-pool")
        return _THREAD_POOLS[key]

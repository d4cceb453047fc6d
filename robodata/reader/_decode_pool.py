"""Decode many GOPs at once on a thread pool; PyAV releases the GIL while it decodes, so each
core runs one single-threaded decoder."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from robodata.codec import decode_gop_frames
from robodata.codec._gop_decoder import decode_gop_pictures
from robodata.codec._resize import frame_array

# What a reader that keeps decoded pictures needs (robodata.torch._frame_buffer): the torch layer
# reaches the codec only through the reader.
__all__ = ["GopTask", "decode_gop_pictures", "default_concurrency", "frame_array", "run_jobs", "run_tasks"]

_pools: dict[int, ThreadPoolExecutor] = {}


# Decode threads of a read that names none (e.g. 1 in each of many loader processes, or for a
# profile, which sees only the calling thread); unset: one per core.
DECODE_THREADS_ENV = "ROBODATA_DECODE_THREADS"


def default_concurrency() -> int:
    value = os.environ.get(DECODE_THREADS_ENV, "")
    if not value:
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"${DECODE_THREADS_ENV} must be a whole number of threads, at least 1; got {value!r}")
    return int(value)


def _pool(workers: int) -> ThreadPoolExecutor:
    pool = _pools.get(workers)
    if pool is None:
        pool = _pools[workers] = ThreadPoolExecutor(workers, thread_name_prefix="robodata-decode")
    return pool


@dataclass
class GopTask:
    """Frames wanted from one GOP and the output slots they go to."""

    data: bytes
    packet_sizes: np.ndarray
    codec: str  # the FFmpeg decoder its gops.lance row names
    wanted: list[int] = field(default_factory=list)
    out: list[np.ndarray] = field(default_factory=list)
    size: tuple[int, int] | None = None  # (height, width) to scale to: no stored rendition fits
    pixel_format: str = "rgb24"  # or "yuv420p" (robodata.codec._resize.PIXEL_FORMATS)

    def run(self) -> None:
        decode_gop_frames(self.data, self.packet_sizes, self.wanted, self.out, self.codec, self.size, self.pixel_format)


def run_tasks(tasks: list[GopTask], concurrency: int | None = None) -> None:
    """Run every task, in parallel when there is more than one; re-raises the first error."""
    # Longest GOP prefixes first so no thread is left with a big task at the end.
    run_jobs([task.run for task in sorted(tasks, key=lambda t: -max(t.wanted))], concurrency)


def run_jobs(jobs: list[Callable[[], None]], concurrency: int | None = None) -> None:
    """Run every job, in order, on the calling thread and ``concurrency - 1`` threads of the
    decode pool (PyAV releases the GIL while it decodes and converts); re-raises the first error.

    The caller works too rather than waiting: the first job starts without a thread hand-off,
    and a short read (an 8-frame window, tens of jobs) does not wait for a pool thread to wake.
    """
    workers = min(concurrency or default_concurrency(), len(jobs))
    if workers <= 1:
        for job in jobs:
            job()
        return
    pending = iter(jobs)
    lock = threading.Lock()
    errors: list[Exception] = []

    def drain() -> None:
        while True:
            with lock:
                job = next(pending, None)
            if job is None:
                return
            try:
                job()
            except Exception as error:  # the other jobs still run; the first error is raised after
                errors.append(error)

    helpers = [_pool(workers - 1).submit(drain) for _ in range(workers - 1)]
    drain()
    for helper in helpers:
        if not helper.cancel():  # cancelled: it never started, the jobs ran out first
            helper.result()
    if errors:
        raise errors[0]

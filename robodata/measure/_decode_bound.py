"""The decode bound of given batches of rows: the least decoding any reader of those rows must do
(every GOP they need decoded once, as far as the last frame any row wants, every wanted frame
converted once per row), timed from GOP bytes already in memory on every core."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from robodata.reader import RoboDataset
from robodata.reader._dataset import gop_store
from robodata.reader._renditions import decode_requests, output_shape


def batches_decode_bound(
    ds: RoboDataset, batches: Sequence[Sequence[int]], size: tuple[int, int] | None = None, chunks: int = 4
) -> dict[str, Any]:
    """Decode every camera's frames of the rows in ``batches`` (at ``size``, else natively) the
    least a reader can: one decode per GOP, as far as the last frame wanted, through the reader's
    own GOP tasks (a stored rendition's GOPs where one fits ``size``, else the full GOPs scaled),
    on one thread per core with its single-threaded decoder; no Lance read, no checksum, no
    worker, no copy between processes. Timed in wall and CPU seconds, in ``chunks`` parts (for a
    median); the bound is samples / (CPU s / cores).

    >>> bound = batches_decode_bound(robodata.open("data/demo"), [[0, 1, 2], [300, 301]], chunks=1)
    >>> bound["samples"], bound["frames_wanted"], bound["renditions"]
    ([5.0], 15, False)
    """
    gops = gop_store(ds)
    rows = ds.rows  # which GOP and frame each row shows
    idx = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches])
    requests = []
    for camera in ds.cameras:
        out = np.empty((len(idx), *output_shape(ds.metadata, camera, size)), np.uint8)
        refs, in_gop = rows.ref_id[camera][idx], rows.frame_in_gop[camera][idx]
        requests += decode_requests(ds.metadata, gops.index, camera, refs, in_gop, out, size)
    tasks = gops.decode_tasks(requests)  # one per GOP; reads the GOP bytes now, outside the timing
    chunks = max(1, min(int(chunks), len(tasks)))
    parts = [tasks[i::chunks] for i in range(chunks)]
    threads = os.cpu_count() or 1
    seconds, cpu_seconds = [], []
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda task: task.run(), tasks[:threads]))  # warm: one decoder per thread
        for part in parts:
            part = sorted(part, key=lambda t: -max(t.wanted))  # longest GOP prefixes first, as the reader
            start, cpu = time.perf_counter(), time.process_time()  # CPU time of every thread
            list(pool.map(lambda task: task.run(), part))
            seconds.append(time.perf_counter() - start)
            cpu_seconds.append(time.process_time() - cpu)
    wanted = [sum(len(t.wanted) for t in part) for part in parts]
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        # samples: rows x cameras per part over the cameras (a part holds whole GOPs of any camera)
        "samples": [w / len(ds.cameras) for w in wanted],
        "threads": threads,
        "frames_decoded": sum(max(t.wanted) + 1 for t in tasks),
        "frames_wanted": sum(len(t.wanted) for t in tasks),
        "distinct_frames_wanted": sum(len(set(t.wanted)) for t in tasks),
        "renditions": bool(size) and any(t.size is None for t in tasks),
    }

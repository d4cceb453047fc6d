"""The read path's figures for one camera of a dataset version: sequential decode (the decode
bound: frames/s x 2/(G+1), the cost of decoding half a GOP on average), single-frame and batched
random reads against it, whole rows, and what verifying GOP checksums adds to a read."""

from __future__ import annotations

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from tqdm import tqdm

from robodata.codec import decode_gop_frames
from robodata.format._ids import camera_filter
from robodata.format._schema import camera_of
from robodata.integrity._gop_checksums import gop_checksum
from robodata.reader import RoboDataset
from robodata.reader._dataset import gop_store
from robodata.storage._failures import storage_call


def sequential_decode_fps(ds: RoboDataset, column: str, threads: int | None = None, max_gops: int = 400) -> float:
    """Frames/s decoding (and converting to RGB) every frame of a camera's GOPs (at most
    ``max_gops`` of them), one single-threaded decoder per core."""
    camera = camera_of(column, ds.cameras)
    gops = gop_store(ds).lance_dataset  # the reader's own table
    options = ds.storage_options
    table = storage_call(
        "listing GOPs to decode",
        gops.uri,
        options,
        gops.to_table,
        columns=["packet_sizes", "codec"],
        filter=camera_filter(camera),
        with_row_id=True,
    )
    row_ids = table["_rowid"].to_pylist()[:max_gops]
    sizes = table["packet_sizes"].to_pylist()[:max_gops]
    codecs = table["codec"].to_pylist()[:max_gops]
    read = storage_call("reading GOPs", gops.uri, options, gops.read_blobs, "gop", ids=row_ids, preserve_order=True)
    blobs = [data for _, data in read]
    threads = threads or os.cpu_count() or 1
    jobs = list(zip(blobs, sizes, codecs, strict=True))

    def decode_share(share):
        for data, packet_sizes, codec in share:
            decode_gop_frames(data, packet_sizes, list(range(len(packet_sizes))), codec=codec)

    decode_share(jobs[:2])  # warm each code path once
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(decode_share, [jobs[t::threads] for t in range(threads)]))
    elapsed = time.perf_counter() - start
    return sum(len(s) for s in sizes) / elapsed


def largest_camera_column(ds: RoboDataset) -> str:
    """The image column of the camera with the most pixels: the one the figures measure by default."""

    def pixels(column: str) -> int:
        info = ds.metadata.cameras[camera_of(column, ds.cameras)]
        return info.width * info.height

    return max(ds.image_columns, key=pixels)


def read_path_figures(
    ds: RoboDataset,
    samples: int = 200,
    batch_size: int = 64,
    column: str | None = None,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Read-path figures for one image column (default: the largest camera) of ``ds``: random
    single-frame reads, random batches (``get_frames``) and whole rows (``ds[i]``, every camera),
    each timed ``samples`` times (batches ``max(3, samples // batch_size)`` times), medians."""
    column = column or largest_camera_column(ds)
    rng = np.random.default_rng(seed)
    n = len(ds)
    gop_size = ds.metadata.gop_size
    sequential = sequential_decode_fps(ds, column)
    bound = sequential * 2 / (gop_size + 1)

    singles, items = [], []
    batches = max(3, samples // batch_size)
    ds.get_frames(rng.integers(0, n, 4), cameras=column)  # load the indexes once
    steps = tqdm(total=2 * samples + batches, desc="read path", disable=not progress, unit="read")
    for i in rng.integers(0, n, samples):
        start = time.perf_counter()
        ds.get_frames([int(i)], cameras=column)
        singles.append(time.perf_counter() - start)
        steps.update()
    for i in rng.integers(0, n, samples):
        start = time.perf_counter()
        ds[int(i)]
        items.append(time.perf_counter() - start)
        steps.update()
    batched = []
    for _ in range(batches):
        indices = rng.integers(0, n, batch_size)
        start = time.perf_counter()
        ds.get_frames(indices, cameras=column, zero_copy=True)
        batched.append(batch_size / (time.perf_counter() - start))
        steps.update()
    steps.close()
    single_fps = 1 / statistics.median(singles)
    batched_fps = statistics.median(batched)
    hash_single, hash_batch = checksum_seconds(ds, column, rng, batch_size)
    return {
        "column": column,
        "gop_size": gop_size,
        "cpu_count": os.cpu_count() or 1,
        "dataset_version": ds.version,
        "sequential_decode_fps": sequential,
        "decode_bound_fps": bound,
        "single_frame_fps": single_fps,
        "single_vs_bound": single_fps / bound,
        "batched_fps": batched_fps,
        "batched_vs_bound": batched_fps / bound,
        "batch_size": batch_size,
        "row_all_cameras_per_s": 1 / statistics.median(items),
        "row_all_cameras_median_ms": 1000 * statistics.median(items),
        # What verifying GOP checksums adds to a read (included in the figures above).
        "checksum_us_per_single_read": 1e6 * hash_single,
        "checksum_pct_of_single_read": 100 * hash_single * single_fps,
        "checksum_us_per_batch": 1e6 * hash_batch,
        "checksum_pct_of_batched_read": 100 * hash_batch * batched_fps / batch_size,
    }


def checksum_seconds(ds: RoboDataset, column: str, rng: np.random.Generator, batch_size: int) -> tuple[float, float]:
    """Median seconds spent checksumming the GOPs of one random single-row read and of one random
    ``batch_size``-row batch (the verification every read does before decoding)."""
    n = len(ds)
    store = gop_store(ds)

    def hash_time(rows) -> float:
        blobs = list(store.read(store.refs(rows, column)).values())
        start = time.perf_counter()
        for _ in range(20):
            for data in blobs:
                gop_checksum(data)
        return (time.perf_counter() - start) / 20

    single = statistics.median(hash_time([int(i)]) for i in rng.integers(0, n, 50))
    batch = statistics.median(hash_time(rng.integers(0, n, batch_size)) for _ in range(10))
    return single, batch

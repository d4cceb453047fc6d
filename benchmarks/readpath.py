"""Read-path benchmark: sequential decode, single-frame and batched random reads, each against
the decode bound (sequential decode frames/s x 2/(G+1), the cost of decoding half a GOP on
average). Run ``robodata bench readpath`` or ``python -m benchmarks readpath``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from tqdm import tqdm

from robodata.codec import decode_gop_frames
from robodata.format._ids import camera_filter
from robodata.format._schema import camera_of
from robodata.integrity._gop_checksums import gop_checksum
from robodata.reader import RoboDataset, gop_store, open_dataset


def sequential_decode_fps(ds: RoboDataset, column: str, threads: int | None = None, max_gops: int = 400) -> float:
    """Frames/s decoding (and converting to RGB) every frame of a camera's GOPs, one
    single-threaded decoder per core."""
    camera = camera_of(column, ds.cameras)
    gops = gop_store(ds).lance_dataset  # the reader's own table
    table = gops.to_table(columns=["packet_sizes", "codec"], filter=camera_filter(camera), with_row_id=True)
    row_ids = table["_rowid"].to_pylist()[:max_gops]
    sizes = table["packet_sizes"].to_pylist()[:max_gops]
    codecs = table["codec"].to_pylist()[:max_gops]
    blobs = [data for _, data in gops.read_blobs("gop", ids=row_ids, preserve_order=True)]
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


def measure_readpath(
    ds: RoboDataset,
    samples: int = 200,
    batch_size: int = 64,
    column: str | None = None,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Read-path figures for one image column (default: the largest camera) of ``ds``.

    >>> measure_readpath(robodata.open("demo/dataset"))["batched_vs_bound"]  # doctest: +SKIP
    """
    column = column or max(ds.image_columns, key=lambda c: _pixels(ds, c))
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

    def hash_time(rows) -> float:
        blobs = list(gop_store(ds).read(gop_store(ds).refs(rows, column)).values())
        start = time.perf_counter()
        for _ in range(20):
            for data in blobs:
                gop_checksum(data)
        return (time.perf_counter() - start) / 20

    single = statistics.median(hash_time([int(i)]) for i in rng.integers(0, n, 50))
    batch = statistics.median(hash_time(rng.integers(0, n, batch_size)) for _ in range(10))
    return single, batch


def _pixels(ds: RoboDataset, column: str) -> int:
    info = ds.metadata.cameras[camera_of(column, ds.cameras)]
    return info.width * info.height


def format_table(figures: dict[str, float]) -> str:
    """The figures as a Markdown table."""
    lines = ["| measure | value |", "| --- | --- |"]
    for key, value in figures.items():
        shown = f"{value:,.2f}" if isinstance(value, float) else str(value)
        lines.append(f"| {key} | {shown} |")
    return "\n".join(lines)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="an existing dataset; default: fresh sample data")
    p.add_argument("--episodes", type=int, default=4, help="sample episodes to generate (without --dataset)")
    p.add_argument("--seconds", type=float, default=6.0, help="length of each sample episode")
    p.add_argument("--samples", type=int, default=200, help="random reads timed per measurement")


def main(args: argparse.Namespace) -> int:
    uri = args.dataset
    if uri is None:
        from robodata._sample_data import write_sample_uploads
        from robodata.ingest import ingest_episode

        workdir = tempfile.mkdtemp(prefix="robodata-readpath-")
        uri = os.path.join(workdir, "dataset")
        uploads = write_sample_uploads(os.path.join(workdir, "uploads"), args.episodes, seconds=args.seconds)
        for upload in tqdm(uploads, desc="ingest sample data", unit="episode"):
            ingest_episode(str(upload), uri)
    figures = measure_readpath(open_dataset(uri), samples=args.samples, progress=True)
    print(format_table(figures))
    return 0

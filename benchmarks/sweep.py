"""The GOP-size sweep: for each G, bytes against JPEG at matched PSNR, random-read frames/s and
efficiency against the decode bound, on the same episodes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.ingest_speed import summarize, timed_ingest
from benchmarks.storage import quality_sample, storage_figures
from robodata.format import camera_filter, camera_of, gops_uri, open_table
from robodata.measure import read_path_figures
from robodata.reader import open_dataset


def sweep_gop_sizes(
    uploads: dict[int, Path],
    workdir: Path,
    gop_sizes: list[int],
    *,
    quality_rows: int,
    readpath_samples: int,
    batch_size: int = 64,
    seed: int = 0,
    tick: Callable[[], None] = lambda: None,
) -> list[dict]:
    """One row of figures per G; each G gets its own dataset built from ``uploads``.

    >>> sweeps = sweep_gop_sizes(uploads, Path("work"), [1, 8], quality_rows=20, readpath_samples=50)  # doctest: +SKIP
    >>> sweeps[1]["gop_size"]  # doctest: +SKIP
    8
    """
    results = []
    for gop_size in gop_sizes:
        uri = str(workdir / f"gop_{gop_size:03d}")
        timings = timed_ingest(list(uploads.values()), uri, gop_size)
        tick()
        ds = open_dataset(uri)
        rows = np.random.default_rng([seed, gop_size]).choice(len(ds), min(quality_rows, len(ds)), replace=False)
        storage = storage_figures(ds, quality_sample(ds, uploads, np.sort(rows)))
        tick()
        reads = read_path_figures(ds, samples=readpath_samples, batch_size=batch_size, seed=seed)
        tick()
        results.append(
            {
                "gop_size": gop_size,
                "dataset_uri": uri,
                "dataset_version": ds.version,
                **storage,
                "ingest_frames_per_s": summarize(timings)["frames_per_s"],
                "read_column": reads["column"],
                # With few GOPs, rows of one batch share GOPs that decode once: the bound assumes none do.
                "gops_of_read_camera": _gop_count(ds, reads["column"]),
                "sequential_decode_fps": reads["sequential_decode_fps"],
                "decode_bound_fps": reads["decode_bound_fps"],
                "single_frame_fps": reads["single_frame_fps"],
                "batched_fps": reads["batched_fps"],
                "batch_size": reads["batch_size"],
                "single_vs_bound": reads["single_vs_bound"],
                "batched_vs_bound": reads["batched_vs_bound"],
                "ingest": timings,
            }
        )
    return results


def _gop_count(ds, column: str) -> int:
    return open_table(gops_uri(ds.uri)).count_rows(filter=camera_filter(camera_of(column, ds.cameras)))


def storage_matched_point(sweep: list[dict], storage: dict, baseline_single_per_s: float) -> dict | None:
    """The smallest G whose bytes per camera frame are at most the LeRobot layout's (and whose
    PSNR is at least its, when known), with its single-frame reads against the baseline's A1.

    The sweep encodes other episodes of the same generator, so this is a same-run, not an
    interleaved, comparison; the report says so.
    """
    baseline_per_frame = storage["baseline_video_bytes"] / storage["camera_frames"]
    baseline_psnr = storage.get("baseline_psnr_db")
    for row in sorted(sweep, key=lambda r: r["gop_size"]):
        per_frame = row["robodata_video_bytes"] / row["camera_frames"]
        if per_frame <= baseline_per_frame and (baseline_psnr is None or row["robodata_psnr_db"] >= baseline_psnr):
            return {
                "gop_size": row["gop_size"],
                "robodata_bytes_per_frame": per_frame,
                "baseline_bytes_per_frame": baseline_per_frame,
                "robodata_psnr_db": row["robodata_psnr_db"],
                "robodata_single_frame_fps": row["single_frame_fps"],
                "baseline_single_per_s": baseline_single_per_s,
                "ratio": row["single_frame_fps"] / baseline_single_per_s,
            }
    return None

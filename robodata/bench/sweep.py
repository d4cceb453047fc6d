"""The GOP-size sweep: for each G, bytes against JPEG at matched PSNR, random-read frames/s and
efficiency against the decode bound, on the same episodes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from robodata.bench.ingest_speed import summarize, timed_ingest
from robodata.bench.readpath import measure_readpath
from robodata.bench.storage import quality_sample, storage_figures
from robodata.format.schema import camera_of
from robodata.format.tables import gops_uri, open_table
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

    >>> sweep_gop_sizes(uploads, Path("work"), [1, 8], quality_rows=20, readpath_samples=50)[1]["gop_size"]
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
        reads = measure_readpath(ds, samples=readpath_samples, batch_size=batch_size, seed=seed)
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
    return open_table(gops_uri(ds.uri)).count_rows(filter=f"camera = '{camera_of(column, ds.cameras)}'")

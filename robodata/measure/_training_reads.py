"""What training reads cost: temporal windows (``get_windows``, every camera) and the numpy
training loader's samples/s (``robodata.torch.TrainingLoader``, its default decode-once order)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from robodata.format._schema import camera_of
from robodata.reader import RoboDataset
from robodata.torch import TrainingLoader


def camera_frame_offsets(ds: RoboDataset, frames: int, camera: str) -> list[int]:
    """Row offsets of ``frames`` consecutive frames of ``camera``: rows are at the control rate,
    so frame k is ``round(k * control_hz / camera_fps)`` rows on (LeRobot's delta_timestamps k / fps)."""
    camera_fps = ds.metadata.cameras[camera].fps
    return [round(k * ds.metadata.control_hz / camera_fps) for k in range(frames)]


def window_figures(
    ds: RoboDataset, samples: int = 200, frames: int = 8, column: str | None = None, seed: int = 0
) -> dict[str, Any]:
    """Random windows of ``frames`` consecutive frames of ``column``'s camera (default: the first)
    x every camera, one window per ``get_windows`` call, timed ``samples`` times (median)."""
    camera = camera_of(column, ds.cameras) if column else ds.cameras[0]
    offsets = camera_frame_offsets(ds, frames, camera)
    rng = np.random.default_rng(seed)
    ds.get_windows([0], offsets)  # load the indexes once
    times = []
    for i in rng.integers(0, len(ds), samples):
        start = time.perf_counter()
        ds.get_windows([int(i)], offsets)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return {
        "window_frames": frames,
        "window_cameras": len(ds.cameras),
        "windows_per_s": 1 / median,
        "window_median_ms": 1000 * median,
    }


def time_batches(batches: Iterable[Any], samples: int, size_of: Callable[[Any], int]) -> dict[str, float]:
    """Seconds to the first batch, then samples/s over the rest (start-up excluded), reading
    ``batches`` until ``samples`` samples have come.

    >>> figures = time_batches(iter([[1, 2]] * 4), samples=8, size_of=len)
    >>> figures["samples"], figures["first_batch_s"] >= 0
    (8, True)
    """
    start = time.perf_counter()
    first = None
    first_seen = seen = 0
    for batch in batches:
        seen += size_of(batch)
        if first is None:
            first, first_seen = time.perf_counter(), seen
        if seen >= samples:
            break
    end = time.perf_counter()
    if first is None:
        raise RuntimeError("the loader yielded no batch")
    steady = (seen - first_seen) / (end - first) if end > first else float("nan")
    return {"first_batch_s": first - start, "samples": seen, "samples_per_s": steady}


def every_epoch(loader: Any) -> Iterator[dict]:
    """A robodata loader's batches over as many epochs as it takes (each epoch a new order)."""
    epoch = 0
    while True:
        loader.set_epoch(epoch)
        yield from loader
        epoch += 1


def loader_figures(
    uri: str,
    *,
    version: int | None = None,
    storage_options: dict | None = None,
    batch_size: int = 32,
    samples: int = 512,
    cameras: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Samples/s of the numpy training loader (``TrainingLoader``, in this process, its default
    order, every camera unless ``cameras`` names some) over ``samples`` samples, epochs repeated
    as needed, and the seconds to its first batch."""
    loader = TrainingLoader.create(
        uri, version=version, storage_options=storage_options, batch_size=batch_size, cameras=cameras
    )

    try:
        figures = time_batches(every_epoch(loader), samples, lambda batch: len(batch["index"]))
    finally:
        loader.close()
    return {
        "loader_batch_size": batch_size,
        "loader_samples": figures["samples"],
        "loader_samples_per_s": figures["samples_per_s"],
        "loader_first_batch_s": figures["first_batch_s"],
    }

"""Scenarios A, B and C: robodata and the LeRobot-layout baseline read the same rows, their
measurements interleaved (alternating which side goes first) so machine noise hits both."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchmarks.lerobot_baseline import LeRobotLayoutReader
from robodata.measure import camera_frame_offsets
from robodata.reader import RoboDataset

ROW_COLUMNS = ["episode_index", "frame_index", "timestamp_ns", "observation_state", "action"]


@dataclass
class Pair:
    """The two readers and the map from robodata row offset to baseline sample index."""

    ds: RoboDataset
    reader: LeRobotLayoutReader
    paired: np.ndarray
    tick: Callable[[], None] = lambda: None  # advances the progress bar

    @property
    def main_camera(self) -> str:
        """The largest camera: the one-camera scenarios read it."""
        cameras = self.ds.metadata.cameras
        return max(self.ds.cameras, key=lambda c: cameras[c].width * cameras[c].height)


def interleaved(trials: list, robodata_call, baseline_call, tick) -> tuple[list[float], list[float]]:
    """Seconds per trial for each side, alternating which side runs first."""
    ours: list[float] = []
    theirs: list[float] = []
    for n, trial in enumerate(trials):
        order = ((ours, robodata_call), (theirs, baseline_call))
        for times, call in order if n % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            call(trial)
            times.append(time.perf_counter() - start)
        tick()
    return ours, theirs


def _figures(name: str, unit: str, per_trial: float, ours: list[float], theirs: list[float], **extra) -> dict:
    robodata_rate = per_trial / statistics.median(ours)
    baseline_rate = per_trial / statistics.median(theirs)
    return {
        "scenario": name,
        "unit": unit,
        "trials": len(ours),
        "robodata_median_ms": 1000 * statistics.median(ours),
        "baseline_median_ms": 1000 * statistics.median(theirs),
        "robodata_per_s": robodata_rate,
        "baseline_per_s": baseline_rate,
        "ratio": robodata_rate / baseline_rate,
        **extra,
    }


def scenario_a(pair: Pair, rows: np.ndarray) -> list[dict]:
    """A: one random sample at a time, one camera (frame only) and all cameras (``ds[i]`` against
    ``LeRobotDataset[idx]``)."""
    ds, reader, camera = pair.ds, pair.reader, pair.main_camera
    key = reader.video_key(camera)
    ours, theirs = interleaved(
        list(rows),
        lambda i: ds.get_frames([int(i)], cameras=camera),
        lambda i: reader.get_item(int(pair.paired[i]), [key]),
        pair.tick,
    )
    one = _figures("A1", "samples/s", 1, ours, theirs, description=f"single sample, one camera ({camera})")
    ours, theirs = interleaved(list(rows), lambda i: ds[int(i)], lambda i: reader[int(pair.paired[i])], pair.tick)
    every = _figures("A3", "samples/s", 1, ours, theirs, description=f"single sample, all {len(ds.cameras)} cameras")
    return [one, every]


def scenario_b(pair: Pair, batch_sizes: list[int], repeats: int, rng: np.random.Generator) -> list[dict]:
    """B: random batches through ``get_frames`` with concurrency (plus the rows' state and
    action) against the baseline's DataLoader path, which reads the same rows one by one."""
    ds, reader = pair.ds, pair.reader
    workers = os.cpu_count() or 1

    def ours(batch):
        ds.lance_dataset.take(np.sort(batch).tolist(), columns=ROW_COLUMNS)
        ds.get_frames(batch, concurrency=workers, zero_copy=True)

    def theirs(batch):
        for i in batch:
            reader[int(pair.paired[i])]

    results = []
    for size in batch_sizes:
        batches = [rng.integers(0, len(ds), size) for _ in range(repeats)]
        mine, base = interleaved(batches, ours, theirs, pair.tick)
        results.append(
            _figures(
                f"B{size}",
                "samples/s",
                size,
                mine,
                base,
                batch_size=size,
                concurrency=workers,
                description=f"batch of {size} random rows, all cameras",
            )
        )
    return results


def scenario_c(pair: Pair, rows: np.ndarray, frames: int) -> dict:
    """C: ``frames`` consecutive camera frames x every camera per sample: ``get_windows`` against
    LeRobot's delta_timestamps path (``_get_query_indices`` + one decode per camera)."""
    ds, reader = pair.ds, pair.reader
    row_offsets, delta_indices = window_offsets(pair, frames)
    ours, theirs = interleaved(
        list(rows),
        lambda i: ds.get_windows([int(i)], row_offsets),
        lambda i: reader.get_item(int(pair.paired[i]), delta_indices=delta_indices),
        pair.tick,
    )
    return _figures(
        "C",
        "samples/s",
        1,
        ours,
        theirs,
        frames=frames,
        description=f"{frames} consecutive frames x {len(ds.cameras)} cameras",
    )


def window_offsets(pair: Pair, frames: int) -> tuple[list[int], list[int]]:
    """Offsets of ``frames`` consecutive camera frames: in robodata rows (control rate) and in
    LeRobot frames (the export's fps), i.e. LeRobot's delta_timestamps k / camera_fps."""
    camera_fps = pair.ds.metadata.cameras[pair.main_camera].fps
    rows = camera_frame_offsets(pair.ds, frames, pair.main_camera)
    return rows, [round(k * pair.reader.fps / camera_fps) for k in range(frames)]


def scenario_real_lerobot(pair: Pair, lerobot_dataset, rows: np.ndarray) -> dict:
    """A3 against the real ``LeRobotDataset[idx]`` (only where the ``lerobot`` package is importable)."""
    ours, theirs = interleaved(
        list(rows), lambda i: pair.ds[int(i)], lambda i: lerobot_dataset[int(pair.paired[i])], pair.tick
    )
    return _figures(
        "A3-lerobot",
        "samples/s",
        1,
        ours,
        theirs,
        description="single sample, all cameras, against lerobot's own LeRobotDataset",
    )

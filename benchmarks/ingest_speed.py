"""Ingest throughput: camera frames encoded per second and the multiple of real time."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robodata.codec import EncoderSettings
from robodata.format import gops_uri, open_table
from robodata.ingest import ingest_episode
from robodata.reader import open_dataset


def timed_ingest(
    uploads: list[Path], dataset_uri: str, gop_size: int, tick: Callable[[], None] = lambda: None
) -> list[dict]:
    """Ingest ``uploads`` into ``dataset_uri`` at ``gop_size``; seconds and size of each episode.

    >>> timed_ingest([Path("uploads/episode_000000")], "data/g8", 8)[0]["realtime_multiple"]  # doctest: +SKIP
    3.1
    """
    timings: list[dict[str, Any]] = []
    for upload in uploads:
        start = time.perf_counter()
        result = ingest_episode(str(upload), dataset_uri, settings=EncoderSettings(gop_size=gop_size))
        timings.append({"episode_index": result.episode_index, "seconds": time.perf_counter() - start})
        tick()
    ds = open_dataset(dataset_uri)
    frames = _camera_frames_per_episode(ds)
    for timing in timings:
        per_camera = frames[timing["episode_index"]]
        duration = max(n / ds.metadata.cameras[c].fps for c, n in per_camera.items())
        timing["camera_frames"] = sum(per_camera.values())
        timing["cameras"] = len(per_camera)
        timing["episode_seconds"] = duration
        timing["frames_per_s"] = timing["camera_frames"] / timing["seconds"]
        timing["realtime_multiple"] = duration / timing["seconds"]
    return timings


def summarize(timings: list[dict]) -> dict:
    """Medians over episodes, as the report shows them."""
    return {
        "episodes": len(timings),
        "cameras": timings[0]["cameras"],
        "episode_seconds": statistics.median(t["episode_seconds"] for t in timings),
        "seconds_per_episode": statistics.median(t["seconds"] for t in timings),
        "frames_per_s": statistics.median(t["frames_per_s"] for t in timings),
        "realtime_multiple": statistics.median(t["realtime_multiple"] for t in timings),
    }


def _camera_frames_per_episode(ds) -> dict[int, dict[str, int]]:
    table = open_table(gops_uri(ds.uri)).to_table(columns=["episode_index", "camera", "n_frames"]).to_pylist()
    frames: dict[int, dict[str, int]] = {}
    for row in table:
        per_camera = frames.setdefault(row["episode_index"], {})
        per_camera[row["camera"]] = per_camera.get(row["camera"], 0) + row["n_frames"]
    return frames

"""Pair robodata rows with the baseline's samples so both sides read the same moments."""

from __future__ import annotations

import numpy as np

from benchmarks.lerobot_baseline import LeRobotLayoutReader
from robodata.format import nearest_frames
from robodata.lerobot import camera_time_column
from robodata.reader import RoboDataset

# The exporter writes robodata's episode index here; without it, episodes pair in sorted order.
ROBODATA_EPISODE_COLUMN = "robodata/episode_index"


def baseline_rows(ds: RoboDataset, reader: LeRobotLayoutReader) -> np.ndarray:
    """For each robodata row offset, the baseline sample of the same episode that shows the same
    camera frame.

    A robodata export names each sample's camera frame (``robodata.frame_timestamp_ns.<cam>``,
    on robodata's clock): a row pairs with the sample whose frame is nearest the row's time, by
    the rule robodata's ingest used to give the row its frame (``nearest_frames``), so both
    sides return the same camera frame at the control rate and at the camera rate alike. Other
    LeRobot datasets pair by their ``timestamp`` seconds.

    >>> baseline_rows(ds, reader)[1234]  # doctest: +SKIP
    371
    """
    table = ds.to_table(columns=["episode_index", "timestamp_ns"])
    episodes = table["episode_index"].to_numpy()
    row_times = table["timestamp_ns"].to_numpy()
    position = _episode_positions(np.unique(episodes), reader)
    camera = ds.cameras[0] if ds.cameras else None
    frame_column = camera_time_column(camera) if camera else None
    if frame_column not in reader.data.column_names:
        frame_column = None
    paired = np.empty(len(episodes), dtype=np.int64)
    for episode in np.unique(episodes):
        rows = np.flatnonzero(episodes == episode)
        ep = reader.episodes[position[int(episode)]]
        start, end = ep["dataset_from_index"], ep["dataset_to_index"]
        if frame_column is not None and camera is not None:
            frame_times = reader.data[frame_column].slice(start, end - start).to_numpy()
            fps = ds.metadata.cameras[camera].fps
            paired[rows] = start + nearest_frames(row_times[rows], frame_times, fps, str(reader.root))
        else:
            paired[rows] = start + _nearest(reader.timestamps[start:end], row_times[rows] / 1e9)
    return paired


def _episode_positions(robodata_episodes: np.ndarray, reader: LeRobotLayoutReader) -> dict[int, int]:
    own = [ep.get(ROBODATA_EPISODE_COLUMN, ep["episode_index"]) for ep in reader.episodes]
    positions = {int(e): p for p, e in enumerate(own)}
    if set(positions) >= {int(e) for e in robodata_episodes}:
        return positions
    if len(reader.episodes) != len(robodata_episodes):
        raise ValueError(
            f"{reader.root}: {len(reader.episodes)} episodes, the robodata dataset has {len(robodata_episodes)}"
        )
    return {int(e): p for p, e in enumerate(sorted(robodata_episodes))}


def _nearest(sorted_times: np.ndarray, queries: np.ndarray) -> np.ndarray:
    right = np.clip(np.searchsorted(sorted_times, queries), 1, len(sorted_times) - 1)
    left = right - 1
    use_right = np.abs(sorted_times[right] - queries) < np.abs(sorted_times[left] - queries)
    return np.where(use_right, right, left) if len(sorted_times) > 1 else np.zeros(len(queries), dtype=np.int64)

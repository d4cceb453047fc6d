"""Pair robodata rows with the baseline's samples so both sides read the same moments."""

from __future__ import annotations

import numpy as np

from robodata.bench.lerobot_baseline import LeRobotLayoutReader
from robodata.reader import RoboDataset

# The exporter writes robodata's episode index here; without it, episodes pair in sorted order.
ROBODATA_EPISODE_COLUMN = "robodata/episode_index"


def baseline_rows(ds: RoboDataset, reader: LeRobotLayoutReader) -> np.ndarray:
    """For each robodata row offset, the baseline sample of the same episode nearest in time.

    >>> baseline_rows(ds, reader)[1234]
    371
    """
    table = ds.to_table(columns=["episode_index", "timestamp_ns"])
    episodes = table["episode_index"].to_numpy()
    seconds = table["timestamp_ns"].to_numpy() / 1e9
    position = _episode_positions(np.unique(episodes), reader)
    paired = np.empty(len(episodes), dtype=np.int64)
    for episode in np.unique(episodes):
        rows = np.flatnonzero(episodes == episode)
        ep = reader.episodes[position[int(episode)]]
        start, end = ep["dataset_from_index"], ep["dataset_to_index"]
        times = reader.timestamps[start:end]
        paired[rows] = start + _nearest(times, seconds[rows])
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

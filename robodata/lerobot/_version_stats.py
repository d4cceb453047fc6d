"""Statistics of a pinned robodata version for LeRobot training code.

``lerobot_stats_of``: what LeRobot would have written to ``meta/stats.json`` for the same episodes
(``robodata.lerobot._stats``: per-episode stats with histogram quantiles q01..q99 over
every row, camera stats over ``sample_indices`` frames per episode, aggregated as LeRobot does),
for every feature an item carries, the index columns included. It reads the version's numeric
columns once and decodes the sampled frames, so ``meta.stats`` computes it on first use.

``stored_stats``: robodata's own summary (mean/std/min/max/count) merged from the moments ingest
stored per episode in ``stats.lance``: no pass over the data, no quantiles.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from robodata.errors import RoboDataError
from robodata.format import _stats as feature_stats
from robodata.format._schema import image_column
from robodata.lerobot import _stats as lerobot_stats
from robodata.lerobot._features import lerobot_key
from robodata.lerobot._format import video_key
from robodata.reader import open_dataset
from robodata.reader import to_numpy as _to_numpy


def lerobot_stats_of(
    ds,
    *,
    order: np.ndarray,
    columns: list[str],
    cameras: list[str],
    fps: float,
    task_index: np.ndarray,
) -> dict[str, dict[str, np.ndarray]]:
    """LeRobot's stats of ``ds``'s rows in item order ``order`` (episodes in order, frames in
    order): ``columns`` (robodata per-row columns), the cameras, and LeRobot's index columns."""
    rows = ds.rows
    episode = np.asarray(rows.episode_index)[order]
    frame = np.asarray(rows.frame_index)[order]
    starts = np.flatnonzero(np.diff(episode, prepend=episode[:1] - 1)) if len(order) else np.zeros(0, int)
    ends = np.append(starts[1:], len(order))
    table = ds.to_table(columns=columns).take(pa.array(order)) if columns else pa.table({})
    values = {}
    for column in columns:
        chunked = table[column]
        if chunked.null_count or pa.types.is_string(chunked.type) or pa.types.is_large_string(chunked.type):
            continue  # strings and partly annotated columns have no statistics (as in the export)
        values[lerobot_key(column, cameras)] = _to_numpy(chunked)
    values["timestamp"] = (frame / fps).astype(np.float32)
    values["frame_index"] = frame.astype(np.int64)
    values["episode_index"] = episode.astype(np.int64)
    values["index"] = np.arange(len(order), dtype=np.int64)
    values["task_index"] = task_index[episode].astype(np.int64)
    per_episode = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        stats = {}
        for camera in cameras:
            picked = order[start:end][lerobot_stats.sample_indices(end - start)]
            column = image_column(camera)
            frames = ds.get_frames(picked, cameras=column)[column]
            stats[video_key(camera)] = lerobot_stats.image_stats(list(frames))
        for key, array in values.items():
            stats[key] = lerobot_stats.vector_stats(array[start:end])
        per_episode.append(stats)
    return lerobot_stats.aggregate_all(per_episode) if per_episode else {}


def stored_stats(uri: str, version: int | str | None = None, storage_options: dict | None = None) -> dict:
    """robodata's summary statistics (mean/std/min/max/count, LeRobot keys) of ``uri`` at
    ``version``, merged from the per-episode moments ingest stored: no pass over the data.

    >>> sorted(stored_stats("data/demo")["action"])
    ['count', 'max', 'mean', 'min', 'std']
    """
    ds = open_dataset(uri, version=version, storage_options=storage_options)
    episodes, counts = np.unique(np.asarray(ds.rows.episode_index), return_counts=True)
    lengths = dict(zip(episodes.tolist(), counts.tolist(), strict=True))
    found, missing = feature_stats.episode_moments_at(ds.uri, ds.version, lengths, ds.storage_options)
    if missing:  # every write stores its episode's moments: a dataset without them lost stats.lance
        raise RoboDataError(
            f"{uri}: version {ds.version} has no stored statistics for episodes {missing} in stats.lance"
        )
    aggregated = feature_stats.aggregate([found[e] for e in sorted(found)])
    return {lerobot_key(name, ds.cameras): value for name, value in aggregated.items()}

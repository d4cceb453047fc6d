"""Statistics of a pinned robodata version for LeRobot training code.

``lerobot_stats``: what LeRobot would have written to ``meta/stats.json`` for the same episodes
(``robodata.interop.lerobot_stats``: per-episode stats with histogram quantiles q01..q99 over
every row, camera stats over ``sample_indices`` frames per episode, aggregated as LeRobot does),
for every feature an item carries, the index columns included. It reads the version's numeric
columns once and decodes the sampled frames, so ``meta.stats`` computes it on first use.

``stored_stats``: robodata's own summary (mean/std/min/max/count) merged from the moments ingest
stored per episode in ``stats.lance``: no pass over the data, no quantiles.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from robodata.format import stats as feature_stats
from robodata.format.schema import image_column
from robodata.interop import lerobot_stats
from robodata.interop.lerobot_format import video_key
from robodata.reader import open_dataset
from robodata.reader import to_numpy as _to_numpy

RENAMED = {"observation_state": "observation.state", "action": "action"}


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
        values[RENAMED.get(column, column)] = _to_numpy(chunked)
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
    ``version``, merged from the per-episode moments stored at ingest."""
    ds = open_dataset(uri, version=version, storage_options=storage_options)
    episodes, counts = np.unique(np.asarray(ds.rows.episode_index), return_counts=True)
    return version_stats(ds, dict(zip(episodes.tolist(), counts.tolist(), strict=True)))


def version_stats(ds, episode_lengths: dict[int, int]) -> dict[str, dict[str, np.ndarray]]:
    """LeRobot-keyed statistics of ``ds``'s version from the per-episode moments stored at ingest;
    episodes without stored moments (ingested before robodata kept them) are computed here."""
    found, missing = feature_stats.episode_moments_at(ds.uri, ds.version, episode_lengths, ds.storage_options)
    for episode in missing:
        found[episode] = _compute_moments(ds, episode)
    aggregated = feature_stats.aggregate([found[e] for e in sorted(found)])
    keyed = {image_column(c): video_key(c) for c in ds.cameras}
    return {keyed.get(name, RENAMED.get(name, name)): value for name, value in aggregated.items()}


def _compute_moments(ds, episode: int) -> dict[str, dict]:
    """What ingest stores for ``episode``, from the dataset: state and action of every row, and
    the first frame of the sampled GOPs among those its rows show (in time order)."""
    rows = np.flatnonzero(np.asarray(ds.rows.episode_index) == episode)
    table = ds.take_rows(rows, ["observation_state", "action"])
    moments = {name: feature_stats.vector_moments(_to_numpy(table[name])) for name in ("observation_state", "action")}
    for cam in ds.cameras:
        first = rows[np.asarray(ds.rows.frame_in_gop[cam])[rows] == 0]
        first = first[np.argsort(np.asarray(ds.rows.frame_index)[first], kind="stable")]
        _, keep = np.unique(np.asarray(ds.rows.ref_id[cam])[first], return_index=True)
        keep = np.sort(keep)[feature_stats.sampled_gops(len(keep))]
        column = image_column(cam)
        frames = ds.get_frames(first[keep], cameras=column)[column] if len(keep) else []
        moments[image_column(cam)] = feature_stats.pixel_moments(list(frames))
    return moments

"""Feature statistics of one episode, computed while it is ingested (``robodata.format._stats``).

State and action come from the episode in memory. Camera pixels come from the GOPs just written:
the first frame (an IDR frame: one frame decoded per GOP) of ``stats.SAMPLED_GOPS`` GOPs spread
over the episode, exactly the pixels training will read back, at a bounded read cost.

>>> from robodata.ingest._upload import read_upload
>>> from robodata.ingest._writer import write_gops
>>> episode = read_upload("uploads/episode_000000")
>>> staged = write_gops(episode, "data/demo")  # GOPs stored already are reused
>>> moments = episode_moments(episode, staged, "data/demo")
>>> sorted(moments)
['action', 'observation_images_top', 'observation_images_wrist_left', 'observation_images_wrist_right', 'observation_state']
"""

from __future__ import annotations

import logging

import numpy as np

from robodata.codec import decode_gop_frames
from robodata.format import _stats as stats
from robodata.format._schema import image_column
from robodata.format._tables import gops_uri, open_table
from robodata.storage._failures import storage_call

log = logging.getLogger(__name__)


def episode_moments(episode, staged, dataset_uri: str, storage_options: dict | None = None) -> dict[str, dict]:
    """Moments per feature (``observation_state``, ``action``, ``observation_images_<cam>``)."""
    moments = {
        "observation_state": stats.vector_moments(episode.observation_state),
        "action": stats.vector_moments(episode.action),
    }
    gops = open_table(gops_uri(dataset_uri), storage_options)
    for camera, layout in sorted(staged.cameras.items()):
        sampled = [layout.ref_ids[i] for i in stats.sampled_gops(len(layout.ref_ids))]
        reading = f"reading {camera}'s sampled GOPs"
        frames = storage_call(reading, gops_uri(dataset_uri), storage_options, _first_frames, gops, sampled)
        moments[image_column(camera)] = stats.pixel_moments(frames)
    return moments


def _first_frames(gops, ref_ids: list[int]) -> list[np.ndarray]:
    if not ref_ids:
        return []
    listed = ", ".join(str(int(r)) for r in ref_ids)
    table = gops.to_table(columns=["ref_id", "packet_sizes", "codec"], filter=f"ref_id IN ({listed})", with_row_id=True)
    blobs = gops.read_blobs("gop", ids=table["_rowid"].to_pylist(), preserve_order=True)
    sizes, codecs = table["packet_sizes"].to_pylist(), table["codec"].to_pylist()
    return [
        decode_gop_frames(data, size, [0], codec=codec)[0]
        for (_, data), size, codec in zip(blobs, sizes, codecs, strict=True)
    ]


def record_episode_stats(
    dataset_uri: str, episode, staged, frames_version: int, storage_options: dict | None = None
) -> None:
    """Store ``episode``'s statistics as written at ``frames_version``. The rows are already
    committed: a failure here is logged, not raised, and readers compute the missing episode's
    statistics themselves (``LeRobotCompatDataset.meta.stats``)."""
    try:
        moments = episode_moments(episode, staged, dataset_uri, storage_options)
        stats.record_episode_moments(
            dataset_uri, episode.episode_index, frames_version, len(episode), moments, storage_options
        )
    except Exception as exc:  # the episode is committed; its stats can be recomputed
        log.warning("episode %s: statistics not stored (%s); readers will compute them", episode.episode_index, exc)

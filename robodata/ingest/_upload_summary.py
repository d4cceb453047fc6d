"""Facts about one upload folder, read without decoding its videos: what an orchestrator shows
before ingesting and what checks compare the stored episode against."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

import pyarrow.parquet as pq

from robodata.errors import BadUploadError
from robodata.ingest._upload import EPISODE_JSON, STATES_FILE, _read_episode_json, read_upload
from robodata.storage import fsspec_filesystem
from robodata.storage._arrow_input import arrow_input


@dataclass
class UploadSummary:
    """A validated, complete upload."""

    episode_id: str
    episode_index: int
    state_samples: int
    duration_s: float
    control_hz: float
    cameras: dict[str, str]  # name -> "WxH@fps", as stored (upright, even sizes)
    task: str
    notes: list[str]  # what ingest changes in the frames: rotated upright, cropped to even sizes


def describe_upload(upload: str, storage_options: dict | None = None, uploads_root: str | None = None) -> UploadSummary:
    """Validate ``upload`` as ``ingest_episode`` would (BadUploadError naming the file and the
    problem otherwise) and summarise it.

    >>> describe_upload("uploads/episode_000000").state_samples
    197
    """
    episode = read_upload(upload, storage_options, uploads_root)
    times = episode.timestamps_ns
    return UploadSummary(
        episode_id=episode.episode_id,
        episode_index=episode.episode_index,
        state_samples=len(episode),
        duration_s=float(times[-1] - times[0]) / 1e9,
        control_hz=episode.control_hz,
        cameras={c.name: f"{c.width}x{c.height}@{c.fps:g}" for c in episode.cameras},
        task=episode.task,
        notes=episode.notes,
    )


def upload_episode_index(upload: str, storage_options: dict | None = None) -> int:
    """The episode_index ``upload``'s episode.json declares.

    >>> upload_episode_index("uploads/episode_000002")
    2
    """
    fs = fsspec_filesystem(upload, storage_options)
    return _read_episode_json(fs, posixpath.join(str(upload).rstrip("/"), EPISODE_JSON))["episode_index"]


def upload_state_samples(upload: str, storage_options: dict | None = None) -> int:
    """How many control-rate samples ``upload``'s states.parquet holds (read from its footer).

    >>> upload_state_samples("uploads/episode_000000")
    197
    """
    path = posixpath.join(str(upload).rstrip("/"), STATES_FILE)
    try:
        return pq.ParquetFile(arrow_input(fsspec_filesystem(path, storage_options), path)).metadata.num_rows
    except FileNotFoundError:
        raise BadUploadError(path, "is missing") from None

"""Raw episode -> GOP rows + aligned rows."""

from __future__ import annotations

from robodata.codec import EncoderSettings
from robodata.ingest.episode import CameraStream, EpisodeData
from robodata.ingest.upload import read_upload
from robodata.ingest.writer import IngestResult, write_episode
from robodata.storage.dataset_root import check_dataset_location


def ingest_episode(
    upload: str,
    dataset_uri: str,
    *,
    gop_size: int = 8,
    crf: int = 23,
    preset: str = "veryfast",
    storage_options: dict | None = None,
    uploads_root: str | None = None,
) -> IngestResult:
    """Validate the upload folder ``upload`` and write it into the dataset at ``dataset_uri``,
    replacing any earlier copy of the episode in one commit.

    >>> robodata.ingest_episode("uploads/episode_000000", "data/demo").frames_version
    1
    """
    check_dataset_location(dataset_uri, storage_options)  # before minutes of encoding
    episode = read_upload(upload, storage_options, uploads_root)
    settings = EncoderSettings(gop_size=gop_size, crf=crf, preset=preset)
    return write_episode(episode, dataset_uri, settings, storage_options)


__all__ = ["CameraStream", "EpisodeData", "IngestResult", "ingest_episode", "read_upload", "write_episode"]

"""Raw episode -> GOP rows + aligned rows."""

from __future__ import annotations

from robodata.codec import EncoderSettings
from robodata.ingest.encoding_settings import requested_settings, stored_settings
from robodata.ingest.episode import CameraStream, EpisodeData
from robodata.ingest.upload import read_upload
from robodata.ingest.writer import IngestResult, write_episode
from robodata.storage.dataset_root import check_dataset_location


def ingest_episode(
    upload: str,
    dataset_uri: str,
    *,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
    uploads_root: str | None = None,
    replace: bool = False,
) -> IngestResult:
    """Validate the upload folder ``upload`` and write it into the dataset at ``dataset_uri``,
    replacing any earlier copy of the episode in one commit, encoded with ``settings``
    (default: ``EncoderSettings()``). Its labels are kept for the rows that still exist. An upload
    claiming an ``episode_index`` that holds a different episode is refused
    (EpisodeIndexTakenError) unless ``replace=True``.

    >>> robodata.ingest_episode("uploads/episode_000000", "data/demo").frames_version  # doctest: +SKIP
    1
    """
    check_dataset_location(dataset_uri, storage_options)  # before minutes of encoding
    episode = read_upload(upload, storage_options, uploads_root)
    return write_episode(episode, dataset_uri, settings, storage_options=storage_options, replace=replace)


__all__ = [
    "CameraStream",
    "EpisodeData",
    "IngestResult",
    "ingest_episode",
    "read_upload",
    "requested_settings",
    "stored_settings",
    "write_episode",
]

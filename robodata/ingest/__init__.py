"""Raw episode -> GOP rows + aligned rows."""

from __future__ import annotations

from robodata.codec import EncoderSettings
from robodata.ingest._encoding_settings import requested_settings, stored_settings
from robodata.ingest._episode import CameraStream, EpisodeData
from robodata.ingest._renditions import add_rendition
from robodata.ingest._upload import read_upload
from robodata.ingest._writer import IngestResult, write_episode
from robodata.storage._dataset_root import check_dataset_location


def ingest_episode(
    upload: str,
    dataset_uri: str,
    *,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
    uploads_root: str | None = None,
    replace: bool = False,
) -> IngestResult:
    """Validate an upload folder and write its episode into a dataset, in one commit.

    Any earlier copy of the episode is replaced; its labels are kept for the rows that still
    exist. The dataset is created by its first episode.

    Parameters
    ----------
    upload : str
        The upload folder (local or s3://): ``episode.json``, the cameras' videos, the signals.
    dataset_uri : str
        The dataset root (local or s3://).
    settings : EncoderSettings, optional
        How to encode the cameras; a new dataset gets ``EncoderSettings()``, an existing one
        keeps the settings it was written with.
    storage_options : dict, optional
        Object-store options for both locations; by default from the environment.
    uploads_root : str, optional
        When given, ``upload`` must lie inside it.
    replace : bool, default False
        Let the upload replace a different episode that holds its ``episode_index``.

    Returns
    -------
    IngestResult
        The versions written (``frames_version`` is the dataset's new version), rows and GOPs.

    Raises
    ------
    robodata.BadUploadError
        The upload is incomplete or invalid; nothing was written.
    robodata.errors.EpisodeIndexTakenError
        Another episode holds the upload's ``episode_index`` and ``replace`` is False.
    robodata.IncompatibleEpisodeError
        Its cameras, joints or GOP size differ from the dataset's.
    robodata.errors.DatasetLocationError
        ``dataset_uri`` cannot hold a dataset.

    Examples
    --------
    >>> result = robodata.ingest_episode("uploads/episode_000000", "data/new")
    >>> result.frames_version, result.episode_index, result.rows
    (1, 0, 197)
    >>> len(robodata.open("data/new"))
    197
    """
    check_dataset_location(dataset_uri, storage_options)  # before minutes of encoding
    episode = read_upload(upload, storage_options, uploads_root)
    return write_episode(episode, dataset_uri, settings, storage_options=storage_options, replace=replace)


__all__ = [
    "CameraStream",
    "EpisodeData",
    "IngestResult",
    "add_rendition",
    "ingest_episode",
    "read_upload",
    "requested_settings",
    "stored_settings",
    "write_episode",
]

"""robodata: robot episodes as one versioned Lance dataset with frame-level random access.

``robodata.open`` is the way in; everything else reads from the ``RoboDataset`` it returns.

>>> import robodata
>>> ds = robodata.open("data/demo")
>>> ds[0]["observation_images_top"].shape
(480, 640, 3)
>>> ds.get_frames([5, 90], cameras=["top"]).data["top"].shape
(2, 480, 640, 3)
"""

from robodata import quiet_lance  # noqa: F401  (first: sets LANCE_LOG before lance loads)
from robodata.codec import EncoderSettings
from robodata.edits import add_annotations, collect_garbage, delete_episodes
from robodata.errors import (
    BadUploadError,
    BenchmarksUnavailableError,
    CommitConflictError,
    CorruptGopError,
    CorruptRowsError,
    DatasetLocationError,
    EpisodeAuditError,
    EpisodeIndexTakenError,
    EpisodeNotFoundError,
    IncompatibleEpisodeError,
    InvalidArgumentError,
    MissingExtraError,
    NotFoundError,
    RoboDataError,
    StorageError,
    StorageUnreachableError,
    UnsupportedFormatError,
)
from robodata.ingest import IngestResult, ingest_episode, write_episode
from robodata.reader import FrameBatch, RoboDataset, WindowBatch
from robodata.reader import open_dataset as open  # mirrors lance.dataset / robodata.open

__all__ = [
    "BadUploadError",
    "BenchmarksUnavailableError",
    "CommitConflictError",
    "CorruptGopError",
    "CorruptRowsError",
    "DatasetLocationError",
    "EncoderSettings",
    "EpisodeAuditError",
    "EpisodeIndexTakenError",
    "EpisodeNotFoundError",
    "FrameBatch",
    "IncompatibleEpisodeError",
    "InvalidArgumentError",
    "MissingExtraError",
    "NotFoundError",
    "IngestResult",
    "RoboDataError",
    "RoboDataset",  # for type hints: datasets come from robodata.open
    "StorageError",
    "StorageUnreachableError",
    "UnsupportedFormatError",
    "WindowBatch",
    "add_annotations",
    "collect_garbage",
    "delete_episodes",
    "ingest_episode",
    "open",
    "write_episode",
]

"""robodata: robot episodes as one versioned Lance dataset with frame-level random access.

>>> import robodata  # doctest: +SKIP
>>> robodata.ingest_episode("uploads/episode_000000", "data/demo")  # doctest: +SKIP
>>> ds = robodata.open("data/demo")  # doctest: +SKIP
>>> ds[0]["observation_images_top"].shape  # doctest: +SKIP
(480, 640, 3)
"""

from robodata import quiet_lance  # noqa: F401  (first: sets LANCE_LOG before lance loads)
from robodata.codec import EncoderSettings
from robodata.edits import add_annotations, collect_garbage, delete_episodes
from robodata.errors import (
    BadUploadError,
    DatasetLocationError,
    IncompatibleEpisodeError,
    RoboDataError,
    StorageError,
    StorageUnreachableError,
)
from robodata.ingest import IngestResult, ingest_episode, write_episode
from robodata.reader import RoboDataset
from robodata.reader import open_dataset as open  # mirrors lance.dataset / robodata.open

__all__ = [
    "BadUploadError",
    "DatasetLocationError",
    "EncoderSettings",
    "IncompatibleEpisodeError",
    "IngestResult",
    "RoboDataError",
    "RoboDataset",
    "StorageError",
    "StorageUnreachableError",
    "add_annotations",
    "collect_garbage",
    "delete_episodes",
    "ingest_episode",
    "open",
    "write_episode",
]

"""robodata: robot episodes as one versioned Lance dataset with frame-level random access.

``robodata.open`` is the way in; everything else reads from the ``RoboDataset`` it returns.

>>> import robodata
>>> ds = robodata.open("data/demo")
>>> ds[0]["observation_images_top"].shape
(480, 640, 3)
>>> ds.get_frames([5, 90], cameras=["top"]).data["top"].shape
(2, 480, 640, 3)

Errors: ``robodata`` exports the ones a user catches to decide what to do next; every error,
these included, is in ``robodata.errors``, and all are ``RoboDataError``s.

- ``RoboDataError``: any of robodata's own errors (the CLI prints these as one line).
- ``BadUploadError`` and ``IncompatibleEpisodeError``: an ingest refused the upload (invalid,
  or it does not fit the dataset) and wrote nothing: set the upload aside, ingest the next.
- ``NotFoundError``: the dataset, version, tag or file named does not exist (e.g. create it).
- ``StorageError``: the store failed a request or could not be reached
  (``robodata.errors.StorageUnreachableError`` is the unreachable case): retry or alert.
- ``CorruptGopError``: one GOP's bytes fail their checksum: a loader skips that sample and
  reports it (``robodata verify`` lists them all).
- ``CommitConflictError``: concurrent writers kept committing first, nothing was committed:
  run the write again.
- ``UnsupportedFormatError``: the dataset was written in another robodata format: open it with
  the robodata that wrote it, or ingest its uploads into a new dataset.

The rest report a mistake to fix rather than a case to handle (a dataset root that cannot
hold a dataset, an edit naming a missing episode, an invalid argument, a missing extra, a
taken episode index, a failed pre-commit audit, a corrupt data file to restore): they are
caught, when at all, as ``RoboDataError`` or by the built-in class each also is (ValueError,
LookupError, ImportError).
"""

from robodata import _quiet_lance as quiet_lance  # noqa: F401  (first: sets LANCE_LOG before lance loads)
from robodata.codec import EncoderSettings
from robodata.edits import add_annotations, collect_garbage, delete_episodes
from robodata.errors import (
    BadUploadError,
    CommitConflictError,
    CorruptGopError,
    IncompatibleEpisodeError,
    NotFoundError,
    RoboDataError,
    StorageError,
    UnsupportedFormatError,
)
from robodata.ingest import IngestResult, ingest_episode, write_episode
from robodata.reader import FrameBatch, RoboDataset, WindowBatch
from robodata.reader import open_dataset as open  # mirrors lance.dataset / robodata.open

__all__ = [
    "BadUploadError",
    "CommitConflictError",
    "CorruptGopError",
    "EncoderSettings",
    "FrameBatch",
    "IncompatibleEpisodeError",
    "NotFoundError",
    "IngestResult",
    "RoboDataError",
    "RoboDataset",  # for type hints: datasets come from robodata.open
    "StorageError",
    "UnsupportedFormatError",
    "WindowBatch",
    "add_annotations",
    "collect_garbage",
    "delete_episodes",
    "ingest_episode",
    "open",
    "write_episode",
]

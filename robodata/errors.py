"""Errors a user sees: each names the file (or dataset) and the problem."""

from __future__ import annotations


class RoboDataError(Exception):
    """Base class of robodata's own errors."""


class BadUploadError(RoboDataError, ValueError):
    """An upload that cannot be ingested; nothing was written."""

    def __init__(self, path: str, problem: str) -> None:
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}")


class IncompatibleEpisodeError(RoboDataError, ValueError):
    """An episode whose cameras, joints or GOP size differ from the dataset's."""


class StorageError(RoboDataError, OSError):
    """The dataset's storage failed a request during a step (e.g. a missing bucket, access
    denied); the message names the store, the table, the step and the store's answer.
    Credentials are never part of it."""


class StorageUnreachableError(StorageError):
    """The dataset's storage could not be reached, or did not answer, during a step."""


class DatasetLocationError(RoboDataError, ValueError):
    """A dataset root that cannot hold a dataset (a file, a bucket that does not exist, an
    endpoint that is not an object store); raised before anything is written."""


class EpisodeNotFoundError(RoboDataError, LookupError):
    """An edit named an episode the dataset does not hold; nothing was changed."""

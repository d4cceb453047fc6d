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


class EpisodeIndexTakenError(RoboDataError, ValueError):
    """An upload claims an ``episode_index`` the dataset already holds for a different episode;
    nothing was written. Re-ingest with ``replace=True`` (CLI ``--replace``) to replace it."""

    def __init__(self, episode_index: int, episode_id: str, held_by: str, dataset: str) -> None:
        self.episode_index, self.episode_id, self.held_by = episode_index, episode_id, held_by
        holder = f"episode {held_by!r}" if held_by else "an episode stored without an upload id"
        super().__init__(
            f"{dataset}: episode {episode_id!r} claims episode_index {episode_index}, which already holds "
            f"{holder}; nothing was written (pass replace=True / --replace to replace it)"
        )

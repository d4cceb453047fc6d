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


class DamagedFileError(StorageError):
    """A file of the dataset is damaged (cut short, overwritten, another file in its place, a
    manifest that does not decode): the message names the file where it can be told, the step,
    and the fix (restore it from a copy)."""


class CorruptGopError(RoboDataError, ValueError):
    """Stored GOP bytes whose checksum differs from the one written with them: the message names
    the dataset, its version, the episode, the camera and the GOP.

    >>> CorruptGopError.of("data/demo", 5, 2, "top", 7, 123, "checksum differs").gop_index
    7
    """

    def __init__(self, message: str, **details: object) -> None:
        # One positional argument, so the error survives pickling and DataLoader workers'
        # re-raising (both rebuild it from its message).
        super().__init__(message)
        self.details = details
        for name, value in details.items():
            setattr(self, name, value)

    @classmethod
    def of(
        cls, uri: str, version: int | None, episode_index: int, camera: str, gop_index: int, ref_id: int, problem: str
    ) -> CorruptGopError:
        at = f" version {version}" if version is not None else ""
        return cls(
            f"{uri}{at}: GOP {gop_index} of episode {episode_index}, camera {camera!r} (ref_id {ref_id}) "
            f"is corrupt: {problem}",
            uri=uri,
            version=version,
            episode_index=episode_index,
            camera=camera,
            gop_index=gop_index,
            ref_id=ref_id,
        )

    def __reduce__(self):
        return _rebuild_corrupt_gop_error, (str(self), self.details)


def _rebuild_corrupt_gop_error(message: str, details: dict) -> CorruptGopError:
    return CorruptGopError(message, **details)


class EpisodeAuditError(RoboDataError, ValueError):
    """An episode whose staged GOPs or rows failed the checks that run before its rows commit;
    nothing was committed, the dataset's version is unchanged. ``results`` holds every check's
    outcome (an IntegrityResult by check name)."""

    def __init__(self, message: str, results: dict | None = None) -> None:
        super().__init__(message)
        self.results = results or {}

    def __reduce__(self):
        return type(self), (str(self), self.results)


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
        super().__init__(
            f"{dataset}: episode {episode_id!r} claims episode_index {episode_index}, which already holds "
            f"episode {held_by!r}; nothing was written (pass replace=True / --replace to replace it)"
        )


class UnsupportedFormatError(RoboDataError, ValueError):
    """A dataset written in another robodata format than the one this release reads and writes;
    it is neither read nor appended to. The message names the dataset and its format version."""


class BenchmarksUnavailableError(RoboDataError):
    """The benchmarks were asked for, but they ship with robodata's source checkout (the
    top-level ``benchmarks/`` folder), not with the installed package."""


class CommitConflictError(RoboDataError, RuntimeError):
    """Concurrent writers kept committing first: the write was planned again on each newer
    version a bounded number of times and still lost. Nothing of it was committed; run it again.
    The message names the table, the write and the other writer's kind of commit."""


class MissingGopsError(RoboDataError, KeyError):
    """Rows point at GOPs gops.lance does not hold (a damaged or swapped manifest, GOPs removed
    outside robodata): the message names the table, how many and which, and the fix. A KeyError,
    as the lookup that finds it was one."""

    def __str__(self) -> str:  # KeyError's own quotes the message
        return str(self.args[0]) if self.args else ""


class LoaderWorkerError(RoboDataError, RuntimeError):
    """A DataLoader worker process died (killed, out of memory) while the training loop waited
    for batches: the message names the dataset, its version, the worker's pid and how it ended,
    and how to go on (resume from the last ``state_dict()``)."""


class CorruptRowsError(RoboDataError, ValueError):
    """A frames.lance data file whose bytes differ from the checksum written with it (or that Lance
    cannot decode): the message names the table, the fragment, the file and the rows it holds."""


class NotFoundError(RoboDataError, FileNotFoundError):
    """A dataset, a version or tag, or a file the caller named does not exist; the message names it."""


class InvalidArgumentError(RoboDataError, ValueError):
    """A value robodata refuses before doing anything (an episode index or id, a setting such as
    DAGSTER_HOME); the message names the value and what is allowed."""


class MissingExtraError(RoboDataError, ImportError):
    """A feature that needs an optional dependency which is not installed; the message names the
    ``pip install 'robodata[EXTRA]'`` command that adds it."""


def import_extra(module: str, extra: str, feature: str):
    """``module`` imported, or MissingExtraError naming the extra that installs it: the core
    package reads and writes datasets without Dagster, torch, matplotlib or h5py.

    >>> import_extra("json", "plots", "plots").__name__
    'json'
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module.split(".")[0]:
            raise  # the package is there but broken: that traceback is the useful one
        raise MissingExtraError(f"{feature} needs {exc.name}: pip install 'robodata[{extra}]'") from exc

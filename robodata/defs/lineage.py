"""What every materialization records: where the dataset is, the Lance versions of both tables
after the write, what was written, the tag if one was made; and the data version that carries
the frames.lance version downstream."""

import dagster as dg

from robodata.defs.resources import DatasetStore
from robodata.errors import RoboDataError, StorageError
from robodata.format.versions import current_versions


def data_version(frames_version: int | None) -> dg.DataVersion:
    """The data version of anything derived from frames.lance at ``frames_version`` (0: empty)."""
    return dg.DataVersion(f"frames.lance@{frames_version or 0}")


def lineage_result(
    store: DatasetStore,
    *,
    rows_written: int,
    bytes_written: int,
    frames_version: int | None = None,
    gops_version: int | None = None,
    tag: str | None = None,
    extra: dict | None = None,
) -> dg.MaterializeResult:
    """A MaterializeResult with the lineage metadata; versions not given are read from the store."""
    if frames_version is None or gops_version is None:
        current = current_versions(store.root, store.storage_options())
        frames_version = current.frames if frames_version is None else frames_version
        gops_version = current.gops if gops_version is None else gops_version
    metadata = {
        "dataset_uri": store.safe_uri(),
        "frames_version": frames_version,
        "gops_version": gops_version,
        "rows_written": rows_written,
        "bytes_written": bytes_written,
    }
    if tag is not None:
        metadata["tag"] = tag
    metadata.update(extra or {})
    return dg.MaterializeResult(metadata=metadata, data_version=data_version(frames_version))


def failure(store: DatasetStore, exc: Exception) -> dg.Failure:
    """A Dagster failure whose message names the file and the problem, credentials redacted.
    Only a storage failure may be retried (by the asset's RetryPolicy): a bad upload or an
    incompatible episode fails the same way every time."""
    retryable = isinstance(exc, StorageError) or not isinstance(exc, RoboDataError)
    return dg.Failure(description=store.redact(str(exc)), allow_retries=retryable)

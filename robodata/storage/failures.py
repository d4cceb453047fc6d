"""Turn a storage failure deep inside Lance into an error that says what could not be reached."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from robodata.errors import RoboDataError, StorageError, StorageUnreachableError
from robodata.storage.uris import is_remote, redact

# What Lance / object_store put in an error when a request failed...
_IO_MARKERS = (
    "LanceError(IO)", "error sending request", "Generic S3 error", "Commit result", "Connection refused"
)
# ... and when the store did answer, with an error status (a missing bucket, access denied).
_ANSWERED_MARKER = "non-2xx status code"


def is_storage_failure(exc: BaseException) -> bool:
    return isinstance(exc, OSError | ValueError) and any(m in str(exc) for m in _IO_MARKERS)


@contextmanager
def storage_step(action: str, uri: str, storage_options: dict | None = None) -> Iterator[None]:
    """Run one step that talks to storage; a failure to reach it becomes StorageUnreachableError,
    an error the store answered with becomes StorageError.

    >>> with storage_step("committing episode 3's rows", "s3://bucket/ds/frames.lance", options):  # doctest: +SKIP
    ...     frames.merge_insert(...).execute(rows)
    """
    try:
        yield
    except RoboDataError:
        raise
    except (OSError, ValueError) as exc:
        if not is_storage_failure(exc):
            raise
        default = "object storage" if is_remote(uri) else "the file system"
        where = (storage_options or {}).get("aws_endpoint") or default
        if _ANSWERED_MARKER in str(exc):
            message = f"{uri}: {where} refused a request while {action}: {exc}"
            raise StorageError(redact(message, storage_options)) from None
        message = f"{uri}: could not reach {where} while {action}: {exc}"
        if "Commit result" in str(exc):
            message += (" (the commit may or may not have landed; re-running the ingest is safe: it replaces "
                        "the episode, leaving one copy)")
        raise StorageUnreachableError(redact(message, storage_options)) from None

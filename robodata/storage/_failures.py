"""Turn a storage failure deep inside Lance into an error that says what could not be reached."""

from __future__ import annotations

import errno
import functools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from robodata.errors import RoboDataError, StorageError, StorageUnreachableError
from robodata.storage._deadlines import DeadlineExceeded, call_with_deadline, current_step
from robodata.storage._lance_errors import ANSWER_STATUS, explain, is_corrupt_file, without_source_paths
from robodata.storage._uris import canonical_options, is_remote, redact

F = TypeVar("F", bound=Callable)
T = TypeVar("T")

# What Lance / object_store put in an error when a request failed...
_IO_MARKERS = ("LanceError(IO)", "error sending request", "Generic S3 error", "Commit result", "Connection refused")
# ... and when the store did answer, with an error status (a missing bucket, access denied).
_ANSWERED_MARKER = "non-2xx status code"
# The S3 error document in such an answer (its status: lance_errors.ANSWER_STATUS).
_ANSWER_CODE = re.compile(r"<Code>([^<]*)</Code>")
_ANSWER_MESSAGE = re.compile(r"<Message>([^<]*)</Message>")


# Lance's words for a commit another writer's commit preempted (its message also says LanceError(IO)).
_CONFLICT_MARKERS = ("commit conflict", "preempted by concurrent")


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is Lance refusing a commit because another writer committed first.

    >>> is_commit_conflict(OSError("LanceError(IO): Retryable commit conflict for version 7: ... Please retry"))
    True
    """
    return any(marker in str(exc).lower() for marker in _CONFLICT_MARKERS)


# botocore (s3fs) errors that mean the store did not answer; matched by name, not imported.
_BOTOCORE_UNREACHABLE = ("ReadTimeoutError", "ConnectTimeoutError", "EndpointConnectionError", "ConnectionClosedError")


def is_storage_failure(exc: BaseException) -> bool:
    if isinstance(exc, DeadlineExceeded | TimeoutError | ConnectionError) or _is_botocore_unreachable(exc):
        return True
    return isinstance(exc, OSError | ValueError) and any(m in str(exc) for m in _IO_MARKERS)


def store_answer(error: str) -> str:
    """What the store answered, in a few words, from an object_store error that holds its HTTP
    status and S3 error document; ``error`` itself when it holds neither. A 403 says what to check.

    >>> store_answer("... non-2xx status code: 403 Forbidden: <?xml ...><Code>AccessDenied</Code><Message>Access Denied</Message>")
    '403 Forbidden (AccessDenied: Access Denied); check the credentials and the bucket policy'
    """
    status = ANSWER_STATUS.search(error)
    if status is None:
        return error
    answer = status.group(1).strip()
    code, text = _ANSWER_CODE.search(error), _ANSWER_MESSAGE.search(error)
    if code:
        answer += f" ({code.group(1)}: {text.group(1)})" if text else f" ({code.group(1)})"
    if answer.startswith("403"):
        answer += "; check the credentials and the bucket policy"
    return answer


# object_store's account of a request that got no answer: "Error performing GET http://host/b/k
# in 2.0s - HTTP error: error sending request" (retries and the URL with it).
_UNANSWERED = re.compile(r"Error performing (\w+) (\S+?)(?: in [\d.]+\s*\S+?)?(?:,| -) (.*)", re.S)
_REASON_PREFIX = re.compile(r"^(?:HTTP error:\s*|request or response body error:\s*|Generic \w+ error:\s*)+")


def unanswered_request(error: str) -> str:
    """The request that got no answer and why, in robodata's words: the object key (no endpoint,
    which the message names already) and the transport's reason, without object_store's wording,
    retry counts or Lance's source paths.

    >>> unanswered_request("LanceError(IO): Generic S3 error: Error performing GET http://127.0.0.1:9/lab/ds/frames.lance/data/a.lance "
    ...     "in 2.0s, after 3 retries - HTTP error: error sending request, /home/runner/work/lance/x.rs:1:2")
    'no answer to GET lab/ds/frames.lance/data/a.lance (error sending request)'
    """
    found = _UNANSWERED.search(error)
    if found is None:
        return without_source_paths(error)
    method, url, reason = found.groups()
    key = re.sub(r"^[a-z0-9+]+://[^/]+/", "", url)
    reason = _REASON_PREFIX.sub("", without_source_paths(reason.split(" - ")[-1])).strip().rstrip(",")
    reason = re.sub(r"^after \d+ retries[^-]*-?\s*", "", reason)
    return f"no answer to {method} {key}" + (f" ({reason})" if reason else "")


def _refused_by_store(exc: BaseException, uri: str) -> str | None:
    """What the store answered, when ``exc`` is s3fs's translation of a refusal on a remote
    ``uri`` (``[Errno 22] The security token included in the request is invalid``, access
    denied); None otherwise."""
    if not is_remote(uri) or not isinstance(exc, OSError) or isinstance(exc, FileNotFoundError):
        return None
    if not isinstance(exc, PermissionError) and exc.errno not in (errno.EINVAL, errno.EACCES, errno.EPERM):
        return None
    answer = exc.strerror or str(exc)
    return f"{answer}; check the credentials and the bucket policy" if answer else None


def _is_botocore_unreachable(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("botocore") and type(exc).__name__ in _BOTOCORE_UNREACHABLE


@contextmanager
def storage_step(action: str, uri: str, storage_options: dict | None = None) -> Iterator[None]:
    """Run one step that talks to storage; a failure to reach it becomes StorageUnreachableError,
    an error the store answered with becomes StorageError.

    >>> with storage_step("committing episode 3's rows", "s3://lab/ds/frames.lance"):
    ...     raise TimeoutError("timed out")
    Traceback (most recent call last):
    robodata.errors.StorageUnreachableError: s3://lab/ds/frames.lance: could not reach object storage while committing episode 3's rows: timed out (the commit may or may not have landed; ...)
    """
    token = current_step.set((action, uri))
    try:
        yield
    except RoboDataError:
        raise
    except BaseException as exc:  # TimeoutError and DeadlineExceeded are OSErrors; botocore's are not
        if is_lance_panic(exc):  # pyo3's PanicException is a BaseException: Lance failed inside
            raise _panic_error(exc, uri, action, storage_options) from None
        if not isinstance(exc, OSError | ValueError) and not _is_botocore_unreachable(exc) and not is_corrupt_file(exc):
            raise
        explained = explain(exc, uri, action, storage_options)  # a full disk, a damaged file, a missing one
        if explained is not None:
            raise type(explained)(redact(str(explained), storage_options)) from None
        default = "object storage" if is_remote(uri) else "the file system"
        where = canonical_options(storage_options).get("aws_endpoint") or default
        refused = _refused_by_store(exc, uri)
        if refused is not None:  # s3fs's [Errno 22] / 13 for what the store answered
            message = f"{uri}: {where} refused a request while {action}: {refused}"
            raise StorageError(redact(message, storage_options)) from None
        if not is_storage_failure(exc) or is_commit_conflict(exc):
            raise  # a commit conflict: another writer won, the store answered; the caller handles it
        if _ANSWERED_MARKER in str(exc):
            message = f"{uri}: {where} refused a request while {action}: {store_answer(str(exc))}"
            raise StorageError(redact(message, storage_options)) from None
        message = f"{uri}: could not reach {where} while {action}: {unanswered_request(str(exc))}"
        if "Commit result" in str(exc) or (isinstance(exc, TimeoutError) and "commit" in action):
            message += (
                " (the commit may or may not have landed; re-running the ingest is safe: it replaces "
                "the episode, leaving one copy)"
            )
        raise StorageUnreachableError(redact(message, storage_options)) from None
    finally:
        current_step.reset(token)


def is_lance_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic inside Lance (pyo3's ``PanicException``, matched by name:
    it lives in no importable module)."""
    return type(exc).__name__ == "PanicException"


def _panic_error(exc: BaseException, uri: str, action: str, storage_options: dict | None) -> StorageError:
    """A panic inside Lance while reading: damage it can name, else Lance's failure in one line."""
    explained = explain(exc, uri, action, storage_options)
    if explained is not None:
        return type(explained)(redact(str(explained), storage_options))
    detail = without_source_paths(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    message = (
        f"{uri}: Lance failed while {action} ({detail}); the table may be damaged: `robodata verify` "
        "checks every file, and a copy (a backup or a replica) restores it"
    )
    return StorageError(redact(message, storage_options))


def storage_call(action: str, uri: str, storage_options: dict | None, fn: Callable[..., T], /, *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` as one storage step named ``action``, under the storage deadline
    on a remote store: the one-line way to call Lance or fsspec on ``uri``.

    >>> import lance
    >>> frames = lance.dataset("data/demo/frames.lance")  # an s3:// table alike, with its options
    >>> len(storage_call("listing versions", "data/demo/frames.lance", None, frames.versions))
    3
    """
    with storage_step(action, str(uri), storage_options):
        return call_with_deadline(str(uri), storage_options, fn, *args, **kwargs)


def in_storage_step(action: str) -> Callable[[F], F]:
    """Decorate a function whose first two parameters are a URI and its storage options: its
    whole call is one storage step named ``action``, with the storage deadline (on a remote store).

    >>> from robodata.storage import fsspec_filesystem
    >>> @in_storage_step("counting uploads")
    ... def count_uploads(uploads_root, storage_options=None):
    ...     return len(fsspec_filesystem(uploads_root, storage_options).ls(uploads_root))
    >>> count_uploads("uploads")
    3
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def run(uri, storage_options=None, *args, **kwargs):
            with storage_step(action, str(uri), storage_options):
                return call_with_deadline(str(uri), storage_options, fn, uri, storage_options, *args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate

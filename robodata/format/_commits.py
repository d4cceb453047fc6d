"""One retry for every writer's commit: annotate, delete, tag, compaction and ingest all plan
their write on the newest version and call ``retry_commit``; a commit that a concurrent writer
overtook (Lance's "Retryable commit conflict ... Please retry", "Commit conflict for version",
"Too many concurrent writers"), or whose version a concurrent cleanup removed mid-write (its
manifest or files "Not found"), is planned again on the newer version, a bounded number of times
with jittered exponential backoff, and only then reported as one ``CommitConflictError`` line
naming the table, the write and what it lost to; never Lance's raw text or its source paths.

A table's first commit (``format._tables.create_once``: a conditional PUT of its first
manifest, which neither Lance nor the object store client retries) goes through
``retry_transient``: sent again after a reset or refused connection, unless it landed anyway.

The callable passed in must open the table again (or re-plan on ``latest``) on every attempt:
a retry on the version that lost would lose again.

>>> retry_commit("tagging version 3", "data/demo/frames.lance", lambda: robodata.open("data/demo").tag("run-1"))
3
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from typing import TypeVar

from robodata.errors import CommitConflictError, RoboDataError, StorageError
from robodata.storage._deadlines import DeadlineExceeded, call_with_deadline
from robodata.storage._failures import is_storage_failure
from robodata.storage._lance_errors import explain

T = TypeVar("T")

ATTEMPTS = 8  # 7 retries: 16 concurrent compactions and annotations all land in tests
BASE_DELAY_S = 0.05
MAX_DELAY_S = 2.0  # the longest single wait; all waits together stay under about 6 s

# What Lance puts in a commit that lost to a concurrent one (lance-core's CommitConflict,
# RetryableCommitConflict, IncompatibleTransaction, TooMuchWriteContention).
_CONFLICT_MARKERS = (
    "commit conflict",
    "please retry",
    "too many concurrent",
    "was preempted",
    "incompatibletransaction",
    "incompatible transaction",
)
# The other writer's kind of commit, when Lance names it ("This Rewrite transaction was
# preempted by concurrent transaction Update at version 12").
_OTHER = re.compile(r"concurrent transaction (\w+)(?: at version (\d+))?")


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is Lance saying a concurrent commit won (retrying may succeed).

    >>> is_commit_conflict(OSError("Retryable commit conflict for version 7: ... Please retry"))
    True
    >>> is_commit_conflict(ValueError("Not found: ds/frames.lance"))
    False
    """
    if isinstance(exc, RoboDataError):
        return False
    text = str(exc).lower()
    return any(marker in text for marker in _CONFLICT_MARKERS)


# Where a version's files live in a table: its data files, deletion files, manifest, transaction.
_VERSION_FILES = ("/data/", "/_deletions/", "/_versions/", "/_transactions/")


def is_vanished_version(exc: BaseException) -> bool:
    """Whether ``exc`` is a file of a table version missing (a data or deletion file, its
    manifest or transaction): what a write planned on a version sees when a concurrent cleanup
    (``compact --older-than 0``, gc) removed that version mid-write. Planning again on the newest
    version is the fix; if the file is missing from the newest version too, the last attempt
    reports it as a missing file (damage, not a race), never in Lance's words.

    >>> is_vanished_version(OSError("Not found: ds/frames.lance/data/0110.lance, /home/x/local.rs:273:40"))
    True
    >>> is_vanished_version(OSError("Dataset at path ds/frames.lance/_versions/7.manifest was not found: Not found: ..."))
    True
    """
    text = str(exc)
    return not isinstance(exc, RoboDataError) and "not found" in text.lower() and any(p in text for p in _VERSION_FILES)


def missing_file_error(exc: BaseException, uri: str, action: str) -> StorageError:
    """A file of the table missing on every attempt, said as such (Lance's text and its source
    paths left out).

    >>> print(missing_file_error(ValueError("Dataset at path ds/frames.lance/_versions/7.manifest was not found: "
    ...     "Not found: ds/frames.lance/_versions/7.manifest, /home/runner/work/lance/x.rs:1:2"), "ds/frames.lance", "adding labels"))
    ds/frames.lance: ds/frames.lance/_versions/7.manifest is missing while adding labels, though each attempt was planned on the newest version; restore it from a backup or a replica
    """
    # A manifest gone on every attempt is no concurrent cleanup's doing any more: said as missing.
    explained = None if "_versions/" in str(exc) else explain(exc, uri, action)
    if explained is not None:
        return explained
    found = re.search(r"Not found: (\S+?)(?:,|\s|$)", str(exc))
    what = found.group(1) if found else "a file of the table"
    return StorageError(
        f"{uri}: {what} is missing while {action}, though each attempt was planned on the newest version; "
        "restore it from a backup or a replica"
    )


def conflict_summary(exc: BaseException) -> str:
    """A few words on what a commit lost to, without Lance's paths.

    >>> conflict_summary(OSError("Retryable commit conflict for version 7: This Rewrite transaction "
    ...     "was preempted by concurrent transaction Update at version 7. Please retry, /home/x/lance/src/a.rs:1:2"))
    'a concurrent Update commit (version 7)'
    """
    found = _OTHER.search(str(exc))
    if found is None:
        return "a concurrent commit"
    version = f" (version {found.group(2)})" if found.group(2) else ""
    return f"a concurrent {found.group(1)} commit{version}"


def retry_commit(
    action: str,
    uri: str,
    attempt: Callable[[], T],
    *,
    storage_options: dict | None = None,
    attempts: int = ATTEMPTS,
    base_delay_s: float = BASE_DELAY_S,
    max_delay_s: float = MAX_DELAY_S,
) -> T:
    """Run ``attempt`` (which plans and commits one write to the table at ``uri``) until it
    commits; a commit conflict makes it wait (jittered, doubling up to ``max_delay_s``) and run
    again, at most ``attempts`` times in all. Any other error propagates at once.

    >>> retry_commit("tagging version 3", "data/demo/frames.lance", lambda: robodata.open("data/demo").tag("run-2"))
    3
    """
    for number in range(1, attempts + 1):
        try:
            return call_with_deadline(uri, storage_options, attempt)  # each attempt has the deadline
        except Exception as exc:  # Lance raises OSError, ValueError or RuntimeError for a conflict
            vanished = is_vanished_version(exc)
            if vanished and number == attempts:
                raise missing_file_error(exc, uri, action) from None
            if not is_commit_conflict(exc) and not vanished:
                raise
            if number == attempts:
                raise CommitConflictError(
                    f"{uri}: {action} lost to {conflict_summary(exc)} {attempts} times in a row, "
                    "each time planned again on the newer version; nothing of it was committed, run it again"
                ) from None
            delay = min(max_delay_s, base_delay_s * 2 ** (number - 1))
            time.sleep(delay * random.uniform(0.5, 1.5))
    raise AssertionError("unreachable")  # pragma: no cover


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a request the store never answered (a reset connection, a refused
    one): sending it again may succeed. A deadline that ran out is not retried here (each
    attempt would wait as long again), nor is a conflict or an answer the store gave.

    >>> is_transient(OSError("LanceError(IO): Error performing PUT http://s3/x.manifest - HTTP error: error sending request"))
    True
    >>> is_transient(OSError("LanceError(IO): Retryable commit conflict for version 7: ... Please retry"))
    False
    """
    return (
        is_storage_failure(exc)
        and not isinstance(exc, DeadlineExceeded | RoboDataError)
        and not is_commit_conflict(exc)
        and "non-2xx status code" not in str(exc)
    )


def retry_transient(
    action: str,
    uri: str,
    attempt: Callable[[], T],
    landed: Callable[[], T | None],
    *,
    storage_options: dict | None = None,
    attempts: int = ATTEMPTS,
    base_delay_s: float = BASE_DELAY_S,
    max_delay_s: float = MAX_DELAY_S,
) -> T:
    """Run ``attempt`` (one commit Lance does not retry itself, such as a table's first
    manifest: a conditional PUT) again after a transient store error, with the same backoff as
    ``retry_commit``. Before each retry ``landed()`` says whether the failed attempt's commit
    reached the store anyway (its answer was lost): its result is returned then. Any other error,
    or the last attempt's, propagates.

    >>> calls = []
    >>> def flaky():
    ...     calls.append(1)
    ...     if len(calls) < 3:
    ...         raise OSError("LanceError(IO): Error performing PUT - HTTP error: error sending request")
    ...     return "committed"
    >>> retry_transient("creating t.lance", "t.lance", flaky, lambda: None, base_delay_s=0.001)
    'committed'
    """
    for number in range(1, attempts + 1):
        try:
            return call_with_deadline(uri, storage_options, attempt)
        except Exception as exc:
            if number == attempts or not is_transient(exc):
                raise
            found = landed()
            if found is not None:
                return found
            delay = min(max_delay_s, base_delay_s * 2 ** (number - 1))
            time.sleep(delay * random.uniform(0.5, 1.5))
    raise AssertionError("unreachable")  # pragma: no cover

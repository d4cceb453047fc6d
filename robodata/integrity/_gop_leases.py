"""Records under ``<root>/_staging/`` that keep garbage collection away from GOPs an ingest is
about to reference, keep version cleanup away from the versions a running write must be checked
against, and the staged layouts of the two-step (Dagster) ingest.

Between an ingest's GOP commit and its frames commit, no version of frames.lance points at the
episode's GOPs yet. The ingest writes a lease listing their ref_ids *before* its GOP commit and
removes it after its frames commit; the two-step path keeps its layout record,
``_staging/episode_<index>.json``, in between instead. ``collect_garbage`` opens gops.lance,
then reads every record here, then the frames versions, so a GOP is either listed in a record,
referenced by a frames version, or touched by a GOP commit later than the one garbage collection
read (which makes its delete conflict): see docs/reliability.md. Ingest writes these records and
edits (garbage collection) read them, so they live in this room, below both.

Every lease also holds back version cleanup: Lance checks a commit for conflicts only against the
versions committed after the one it planned on that are still on disk, so a cleanup that removed
them mid-write would let two writers of one episode both insert it. ``Records.writes_began``
says since when the versions must stay; annotate, delete, compaction and gc take a lease
without GOPs (``holding_writes``) for the same reason.
"""

from __future__ import annotations

import json
import os
import posixpath
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from robodata.errors import StorageError, StorageUnreachableError
from robodata.format._ids import validate_episode_index
from robodata.storage import fsspec_filesystem, is_remote, join_uri
from robodata.storage._deadlines import TIMEOUT_OPTION, call_with_deadline, storage_timeout_s
from robodata.storage._failures import in_storage_step
from robodata.storage._uris import redact

STAGING_DIR = "_staging"
RELEASE_WAIT_S = 5.0  # how long removing a lease may wait on a store that does not answer


def staged_gops_uri(dataset_uri: str, episode_index: int) -> str:
    """Where the staged layout of ``episode_index`` is kept.

    >>> staged_gops_uri("s3://lab/ds", 3)
    's3://lab/ds/_staging/episode_3.json'
    """
    return join_uri(dataset_uri, STAGING_DIR, f"episode_{validate_episode_index(episode_index)}.json")


LEASE_PREFIX = "lease-"


def hold_gops(
    dataset_uri: str,
    episode_index: int,
    ref_ids: list[int],
    storage_options: dict | None = None,
    action: str = "taking a lease on GOPs",
) -> str:
    """Write a lease on ``ref_ids`` (one PUT, so it is whole or absent); returns its URI. A store
    that fails the PUT raises StorageError / StorageUnreachableError naming ``action``.

    >>> lease = hold_gops("data/demo", 0, [123, 456])  # gc keeps these GOPs until the lease goes
    >>> import json, pathlib
    >>> json.loads(pathlib.Path(lease).read_text())["ref_ids"]
    [123, 456]
    >>> release(lease)
    """
    name = f"{int(episode_index)}-{uuid.uuid4().hex}"
    return _take_lease(
        dataset_uri, name, {"episode_index": int(episode_index), "ref_ids": sorted(ref_ids)}, storage_options, action
    )


@contextmanager
def holding_writes(dataset_uri: str, action: str, storage_options: dict | None = None) -> Iterator[str]:
    """A lease without GOPs for the length of a write (planning, commit and its retries): version
    cleanup keeps every version committed meanwhile, which Lance checks this write against.

    >>> with holding_writes("data/demo", "adding labels") as lease:
    ...     read_records("data/demo").writes_began() is not None
    True
    """
    lease = _take_lease(
        dataset_uri, f"{WRITE_LEASE}{uuid.uuid4().hex}", {"ref_ids": [], "action": action}, storage_options, action
    )
    try:
        yield lease
    finally:
        release(lease, storage_options)


WRITE_LEASE = "write-"

# The leases this process holds now (file names). A lease naming this process that is not here
# belongs to a write that ended without removing it (its store was down at the time): abandoned,
# though the process lives on (a notebook, a long-running service).
_HELD_HERE: set[str] = set()


def _take_lease(dataset_uri: str, name: str, body: dict, storage_options: dict | None, action: str) -> str:
    uri = join_uri(dataset_uri, STAGING_DIR, f"{LEASE_PREFIX}{name}.json")
    body = {
        **body,
        "taken_at": time.time(),
        # Who holds it: garbage collection on the same host can tell a live ingest (its lease
        # holds whatever gc's min_age) from a dead one (its lease is abandoned at once).
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
    _HELD_HERE.add(posixpath.basename(uri))  # before the PUT: a reader may list it at once
    try:
        write_record(uri, json.dumps(body), storage_options)
    except Exception as exc:  # s3fs/botocore raise their own types for a missing bucket or a dead store
        _HELD_HERE.discard(posixpath.basename(uri))
        raise _storage_error(uri, action, exc, storage_options) from None
    return uri


def release(lease_uri: str, storage_options: dict | None = None) -> None:
    """Remove a lease, best effort: one that cannot be removed (the store is gone) is treated as
    abandoned by garbage collection once it is older than gc's ``min_age``."""
    if not lease_uri:
        return
    _HELD_HERE.discard(posixpath.basename(lease_uri))  # the write is over, whether or not the file goes
    # Best effort after a failure must not keep the user waiting a full deadline (twice) more.
    wait = min(storage_timeout_s(storage_options), RELEASE_WAIT_S)
    try:
        options = {**(storage_options or {}), TIMEOUT_OPTION: str(wait)}
        call_with_deadline(lease_uri, options, fsspec_filesystem(lease_uri, options).rm_file, lease_uri)
    except Exception:  # never hide the error that made the ingest release early
        pass


def write_record(uri: str, text: str, storage_options: dict | None = None) -> None:
    """Write a record whole or not at all: one PUT on object storage; locally a file beside it
    renamed into place (a reader listing the folder meanwhile would read a half-written file)."""
    fs = fsspec_filesystem(uri, storage_options)
    if is_remote(uri):
        call_with_deadline(uri, storage_options, fs.pipe_file, uri, text.encode())
        return
    fs.makedirs(uri.rsplit("/", 1)[0], exist_ok=True)
    path = uri.removeprefix("file://")
    partial = f"{path}.{uuid.uuid4().hex}.partial"  # not *.json: never read as a record
    with open(partial, "w") as handle:
        handle.write(text)
    os.replace(partial, path)


@dataclass(frozen=True)
class Records:
    """What ``_staging/`` holds: GOPs of staged layouts (waiting for their frames step) and of
    leases, with each lease's age."""

    staged: set[int]
    leases: list[tuple[timedelta, set[int]]]
    lease_paths: list[str] = field(default_factory=list)  # in the order of ``leases``
    # per lease: True held by a process alive on this host, False by one that died here,
    # None unknown (a lease another host holds)
    lease_alive: list[bool | None] = field(default_factory=list)

    def protected(self, max_lease_age: timedelta | None = None) -> set[int]:
        """Staged GOPs and GOPs of leases still held: by a live process on this host, or younger
        than ``max_lease_age`` (every lease not known dead if None)."""
        refs = set(self.staged)
        for (age, ids), alive in zip(self.leases, self._alive(), strict=True):
            if alive or (alive is None and (max_lease_age is None or age < max_lease_age)):
                refs |= ids
        return refs

    def abandoned(self, max_lease_age: timedelta | None) -> list[str]:
        """Lease files of ingests that died on this host, or (holder unknown) at least
        ``max_lease_age`` old: an ingest that finishes removes its own, so gc removes these."""
        return [
            path
            for (age, _), path, alive in zip(self.leases, self.lease_paths, self._alive(), strict=True)
            if alive is False or (alive is None and max_lease_age is not None and age >= max_lease_age)
        ]

    def writes_began(self, max_lease_age: timedelta | None = None) -> timedelta | None:
        """How long ago the oldest write still holding its lease (as ``protected`` counts them)
        began; None when no write holds one. Versions committed since then must stay."""
        held = [
            age
            for (age, _), alive in zip(self.leases, self._alive(), strict=True)
            if alive or (alive is None and (max_lease_age is None or age < max_lease_age))
        ]
        return max(held, default=None)

    def _alive(self) -> list[bool | None]:
        return self.lease_alive or [None] * len(self.leases)


def _holder_alive(body: dict, name: str) -> bool | None:
    """Whether the write that took lease ``name`` still runs: its process on this host lives (and,
    for this process, still holds it); None when not on this host, or unknown."""
    if body.get("host") != socket.gethostname() or not isinstance(body.get("pid"), int):
        return None
    if body["pid"] == os.getpid():
        return name in _HELD_HERE
    try:
        os.kill(body["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


@in_storage_step("reading ingest leases")
def read_records(dataset_uri: str, storage_options: dict | None = None) -> Records:
    """Every staged layout and lease under ``<dataset_uri>/_staging/``.

    >>> read_records("data/nowhere").protected()
    set()
    """
    folder = join_uri(dataset_uri, STAGING_DIR)
    fs = fsspec_filesystem(folder, storage_options)
    try:
        paths = [p for p in fs.ls(folder, detail=False) if p.endswith(".json")]
    except FileNotFoundError:
        return Records(set(), [])
    records = Records(set(), [])
    for path in paths:
        try:
            body = json.loads(fs.cat_file(path))
        except FileNotFoundError:
            continue  # released while we listed: its GOPs are referenced by frames.lance now
        if posixpath.basename(path).startswith(LEASE_PREFIX):
            age = timedelta(seconds=max(0.0, time.time() - float(body.get("taken_at", 0))))
            records.leases.append((age, set(body["ref_ids"])))
            records.lease_paths.append(path)  # as the store's file system names it
            records.lease_alive.append(_holder_alive(body, posixpath.basename(path)))
        else:
            records.staged.update(r for camera in body.get("cameras", {}).values() for r in camera["ref_ids"])
    return records


def remove_records(paths: list[str], dataset_uri: str, storage_options: dict | None = None) -> int:
    """Remove the files at ``paths`` under the dataset root (as ``Records.lease_paths`` or an
    fsspec listing names them); returns how many were removed (one already gone counts as
    removed by someone else, not here)."""
    fs = fsspec_filesystem(join_uri(dataset_uri, STAGING_DIR), storage_options)
    removed = 0
    for path in paths:
        try:
            call_with_deadline(path, storage_options, fs.rm_file, path)
            removed += 1
        except FileNotFoundError:
            continue
    return removed


def staged_ref_ids(dataset_uri: str, *, storage_options: dict | None = None) -> set[int]:
    """The ref_ids of every GOP listed in a staged layout or a lease.

    >>> staged_ref_ids("data/nowhere")
    set()
    """
    return read_records(dataset_uri, storage_options).protected()


def _storage_error(uri: str, action: str, exc: Exception, storage_options: dict | None) -> StorageError:
    where = (storage_options or {}).get("aws_endpoint") or ("object storage" if is_remote(uri) else "the file system")
    if isinstance(exc, FileNotFoundError | PermissionError):  # the store answered: no bucket, denied
        return StorageError(redact(f"{uri}: {where} refused a request while {action}: {exc}", storage_options))
    return StorageUnreachableError(redact(f"{uri}: could not reach {where} while {action}: {exc}", storage_options))

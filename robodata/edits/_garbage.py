"""Remove GOP rows that no retained version of frames.lance references (left by a failed
ingest, a re-ingest with new video, or deleted episodes)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from robodata.errors import CommitConflictError
from robodata.format._ids import ref_id_filters
from robodata.format._renditions import without_renditions_of_kept_gops
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.integrity._gop_leases import holding_writes, read_records, remove_records
from robodata.integrity._leftovers import (
    duplicate_gop_rows,
    referenced_ref_ids,
    row_ids_filter,
    still_listed,
    unreferenced_data_files,
)
from robodata.storage._failures import storage_call

_ATTEMPTS = 5


@dataclass
class GarbageReport:
    unreferenced: int
    deleted: int
    gops_version: int
    too_recent: int = 0  # unreferenced, but an ingest may still commit rows pointing at them: kept
    leases_removed: int = 0  # lease files older than min_age (left by crashed ingests), removed
    duplicate_gops: int = 0  # extra copies of GOPs stored twice, removed (counted, with dry_run)
    data_files_removed: int = 0  # data files no version lists, older than min_age (with dry_run: found)


def collect_garbage(
    uri: str,
    *,
    dry_run: bool = False,
    storage_options: dict | None = None,
    min_age: timedelta | None = None,
) -> GarbageReport:
    """Delete gops.lance rows that no version of frames.lance still on disk points at.

    Safe beside running ingests, deletes and re-ingests that reuse stored GOPs: an ingest leases
    its GOPs before writing them and keeps the lease until its rows are committed, and a delete
    that an ingest's GOP commit overtook is planned again (see ``_collect_once``). ``min_age``
    (the CLI defaults to an hour) bounds how long an ingest may take: a lease older than that
    is treated as left by a crashed ingest, and GOPs written more recently than that are kept
    (writers of older robodata versions take no lease). Without ``min_age`` every lease holds.

    Versions removed by Lance's ``cleanup_old_versions`` no longer protect their GOPs; tagged
    versions always do. The bytes leave disk at the next compaction and cleanup of gops.lance.

    Parameters
    ----------
    uri : str
        The dataset root (local or s3://).
    dry_run : bool, default False
        Count the unreferenced GOPs without deleting them.
    storage_options : dict, optional
        Object-store options; by default from the environment.
    min_age : datetime.timedelta, optional
        How long an ingest may take: older leases are ignored, newer GOPs kept.

    Returns
    -------
    GarbageReport
        GOPs found unreferenced, deleted, kept as too recent, and the gops.lance version.

    Raises
    ------
    robodata.CommitConflictError
        Concurrent ingests preempted it five times in a row; nothing unsafe was deleted.

    Examples
    --------
    >>> robodata.delete_episodes("data/demo", [2])
    4
    >>> report = robodata.collect_garbage("data/demo")  # versions 1-3 still refer to its GOPs
    >>> report.unreferenced, report.deleted
    (0, 0)
    """
    collecting = "collecting unreferenced GOPs"
    holding: contextlib.AbstractContextManager[str]
    if dry_run or open_table(gops_uri(uri), storage_options) is None:
        holding = contextlib.nullcontext("")  # nothing to write (or nowhere): no lease
    else:
        holding = holding_writes(uri, collecting, storage_options)  # cleanup keeps what the delete is checked against
    with holding:
        for _ in range(_ATTEMPTS):
            try:
                return storage_call(
                    collecting, gops_uri(uri), storage_options, _collect_once, uri, dry_run, storage_options, min_age
                )
            except _Preempted:
                continue  # an ingest touched GOPs meanwhile: decide again on the new versions
    raise CommitConflictError(
        f"{gops_uri(uri)}: garbage collection was preempted by concurrent ingests {_ATTEMPTS} times; "
        "nothing unsafe was deleted, run it again"
    )


class _Preempted(Exception):
    """A concurrent commit or cleanup changed the versions gc decided on: decide again."""


def _collect_once(uri: str, dry_run: bool, storage_options, min_age: timedelta | None) -> GarbageReport:
    read: list[int] = []  # the gops.lance versions read
    try:
        return _collect_on_versions(uri, dry_run, storage_options, min_age, read)
    except (OSError, ValueError) as exc:
        if all(still_listed(gops_uri(uri), v, storage_options) for v in read):
            raise
        # A concurrent cleanup (compact --older-than) removed a version read here, manifest
        # first, then its files: no damage, decide again on the versions listed now.
        raise _Preempted() from exc


def _collect_on_versions(
    uri: str, dry_run: bool, storage_options, min_age: timedelta | None, read: list[int]
) -> GarbageReport:
    # The order is what makes this safe beside running ingests (docs/reliability.md): gops.lance
    # first (the version the delete is planned on), then the leases, then frames.lance. An ingest
    # takes its lease before its GOP commit and drops it after its frames commit, so each GOP it
    # uses is leased, referenced by a frames version read here, or touched by a GOP commit newer
    # than ``gops``, which makes the delete below conflict instead of removing it.
    gops = open_table(gops_uri(uri), storage_options)
    if gops is None:
        return GarbageReport(0, 0, 0)
    read.append(gops.version)
    records = read_records(uri, storage_options)
    referenced = set(records.staged)  # staged by gop_blobs, waiting for aligned_frames
    referenced |= referenced_ref_ids(uri, storage_options)
    stored = gops.to_table(columns=["ref_id"])["ref_id"].to_numpy()
    orphans = sorted(set(stored.tolist()) - referenced)
    # Kept although unreferenced: leased by an ingest that may still commit rows pointing at them
    # (a lease older than min_age counts as abandoned by a crashed ingest), or, with min_age,
    # written too recently (writers of older robodata versions take no lease).
    in_flight = records.protected(min_age) - records.staged
    if min_age is not None:
        settled = _ref_ids_stored_before(gops, min_age, read)
        in_flight |= {r for r in orphans if r not in settled}
    too_recent = sum(r in in_flight for r in orphans)
    orphans = [r for r in orphans if r not in in_flight]
    orphans = without_renditions_of_kept_gops(gops, orphans, storage_options)  # training renditions follow their source
    # Extra copies of a GOP stored twice (identical bytes under one ref_id): every copy but the
    # first goes, by row id, in the same delete.
    duplicates, _ = duplicate_gop_rows(gops, storage_options)
    if (orphans or duplicates) and not dry_run:
        # One delete planned on ``gops``'s version, without Lance's retries (which would plan it
        # again on a newer version, where these ids may be in use again).
        predicate = " OR ".join([*ref_id_filters(orphans), *([row_ids_filter(duplicates)] if duplicates else [])])
        try:
            gops.delete(predicate, conflict_retries=0)
        except OSError as exc:
            if "concurrent" not in str(exc).lower() and "conflict" not in str(exc).lower():
                raise
            raise _Preempted() from exc
    # Leases gc already ignores (older than min_age) were left by crashed ingests: remove them,
    # after the delete, so a lease is never gone while the GOPs it protects are still counted on.
    abandoned = records.abandoned(min_age)
    leases_removed = len(abandoned) if dry_run else remove_records(abandoned, uri, storage_options)
    # Data files no version lists (a writer that never committed: a crash, a full disk), once
    # older than min_age: a running writer's files are unlisted until its commit.
    files = []
    if min_age is not None:
        for table_uri in (frames_uri(uri), gops_uri(uri)):
            files += unreferenced_data_files(table_uri, storage_options, min_age)
    if files and not dry_run:
        remove_records(files, uri, storage_options)
    return GarbageReport(
        len(orphans) + too_recent,
        0 if dry_run else len(orphans),
        gops.version,
        too_recent,
        leases_removed,
        len(duplicates),
        len(files),
    )


def _ref_ids_stored_before(gops, min_age: timedelta, read: list[int]) -> set[int]:
    """GOPs already present in the newest gops.lance version at least ``min_age`` old."""
    old = [v for v in gops.versions() if _age(v["timestamp"]) >= min_age]
    if not old:
        return set()
    read.append(max(v["version"] for v in old))
    version = gops.checkout_version(read[-1])
    return set(version.to_table(columns=["ref_id"])["ref_id"].to_pylist())


def _age(timestamp: datetime) -> timedelta:
    return datetime.now(timestamp.tzinfo) - timestamp

"""What crashes, races and full disks leave behind, found for ``robodata verify`` and removed by
``robodata gc``: GOPs stored more than once, GOPs no retained frames version references, lease
files of ingests that died, and data files no retained version of a table lists (a writer that
wrote its files but never committed them).

None of these is visible to a reader; they cost storage, and a duplicate GOP row breaks the one
copy promise. Each is only called a leftover once it is older than ``min_age`` (gc's
``--min-age-minutes``): a running ingest holds leased GOPs and uncommitted data files that look
exactly like them.

>>> found = find_leftovers("data/demo", min_age=timedelta(hours=1))
>>> found.describe()  # on damage, e.g. ['2 GOPs are stored twice (ref_ids 17, 42); `robodata gc` removes ...']
[]
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from robodata.format._schema import read_metadata, ref_columns
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.integrity._gop_leases import read_records
from robodata.storage import fsspec_filesystem, join_uri
from robodata.storage._failures import storage_call

DATA_DIR = "data"
# A writer's data files are listed by no version until its commit, which follows the write
# within one call (seconds, a storage deadline at most): younger files are never leftovers,
# whatever min_age the caller gives (``gc --min-age-minutes 0`` beside running ingests).
DATA_FILE_MIN_AGE = timedelta(minutes=15)


@dataclass
class Leftovers:
    """What ``find_leftovers`` found (empty lists / zero: nothing)."""

    duplicate_gop_rows: list[int] = field(default_factory=list)  # row ids of the extra copies
    duplicate_ref_ids: list[int] = field(default_factory=list)
    orphaned_gops: int = 0
    stale_leases: list[str] = field(default_factory=list)
    unreferenced_files: list[str] = field(default_factory=list)  # paths as the store names them

    def describe(self) -> list[str]:
        """One line per kind of leftover, for ``robodata verify``."""
        lines = []
        if self.duplicate_ref_ids:
            shown = ", ".join(map(str, self.duplicate_ref_ids[:5])) + (
                ", ..." if len(self.duplicate_ref_ids) > 5 else ""
            )
            lines.append(
                f"gops.lance: {len(self.duplicate_ref_ids)} GOPs are stored "
                f"more than once ({len(self.duplicate_gop_rows)} extra rows; ref_ids {shown}); "
                "`robodata gc` removes the extra copies"
            )
        if self.orphaned_gops:
            lines.append(
                f"gops.lance: {self.orphaned_gops} GOPs are referenced by no retained version (left by a failed "
                "ingest, a re-ingest or a delete); `robodata gc` removes them"
            )
        if self.stale_leases:
            lines.append(
                f"_staging: {len(self.stale_leases)} lease files of writes (ingests, edits) that did not finish; `robodata gc` removes them"
            )
        if self.unreferenced_files:
            lines.append(
                f"{len(self.unreferenced_files)} data files are listed by no version (written by a writer that "
                f"never committed, e.g. on a full disk), first {self.unreferenced_files[0]}; `robodata gc` removes them"
            )
        return lines


def referenced_ref_ids(dataset_uri: str, storage_options: dict | None = None) -> set[int]:
    """Every GOP ref_id some retained version of frames.lance points at."""
    referenced: set[int] = set()
    uri = frames_uri(dataset_uri)
    frames = open_table(uri, storage_options)
    if frames is None:
        return referenced
    for info in storage_call("listing frames.lance versions", uri, storage_options, frames.versions):
        try:
            table = storage_call(
                f"reading the GOP references of version {info['version']}",
                uri,
                storage_options,
                _references_of,
                frames,
                info["version"],
            )
        except (OSError, ValueError):
            # A concurrent cleanup (compact --older-than) removed this version while it was
            # read: it protects nothing any more. Any other failure is raised.
            if still_listed(uri, info["version"], storage_options):
                raise
            continue
        for column in table.column_names:
            referenced.update(np.unique(table[column].to_numpy()).tolist())
    return referenced


def still_listed(table_uri: str, version: int, storage_options: dict | None = None) -> bool:
    """Whether ``version`` of the table is still listed: a read of a version that failed because a
    concurrent cleanup removed it (its manifest goes before its files) is no damage.

    >>> still_listed("data/demo/frames.lance", 3), still_listed("data/demo/frames.lance", 99)
    (True, False)
    """
    latest = open_table(table_uri, storage_options)
    listed = storage_call("listing versions", table_uri, storage_options, latest.versions) if latest else []
    return version in {v["version"] for v in listed}


def _references_of(frames, version: int):
    """The GOP reference columns (ref_id per camera) of ``version`` of frames.lance."""
    at = frames.checkout_version(version)
    return at.to_table(columns=[ref_columns(c)[0] for c in read_metadata(at.schema).cameras])


def duplicate_gop_rows(gops, storage_options: dict | None = None) -> tuple[list[int], list[int]]:
    """(row ids of every copy but the first of a GOP stored more than once, their ref_ids)."""
    rows = storage_call(
        "reading GOP ids", gops.uri, storage_options, gops.to_table, columns=["ref_id"], with_row_id=True
    )
    ref_ids, row_ids = rows["ref_id"].to_numpy(), rows["_rowid"].to_numpy()
    order = np.lexsort((row_ids, ref_ids))
    repeated = np.zeros(len(order), bool)
    repeated[1:] = ref_ids[order][1:] == ref_ids[order][:-1]
    extra = row_ids[order][repeated]
    return sorted(int(r) for r in extra), sorted({int(r) for r in ref_ids[order][repeated]})


def unreferenced_data_files(table_uri: str, storage_options: dict | None, min_age: timedelta) -> list[str]:
    """Files under ``<table>/data/`` that no retained version lists, older than ``min_age`` (and
    than ``DATA_FILE_MIN_AGE``)."""
    min_age = max(min_age, DATA_FILE_MIN_AGE)
    table = open_table(table_uri, storage_options)
    if table is None:
        return []
    listed: set[str] = set()
    for info in storage_call("listing versions", table_uri, storage_options, table.versions):
        try:
            at = storage_call("reading a version", table_uri, storage_options, table.checkout_version, info["version"])
        except (OSError, ValueError):
            if still_listed(table_uri, info["version"], storage_options):
                raise
            continue  # a concurrent cleanup removed it: its files are no version's any more
        for fragment in at.get_fragments():  # from the manifest just read: no request
            listed.update(f.path.rsplit("/", 1)[-1] for f in fragment.data_files())
    folder = join_uri(table_uri, DATA_DIR)
    fs = fsspec_filesystem(folder, storage_options)
    try:
        files = storage_call("listing data files", folder, storage_options, fs.ls, folder, detail=True)
    except FileNotFoundError:
        return []
    now = time.time()
    found = []
    for entry in files:
        name = entry["name"].rsplit("/", 1)[-1]
        # Only Lance data files: dedicated blob files and anything else Lance keeps here are not
        # listed as fragment data files and are left to Lance's own cleanup.
        if name in listed or entry.get("type") == "directory" or not name.endswith(".lance"):
            continue
        if now - _modified(entry) >= min_age.total_seconds():
            found.append(entry["name"])
    return sorted(found)


def _modified(entry: dict) -> float:
    value = entry.get("mtime", entry.get("LastModified", entry.get("created", 0)))
    return value.timestamp() if hasattr(value, "timestamp") else float(value or 0)


def find_leftovers(dataset_uri: str, storage_options: dict | None = None, *, min_age: timedelta) -> Leftovers:
    """Everything above that is at least ``min_age`` old."""
    found = Leftovers()
    gops = open_table(gops_uri(dataset_uri), storage_options)
    if gops is not None:
        found.duplicate_gop_rows, found.duplicate_ref_ids = duplicate_gop_rows(gops, storage_options)
        records = read_records(dataset_uri, storage_options)
        stored = set(
            storage_call("reading GOP ids", gops.uri, storage_options, gops.to_table, columns=["ref_id"])[
                "ref_id"
            ].to_pylist()
        )
        kept = referenced_ref_ids(dataset_uri, storage_options) | records.protected(min_age)
        found.orphaned_gops = len(stored - kept)
        found.stale_leases = records.abandoned(min_age)
    for table_uri in (frames_uri(dataset_uri), gops_uri(dataset_uri)):
        found.unreferenced_files += unreferenced_data_files(table_uri, storage_options, min_age)
    return found


def row_ids_filter(row_ids: list[int]) -> str:
    """A Lance filter selecting ``row_ids`` (stable row ids).

    >>> row_ids_filter([3, 4])
    '_rowid IN (3, 4)'
    """
    return f"_rowid IN ({', '.join(str(int(r)) for r in row_ids)})"


__all__ = [
    "Leftovers",
    "duplicate_gop_rows",
    "find_leftovers",
    "referenced_ref_ids",
    "still_listed",
    "unreferenced_data_files",
]

"""Version cleanup that a kill at any point leaves readable: every listed version opens, or is no
longer listed.

Lance's ``cleanup_old_versions`` deletes the files only old versions need first and their
manifests last, in one stream of deletes. A process killed in between (``kill -9`` of
``robodata compact --older-than 0s``) left versions listed whose data files were gone: ``info``
listed them, and ``verify`` and ``gc`` failed on them ("restore it from a backup") until the next
compaction removed their manifests; a ``gc`` that read those versions while a cleanup ran
failed the same way. Here the order is the other way round:

1. the manifests of the versions to remove go first (a version is listed only while its manifest
   is there, so from then on nothing lists it);
2. then the files those versions referenced that no version still listed references (read again
   after step 1, so a version committed meanwhile keeps its files).

A kill after step 1 leaves files no version lists: invisible to readers, and removed by the next
cleanup's step 2 (data files also by ``robodata gc``). Which versions go follows Lance's policy
(older than ``older_than``, beyond the newest ``retain_versions``, never the latest, never a
tagged one); the caller keeps every version a running write needs through ``older_than``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from robodata.format._tables import open_table
from robodata.storage import fsspec_filesystem, is_remote, join_uri
from robodata.storage._failures import storage_call

MANIFEST = "manifest"


@dataclass
class Removed:
    """What ``remove_old_versions`` removed from one table."""

    versions: list[int]
    bytes_removed: int = 0
    files_removed: int = 0


def versions_to_remove(
    versions: list[dict], tagged: set[int], older_than: timedelta, retain_versions: int | None
) -> list[int]:
    """The versions Lance's cleanup policy removes (``versions`` as Lance's ``versions()`` lists
    them): older than ``older_than``, not among the newest ``retain_versions``, never the newest,
    never a tagged one.

    >>> from datetime import datetime, timedelta
    >>> at = [{"version": v, "timestamp": datetime(2026, 1, 1, 0, v)} for v in range(1, 6)]
    >>> versions_to_remove(at, {2}, timedelta(0), None)
    [1, 3, 4]
    >>> versions_to_remove(at, set(), timedelta(0), 2)
    [1, 2, 3]
    """
    if not versions:
        return []
    ordered = sorted(versions, key=lambda v: v["version"])
    latest = ordered[-1]["version"]
    stamp = ordered[-1]["timestamp"]
    before = datetime.now(stamp.tzinfo) - older_than
    before_version = None
    if retain_versions is not None:
        before_version = ordered[max(len(ordered) - retain_versions, 0)]["version"]
    kept = set(tagged) | {latest}
    return [
        v["version"]
        for v in ordered
        if v["version"] not in kept
        and v["timestamp"] < before
        and (before_version is None or v["version"] < before_version)
    ]


def remove_old_versions(
    table_uri: str,
    *,
    older_than: timedelta,
    retain_versions: int | None = None,
    storage_options: dict | None = None,
) -> Removed:
    """Remove the old versions of the table at ``table_uri`` (see ``versions_to_remove``):
    their manifests first, then the files no remaining version references."""
    table = open_table(table_uri, storage_options)
    if table is None:
        return Removed([])
    versions = storage_call("listing versions", table_uri, storage_options, table.versions)
    tags = storage_call("listing tags", table_uri, storage_options, table.tags.list)
    old = versions_to_remove(versions, {t["version"] for t in tags.values()}, older_than, retain_versions)
    if not old:
        return Removed([])
    files = _tracked_files(table_uri, storage_options)
    manifests = sorted({path for v in old for path, kind in files.get(v, ()) if kind == MANIFEST})
    sizes = _sizes(table_uri, storage_options)
    _remove(table_uri, manifests, storage_options)  # 1. no longer listed from here on
    # 2. Read again once they are gone: a version committed meanwhile keeps its files.
    needed = {path for refs in _tracked_files(table_uri, storage_options).values() for path, _ in refs}
    doomed = {path for v in old for path, kind in files.get(v, ()) if kind != MANIFEST} - needed
    # Blob sidecars (data/<file stem>/<id>.blob) go with their data file.
    stems = {path.removesuffix(".lance") + "/" for path in doomed if path.startswith("data/")}
    doomed |= {path for path in sizes if path.endswith(".blob") and path[: path.rfind("/") + 1] in stems}
    doomed_files = sorted(doomed)
    _remove(table_uri, doomed_files, storage_options)
    return Removed(old, sum(sizes.get(p, 0) for p in [*manifests, *doomed_files]), len(manifests) + len(doomed_files))


def _tracked_files(table_uri: str, storage_options: dict | None) -> dict[int, set[tuple[str, str]]]:
    """version -> {(path relative to the table, kind)} for every version listed now."""
    table = open_table(table_uri, storage_options)
    rows = storage_call(
        "reading the versions' files", table_uri, storage_options, lambda: table.tracked_files().read_all()
    ).to_pydict()
    files: dict[int, set[tuple[str, str]]] = defaultdict(set)
    for version, path, kind in zip(rows["version"], rows["path"], rows["type"], strict=True):
        files[int(version)].add((str(path), str(kind)))
    return files


def _sizes(table_uri: str, storage_options: dict | None) -> dict[str, int]:
    """path relative to the table -> size, for every file stored under it (one listing)."""
    table = open_table(table_uri, storage_options)
    rows = storage_call(
        "listing the table's files", table_uri, storage_options, lambda: table.all_files().read_all()
    ).to_pydict()
    return {str(p): int(s) for p, s in zip(rows["path"], rows["size_bytes"], strict=True)}


def _remove(table_uri: str, paths: list[str], storage_options: dict | None) -> None:
    """Delete ``paths`` (relative to the table), in order; one already gone is fine (a
    concurrent cleanup removed it)."""
    if not paths:
        return
    fs = fsspec_filesystem(table_uri, storage_options)
    if is_remote(table_uri):  # one DeleteObjects request per 1000 keys; a key already gone is no error
        uris = [join_uri(table_uri, path) for path in paths]
        storage_call("removing old versions' files", table_uri, storage_options, fs.rm, uris)
        return
    for path in paths:
        uri = join_uri(table_uri, path)
        try:
            storage_call("removing an old version's file", uri, storage_options, fs.rm_file, uri)
        except FileNotFoundError:
            continue


__all__ = ["Removed", "remove_old_versions", "versions_to_remove"]

"""Remove GOP rows that no retained version of frames.lance references (left by a failed
ingest, a re-ingest with new video, or deleted episodes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from robodata.format.ids import ref_id_filters
from robodata.format.schema import read_metadata, ref_columns
from robodata.format.staging import staged_ref_ids
from robodata.format.tables import frames_uri, gops_uri, open_table


@dataclass
class GarbageReport:
    unreferenced: int
    deleted: int
    gops_version: int
    too_recent: int = 0  # unreferenced, but younger than min_age: kept


def collect_garbage(
    uri: str,
    *,
    dry_run: bool = False,
    storage_options: dict | None = None,
    min_age: timedelta | None = None,
) -> GarbageReport:
    """Delete gops.lance rows that no version of frames.lance still on disk points at.

    An ingest writes its GOPs before the frames commit that references them, so while ingests
    may be running, pass ``min_age`` (the CLI defaults to an hour): GOPs written more recently
    than that are kept, since their frames commit may still be coming.

    Versions removed by Lance's ``cleanup_old_versions`` no longer protect their GOPs; tagged
    versions always do. The bytes leave disk at the next compaction and cleanup of gops.lance.
    """
    frames = open_table(frames_uri(uri), storage_options)
    gops = open_table(gops_uri(uri), storage_options)
    if gops is None:
        return GarbageReport(0, 0, 0)
    referenced: set[int] = set()
    if frames is not None:
        for info in frames.versions():
            version = frames.checkout_version(info["version"])
            cameras = read_metadata(version.schema).cameras
            columns = [ref_columns(c)[0] for c in cameras]
            table = version.to_table(columns=columns)
            for column in columns:
                referenced.update(np.unique(table[column].to_numpy()).tolist())
    referenced |= staged_ref_ids(uri, storage_options=storage_options)  # staged by ingest, not yet committed
    stored = gops.to_table(columns=["ref_id"])["ref_id"].to_numpy()
    orphans = sorted(set(stored.tolist()) - referenced)
    too_recent = 0
    if orphans and min_age is not None:
        settled = _ref_ids_stored_before(gops, min_age)
        too_recent = sum(r not in settled for r in orphans)
        orphans = [r for r in orphans if r in settled]
    if orphans and not dry_run:
        for ref_filter in ref_id_filters(orphans):
            gops.delete(ref_filter)
    return GarbageReport(len(orphans) + too_recent, 0 if dry_run else len(orphans), gops.version, too_recent)


def _ref_ids_stored_before(gops, min_age: timedelta) -> set[int]:
    """GOPs already present in the newest gops.lance version at least ``min_age`` old."""
    old = [v for v in gops.versions() if _age(v["timestamp"]) >= min_age]
    if not old:
        return set()
    version = gops.checkout_version(max(v["version"] for v in old))
    return set(version.to_table(columns=["ref_id"])["ref_id"].to_pylist())


def _age(timestamp: datetime) -> timedelta:
    return datetime.now(timestamp.tzinfo) - timestamp

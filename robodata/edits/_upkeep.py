"""Dataset upkeep: compact both tables, drop old versions no tag protects, collect unreferenced
GOPs, and keep scalar indexes on the columns reads filter on.

Every ingest appends a fragment and a version to each table; after a thousand ingests a random
``take`` and a filter scan cost several times what they cost on a compacted table, and on S3
every fragment and manifest is more requests. Upkeep is safe beside running ingests:

- compaction is a Lance ``Rewrite``; an ingest that commits between its plan and its commit
  either rebases onto it or makes it fail with a conflict, and then it is planned again (the
  ingest never fails because of it);
- rows keep their ids across compaction (both tables use stable row ids), so the GOP row ids a
  reader resolved before compaction still address the same GOPs;
- old versions go only after ``older_than`` (readers that opened them have that long to finish),
  tagged versions are never removed, and GC keeps GOPs younger than ``gc_min_age`` (an ingest's
  frames commit may still be coming) as well as every staged GOP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from robodata.edits._garbage import GarbageReport, collect_garbage
from robodata.edits._old_versions import remove_old_versions
from robodata.errors import NotFoundError
from robodata.format._commits import retry_commit
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.integrity._frames_checksums import record_frames_checksums
from robodata.integrity._gop_leases import holding_writes, read_records

# The columns reads filter on: frames by episode (integrity checks, re-ingest, episode reads),
# gops by ref_id (integrity, GC) and by episode (re-ingest reuses stored GOPs).
# How far apart the clocks of the host that took a lease and the hosts that commit versions may
# be: versions are kept from this much before the oldest running write began.
CLOCK_SKEW = timedelta(seconds=30)

SCALAR_INDEXES = {"frames.lance": ["episode_index"], "gops.lance": ["ref_id", "episode_index"]}


@dataclass
class TableUpkeep:
    """What upkeep did to one table."""

    fragments_before: int
    fragments_after: int
    versions_removed: int
    bytes_removed: int
    indexes: list[str] = field(default_factory=list)  # "column (created)" / "column (updated)"
    version: int = 0


@dataclass
class UpkeepReport:
    frames: TableUpkeep
    gops: TableUpkeep
    garbage: GarbageReport

    def summary(self) -> str:
        """One line per table, for the CLI and Dagster metadata."""
        lines = []
        for name, table in (("frames.lance", self.frames), ("gops.lance", self.gops)):
            lines.append(
                f"{name}: fragments {table.fragments_before} -> {table.fragments_after}, "
                f"{table.versions_removed} old versions removed ({table.bytes_removed} bytes), "
                f"indexes {', '.join(table.indexes) or 'none'}, version {table.version}"
            )
        lines.append(f"gc: {self.garbage.deleted} unreferenced GOPs removed, {self.garbage.too_recent} too recent")
        return "\n".join(lines)


def upkeep_dataset(
    uri: str,
    *,
    older_than: timedelta = timedelta(days=7),
    retain_versions: int | None = None,
    gc_min_age: timedelta = timedelta(hours=1),
    storage_options: dict | None = None,
) -> UpkeepReport:
    """Compact frames.lance and gops.lance, remove versions older than ``older_than`` (keeping at
    least ``retain_versions`` of the newest, and every tagged one), collect unreferenced GOPs and
    build or refresh the scalar indexes.

    >>> print(upkeep_dataset("data/demo", older_than=timedelta(0)).summary())
    frames.lance: fragments 3 -> 1, 5 old versions removed (... bytes), indexes episode_index (created), version 6
    gops.lance: fragments 3 -> 1, 6 old versions removed (... bytes), indexes ref_id (created), episode_index (created), version 7
    gc: 0 unreferenced GOPs removed, 0 too recent
    """
    frames = open_table(frames_uri(uri), storage_options)
    gops = open_table(gops_uri(uri), storage_options)
    if frames is None or gops is None:
        raise NotFoundError(f"no robodata dataset at {uri} (frames.lance or gops.lance does not exist)")
    # Each table's compaction and indexing hold a write lease, released before that table's
    # version cleanup (which keeps what running writes are checked against, never its own).
    with holding_writes(uri, "compacting frames.lance", storage_options):
        frames_report = _compact(frames_uri(uri), storage_options)
        record_frames_checksums(uri, storage_options)  # the rewritten fragments' new files
        frames_report.indexes = _index(frames_uri(uri), SCALAR_INDEXES["frames.lance"], storage_options)
    _remove_old_versions(uri, frames_uri(uri), frames_report, older_than, retain_versions, gc_min_age, storage_options)
    # GC after the frames cleanup: versions gone no longer protect their GOPs (tagged ones do).
    garbage = collect_garbage(uri, storage_options=storage_options, min_age=gc_min_age)
    with holding_writes(uri, "compacting gops.lance", storage_options):
        gops_report = _compact(gops_uri(uri), storage_options)  # also drops the rows GC deleted
        gops_report.indexes = _index(gops_uri(uri), SCALAR_INDEXES["gops.lance"], storage_options)
    _remove_old_versions(uri, gops_uri(uri), gops_report, older_than, retain_versions, gc_min_age, storage_options)
    return UpkeepReport(frames_report, gops_report, garbage)


def _compact(table_uri: str, storage_options: dict | None) -> TableUpkeep:
    """Rewrite small fragments into large ones (and drop deleted rows); planned again when a
    concurrent commit conflicts with it."""
    import lance.optimize as optimize

    before = len(open_table(table_uri, storage_options).get_fragments())

    def compact_once() -> None:
        # Planned on the newest version each time: a writer that committed in between changed it.
        table = open_table(table_uri, storage_options)
        options = optimize.CompactionOptions(materialize_deletions_threshold=0.0)
        plan = optimize.Compaction.plan(table, options)
        if plan.num_tasks() == 0:
            return
        rewrites = [task.execute(table) for task in plan.tasks]
        _commit_compaction(table, rewrites)

    retry_commit("compacting", table_uri, compact_once, storage_options=storage_options)
    after = len(open_table(table_uri, storage_options).get_fragments())
    return TableUpkeep(fragments_before=before, fragments_after=after, versions_removed=0, bytes_removed=0)


def _commit_compaction(table, rewrites) -> None:
    """Commit the rewritten fragments (a seam tests hold to race an ingest against)."""
    import lance.optimize as optimize

    optimize.Compaction.commit(table, rewrites)


def _remove_old_versions(
    root: str,
    table_uri: str,
    report: TableUpkeep,
    older_than: timedelta,
    retain_versions: int | None,
    lease_min_age: timedelta,
    storage_options,
) -> None:
    """Remove versions older than ``older_than``, but never a version committed since a running
    write began (see ``kept_for_running_writes``); their manifests before their files
    (``_old_versions``), so a kill at any point leaves every listed version readable."""
    older_than = max(older_than, kept_for_running_writes(root, lease_min_age, storage_options))
    removed = remove_old_versions(
        table_uri, older_than=older_than, retain_versions=retain_versions, storage_options=storage_options
    )
    report.version = open_table(table_uri, storage_options).version
    report.versions_removed = len(removed.versions)
    report.bytes_removed = removed.bytes_removed


def kept_for_running_writes(root: str, lease_min_age: timedelta, storage_options: dict | None) -> timedelta:
    """How far back version cleanup must keep every version: to the start of the oldest write
    still holding its lease (plus ``CLOCK_SKEW``), else nothing.

    Lance checks a commit for conflicts only against the versions committed after the one it was
    planned on that are still on disk. Removing them mid-write hid one writer's insert from
    another's check: two writers of one episode, beside ``compact --older-than 0``, both inserted
    its GOPs (the storms' duplicate GOP rows) or its rows.

    >>> kept_for_running_writes("data/demo", timedelta(hours=1), None)
    datetime.timedelta(0)
    """
    began = read_records(root, storage_options).writes_began(lease_min_age)
    return timedelta(0) if began is None else began + CLOCK_SKEW


def _index(table_uri: str, columns: list[str], storage_options) -> list[str]:
    """Create missing BTREE indexes on ``columns``; fold rows appended since into existing ones."""

    def index_once() -> list[str]:
        table = open_table(table_uri, storage_options)
        existing = {tuple(index.field_names) for index in table.describe_indices()}
        done = []
        if any((column,) in existing for column in columns):
            table.optimize.optimize_indices()
            done += [f"{column} (updated)" for column in columns if (column,) in existing]
        for column in columns:
            if (column,) not in existing:
                table.create_scalar_index(column, "BTREE")
                done.append(f"{column} (created)")
        return done

    return retry_commit(f"indexing {columns}", table_uri, index_once, storage_options=storage_options)

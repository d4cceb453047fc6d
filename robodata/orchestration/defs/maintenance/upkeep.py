"""dataset_maintenance: nightly upkeep of the dataset (compaction, version retention that keeps
tags, garbage collection, scalar indexes), safe beside running ingests."""

from datetime import timedelta

import dagster as dg
from pydantic import Field

from robodata.edits._upkeep import upkeep_dataset
from robodata.errors import RoboDataError
from robodata.format._versions import current_versions
from robodata.orchestration.defs.ingest.episodes import aligned_frames
from robodata.orchestration.defs.lineage import code_version_of, failure, lineage_result
from robodata.orchestration.defs.resources import DatasetStore


class MaintenanceConfig(dg.Config):
    """How much history upkeep keeps."""

    older_than_hours: float = Field(
        default=168.0, description="Remove untagged versions older than this (readers have this long to finish)."
    )
    retain_versions: int | None = Field(default=None, description="Keep at least this many of the newest versions.")
    gc_min_age_minutes: float = Field(
        default=60.0, description="Keep unreferenced GOPs younger than this (an ingest may be about to commit)."
    )


@dg.asset(
    deps=[aligned_frames],
    group_name="upkeep",
    code_version=code_version_of(__file__, "dataset_maintenance"),
    kinds={"lance"},
    description="Compacts frames.lance and gops.lance, removes old versions no tag protects, collects "
    "unreferenced GOPs and refreshes the scalar indexes (episode_index, ref_id). Reads stay exact.",
)
def dataset_maintenance(config: MaintenanceConfig, store: DatasetStore) -> dg.MaterializeResult:
    options = store.storage_options()
    if current_versions(store.root, storage_options=options).frames is None:
        return lineage_result(store, rows_written=0, bytes_written=0, table=None, extra={"skipped": "no dataset yet"})
    try:
        report = upkeep_dataset(
            store.root,
            older_than=timedelta(hours=config.older_than_hours),
            retain_versions=config.retain_versions,
            gc_min_age=timedelta(minutes=config.gc_min_age_minutes),
            storage_options=options,
        )
    except (RoboDataError, OSError, ValueError) as exc:
        raise failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=0,
        bytes_written=0,
        frames_version=report.frames.version,
        gops_version=report.gops.version,
        table=None,  # same rows and frames, rewritten: nothing downstream is stale
        extra={
            "summary": dg.MetadataValue.md("\n".join(f"- {line}" for line in report.summary().splitlines())),
            "frames_fragments": report.frames.fragments_after,
            "gops_fragments": report.gops.fragments_after,
            "versions_removed": report.frames.versions_removed + report.gops.versions_removed,
            "bytes_removed": report.frames.bytes_removed + report.gops.bytes_removed,
            "gops_collected": report.garbage.deleted,
        },
    )


dataset_maintenance_job = dg.define_asset_job("dataset_maintenance_job", selection=[dataset_maintenance])
nightly_maintenance = dg.ScheduleDefinition(
    name="nightly_dataset_maintenance",
    job=dataset_maintenance_job,
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Dataset upkeep every night at 03:00 (the daemon's time zone).",
)

defs = dg.Definitions(assets=[dataset_maintenance], jobs=[dataset_maintenance_job], schedules=[nightly_maintenance])

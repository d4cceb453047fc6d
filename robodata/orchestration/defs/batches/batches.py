"""Batch partitioning (``ROBODATA_PARTITIONING=batch``): one partition per upload batch folder
``<uploads>/<batch>/<episode_id>/``, with episodes as rows. For deployments past ~50,000
episodes, where one partition per episode outgrows Dagster (docs/cluster.md, "Scale").

The assets keep the keys of per-episode partitioning (``raw_episodes``, ``gop_blobs``,
``aligned_frames``), so everything downstream (annotations, snapshots, upkeep) is unchanged; a
batch run calls ``robodata.ingest._batch`` for each phase: validate every upload, stage every
episode's GOPs, commit each episode's rows. Episodes the dataset already holds (same upload
fingerprint) are skipped, whichever mode or command ingested them.

``upload_batch_sensor`` lists the uploads root once per tick, treats each batch as one unit of
the per-episode sensor's plan (``robodata.orchestration._upload_queue.plan_tick``: bounded cursor, cap per
tick, retries) and requests one run per batch that holds something new and whose uploads are
complete (a folder without ``episode.json`` holds its batch back until it has been idle for
``stalled_after_s``; it is then warned about and left out).
"""

import json
import time
from typing import Any

import dagster as dg

from robodata.errors import RoboDataError
from robodata.format._ids import validate_episode_id
from robodata.format._provenance import stored_uploads
from robodata.format._schema import GOPS_TABLE
from robodata.ingest._batch import BatchEpisodeError, BatchPlan, commit_batch, plan_batch, stage_batch, validate_batch
from robodata.orchestration._upload_queue import UploadCursor, plan_tick
from robodata.orchestration.defs.ingest.episodes import FINGERPRINT_TAG, GopBlobsConfig
from robodata.orchestration.defs.ingest.jobs import INGEST_SELECTION
from robodata.orchestration.defs.ingest.sensor import UploadSensorSettings, _finished_runs, tick_result
from robodata.orchestration.defs.lineage import classified_failure, code_version_of, failure, lineage_result, refused
from robodata.orchestration.defs.resources import (
    PARTITIONS_OF,
    PER_BATCH,
    DatasetStore,
    partitioning_refusal,
    sensor_interval_s,
    with_partitioning,
)
from robodata.orchestration.defs.retries import storage_retries
from robodata.storage._upload_batches import UploadBatch, scan_upload_batches
from robodata.storage._uploads import IncompleteUpload, UploadInfo, UploadListing

upload_batches = dg.DynamicPartitionsDefinition(name=PARTITIONS_OF[PER_BATCH])

# On the code location's executor (robodata.orchestration.defs.execution): one process per run.
ingest_batch_job = dg.define_asset_job(
    "ingest_batch",
    selection=INGEST_SELECTION,
    description="Validate every new upload of one batch, stage their GOPs, commit their rows, run the "
    "checks on the batch's episodes (one process).",
)


def _batch_failure(store: DatasetStore, exc: Exception) -> dg.Failure:
    """``failure`` for a batch: the batch's message (episode, file, what was committed), retried
    only when the underlying error is a storage hiccup."""
    cause = exc.cause if isinstance(exc, BatchEpisodeError) else exc
    base = failure(store, cause)
    metadata: dict[str, Any] = dict(base.metadata)
    if isinstance(exc, BatchEpisodeError):
        metadata |= {
            "failed_episode": exc.episode_id,
            "committed_episodes": json.dumps(exc.committed),
            "not_committed_episodes": json.dumps(exc.not_committed),
        }
    reason = " ".join(store.redact(str(exc)).split())
    return classified_failure(reason, metadata, retryable=base.allow_retries)


def _plan(store: DatasetStore, batch_id: str) -> BatchPlan:
    try:
        return plan_batch(store.batch_uri(batch_id), store.root, store.storage_options())
    except (RoboDataError, FileNotFoundError, ValueError) as exc:
        raise _batch_failure(store, exc) from None


def _ids(uploads) -> str:
    return json.dumps([u.episode_id for u in uploads])


@dg.asset(
    name="raw_episodes",
    partitions_def=upload_batches,
    group_name="episodes",
    code_version=code_version_of(__file__, "raw_batch_episodes"),
    kinds={"python"},
    description="The batch's validated, complete uploads (<uploads>/<batch>/<episode_id>/, episode.json "
    "written last); those the dataset already holds are listed, not read.",
)
@storage_retries
def raw_batch_episodes(context: dg.AssetExecutionContext, store: DatasetStore) -> dg.MaterializeResult:
    if refusal := partitioning_refusal(context.instance, PER_BATCH):
        raise refused(refusal)
    plan = _plan(store, context.partition_key)
    try:
        summaries = validate_batch(plan, store.storage_options())
    except RoboDataError as exc:
        raise _batch_failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=0,
        bytes_written=0,
        table=None,  # the uploads themselves: no dataset table
        extra={
            "batch": store.safe_uri(plan.batch_uri),
            "episodes": json.dumps(plan.episodes),
            "episodes_to_ingest": _ids(plan.to_ingest),
            "episodes_already_stored": _ids(plan.stored),
            "incomplete_uploads": _ids(plan.incomplete),
            "state_samples": sum(s.state_samples for s in summaries),
            "batch_fingerprint": context.run.tags.get(FINGERPRINT_TAG, ""),
        },
    )


@dg.asset(
    name="gop_blobs",
    partitions_def=upload_batches,
    deps=[raw_batch_episodes],
    group_name="episodes",
    code_version=code_version_of(__file__, "batch_gop_blobs"),
    kinds={"lance"},
    pool="video_encode",
    description="Every new episode of the batch cut into closed H.264 GOPs and staged in gops.lance "
    "(no row is committed if any episode fails).",
)
@storage_retries
def batch_gop_blobs(
    context: dg.AssetExecutionContext, config: GopBlobsConfig, store: DatasetStore
) -> dg.MaterializeResult:
    plan = _plan(store, context.partition_key)
    try:
        settings = config.encoder_settings(store.root, store.storage_options())
        staged = stage_batch(plan, store.root, settings, store.storage_options(), replace=config.replace)
    except (BatchEpisodeError, RoboDataError, FileNotFoundError) as exc:
        raise _batch_failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=sum(s.gops_written for s in staged),
        bytes_written=sum(s.bytes_written for s in staged),
        gops_version=staged[-1].gops_version if staged else None,
        table=GOPS_TABLE,
        row_count=sum(s.gops for s in staged),  # the batch's new episodes' GOP rows
        extra={
            "episodes": json.dumps([s.episode_id for s in staged]),
            "gops": sum(s.gops for s in staged),
            "gops_reused": sum(s.gops - s.gops_written for s in staged),
            "video_bytes": sum(s.video_bytes for s in staged),
            "gop_size": settings.gop_size,
            "crf": settings.crf,
            "preset": settings.preset,
        },
    )


@dg.asset(
    name="aligned_frames",
    partitions_def=upload_batches,
    deps=[batch_gop_blobs],
    group_name="episodes",
    code_version=code_version_of(__file__, "batch_aligned_frames"),
    kinds={"lance"},
    description="Each new episode of the batch audited and committed to frames.lance (one commit per "
    "episode, each replacing any earlier copy). Episodes already stored are skipped.",
)
@storage_retries
def batch_aligned_frames(context: dg.AssetExecutionContext, store: DatasetStore) -> dg.MaterializeResult:
    plan = _plan(store, context.partition_key)
    try:
        done = commit_batch(plan, store.root, store.storage_options())
    except BatchEpisodeError as exc:
        raise _batch_failure(store, exc) from None
    results = [result for result, _ in done]
    return lineage_result(
        store,
        rows_written=sum(r.rows for r in results),
        bytes_written=sum(r.rows_bytes for r in results),
        frames_version=results[-1].frames_version if results else None,
        gops_version=max(r.gops_version for r in results) if results else None,
        row_count=sum(r.rows for r in results),  # the rows this batch committed, not the table's
        extra={
            "episodes": json.dumps([r.episode_id for r in results]),
            "episodes_already_stored": _ids(plan.stored),
            "rows_per_episode": json.dumps({r.episode_id: r.rows for r in results}),
            "episode_indexes": json.dumps({r.episode_id: r.episode_index for r in results}),
            "frames_version_per_episode": json.dumps({r.episode_id: r.frames_version for r in results}),
            "restaged_episodes": json.dumps([r.episode_id for r, restaged in done if restaged is not None]),
            "labels_kept_rows": sum(r.labels_kept_rows for r in results),
            "labels_dropped_rows": sum(r.labels_dropped_rows for r in results),
        },
    )


BATCH_ASSETS = [raw_batch_episodes, batch_gop_blobs, batch_aligned_frames]


@dg.sensor(
    job=ingest_batch_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=sensor_interval_s(),
    description="Lists the uploads root once per tick; requests one run per upload batch "
    "(<uploads>/<batch>/<episode_id>/) whose uploads are complete and hold an episode the dataset "
    "does not hold yet, a capped number per tick; retries failed runs; warns about stalled folders.",
)
def upload_batch_sensor(
    context: dg.SensorEvaluationContext, store: DatasetStore, upload_sensor_settings: UploadSensorSettings
) -> dg.SensorResult:
    if refusal := partitioning_refusal(context.instance, PER_BATCH):
        return dg.SensorResult(skip_reason=refusal)
    settings = upload_sensor_settings
    now = time.time()
    cursor = UploadCursor.loads(context.cursor)
    batches = _valid_batches(context, store, scan_upload_batches(store.uploads_root, store.storage_options()))
    listing = batch_listing(batches, now, settings.stalled_after_s)
    outcomes = _finished_runs(context.instance, cursor, ingest_batch_job.name) if cursor.pending else []

    def stored_fingerprints() -> dict[str, str]:
        stored = stored_uploads(store.root, storage_options=store.storage_options())
        held = {key: upload.fingerprint for key, upload in stored.items()}
        return {
            b.batch_id: b.fingerprint
            for b in batches
            if all(held.get(u.episode_id) == u.fingerprint for u in b.complete)
        }

    plan = plan_tick(listing, cursor, stored_fingerprints, outcomes, now, settings)
    for warning in plan.warnings:
        context.log.warning(store.redact(warning))
    return tick_result(context, plan, upload_batches)  # batch ids stand where episode ids do


def batch_listing(batches: list[UploadBatch], now: float, stalled_after_s: float) -> UploadListing:
    """The batches as units of the sensor's plan: a batch is ready (complete) when it holds a
    complete upload and every folder of it without ``episode.json`` has been idle for
    ``stalled_after_s`` (those are reported as incomplete, ``<batch>/<episode_id>``, for the
    stalled-upload warning).

    A batch released that way counts as written when it was released (its newest incomplete
    write plus ``stalled_after_s``): its files are old by then, and the plan treats uploads
    written well before its high-water mark as handled.
    """
    complete, incomplete = [], []
    for batch in batches:
        incomplete += [
            IncompleteUpload(f"{batch.batch_id}/{u.episode_id}", u.uri, u.last_write) for u in batch.incomplete
        ]
        stalled_since = max([0.0, *(u.last_write for u in batch.incomplete)])
        if batch.complete and (not batch.incomplete or now - stalled_since > stalled_after_s):
            ready_at = max(batch.last_write, stalled_since + stalled_after_s) if batch.incomplete else batch.last_write
            complete.append(UploadInfo(batch.batch_id, batch.uri, batch.fingerprint, ready_at))
    return UploadListing(complete, incomplete)


def _valid_batches(context, store: DatasetStore, batches: list[UploadBatch]) -> list[UploadBatch]:
    """Batches whose name and episode names are valid ids, and whose episodes appear in no
    earlier batch (an episode id names one episode of the dataset); the rest skipped with a warning."""
    valid: list[UploadBatch] = []
    seen: dict[str, str] = {}  # episode id -> its batch
    for batch in batches:
        try:
            validate_episode_id(batch.batch_id)
            for upload in batch.complete:
                validate_episode_id(upload.episode_id)
        except ValueError as exc:
            context.log.warning(f"skipping batch {store.safe_uri(batch.uri)}: {exc}")
            continue
        twice = sorted(u.episode_id for u in batch.complete if u.episode_id in seen)
        if twice:
            where = ", ".join(f"{k} (in batch {seen[k]})" for k in twice[:5])
            context.log.warning(
                f"skipping batch {store.safe_uri(batch.uri)}: episodes already in another batch: {where}"
            )
            continue
        seen.update({u.episode_id: batch.batch_id for u in batch.complete})
        valid.append(batch)
    return valid


def register_upload_batches(instance: dg.DagsterInstance, store: DatasetStore) -> list[str]:
    """Add a partition for every batch folder holding a complete upload, without runs (the
    sensor does this on its own; this is for ``robodata register-uploads`` and the migration).
    Returns the batch ids, sorted.

    >>> import shutil  # batch 2026-12-01 holds a stored episode, 2026-12-02 a new one
    >>> _ = shutil.copytree("uploads/episode_000000", "batches/2026-12-01/episode_000000")
    >>> from robodata.sample_data import write_sample_uploads
    >>> _ = write_sample_uploads("batches/2026-12-02", episodes=1, seconds=0.5, start_index=3)
    >>> store = DatasetStore(root="data/demo", uploads_root="batches")
    >>> register_upload_batches(dg.DagsterInstance.ephemeral(), store)
    ['2026-12-01', '2026-12-02']
    """
    keys = [b.batch_id for b in scan_upload_batches(store.uploads_root, store.storage_options()) if b.complete]
    for key in keys:
        validate_episode_id(key)
    existing = set(instance.get_dynamic_partitions(PARTITIONS_OF[PER_BATCH]))
    new = [k for k in keys if k not in existing]
    if new:
        instance.add_dynamic_partitions(PARTITIONS_OF[PER_BATCH], new)
    return keys


defs = with_partitioning(
    PER_BATCH, dg.Definitions(assets=BATCH_ASSETS, sensors=[upload_batch_sensor], jobs=[ingest_batch_job])
)

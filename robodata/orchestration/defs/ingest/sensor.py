"""upload_sensor: every complete upload becomes a partition and a run, once per version of it.

One listing of the uploads root per tick: all of it while that costs at most
``full_listing_budget_s`` (a changed or fixed upload is seen by the next tick), past that mostly
its tail (the folders after the last one dealt with) and all of it every ``full_listing_every_s``. What is already ingested comes from
the dataset (the upload fingerprint stored with each episode), whichever path ingested it (CLI,
demo, backfill, sensor). The cursor stays small (see ``robodata.orchestration._upload_queue``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import dagster as dg

from robodata.format._ids import validate_episode_id
from robodata.format._provenance import stored_uploads
from robodata.orchestration import _upload_queue
from robodata.orchestration._upload_queue import (
    RunOutcome,
    UploadCursor,
    UploadSensorSettings,
    listing_start,
    plan_tick,
)
from robodata.orchestration.defs import resources
from robodata.orchestration.defs.ingest.episodes import FINGERPRINT_TAG, episode_partitions
from robodata.orchestration.defs.ingest.jobs import ingest_episode_job
from robodata.orchestration.defs.lineage import BAD_INPUT, FAILURE_KIND
from robodata.orchestration.defs.resources import PER_EPISODE, DatasetStore, with_partitioning
from robodata.storage._uploads import UploadListing, scan_uploads

ATTEMPT_TAG = "robodata/upload_attempt"
# Set by Dagster on a failed run: "true" when run retries will start it again (dagster.yaml's run_retries).
WILL_RETRY_TAG = "dagster/will_retry"
_FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]


@dg.sensor(
    job=ingest_episode_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=resources.sensor_interval_s(),
    description="Lists the uploads root (folder or s3:// prefix) once per tick; requests a run for each "
    "complete upload (episode.json present) that the dataset does not hold yet, a capped number per "
    "tick; retries failed runs; warns about folders that stay incomplete.",
)
def upload_sensor(
    context: dg.SensorEvaluationContext, store: DatasetStore, upload_sensor_settings: UploadSensorSettings
) -> dg.SensorResult:
    if refusal := resources.partitioning_refusal(context.instance, resources.PER_EPISODE):
        return dg.SensorResult(skip_reason=refusal)
    cursor = UploadCursor.loads(context.cursor)
    settings, now = upload_sensor_settings, time.time()
    after = listing_start(cursor, now, settings)
    started = time.monotonic()
    listing = _valid_uploads(context, store, scan_uploads(store.uploads_root, store.storage_options(), after))
    listed_s = time.monotonic() - started
    outcomes = _finished_runs(context.instance, cursor) if cursor.pending else []

    def stored_fingerprints() -> dict[str, str]:
        stored = stored_uploads(store.root, storage_options=store.storage_options())
        return {key: upload.fingerprint for key, upload in stored.items()}

    plan = plan_tick(listing, cursor, stored_fingerprints, outcomes, now, settings, after)
    if not after:
        plan.cursor.full_cost = listed_s
    for warning in plan.warnings:
        context.log.warning(store.redact(warning))
    return tick_result(context, plan, episode_partitions)


def tick_result(
    context: dg.SensorEvaluationContext, plan: _upload_queue.TickPlan, partitions: dg.DynamicPartitionsDefinition
) -> dg.SensorResult:
    """One run per unit the plan requests (an upload, or a batch with batch partitioning), keyed
    by its fingerprint and attempt, and partitions for the units not known yet."""
    requests = [
        dg.RunRequest(
            partition_key=r.upload.episode_id,
            run_key=f"{r.upload.episode_id}@{r.upload.fingerprint}#{r.attempt}",
            tags={FINGERPRINT_TAG: r.upload.fingerprint, ATTEMPT_TAG: str(r.attempt)},
        )
        for r in plan.requests
    ]
    wanted = [r.upload.episode_id for r in plan.requests] + plan.known
    new_keys = []
    if wanted:
        existing = set(partitions.get_partition_keys(dynamic_partitions_store=context.instance))
        new_keys = sorted({key for key in wanted if key not in existing})
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[partitions.build_add_request(new_keys)] if new_keys else [],
        cursor=plan.cursor.dumps(),
    )


def _valid_uploads(context, store: DatasetStore, listing: UploadListing) -> UploadListing:
    """The listing without folders whose names cannot be episode ids (each skipped with a warning)."""
    valid = []
    for upload in listing.complete:
        try:
            validate_episode_id(upload.episode_id)
        except ValueError as exc:
            context.log.warning(f"skipping {store.safe_uri(upload.uri)}: {exc}")
            continue
        valid.append(upload)
    return UploadListing(valid, listing.incomplete)


def _finished_runs(
    instance: dg.DagsterInstance, cursor: UploadCursor, job_name: str = ingest_episode_job.name
) -> list[RunOutcome]:
    """Sensor-requested runs of ``job_name`` that finished since the last tick (a minute of overlap:
    outcomes are matched to pending uploads by fingerprint and attempt, so repeats are harmless).

    A failed run that Dagster's run retries will start again is left out: its retry carries the
    same tags (upload fingerprint and attempt), and the last run of that chain is the attempt's
    one outcome. Counting the failure too would request another attempt beside the retry."""
    since = datetime.fromtimestamp(max(cursor.checked_at - 60.0, 0.0), tz=UTC)
    records = instance.get_run_records(
        filters=dg.RunsFilter(job_name=job_name, statuses=_FINISHED, updated_after=since)
    )
    outcomes = []
    for record in records:
        tags = record.dagster_run.tags
        if FINGERPRINT_TAG not in tags or ATTEMPT_TAG not in tags or "dagster/partition" not in tags:
            continue
        if record.dagster_run.status == dg.DagsterRunStatus.FAILURE and _will_retry(instance, record.dagster_run):
            continue
        succeeded = record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        outcomes.append(
            RunOutcome(
                episode_id=tags["dagster/partition"],
                fingerprint=tags[FINGERPRINT_TAG],
                attempt=int(tags[ATTEMPT_TAG]),
                succeeded=succeeded,
                bad_input="" if succeeded else bad_input_reason(instance, record.dagster_run.run_id),
            )
        )
    return outcomes


def _will_retry(instance: dg.DagsterInstance, run: dg.DagsterRun) -> bool:
    """Whether Dagster's run retries start the failed ``run`` again. Without the tag yet (Dagster
    adds it just after recording the failure) and with run retries on, the answer is not known:
    treated as yes, so the run is looked at again next tick (adding the tag updates the run, and
    ticks look a minute back)."""
    tag = run.tags.get(WILL_RETRY_TAG)
    if tag is None:
        return instance.run_retries_enabled
    return tag.lower() == "true"


def bad_input_reason(instance: dg.DagsterInstance, run_id: str) -> str:
    """The one-line reason a failed run gave when a step failed on bad input (``failure``
    classifies it), else ``""`` (a storage failure, a lost worker: worth another run)."""
    for event in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        step = event.dagster_event.step_failure_data if event.dagster_event is not None else None
        data = step.user_failure_data if step is not None else None
        kind = data.metadata.get(FAILURE_KIND) if data is not None else None
        if data is not None and kind is not None and kind.value == BAD_INPUT:
            return data.description or BAD_INPUT
    return ""


# With batch partitioning, batches/batches.py has the sensor (one run per batch); resources.py has the settings of both.
defs = with_partitioning(PER_EPISODE, dg.Definitions(sensors=[upload_sensor]))

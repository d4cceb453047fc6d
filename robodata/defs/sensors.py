"""upload_sensor: every complete upload becomes a partition and a run, once per version of it."""

import json

import dagster as dg

from robodata.defs.episodes import FINGERPRINT_TAG, episode_partitions
from robodata.defs.jobs import ingest_episode_job
from robodata.defs.resources import DatasetStore
from robodata.format.ids import validate_episode_id
from robodata.storage.uploads import list_complete_uploads


@dg.sensor(
    job=ingest_episode_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Watches the uploads root (folder or s3:// prefix) for uploads whose episode.json exists; "
    "adds a partition per new episode and requests a run for each new or changed upload.",
)
def upload_sensor(context: dg.SensorEvaluationContext, store: DatasetStore) -> dg.SensorResult:
    # The cursor maps episode id -> fingerprint of the upload last requested; an upload is
    # requested again only when its files change. Incomplete uploads are not listed at all.
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    uploads = list_complete_uploads(store.uploads_root, store.storage_options())
    requests, valid = [], []
    for upload in uploads:
        try:
            validate_episode_id(upload.episode_id)
        except ValueError as exc:
            context.log.warning(f"skipping {store.safe_uri(upload.uri)}: {exc}")
            continue
        valid.append(upload.episode_id)
        if seen.get(upload.episode_id) == upload.fingerprint:
            continue
        seen[upload.episode_id] = upload.fingerprint
        requests.append(
            dg.RunRequest(
                partition_key=upload.episode_id,
                run_key=f"{upload.episode_id}@{upload.fingerprint}",
                tags={FINGERPRINT_TAG: upload.fingerprint},
            )
        )
    existing = set(context.instance.get_dynamic_partitions(episode_partitions.name))
    new_keys = [key for key in valid if key not in existing]
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[episode_partitions.build_add_request(new_keys)] if new_keys else [],
        cursor=json.dumps(seen, sort_keys=True),
    )


defs = dg.Definitions(sensors=[upload_sensor])

"""Driving upload_sensor as the Dagster daemon would, for the sensor's tests and the tests of
what its runs do (test_sensor_*.py, test_pickup.py, test_batches.py, test_recheck.py,
test_s3_run.py): one tick, the ingest run a request starts, a dataset that reports uploads as
stored, and a listed upload for the tick planner."""

import dagster as dg

from robodata.format._provenance import StoredUpload
from robodata.orchestration._upload_queue import UploadSensorSettings
from robodata.orchestration.defs.ingest import sensor as sensors
from robodata.orchestration.defs.ingest.episodes import aligned_frames, gop_blobs, raw_episodes
from robodata.orchestration.defs.ingest.jobs import ingest_episode_job
from robodata.orchestration.defs.ingest.sensor import upload_sensor
from robodata.orchestration.defs.resources import DatasetStore
from robodata.storage._uploads import UploadInfo


def evaluate(instance, store, cursor, *, sensor=upload_sensor, **settings):
    """One tick of ``sensor``, applying its partition requests as the daemon would."""
    resources = {"store": store, "upload_sensor_settings": UploadSensorSettings(**settings)}
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources)
    result = sensor(context)
    for request in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def keys_of(result) -> list[str]:
    return [r.partition_key for r in result.run_requests]


def stored_as(monkeypatch, fingerprints: dict[str, str]) -> None:
    """Make the dataset report these uploads as ingested (the fingerprint stored with an episode)."""
    stored = {k: StoredUpload(k, i, fp, f"uploads/{k}") for i, (k, fp) in enumerate(fingerprints.items())}
    monkeypatch.setattr(sensors, "stored_uploads", lambda root, **kwargs: stored)


def run_ingest(instance, store: DatasetStore, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    """Run the sensor's request as the daemon would: the ingest job, the request's tags."""
    job = dg.Definitions(
        assets=[raw_episodes, gop_blobs, aligned_frames], jobs=[ingest_episode_job], resources={"store": store}
    ).resolve_job_def(ingest_episode_job.name)
    return job.execute_in_process(
        partition_key=request.partition_key, instance=instance, tags=request.tags, raise_on_error=False
    )


def upload(episode_id: str, fingerprint: str = "f", last_write: float = 1000.0) -> UploadInfo:
    return UploadInfo(episode_id, f"s3://b/uploads/{episode_id}", fingerprint, last_write)

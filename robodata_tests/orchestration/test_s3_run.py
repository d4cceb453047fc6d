"""A full Dagster run on s3:// (uploads and dataset on moto's S3 server, credentials only in the
environment): the sensor lists the s3:// uploads prefix (complete uploads only), the episode
assets and checks ingest from it, and the recognisable secret appears in no event log entry and
no metadata value, of the successful runs and of a failed one alike."""

import dagster as dg

import robodata
from robodata.orchestration.defs.resources import DatasetStore
from robodata.storage import fsspec_filesystem
from robodata_tests.orchestration.conftest import materialize_episode
from robodata_tests.orchestration.sensor_ticks import evaluate


def test_full_run_on_s3_leaks_no_credentials(s3, s3_root, short_uploads, monkeypatch):
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    secrets = [s3.secret_key, s3.access_key]
    uploads = f"{s3_root}/uploads"
    for upload in short_uploads[:2]:
        s3.put_tree(upload, f"{uploads}/{upload.name}")
    s3.put_tree(short_uploads[2], f"{uploads}/episode_000002", skip=("episode.json",))  # still uploading
    broken = s3.put_tree(short_uploads[2], f"{uploads}/episode_000003")
    fsspec_filesystem(broken, s3.storage_options).pipe_file(f"{broken}/states.parquet", b"not parquet")
    store = DatasetStore(root=f"{s3_root}/dataset", uploads_root=uploads)
    instance = dg.DagsterInstance.ephemeral()

    tick = evaluate(instance, store, None)
    keys = [request.partition_key for request in tick.run_requests]
    assert keys == ["episode_000000", "episode_000001", "episode_000003"]
    results = {key: materialize_episode(instance, store, key, raise_on_error=False) for key in keys}
    assert [results[k].success for k in keys] == [True, True, False]
    ds = robodata.open(store.root, storage_options=s3.storage_options)
    assert ds.episodes()["episode_index"].to_pylist() == [0, 1]

    entries = [entry for run in instance.get_runs() for entry in instance.all_logs(run.run_id)]
    events = [e.dagster_event for e in entries if e.dagster_event is not None]
    metadata = [
        value
        for event in events
        if event.is_step_materialization
        for value in event.step_materialization_data.materialization.metadata.values()
    ]
    metadata += [
        value
        for event in events
        if event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
        for value in event.event_specific_data.metadata.values()
    ]
    failures = [dg.serialize_value(event) for event in events if event.is_step_failure]
    assert any(str(v.value).startswith(f"{s3_root}/dataset") for v in metadata)
    assert failures and any("states.parquet" in text for text in failures)
    for text in [dg.serialize_value(entry) for entry in entries] + [str(v.value) for v in metadata]:
        for secret in secrets:
            assert secret not in text

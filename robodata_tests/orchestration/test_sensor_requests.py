"""upload_sensor's requests: one run per new, completed or changed upload, none for an upload the
dataset already holds (however it was ingested) or a folder that is not an episode id, the
per-tick cap, a warning for a folder still without episode.json, running by default."""

import json
import os
import shutil
from pathlib import Path

import dagster as dg

from robodata.orchestration._upload_queue import UploadCursor, UploadSensorSettings, plan_tick
from robodata.orchestration.defs.ingest.episodes import FINGERPRINT_TAG, episode_partitions
from robodata.orchestration.defs.ingest.sensor import ATTEMPT_TAG, upload_sensor
from robodata.storage._uploads import IncompleteUpload, UploadListing, list_complete_uploads
from robodata_tests.orchestration.conftest import EPISODE_KEYS
from robodata_tests.orchestration.sensor_ticks import evaluate, keys_of, stored_as


def test_sensor_requests_each_upload_once_until_it_changes(store):
    instance = dg.DagsterInstance.ephemeral()
    uploads = Path(store.uploads_root)
    pending = uploads / "episode_000009"
    shutil.copytree(uploads / EPISODE_KEYS[0], pending)
    (pending / "episode.json").unlink()  # still uploading: episode.json comes last

    first = evaluate(instance, store, None)
    assert keys_of(first) == EPISODE_KEYS
    assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [EPISODE_KEYS]
    assert instance.get_dynamic_partitions(episode_partitions.name) == EPISODE_KEYS
    assert upload_sensor.job_name == "ingest_episode"
    listed = {u.episode_id: u.fingerprint for u in list_complete_uploads(store.uploads_root)}
    assert [r.tags[FINGERPRINT_TAG] for r in first.run_requests] == [listed[k] for k in EPISODE_KEYS]
    assert [r.tags[ATTEMPT_TAG] for r in first.run_requests] == ["1"] * 3

    repeated = evaluate(instance, store, first.cursor)
    assert repeated.run_requests == [] and repeated.dynamic_partitions_requests == []

    shutil.copyfile(uploads / EPISODE_KEYS[0] / "episode.json", pending / "episode.json")
    completed = evaluate(instance, store, repeated.cursor)
    assert keys_of(completed) == ["episode_000009"]
    assert [list(r.partition_keys) for r in completed.dynamic_partitions_requests] == [["episode_000009"]]

    states = uploads / EPISODE_KEYS[1] / "states.parquet"
    states.write_bytes(states.read_bytes() + b"\0")  # a re-upload: new bytes, new size
    os.utime(states, (1, 1))  # with an old mtime, as `cp -p` or `rsync -a` leave it
    changed = evaluate(instance, store, completed.cursor)
    [request] = changed.run_requests
    assert request.partition_key == EPISODE_KEYS[1]
    assert request.run_key != first.run_requests[1].run_key
    assert changed.dynamic_partitions_requests == []  # the partition already exists
    assert evaluate(instance, store, changed.cursor).run_requests == []


def test_sensor_skips_uploads_the_dataset_already_holds(store, monkeypatch):
    """Ingested by the CLI, the demo or a backfill: the stored fingerprint matches, no run."""
    instance = dg.DagsterInstance.ephemeral()
    listed = {u.episode_id: u.fingerprint for u in list_complete_uploads(store.uploads_root)}
    stored_as(monkeypatch, {EPISODE_KEYS[0]: listed[EPISODE_KEYS[0]], EPISODE_KEYS[1]: "an-older-upload"})
    result = evaluate(instance, store, None)
    assert keys_of(result) == EPISODE_KEYS[1:]  # episode 1's stored copy is of another upload version
    # The already-ingested upload still gets its partition, so the UI shows it.
    assert instance.get_dynamic_partitions(episode_partitions.name) == EPISODE_KEYS


def test_sensor_skips_an_upload_the_cli_ingested(store):
    import robodata

    robodata.ingest_episode(str(Path(store.uploads_root) / EPISODE_KEYS[0]), store.root)
    assert keys_of(evaluate(dg.DagsterInstance.ephemeral(), store, None)) == EPISODE_KEYS[1:]


def test_sensor_ignores_an_old_format_cursor(store, monkeypatch):
    listed = {u.episode_id: u.fingerprint for u in list_complete_uploads(store.uploads_root)}
    stored_as(monkeypatch, listed)
    old_cursor = json.dumps(dict.fromkeys(EPISODE_KEYS, "0123456789abcdef"))
    assert evaluate(dg.DagsterInstance.ephemeral(), store, old_cursor).run_requests == []


def test_sensor_caps_run_requests_per_tick_and_takes_the_rest_next_tick(store):
    instance = dg.DagsterInstance.ephemeral()
    first = evaluate(instance, store, None, max_requests_per_tick=2)
    second = evaluate(instance, store, first.cursor, max_requests_per_tick=2)
    third = evaluate(instance, store, second.cursor, max_requests_per_tick=2)
    assert len(first.run_requests) == 2 and len(second.run_requests) == 1 and third.run_requests == []
    assert sorted(keys_of(first) + keys_of(second)) == EPISODE_KEYS


def test_a_folder_without_episode_json_for_too_long_is_warned_about():
    listing = UploadListing(
        [],
        [
            IncompleteUpload("late", "s3://b/uploads/late", 1000.0),
            IncompleteUpload("busy", "s3://b/uploads/busy", 4000.0),
        ],
    )
    settings = UploadSensorSettings(stalled_after_s=3600)
    assert plan_tick(listing, UploadCursor(), dict, [], now=4500, settings=settings).warnings == []
    [warning] = plan_tick(listing, UploadCursor(), dict, [], now=5000, settings=settings).warnings
    assert warning == "1 upload folder(s) without episode.json for over 1 h: late"


def test_sensor_warns_on_the_tick_about_a_stalled_upload(store, capfd):
    stalled = Path(store.uploads_root) / "episode_000042"
    stalled.mkdir()
    (stalled / "states.parquet").write_bytes(b"half")
    evaluate(dg.DagsterInstance.ephemeral(), store, None, stalled_after_s=0)
    assert "WARNING - 1 upload folder(s) without episode.json for over 0 h: episode_000042" in capfd.readouterr().err


def test_sensor_skips_folders_that_are_not_episode_ids(store):
    instance = dg.DagsterInstance.ephemeral()
    bad = Path(store.uploads_root) / ".hidden upload"
    shutil.copytree(Path(store.uploads_root) / EPISODE_KEYS[0], bad)
    result = evaluate(instance, store, None)
    assert keys_of(result) == EPISODE_KEYS


def test_sensor_is_running_by_default():
    assert upload_sensor.default_status == dg.DefaultSensorStatus.RUNNING

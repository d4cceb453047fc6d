"""upload_sensor: new, repeated, incomplete and changed uploads, and its cursor."""

import json
import os
import shutil
from pathlib import Path

import dagster as dg

from robodata.defs.episodes import FINGERPRINT_TAG, episode_partitions
from robodata.defs.sensors import upload_sensor
from robodata_tests.defs.conftest import EPISODE_KEYS


def evaluate(instance, store, cursor):
    """One sensor tick, applying its partition requests as the daemon would."""
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"store": store})
    result = upload_sensor(context)
    for request in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_sensor_requests_each_upload_once_until_it_changes(store):
    instance = dg.DagsterInstance.ephemeral()
    uploads = Path(store.uploads_root)
    pending = uploads / "episode_000009"
    shutil.copytree(uploads / EPISODE_KEYS[0], pending)
    (pending / "episode.json").unlink()  # still uploading: episode.json comes last

    first = evaluate(instance, store, None)
    assert [r.partition_key for r in first.run_requests] == EPISODE_KEYS
    assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [EPISODE_KEYS]
    assert instance.get_dynamic_partitions(episode_partitions.name) == EPISODE_KEYS
    assert upload_sensor.job_name == "ingest_episode"
    cursor = json.loads(first.cursor)
    assert sorted(cursor) == EPISODE_KEYS
    assert [r.tags[FINGERPRINT_TAG] for r in first.run_requests] == [cursor[k] for k in EPISODE_KEYS]

    repeated = evaluate(instance, store, first.cursor)
    assert repeated.run_requests == [] and repeated.dynamic_partitions_requests == []
    assert repeated.cursor == first.cursor

    shutil.copyfile(uploads / EPISODE_KEYS[0] / "episode.json", pending / "episode.json")
    completed = evaluate(instance, store, repeated.cursor)
    assert [r.partition_key for r in completed.run_requests] == ["episode_000009"]
    assert [list(r.partition_keys) for r in completed.dynamic_partitions_requests] == [["episode_000009"]]

    states = uploads / EPISODE_KEYS[1] / "states.parquet"
    states.write_bytes(states.read_bytes() + b"\0")  # a re-upload: new bytes, new size
    os.utime(states, (1, 1))
    changed = evaluate(instance, store, completed.cursor)
    [request] = changed.run_requests
    assert request.partition_key == EPISODE_KEYS[1]
    assert request.run_key != first.run_requests[1].run_key
    assert changed.dynamic_partitions_requests == []  # the partition already exists
    assert evaluate(instance, store, changed.cursor).run_requests == []


def test_sensor_skips_folders_that_are_not_episode_ids(store):
    instance = dg.DagsterInstance.ephemeral()
    bad = Path(store.uploads_root) / ".hidden upload"
    shutil.copytree(Path(store.uploads_root) / EPISODE_KEYS[0], bad)
    result = evaluate(instance, store, None)
    assert [r.partition_key for r in result.run_requests] == EPISODE_KEYS


def test_sensor_is_running_by_default():
    assert upload_sensor.default_status == dg.DefaultSensorStatus.RUNNING

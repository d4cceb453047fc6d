"""Runs that go wrong on the cluster of deploy/ (deploy/cluster.sh up: Dagster on PostgreSQL,
runs launched into Celery through Redis, two worker processes, an s3:// dataset on moto's
server), a cluster of this module's own so that it runs beside test_cluster.py: a run
terminated in the middle of its encoding, a worker killed with SIGKILL mid-run, and a bad
upload. The sensor ticks every 5 s here (ROBODATA_SENSOR_INTERVAL_S; 30 s by default);
everything else is as shipped.

Each test's uploads are numbered after the previous tests' (30s, 40s): names that sort in
arrival order, as docs/cluster.md asks."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import dagster as dg
import numpy as np
import pytest
from dagster._core.scheduler.instigation import InstigatorType
from dagster_graphql import DagsterGraphQLClient

from benchmarks.orchestration.cluster import Cluster, started_cluster, supervised_pids, wait_until
from benchmarks.orchestration.cluster_drills import (
    finished,
    in_step,
    kill_worker_mid_run,
    runs_of,
    sensor_run,
    stored,
    upload,
    worker_of,
)
from robodata.sample_data import write_sample_episode
from robodata.storage import storage_options_from_env
from robodata.storage._put_folder import put_folder
from robodata_tests.orchestration.cluster_checks import (
    CLUSTER_TEST_MARKS,
    SENSOR_INTERVAL_S,
    checked_instance,
    expected_rows,
)

pytestmark = CLUSTER_TEST_MARKS


@pytest.fixture(scope="module")
def cluster():
    with started_cluster(workers=2, sensor_interval_s=SENSOR_INTERVAL_S) as started:
        yield started


@pytest.fixture
def instance(cluster):
    with checked_instance(cluster) as inst:
        yield inst


def bad_upload(cluster: Cluster, tmp_path: Path, index: int, control_hz: int) -> str:
    """A 1 s sample episode ``index`` whose episode.json says ``control_hz`` (contradicting its
    states), into the cluster's uploads, ``episode.json`` last. Returns the partition key."""
    folder = write_sample_episode(tmp_path / "uploads", index, np.random.default_rng([0, index]), 1.0)
    meta = json.loads((folder / "episode.json").read_text())
    (folder / "episode.json").write_text(json.dumps({**meta, "control_hz": control_hz}))
    uploads = cluster.env["ROBODATA_UPLOADS"]
    put_folder(folder, f"{uploads}/{folder.name}", storage_options_from_env(cluster.env), last=("episode.json",))
    return folder.name


def status(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRunStatus:
    return instance.get_run_by_id(run_id).status


def will_retry(instance: dg.DagsterInstance, run_id: str) -> str:
    """The failed run's ``dagster/will_retry`` tag, once the daemon's retry logic has set it (a
    moment after the run is marked failed)."""
    return wait_until(
        lambda: instance.get_run_by_id(run_id).tags.get("dagster/will_retry"), 300, f"run {run_id}'s retry decision"
    )


def consume(cluster: Cluster, worker: str, on: bool) -> None:
    """Tell ``worker`` (w1, w2) to stop or start taking runs off the queue (Celery's remote
    control, as an operator draining a worker would), and wait for its answer."""
    command = "add_consumer" if on else "cancel_consumer"
    env = cluster.env
    out = cluster.run(
        "celery", "-A", "dagster_celery.app", "--broker", env["DAGSTER_CELERY_BROKER_URL"],
        "control", command, "dagster", "--destination", f"{worker}@{socket.gethostname()}",
    )  # fmt: skip
    assert f"{worker}@" in out, out


def test_terminate_cancels_a_running_run_and_both_workers_run_again(cluster, instance, tmp_path):
    # Worker w2 takes no runs until the end of the block, so w1 runs the upload, is terminated in
    # the middle of it, and alone can run attempt 2, which the sensor requests at its next tick
    # after the cancel. Then a new upload runs with both workers taking runs again. Both succeed.
    worker, other_worker = "w1", "w2"
    consume(cluster, other_worker, False)
    try:
        key = upload(cluster, 30, seconds=4)
        run = sensor_run(instance, key)
        wait_until(lambda: in_step(instance, run.run_id, "gop_blobs"), 300, "the run encoding")
        DagsterGraphQLClient("127.0.0.1", port_number=cluster.webserver_port).terminate_run(run.run_id)
        assert wait_until(lambda: finished(instance, run.run_id), 60, "terminated run finished").status == (
            dg.DagsterRunStatus.CANCELED
        )
        assert worker_of(cluster, instance.get_run_by_id(run.run_id)) == worker
        again = sensor_run(instance, key, attempt=2)
        assert wait_until(lambda: finished(instance, again.run_id), 600, "the run again").status == (
            dg.DagsterRunStatus.SUCCESS
        )
        assert worker_of(cluster, instance.get_run_by_id(again.run_id)) == worker
    finally:  # the module's later tests need both workers
        consume(cluster, other_worker, True)
    other = sensor_run(instance, upload(cluster, 31, seconds=1))
    assert wait_until(lambda: finished(instance, other.run_id), 600, "the new upload's run").status == (
        dg.DagsterRunStatus.SUCCESS
    )

    # Nothing retried the terminated run, nor ran it on after terminate (as a SIGTERM did).
    assert status(instance, run.run_id) == dg.DagsterRunStatus.CANCELED
    assert instance.get_runs(dg.RunsFilter(tags={"dagster/parent_run_id": run.run_id})) == []
    assert [r.status for r in runs_of(instance, key)] == [dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.SUCCESS]
    episodes, pairs = stored(cluster.env)
    assert episodes[30] == expected_rows(tmp_path, 30, 4.0) and episodes[31] == expected_rows(tmp_path, 31, 1.0)
    assert len(pairs) == len(set(pairs))  # no row twice


def test_a_killed_worker_s_run_is_retried_once_and_a_bad_upload_fails_once(cluster, instance, tmp_path):
    """Uploaded together: a bad episode (its episode.json contradicts its states), and a good one
    whose worker is killed with SIGKILL in the middle of its run. Run monitoring fails the lost
    run and Dagster's run retries run it again (the sensor leaves it to them); the bad upload
    fails once: not retried as a run, not requested again."""
    bad = bad_upload(cluster, tmp_path, 40, control_hz=10)
    drill = kill_worker_mid_run(cluster, instance, 41, seconds=4)
    print(drill.figures())
    key, run, retried = drill.key, drill.lost, drill.retry
    assert run.status == dg.DagsterRunStatus.FAILURE
    assert will_retry(instance, run.run_id) == "true"
    assert retried is not None and retried.status == dg.DagsterRunStatus.SUCCESS
    assert retried.tags["dagster/retry_number"] == "1"
    # supervisord started the killed worker again (a new process), and a worker (the other, or
    # the restarted one) ran the retry; Celery logs the task's success once the run's process has
    # returned, a moment after Dagster recorded the run's success.
    assert wait_until(lambda: supervised_pids(cluster.env).get(f"worker-{drill.worker}"), 300, "the worker restarted")
    succeeded = f"execute_job[{retried.tags['dagster-celery/task_id']}] succeeded"
    wait_until(
        lambda: any(succeeded in log.read_text() for log in cluster.worker_logs().values()), 300, "the retry's task log"
    )
    assert drill.rows == expected_rows(tmp_path, 41, 4.0)
    _, pairs = stored(cluster.env)
    assert sum(1 for e, _ in pairs if e == 41) == drill.rows
    assert drill.duplicate_rows == 0 and len(pairs) == len(set(pairs))  # no row twice

    # The bad upload: one failed run, given up on by the sensor, and no run after it.
    [failed] = wait_until(lambda: [r for r in runs_of(instance, bad) if finished(instance, r.run_id)], 900, "bad run")
    assert failed.status == dg.DagsterRunStatus.FAILURE and will_retry(instance, failed.run_id) == "false"
    cursor = wait_until(lambda: _sensor_cursor(instance, "failed", bad), 300, "the sensor giving up on the bad upload")
    assert cursor["failed"][bad] == failed.tags["robodata/upload_fingerprint"]
    assert 40 not in stored(cluster.env)[0]
    # The run's summary, as the UI shows it: Dagster's Failure with one line naming the file and
    # the problem, nothing chained to it.
    [summary] = instance.all_logs(failed.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    error = summary.dagster_event.event_specific_data.error
    assert error.message.startswith(f"{dg.Failure.__module__}.Failure: ") and error.message.count("\n") == 1
    assert "episode.json: 'control_hz' is 10 Hz" in error.message
    assert (error.cls_name, error.cause) == ("Failure", None)

    # The lost run and its retry are the upload's only runs: the sensor requested no attempt 2.
    wait_until(lambda: _sensor_cursor(instance, "done", key), 300, "the sensor counting the retry")
    assert drill.runs == 2
    assert sorted(r.status.value for r in runs_of(instance, key)) == ["FAILURE", "SUCCESS"]
    assert {r.tags["robodata/upload_attempt"] for r in runs_of(instance, key)} == {"1"}
    assert [r.run_id for r in runs_of(instance, bad)] == [failed.run_id]


def _sensor_cursor(instance: dg.DagsterInstance, what: str, key: str) -> dict | None:
    """The upload sensor's cursor once it shows ``key`` given up on (``what="failed"``) or no
    longer pending (``"done"``); None before."""
    [state] = [
        s for s in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR) if s.name == "upload_sensor"
    ]
    cursor = json.loads(state.instigator_data.cursor or "{}")
    if what == "failed":
        return cursor if key in cursor.get("failed", {}) else None
    return cursor if key not in cursor.get("pending", {}) else None

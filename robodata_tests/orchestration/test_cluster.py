"""The cluster in deploy/, running here through deploy/cluster.sh: Dagster on PostgreSQL, runs
launched into Celery through Redis, two worker processes, one s3:// dataset (moto's server).

One cluster for the whole module, started by docs/cluster.md's own walk-through and stopped by
its own stop block (the last test); in between, on that cluster with its upload sensor on, a
PostgreSQL restart with runs in flight, a PostgreSQL outage while idle, a terminate, a worker
killed mid-run, a bad upload and the daemon killed mid-backfill. The sensor ticks every 5 s here
(ROBODATA_SENSOR_INTERVAL_S; 30 s by default); everything else is as shipped. (A second cluster
for half of these checks, started beside this one, made the suite slower: both starts compete
for the same two cores.)

Each test's uploads are numbered after the previous tests' (10s, 20s, ...): names that sort in
arrival order, as docs/cluster.md asks, so a sensor that lists only the tail of the uploads
(after a slow full listing) still finds them on its next tick."""

from __future__ import annotations

import json
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow.parquet as pq
import pytest
from dagster._core.scheduler.instigation import InstigatorType, TickStatus
from dagster_graphql import DagsterGraphQLClient

from benchmarks.orchestration.cluster import (
    CLUSTER_SH,
    Cluster,
    cluster_instance,
    docs_block,
    run_bash,
    supervised_pids,
    wait_until,
    walkthrough_cluster,
)
from benchmarks.orchestration.cluster_drills import (
    WALKTHROUGH_KEYS,
    finished,
    in_step,
    kill_daemon_mid_backfill,
    kill_worker_mid_run,
    restart_postgres_with_runs_in_flight,
    runs_of,
    sensor_run,
    stored,
    upload,
    worker_of,
)
from robodata.sample_data import write_sample_episode
from robodata.storage import storage_options_from_env
from robodata.storage._put_folder import put_folder
from robodata_tests.xdist_priority import other_test_workers_yield_cpu

# Slow, started first on its test worker, and allowed the walk-through's own 25 minutes on a slow
# machine (pytest-timeout's 10 minutes in pyproject.toml are for everything else).
pytestmark = [pytest.mark.slow, pytest.mark.scheduled_first, pytest.mark.timeout(3600)]
# The upload sensor's tick here (ROBODATA_SENSOR_INTERVAL_S; 30 s by default).
SENSOR_INTERVAL_S = 5
# A query in flight when PostgreSQL stopped: psycopg2's error for the connection the server closed.
QUERY_CUT_OFF = re.compile(
    r"^sqlalchemy\.exc\.OperationalError: \(psycopg2\.OperationalError\) "
    r"(server closed the connection unexpectedly|terminating connection due to administrator command)"
)


@dataclass
class Walkthrough:
    """The cluster the docs' walk-through started, and the process ids it left running."""

    cluster: Cluster
    pids: dict[str, int]  # supervisord and each program it runs, by name


@pytest.fixture(scope="module")
def walkthrough():
    """docs/cluster.md's walk-through, run as written; torn down afterwards whatever happens. The
    suite's other test workers yield the CPU to the cluster's processes meanwhile."""
    other_test_workers_yield_cpu()
    with walkthrough_cluster(workers=2, sensor_interval_s=SENSOR_INTERVAL_S) as cluster:
        yield Walkthrough(cluster, supervised_pids(cluster.env))


@pytest.fixture
def cluster(walkthrough) -> Cluster:
    return walkthrough.cluster


@pytest.fixture
def instance(cluster):
    """The cluster's PostgreSQL-backed instance, seen from the test process."""
    with cluster_instance(cluster) as inst:
        storage = inst.get_ref().storage_data
        assert (storage.module_name, storage.class_name) == (
            "robodata.orchestration.cluster.postgres_storage",
            "PostgresStorage",
        )
        yield inst


def expected_rows(tmp_path: Path, index: int, seconds: float, seed: int = 0) -> int:
    """Rows of sample episode ``index`` as ``robodata sample-data --seed SEED`` writes it."""
    folder = write_sample_episode(tmp_path / "expected", index, np.random.default_rng([seed, index]), seconds)
    return pq.read_metadata(folder / "states.parquet").num_rows


def test_the_docs_walkthrough_ingests_six_episodes_into_s3(walkthrough, instance, tmp_path):
    cluster = walkthrough.cluster
    runs = instance.get_runs(dg.RunsFilter(job_name="ingest_episode"))
    keys = [f"episode_{i:06d}" for i in range(6)]
    assert sorted(r.tags["dagster/partition"] for r in runs) == keys  # one run per episode: no race
    assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    episodes, pairs = stored(cluster.env)
    assert episodes == {i: expected_rows(tmp_path, i, 1.0) for i in range(6)}
    assert len(pairs) == len(set(pairs)) == sum(episodes.values())  # no row twice
    logs = cluster.worker_logs()
    done = {n: len(re.findall(r"Task execute_job\[[^\]]+\] succeeded", p.read_text())) for n, p in logs.items()}
    assert sum(done.values()) == 6 and min(done.values()) >= 1, done  # both workers took runs
    assert sorted(walkthrough.pids) == ["daemon", "redis", "s3", "supervisord", "webserver", "worker-w1", "worker-w2"]


def test_a_postgres_restart_with_runs_in_flight_loses_no_request_and_writes_nothing_twice(cluster, instance, tmp_path):
    """PostgreSQL stopped while two uploads' runs encode, and started again 12 s later (then its
    own start: a slow restart or a failover) once both runs have met the outage, GraphQL asked
    all along: the webserver answers every request, the runs wait for PostgreSQL, each upload
    lands exactly once, and every supervised process is still the one that ran before (``down
    postgres`` stops it alone). Before connects waited, runs failed their step with
    dagster-postgres's "too many retries for DB connection" and were not retried as runs, and a
    GraphQL request failed. A query running at the instant PostgreSQL stops still fails (the
    server closed its connection; nothing can wait for that): its run fails, and the upload
    sensor requests the upload again, which lands it (docs/cluster.md)."""
    supervised = supervised_pids(cluster.env)
    drill = restart_postgres_with_runs_in_flight(cluster, instance, (10, 11), seconds=2)
    print(drill.figures())
    assert drill.in_flight == 2  # both runs met the outage
    assert drill.asked >= 40 and drill.failed_requests == []
    assert (drill.lost, drill.duplicate_rows) == ([], 0)
    assert len(drill.errors) == drill.failed_runs
    assert all(QUERY_CUT_OFF.search(error) for error in drill.errors), drill.errors
    for key in drill.keys:
        runs = runs_of(instance, key)
        assert [r.status for r in runs].count(dg.DagsterRunStatus.SUCCESS) == 1
        assert runs[-1].status == dg.DagsterRunStatus.SUCCESS
    episodes, pairs = stored(cluster.env)
    for index in (10, 11):
        assert episodes[index] == expected_rows(tmp_path, index, 2.0)
        assert sum(1 for e, _ in pairs if e == index) == episodes[index]
    assert supervised_pids(cluster.env) == supervised


def test_after_a_postgres_outage_while_idle_the_sensor_ingests_the_next_upload(cluster, instance, tmp_path):
    """PostgreSQL stopped while nothing runs, for as long as the daemon takes to start a code
    server (it starts a fresh one every 60 s) and that one to load or fail; then started again.
    That code server loads the code location (it waited for PostgreSQL: before, it failed to
    load, and the sensor was off until the next one), and the sensor's next tick requests a run
    for a new upload, which succeeds."""
    daemon = cluster.pid("daemon")
    earlier = set(_code_servers(daemon))
    cluster.run(str(CLUSTER_SH), "down", "postgres")
    try:
        started = wait_until(lambda: set(_code_servers(daemon)) - earlier, 300, "a code server started in the outage")
        pid = min(started)
        # Time to load, or to fail to: its socket is bound once it has (a hang guard, not a bound).
        socket_path = _code_servers(daemon)[pid]
        for _ in range(60):
            if Path(socket_path).exists():
                break
            time.sleep(0.5)
    finally:
        cluster.run(str(CLUSTER_SH), "up", "postgres")
    back = time.time()
    assert wait_until(lambda: Path(socket_path).exists(), 300, "the code server listening")
    assert _code_server_load_error(socket_path) is None
    assert cluster.pid("daemon") == daemon  # the daemon rode it out; nothing restarted it

    key = upload(cluster, 20, seconds=1)
    run = sensor_run(instance, key)
    requested = instance.get_run_record_by_id(run.run_id).create_timestamp.timestamp()
    assert wait_until(lambda: finished(instance, run.run_id), 600, "the upload's run").status == (
        dg.DagsterRunStatus.SUCCESS
    )
    print(f"postgres back: the upload's run requested after {requested - back:.0f} s (upload included)")
    [state] = [
        s for s in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR) if s.name == "upload_sensor"
    ]
    ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=50)
    [tick] = [t for t in ticks if run.run_id in t.run_ids]
    assert tick.status == TickStatus.SUCCESS
    episodes, pairs = stored(cluster.env)
    assert episodes[20] == expected_rows(tmp_path, 20, 1.0) and len(pairs) == len(set(pairs))


def _code_servers(daemon: int) -> dict[int, str]:
    """The code servers the daemon runs now: process id -> the socket it serves on."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) != daemon:
                continue
            command = (proc / "cmdline").read_bytes().decode().split("\0")
        except OSError:  # ended meanwhile
            continue
        if "api" in command and "grpc" in command and "--socket" in command:
            found[int(proc.name)] = command[command.index("--socket") + 1]
    return found


def _code_server_load_error(socket_path: str) -> str | None:
    """What the code server on ``socket_path`` reports about loading the code location: None
    when it loaded it, else its error."""
    from dagster._grpc.client import DagsterGrpcClient
    from dagster._serdes import deserialize_value
    from dagster._utils.error import SerializableErrorInfo

    answer = deserialize_value(DagsterGrpcClient(socket=socket_path, host="localhost").list_repositories())
    return answer.to_string() if isinstance(answer, SerializableErrorInfo) else None


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


def test_a_daemon_killed_mid_backfill_is_restarted_and_the_backfill_finishes(cluster, instance):
    """SIGKILL to the daemon (its whole process group) while a CLI backfill's runs wait in the
    queue: supervisord starts a new daemon, it reports healthy, and every run of the backfill is
    launched and succeeds. The six episodes are the walk-through's, already stored: each run finds
    its episode and writes nothing, so the runs are short and the queue (two run slots) holds the rest."""
    drill = kill_daemon_mid_backfill(cluster, instance, WALKTHROUGH_KEYS)
    print(drill.figures())
    assert drill.queued_at_kill > 0  # the killed daemon left runs in the queue
    assert drill.statuses == {key: dg.DagsterRunStatus.SUCCESS for key in WALKTHROUGH_KEYS}
    assert drill.duplicate_rows == 0  # no row twice


def test_the_docs_stop_block_stops_every_process(walkthrough):
    """Last: docs/cluster.md's stop block leaves no process behind (a killed worker's neither)."""
    state = walkthrough.cluster.state
    run_bash(docs_block("stop"), walkthrough.cluster.env, timeout=300)
    log = state / "logs" / "supervisord.log"
    alive = {name: pid for name, pid in walkthrough.pids.items() if _alive(pid)}
    assert not alive, (alive, log.read_text()[-3000:] if log.exists() else "")
    assert not (state / "postgres" / "data" / "postmaster.pid").exists()
    assert not list((state / "run").glob("*.pid"))
    assert supervised_pids(walkthrough.cluster.env) == {}  # supervisord and every program it ran


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True

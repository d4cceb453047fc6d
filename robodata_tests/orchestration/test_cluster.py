"""The cluster in deploy/, running here through deploy/cluster.sh: Dagster on PostgreSQL, runs
launched into Celery through Redis, two worker processes, one s3:// dataset (moto's server).

One cluster for the whole module, started by docs/cluster.md's own walk-through and stopped by
its own stop block (the last test); in between, on that cluster with its upload sensor on, a
PostgreSQL restart with runs in flight, a PostgreSQL outage while idle and the daemon killed
mid-backfill. (Runs that go wrong, a terminate, a killed worker and a bad upload, are
test_cluster_run_faults.py's, on a cluster of its own, beside this one.) The sensor ticks every
5 s here (ROBODATA_SENSOR_INTERVAL_S; 30 s by default); everything else is as shipped.

Each test's uploads are numbered after the previous tests' (10s, 20s, ...): names that sort in
arrival order, as docs/cluster.md asks, so a sensor that lists only the tail of the uploads
(after a slow full listing) still finds them on its next tick."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.scheduler.instigation import InstigatorType, TickStatus

from benchmarks.orchestration.cluster import (
    CLUSTER_SH,
    Cluster,
    docs_block,
    run_bash,
    supervised_pids,
    wait_until,
    walkthrough_cluster,
)
from benchmarks.orchestration.cluster_drills import (
    WALKTHROUGH_KEYS,
    finished,
    kill_daemon_mid_backfill,
    restart_postgres_with_runs_in_flight,
    runs_of,
    sensor_run,
    stored,
    upload,
)
from robodata_tests.orchestration.cluster_checks import (
    CLUSTER_TEST_MARKS,
    SENSOR_INTERVAL_S,
    checked_instance,
    expected_rows,
)

pytestmark = CLUSTER_TEST_MARKS
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
    """docs/cluster.md's walk-through, run as written; torn down afterwards whatever happens."""
    with walkthrough_cluster(workers=2, sensor_interval_s=SENSOR_INTERVAL_S) as cluster:
        yield Walkthrough(cluster, supervised_pids(cluster.env))


@pytest.fixture
def cluster(walkthrough) -> Cluster:
    return walkthrough.cluster


@pytest.fixture
def instance(cluster):
    with checked_instance(cluster) as inst:
        yield inst


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

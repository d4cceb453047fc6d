"""``robodata bench cluster-drills``: what the cluster in deploy/ does when a part of it dies, in
figures. It starts the cluster as docs/cluster.md's walk-through does (six episodes ingested),
then runs, per round:

- PostgreSQL restarted (``deploy/cluster.sh down postgres``, ``up postgres`` 12 s later: a
  slow restart or a failover) while two uploads' runs encode: GraphQL requests asked throughout
  and failed, runs failed, uploads lost, seconds from PostgreSQL back until both uploads landed,
  duplicate rows;
- a Celery worker killed with SIGKILL in the middle of a run: seconds from the kill until run
  monitoring failed the run and until its retry landed the episode, runs of the upload, rows
  stored twice;
- the daemon killed with SIGKILL while a CLI backfill's runs wait in the queue: seconds from the
  kill until supervisord started a new daemon, until every daemon the instance needs is healthy
  again (a heartbeat from the new daemon: the killed one's stay "healthy" for Dagster's
  30-minute tolerance), and until every run of the backfill succeeded; duplicate rows.

robodata_tests/orchestration/test_cluster.py runs the same drills (these functions) on its
cluster and asserts their outcomes; the figures are reported here, never asserted. The waits
are hang guards for a loaded machine, not bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg
import numpy as np

import robodata
from benchmarks.orchestration.cluster import (
    CLUSTER_SH,
    Cluster,
    cluster_instance,
    supervised_pids,
    wait_until,
    walkthrough_cluster,
)
from robodata.orchestration import UploadSensorSettings
from robodata.orchestration.cluster.daemon import REQUEUED_MESSAGE
from robodata.sample_data import write_sample_episode_to
from robodata.storage import storage_options_from_env

FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
HANG_S = 900  # how long a wait goes on before it gives up: a hang guard on a shared machine
WALKTHROUGH_KEYS = [f"episode_{i:06d}" for i in range(6)]
# PostgreSQL's outage in the restart drill: `up postgres` this long after `down postgres`
# (then its own start). Before connects waited for PostgreSQL (cluster/postgres_storage.py), an
# outage this long failed both runs in flight.
POSTGRES_OUTAGE_S = 12
# What a run's worker logs when a PostgreSQL connect fails: robodata's wait
# (cluster/postgres_storage.py), or dagster-postgres's own retry without it.
FAILED_CONNECT = re.compile(r"PostgreSQL is not answering|Retrying failed database connection")


def stored(env: dict[str, str]) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """(episode_index -> rows) from the dataset's episode list, and every (episode, frame) row."""
    ds = robodata.open(env["ROBODATA_ROOT"], storage_options=storage_options_from_env(env))
    episodes = ds.episodes()
    rows = ds.to_table(columns=["episode_index", "frame_index"])
    pairs = list(zip(rows["episode_index"].to_pylist(), rows["frame_index"].to_pylist(), strict=True))
    return dict(zip(episodes["episode_index"].to_pylist(), episodes["rows"].to_pylist(), strict=True)), pairs


def duplicate_rows(env: dict[str, str]) -> int:
    """Rows stored more than once (the same episode and frame), over the whole dataset."""
    _, pairs = stored(env)
    return len(pairs) - len(set(pairs))


def upload(cluster: Cluster, index: int, seconds: float) -> str:
    """Sample episode ``index`` (seed 0, as ``robodata sample-data`` writes it) into the cluster's
    uploads, ``episode.json`` last, for the upload sensor to find. Returns the partition key."""
    uri = write_sample_episode_to(
        cluster.env["ROBODATA_UPLOADS"],
        index,
        np.random.default_rng([0, index]),
        seconds,
        storage_options_from_env(cluster.env),
    )
    return uri.rstrip("/").rsplit("/", 1)[-1]


def runs_of(instance: dg.DagsterInstance, key: str) -> list[dg.DagsterRun]:
    """Every run of partition ``key``, oldest first."""
    return list(reversed(instance.get_runs(dg.RunsFilter(tags={"dagster/partition": key}))))  # newest first


def sensor_run(instance: dg.DagsterInstance, key: str, attempt: int = 1) -> dg.DagsterRun:
    """The upload sensor's run of ``key`` (its attempt ``attempt``), once the sensor requested it."""
    found = wait_until(
        lambda: [
            r
            for r in instance.get_runs(
                dg.RunsFilter(tags={"dagster/partition": key, "robodata/upload_attempt": str(attempt)})
            )
            if "dagster/parent_run_id" not in r.tags
        ],
        HANG_S,
        f"the sensor's run of {key}",
    )
    if len(found) != 1:
        raise AssertionError(f"the sensor requested {len(found)} runs of {key} attempt {attempt}: {found}")
    return found[0]


def in_step(instance: dg.DagsterInstance, run_id: str, step: str) -> bool:
    """Whether ``step`` of the run has started (it is running or done)."""
    return any(e.step_key == step for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START))


def run_error(instance: dg.DagsterInstance, run_id: str) -> str:
    """The failed run's error as its RUN_FAILURE event gives it: the first line."""
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE):
        data = record.dagster_event.event_specific_data if record.dagster_event else None
        error = getattr(data, "error", None)
        if error is not None:
            return error.message.strip().splitlines()[0]
    return ""


def finished(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRun | None:
    run = instance.get_run_by_id(run_id)
    return run if run is not None and run.status in FINISHED else None


def ended_at(instance: dg.DagsterInstance, run_id: str) -> float:
    """When the run finished (epoch seconds, as the instance recorded it)."""
    record = instance.get_run_record_by_id(run_id)
    if record is None or record.end_time is None:
        raise AssertionError(f"run {run_id} has no end time")
    return record.end_time


def worker_of(cluster: Cluster, run: dg.DagsterRun) -> str:
    """The worker (w1, w2) that took the run's Celery task."""
    task = run.tags["dagster-celery/task_id"]
    return wait_until(
        lambda: next(
            (n for n, p in cluster.worker_logs().items() if f"execute_job[{task}] received" in p.read_text()), None
        ),
        HANG_S,
        f"the worker that took task {task}",
    )


def graphql_failure(cluster: Cluster) -> str | None:
    """Ask the webserver for the latest runs: None when it answered, else what went wrong."""
    url = f"http://127.0.0.1:{cluster.webserver_port}/graphql"
    query = "{ runsOrError(limit: 5) { __typename ... on Runs { results { runId status } } } }"
    request = urllib.request.Request(url, json.dumps({"query": query}).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body = json.loads(response.read())
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    if body.get("errors") or body["data"]["runsOrError"]["__typename"] != "Runs":
        return json.dumps(body)[:500]
    return None


@dataclass
class PostgresRestart:
    keys: list[str]  # the uploads whose runs were in flight
    in_flight: int  # their runs that met the outage: a failed PostgreSQL connect in the run's worker
    down_s: float  # `down postgres` started until `up postgres` returned (outage_s, or until every run met it)
    asked: int  # GraphQL requests during the outage and after it
    failed_requests: list[str]
    failed_runs: int  # runs of those uploads that failed (the sensor requested them again)
    errors: list[str]  # each failed run's error, its first line
    lost: list[str]  # uploads with no successful run
    landed_after_s: float  # PostgreSQL back until the last upload's run succeeded
    duplicate_rows: int

    def figures(self) -> str:
        return (
            f"postgres restart: {self.in_flight} runs in flight, down {self.down_s:.0f} s; "
            f"{len(self.failed_requests)} of {self.asked} GraphQL requests failed; {self.failed_runs} runs failed"
            f"{' (' + '; '.join(sorted(set(self.errors))) + ')' if self.errors else ''}, "
            f"{len(self.lost)} lost; landed {self.landed_after_s:.0f} s after PostgreSQL was back; "
            f"{self.duplicate_rows} duplicate rows"
        )


def restart_postgres_with_runs_in_flight(
    cluster: Cluster,
    instance: dg.DagsterInstance,
    indexes: tuple[int, ...],
    seconds: float = 2,
    outage_s: float = POSTGRES_OUTAGE_S,
) -> PostgresRestart:
    """Upload episodes ``indexes`` (numbered after every earlier upload: the sensor may list only
    the tail); once each one's run encodes, stop PostgreSQL and start it again ``outage_s`` later,
    or once each run has met the outage (a failed connect in its worker's log: on a loaded
    machine a run may encode through the whole outage without asking PostgreSQL anything),
    asking the webserver for runs all along and 20 times after; then wait until every upload
    landed or failed for good."""
    keys = [upload(cluster, index, seconds) for index in indexes]
    runs = [sensor_run(instance, key) for key in keys]
    wait_until(lambda: all(in_step(instance, r.run_id, "gop_blobs") for r in runs), HANG_S, "the runs encoding")
    logs = cluster.worker_logs()
    workers = [worker_of(cluster, instance.get_run_by_id(r.run_id) or r) for r in runs]  # one run each

    def failed_connects() -> dict[str, int]:
        return {w: len(FAILED_CONNECT.findall(logs[w].read_text(errors="replace"))) for w in workers}

    before = failed_connects()
    down_at = time.time()
    cluster.run(str(CLUSTER_SH), "down", "postgres")
    back: list[float] = []
    met: list[int] = []

    def restart() -> None:
        try:
            time.sleep(outage_s)
            wait_until(
                lambda: all(n > before[w] for w, n in failed_connects().items()), HANG_S, "the runs meeting the outage"
            )
        finally:
            met.append(sum(n > before[w] for w, n in failed_connects().items()))
            cluster.run(str(CLUSTER_SH), "up", "postgres")
            back.append(time.time())

    restarter = threading.Thread(target=restart)
    restarter.start()
    failures, asked = [], 0
    try:
        while restarter.is_alive() or asked < 20:
            asked += 1
            if failure := graphql_failure(cluster):
                failures.append(failure)
    finally:
        restarter.join()
    if not back:
        raise AssertionError("`deploy/cluster.sh up postgres` failed")
    for _ in range(20):  # and after it, on every pooled connection
        asked += 1
        if failure := graphql_failure(cluster):
            failures.append(failure)

    def settled(key: str) -> bool:
        """The upload landed, or the sensor gave up on it: a failed run that run retries do not
        start again (a step failed) is requested again by the upload sensor at its next tick (a
        failure not on bad input), up to its ``max_attempts``."""
        runs = runs_of(instance, key)
        if any(r.status == dg.DagsterRunStatus.SUCCESS for r in runs):
            return True
        given_up = [r for r in runs if r.status in FINISHED and r.tags.get("dagster/will_retry") != "true"]
        return len(given_up) >= UploadSensorSettings().max_attempts

    wait_until(lambda: all(settled(key) for key in keys), HANG_S, "the uploads landing")
    every = [r for key in keys for r in runs_of(instance, key)]
    succeeded = [r for r in every if r.status == dg.DagsterRunStatus.SUCCESS]
    landed = {r.tags["dagster/partition"] for r in succeeded}
    return PostgresRestart(
        keys=keys,
        in_flight=met[0],
        down_s=back[0] - down_at,
        asked=asked,
        failed_requests=failures,
        failed_runs=sum(r.status == dg.DagsterRunStatus.FAILURE for r in every),
        errors=[run_error(instance, r.run_id) for r in every if r.status == dg.DagsterRunStatus.FAILURE],
        lost=[key for key in keys if key not in landed],
        landed_after_s=max((ended_at(instance, r.run_id) for r in succeeded), default=back[0]) - back[0],
        duplicate_rows=duplicate_rows(cluster.env),
    )


@dataclass
class WorkerKill:
    key: str
    worker: str  # the worker killed (w1, w2)
    lost: dg.DagsterRun  # the run it held, once finished
    retry: dg.DagsterRun | None  # that run's retry, once finished (None: the run did not fail)
    failed_after_s: float  # SIGKILL until run monitoring failed the run
    landed_after_s: float  # SIGKILL until the retry succeeded
    runs: int  # runs of the upload
    rows: int  # the episode's rows in the dataset
    duplicate_rows: int

    def figures(self) -> str:
        return (
            f"killed worker: run failed {self.failed_after_s:.0f} s after SIGKILL, retry landed "
            f"{self.landed_after_s:.0f} s after; {self.runs} runs, {self.rows} rows, {self.duplicate_rows} duplicate rows"
        )


def kill_worker_mid_run(cluster: Cluster, instance: dg.DagsterInstance, index: int, seconds: float = 4) -> WorkerKill:
    """Upload episode ``index`` (numbered after every earlier upload) and SIGKILL the worker (its
    process group: the worker and its pool) that runs it once the run encodes; wait for the run
    to fail and its retry to finish."""
    key = upload(cluster, index, seconds)
    run = sensor_run(instance, key)
    wait_until(lambda: in_step(instance, run.run_id, "gop_blobs"), HANG_S, "the run encoding")
    launched = instance.get_run_by_id(run.run_id)  # with the Celery task's id
    if launched is None:
        raise AssertionError(f"run {run.run_id} is gone")
    worker = worker_of(cluster, launched)
    pid = cluster.pid(f"worker-{worker}")
    killed_at = time.time()
    os.killpg(pid, signal.SIGKILL)
    lost = wait_until(lambda: finished(instance, run.run_id), HANG_S, "the lost run failed")

    def retry() -> dg.DagsterRun | None:
        found = instance.get_runs(dg.RunsFilter(tags={"dagster/parent_run_id": run.run_id}))
        return found[0] if found and found[0].status in FINISHED else None

    retried = wait_until(retry, HANG_S, "the retry finished") if lost.status == dg.DagsterRunStatus.FAILURE else None
    landed = retried if retried is not None and retried.status == dg.DagsterRunStatus.SUCCESS else None
    episodes, _ = stored(cluster.env)
    return WorkerKill(
        key=key,
        worker=worker,
        lost=lost,
        retry=retried,
        failed_after_s=ended_at(instance, run.run_id) - killed_at,
        landed_after_s=(ended_at(instance, landed.run_id) - killed_at) if landed else float("nan"),
        runs=len(runs_of(instance, key)),
        rows=episodes.get(index, 0),
        duplicate_rows=duplicate_rows(cluster.env),
    )


@dataclass
class DaemonKill:
    queued_at_kill: int  # runs of the backfill still QUEUED when the daemon was killed
    requeued: int  # runs the killed daemon was launching, queued again by the new one
    statuses: dict[str, dg.DagsterRunStatus]  # partition -> its backfill run's status, once all finished
    restarted_after_s: float  # SIGKILL until supervisord ran a new daemon
    healthy_after_s: float  # SIGKILL until every daemon the instance needs beat healthy from the new one
    succeeded_after_s: float  # SIGKILL until the backfill's last run ended
    duplicate_rows: int

    def figures(self) -> str:
        return (
            f"killed daemon: {self.queued_at_kill} of {len(self.statuses)} runs queued, "
            f"{self.requeued} queued again after the restart (lost while launching); restarted "
            f"{self.restarted_after_s:.0f} s after SIGKILL, healthy {self.healthy_after_s:.0f} s after, "
            f"{sum(s == dg.DagsterRunStatus.SUCCESS for s in self.statuses.values())} runs succeeded "
            f"{self.succeeded_after_s:.0f} s after; {self.duplicate_rows} duplicate rows"
        )


def kill_daemon_mid_backfill(
    cluster: Cluster, instance: dg.DagsterInstance, keys: list[str] = WALKTHROUGH_KEYS
) -> DaemonKill:
    """A CLI backfill of ``keys`` (stored already: each run finds its episode and writes nothing,
    so runs are short and the queue, two run slots, holds the rest); SIGKILL to the daemon's
    process group once its first run left the queue; wait for a new daemon, its health and every
    run of the backfill."""
    earlier = {run.run_id for run in instance.get_runs()}
    daemon = cluster.pid("daemon")
    cluster.run(
        "dagster", "job", "backfill", "-m", "robodata.orchestration.definitions", "-j", "ingest_episode",
        "--partitions", ",".join(keys), "--noprompt",
        timeout=HANG_S,  # it loads the code location in its own process: minutes on a loaded machine
    )  # fmt: skip

    def backfill_runs() -> list[dg.DagsterRun]:
        return [run for run in instance.get_runs() if run.run_id not in earlier and "dagster/backfill" in run.tags]

    wait_until(
        lambda: len(runs := backfill_runs()) == len(keys) and any(r.status != dg.DagsterRunStatus.QUEUED for r in runs),
        HANG_S,
        "the backfill's first run leaving the queue",
    )
    killed_beats = {beat.daemon_id for beat in instance.get_daemon_heartbeats().values()}
    killed_at = time.time()
    os.killpg(daemon, signal.SIGKILL)
    queued = sum(run.status == dg.DagsterRunStatus.QUEUED for run in backfill_runs())
    wait_until(lambda: supervised_pids(cluster.env).get("daemon", daemon) != daemon, HANG_S, "the daemon restarted")
    restarted_after = time.time() - killed_at

    def healthy_again() -> bool:
        statuses = instance.get_daemon_statuses()
        return all(
            s.healthy and s.last_heartbeat is not None and s.last_heartbeat.daemon_id not in killed_beats
            for s in statuses.values()
        )

    wait_until(healthy_again, HANG_S, "the new daemon healthy")
    healthy_after = time.time() - killed_at
    done = wait_until(
        lambda: (runs := backfill_runs()) and all(run.status in FINISHED for run in runs) and runs,
        HANG_S,
        "every backfill run finished",
    )
    return DaemonKill(
        queued_at_kill=queued,
        requeued=sum(any(entry.message == REQUEUED_MESSAGE for entry in instance.all_logs(run.run_id)) for run in done),
        statuses={run.tags["dagster/partition"]: run.status for run in done},
        restarted_after_s=restarted_after,
        healthy_after_s=healthy_after,
        succeeded_after_s=max(ended_at(instance, run.run_id) for run in done) - killed_at,
        duplicate_rows=duplicate_rows(cluster.env),
    )


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=int, default=1, help="the three drills this many times on one cluster")
    p.add_argument(
        "--postgres-outage", type=float, default=POSTGRES_OUTAGE_S, help="seconds between `down` and `up postgres`"
    )
    p.add_argument("--sensor-interval", type=int, default=5, help="the upload sensor's tick (s), as the tests set it")


def main(args: argparse.Namespace) -> int:
    print(f"{args.command_line}: load average {_load()}", flush=True)
    started = time.monotonic()
    rounds: list[tuple[PostgresRestart, WorkerKill, DaemonKill]] = []
    with walkthrough_cluster(workers=2, sensor_interval_s=args.sensor_interval) as cluster:
        print(f"cluster up (the walk-through's six episodes) in {time.monotonic() - started:.0f} s", flush=True)
        with cluster_instance(cluster) as instance:
            for number in range(args.rounds):
                base = 100 + 10 * number  # new episodes each round
                postgres = restart_postgres_with_runs_in_flight(
                    cluster, instance, (base, base + 1), outage_s=args.postgres_outage
                )
                print(f"round {number + 1}: {postgres.figures()}; load {_load()}", flush=True)
                worker = kill_worker_mid_run(cluster, instance, base + 2)
                print(f"round {number + 1}: {worker.figures()}; load {_load()}", flush=True)
                daemon = kill_daemon_mid_backfill(cluster, instance)
                print(f"round {number + 1}: {daemon.figures()}; load {_load()}", flush=True)
                rounds.append((postgres, worker, daemon))
    if len(rounds) > 1:
        _medians(rounds)
    return 0


def _medians(rounds: list[tuple[PostgresRestart, WorkerKill, DaemonKill]]) -> None:
    def median(figure: Callable[[tuple[PostgresRestart, WorkerKill, DaemonKill]], float]) -> str:
        return f"{statistics.median(figure(r) for r in rounds):.0f}"

    print(
        f"medians of {len(rounds)} rounds: postgres down {median(lambda r: r[0].down_s)} s, landed "
        f"{median(lambda r: r[0].landed_after_s)} s after; killed worker's run failed "
        f"{median(lambda r: r[1].failed_after_s)} s after SIGKILL, retry landed "
        f"{median(lambda r: r[1].landed_after_s)} s after; killed daemon restarted "
        f"{median(lambda r: r[2].restarted_after_s)} s after, healthy {median(lambda r: r[2].healthy_after_s)} s "
        f"after, backfill succeeded {median(lambda r: r[2].succeeded_after_s)} s after"
    )


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())

"""The cluster in deploy/, running here through deploy/cluster.sh: Dagster on PostgreSQL, runs
launched into Celery through Redis, two worker processes, one s3:// dataset (moto's server).

The walk-through runs docs/cluster.md's own commands; the other tests share one cluster started
the same way (its upload sensor stopped: they launch their runs themselves)."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import urllib.request
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow.parquet as pq
import pytest
from dagster_graphql import DagsterGraphQLClient

import robodata
from robodata.sample_data import write_sample_episode
from robodata.storage import storage_options_from_env
from robodata_tests.fixtures.cluster import (
    CLUSTER_SH,
    Cluster,
    base_env,
    docs_block,
    loaded_env,
    robodata_cluster,
    run_bash,
    teardown,
    wait_until,
)

pytestmark = pytest.mark.slow
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
# deploy/dagster.yaml: poll_interval_seconds + lost_after_seconds + one more poll (docs/cluster.md).
LOST_WORKER_BOUND_S = 10 + 30 + 10
MARGIN_S = 60  # a busy shared machine: the daemon's loop and the broadcast answers run late


def expected_rows(tmp_path: Path, index: int, seconds: float, seed: int = 0) -> int:
    """Rows of sample episode ``index`` as ``robodata sample-data --seed SEED`` writes it."""
    folder = write_sample_episode(tmp_path / "expected", index, np.random.default_rng([seed, index]), seconds)
    return pq.read_metadata(folder / "states.parquet").num_rows


def stored(env: dict[str, str]) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """(episode_index -> rows) from the dataset's episode list, and every (episode, frame) row."""
    ds = robodata.open(env["ROBODATA_ROOT"], storage_options=storage_options_from_env(env))
    episodes = ds.episodes()
    rows = ds.to_table(columns=["episode_index", "frame_index"])
    pairs = list(zip(rows["episode_index"].to_pylist(), rows["frame_index"].to_pylist(), strict=True))
    return dict(zip(episodes["episode_index"].to_pylist(), episodes["rows"].to_pylist(), strict=True)), pairs


def instance_for(env: dict[str, str], monkeypatch) -> dg.DagsterInstance:
    """The cluster's PostgreSQL-backed instance, seen from the test process."""
    for name, value in env.items():
        if name.startswith(("DAGSTER_", "AWS_", "ROBODATA_")):
            monkeypatch.setenv(name, value)
    instance = dg.DagsterInstance.get()
    storage = instance.get_ref().storage_data
    assert (storage.module_name, storage.class_name) == ("robodata.cluster.postgres_storage", "PostgresStorage")
    return instance


def test_the_docs_walkthrough_ingests_six_episodes_into_s3(tmp_path, monkeypatch):
    env = base_env(workers=2)
    try:
        run_bash(docs_block("walk-through"), env, timeout=1500)
        cluster_env = loaded_env(env)
        with instance_for(cluster_env, monkeypatch) as instance:
            runs = instance.get_runs(dg.RunsFilter(job_name="ingest_episode"))
        keys = [f"episode_{i:06d}" for i in range(6)]
        assert sorted(r.tags["dagster/partition"] for r in runs) == keys  # one run per episode: no race
        assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
        episodes, pairs = stored(cluster_env)
        assert episodes == {i: expected_rows(tmp_path, i, 1.0) for i in range(6)}
        assert len(pairs) == len(set(pairs)) == sum(episodes.values())  # no row twice
        logs = Cluster(cluster_env).worker_logs()
        done = {n: len(re.findall(r"Task execute_job\[[^\]]+\] succeeded", p.read_text())) for n, p in logs.items()}
        assert sum(done.values()) == 6 and min(done.values()) >= 1, done  # both workers took runs

        state = Path(cluster_env["ROBODATA_CLUSTER_DIR"])
        pids = [int(p.read_text()) for p in (state / "run").glob("*.pid")]
        assert len(pids) == 6  # redis, moto, daemon, webserver, two workers
        run_bash(docs_block("stop"), env, timeout=300)
        assert not [pid for pid in pids if _alive(pid)]
        assert not (state / "postgres" / "data" / "postmaster.pid").exists()
    finally:
        teardown(loaded_env(env))


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def cluster():
    with robodata_cluster(workers=2) as running:
        running.run("dagster", "sensor", "stop", "upload_sensor", "-m", "robodata.definitions")
        yield running


@pytest.fixture
def instance(cluster, monkeypatch):
    with instance_for(cluster.env, monkeypatch) as inst:
        yield inst


def upload(cluster: Cluster, instance: dg.DagsterInstance, index: int, seconds: float) -> str:
    """Sample episode ``index`` in the cluster's uploads, its partition added; returns its key."""
    cluster.run(
        "robodata", "sample-data", cluster.env["ROBODATA_UPLOADS"], "--episodes", "1", "--start-index", str(index),
        "--seconds", str(seconds),
    )  # fmt: skip
    key = f"episode_{index:06d}"
    instance.add_dynamic_partitions("episodes", [key])
    return key


def launch(cluster: Cluster, key: str) -> str:
    """Launch the ingest of partition ``key`` through GraphQL, as the UI does; the run id."""
    client = DagsterGraphQLClient("127.0.0.1", port_number=cluster.webserver_port)
    return client.submit_job_execution("ingest_episode", tags={"dagster/partition": key})


def status(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRunStatus:
    return instance.get_run_by_id(run_id).status


def test_the_webserver_answers_every_request_across_a_postgres_restart(cluster):
    url = f"http://127.0.0.1:{cluster.webserver_port}/graphql"
    query = "{ runsOrError(limit: 5) { __typename ... on Runs { results { runId status } } } }"

    def ask() -> str | None:
        request = urllib.request.Request(
            url, json.dumps({"query": query}).encode(), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                body = json.loads(response.read())
        except OSError as exc:
            return f"{type(exc).__name__}: {exc}"
        if body.get("errors") or body["data"]["runsOrError"]["__typename"] != "Runs":
            return json.dumps(body)[:500]
        return None

    assert [ask() for _ in range(5)] == [None] * 5  # the webserver's pooled connections are open
    cluster.run(str(CLUSTER_SH), "down", "postgres")
    # Requests while PostgreSQL is down, and after it is back on the same pooled connections.
    restart = threading.Timer(2.0, lambda: cluster.run(str(CLUSTER_SH), "up", "postgres"))
    restart.start()
    failures, asked, started = [], 0, time.monotonic()
    try:
        while time.monotonic() - started < 20:
            asked += 1
            if failure := ask():
                failures.append(failure)
            time.sleep(0.2)
    finally:
        restart.join()
    assert asked > 20 and failures == []


def test_terminate_cancels_a_running_run_and_the_worker_runs_again(cluster, instance, tmp_path):
    run_id = launch(cluster, upload(cluster, instance, 10, seconds=8))
    wait_until(lambda: status(instance, run_id) == dg.DagsterRunStatus.STARTED, 300, "run started")
    time.sleep(3)  # into its steps
    DagsterGraphQLClient("127.0.0.1", port_number=cluster.webserver_port).terminate_run(run_id)
    wait_until(lambda: status(instance, run_id) in FINISHED, 60, "terminated run finished")
    assert status(instance, run_id) == dg.DagsterRunStatus.CANCELED
    time.sleep(20)  # a run that went on after terminate (as with SIGTERM) would change it again
    assert status(instance, run_id) == dg.DagsterRunStatus.CANCELED

    # Both workers free: two runs at once, one each, both succeed.
    marks = {n: len(p.read_text()) for n, p in cluster.worker_logs().items()}
    runs = [launch(cluster, key) for key in [upload(cluster, instance, i, seconds=1) for i in (11, 12)]]
    wait_until(lambda: all(status(instance, r) in FINISHED for r in runs), 600, "two runs finished")
    assert [status(instance, r) for r in runs] == [dg.DagsterRunStatus.SUCCESS] * 2
    took = {n: "succeeded" in p.read_text()[marks[n] :] for n, p in cluster.worker_logs().items()}
    assert took == {"w1": True, "w2": True}
    episodes, _ = stored(cluster.env)
    assert 10 not in episodes and {11, 12} <= set(episodes)


def test_a_worker_killed_mid_run_its_run_is_retried_and_the_episode_stored_once(cluster, instance, tmp_path):
    run_id = launch(cluster, upload(cluster, instance, 20, seconds=8))
    wait_until(lambda: status(instance, run_id) == dg.DagsterRunStatus.STARTED, 300, "run started")
    task = instance.get_run_by_id(run_id).tags["dagster-celery/task_id"]
    worker = wait_until(
        lambda: next(
            (n for n, p in cluster.worker_logs().items() if f"execute_job[{task}] received" in p.read_text()), None
        ),
        60,
        "the worker that took the run",
    )
    time.sleep(3)  # into its steps
    os.killpg(cluster.pid(f"worker-{worker}"), signal.SIGKILL)  # the worker and its pool processes
    killed_at = time.monotonic()

    wait_until(
        lambda: status(instance, run_id) == dg.DagsterRunStatus.FAILURE,
        LOST_WORKER_BOUND_S + MARGIN_S,
        "lost run failed",
    )
    failed_after = time.monotonic() - killed_at
    print(f"the lost run failed {failed_after:.0f} s after its worker was killed")

    def retry() -> dg.DagsterRun | None:
        found = instance.get_runs(dg.RunsFilter(tags={"dagster/parent_run_id": run_id}))
        return found[0] if found and found[0].status in FINISHED else None

    retried = wait_until(retry, 600, "retry finished")
    assert retried.status == dg.DagsterRunStatus.SUCCESS, failed_after
    assert retried.tags["dagster/retry_number"] == "1"
    other = next(n for n in cluster.worker_logs() if n != worker)
    assert (
        f"execute_job[{retried.tags['dagster-celery/task_id']}] succeeded" in cluster.worker_logs()[other].read_text()
    )

    runs = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": "episode_000020"}))
    assert sorted(r.status.value for r in runs) == ["FAILURE", "SUCCESS"]  # the lost run and its retry
    episodes, pairs = stored(cluster.env)
    assert episodes[20] == expected_rows(tmp_path, 20, 8.0)
    assert sum(1 for e, _ in pairs if e == 20) == episodes[20]
    assert len(pairs) == len(set(pairs))  # no row twice

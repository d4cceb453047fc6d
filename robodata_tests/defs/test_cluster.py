"""The cluster setup in deploy/, running here: Dagster on PostgreSQL, runs launched into Celery
through Redis, two worker processes, one s3:// dataset (moto)."""

import re
import time

import dagster as dg
import pyarrow.parquet as pq
import pytest

import robodata
from robodata.sample_data import write_sample_uploads
from robodata_tests.fixtures.cluster import robodata_cluster

pytestmark = pytest.mark.slow
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def test_a_backfill_of_six_episodes_lands_each_once_across_two_celery_workers(s3, s3_root, tmp_path, monkeypatch):
    uploads = write_sample_uploads(tmp_path / "uploads", episodes=6, seed=5, seconds=0.5)
    for upload in uploads:
        s3.put_tree(upload, f"{s3_root}/uploads/{upload.name}")
    root = f"{s3_root}/dataset"
    env = dict(s3.environ, ROBODATA_ROOT=root, ROBODATA_UPLOADS=f"{s3_root}/uploads")
    with robodata_cluster(tmp_path / "cluster", env, workers=2) as cluster:
        keys = cluster.run("robodata", "register-uploads").split()
        assert keys == [u.name for u in uploads]
        cluster.run(
            "dagster",
            "job",
            "backfill",
            "-m",
            "robodata.definitions",
            "-j",
            "ingest_episode",
            "--partitions",
            ",".join(keys),
            "--noprompt",
        )
        for name, value in cluster.env.items():
            if name.startswith(("DAGSTER_", "AWS_", "ROBODATA_")):
                monkeypatch.setenv(name, value)
        with dg.DagsterInstance.get() as instance:  # the cluster's PostgreSQL-backed instance
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            runs = wait_for_runs(instance, count=6, timeout=240)
    assert sorted(r.tags["dagster/partition"] for r in runs) == keys  # one run per episode
    logs = [log.read_text()[-2000:] for log in cluster.worker_logs.values()]
    assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}, logs

    ds = robodata.open(root, storage_options=s3.storage_options)
    rows = ds.to_table(columns=["episode_index", "frame_index"])
    pairs = list(zip(rows["episode_index"].to_pylist(), rows["frame_index"].to_pylist(), strict=True))
    assert len(pairs) == len(set(pairs))  # no row twice
    expected = {i: pq.read_metadata(u / "states.parquet").num_rows for i, u in enumerate(uploads)}
    assert dict(zip(*[ds.episodes()[c].to_pylist() for c in ("episode_index", "rows")], strict=True)) == expected

    done = {
        name: len(re.findall(r"Task execute_job\[[^\]]+\] succeeded", log.read_text()))
        for name, log in cluster.worker_logs.items()
    }
    assert sum(done.values()) == 6 and min(done.values()) >= 1, done  # both workers took runs


def wait_for_runs(instance, count: int, timeout: float) -> list[dg.DagsterRun]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = instance.get_runs(filters=dg.RunsFilter(job_name="ingest_episode"))
        if len(runs) >= count and all(r.status in FINISHED for r in runs):
            return runs
        time.sleep(2)
    raise AssertionError(f"runs not finished after {timeout} s: {[(r.run_id[:8], r.status) for r in runs]}")

"""`dagster dev`'s UI end to end: a real dagster-webserver on 127.0.0.1 loads workspace.yaml,
lists the assets over GraphQL, launches a run for each of three partitions at once (each run in
a process of its own, all committing to one dataset) and sees every episode land exactly once."""

import dagster as dg
import pytest

import robodata
from robodata_tests.orchestration.conftest import EPISODE_KEYS, make_store
from robodata_tests.orchestration.webserver import (
    instance_home,
    running_daemon,
    running_webserver,
)

pytestmark = pytest.mark.scheduled_first  # a real webserver and its runs, minutes

EXPECTED_ASSETS = {
    "raw_episodes",
    "gop_blobs",
    "aligned_frames",
    "annotations",
    "benchmark_report",
    "training_snapshot",
}
ASSETS = "{ assetNodes { assetKey { path } } }"


def test_webserver_lists_assets_and_runs_partitions_at_once(tmp_path, short_uploads, monkeypatch):
    store = make_store(tmp_path, short_uploads)
    home = instance_home(tmp_path / "home")
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # dagster.yaml's storage lives under it
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("episodes", EPISODE_KEYS)
    env = {"ROBODATA_ROOT": store.root, "ROBODATA_UPLOADS": store.uploads_root}
    with running_webserver(home, env, tmp_path / "webserver.log") as server:
        assert server.location == "robodata.orchestration.definitions"
        keys = {"/".join(node["assetKey"]["path"]) for node in server.graphql(ASSETS)["assetNodes"]}
        assert EXPECTED_ASSETS <= keys
        # launched together; each run starts its own worker process, its steps in one process
        assert server.run_partitions("ingest_episode", EPISODE_KEYS) == ["SUCCESS"] * len(EPISODE_KEYS)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.fetch_materializations(dg.AssetKey("aligned_frames"), limit=10).records
        assert sorted(r.asset_materialization.partition for r in records) == EPISODE_KEYS
        assert {r.asset_materialization.metadata["rows_written"].value for r in records} == {97}
    ds = robodata.open(store.root)
    keys = ds.to_table(columns=["episode_index", "frame_index"]).to_pylist()
    assert len({(k["episode_index"], k["frame_index"]) for k in keys}) == len(keys) == 3 * 97
    assert ds.episodes()["rows"].to_pylist() == [97, 97, 97]


@pytest.mark.slow
def test_a_graphql_backfill_runs_each_partition_on_the_definitions_executor(tmp_path, short_uploads, monkeypatch):
    """A backfill launched as the UI launches one (GraphQL, an asset selection, no job named):
    the daemon runs one run per partition of Dagster's asset job, and each run executes its steps
    in its own process with the in-process executor the Definitions set (no process per step).
    The upload sensor is stopped first (the UI's toggle), so the backfill's runs are the only
    ones; the daemon starts once the backfill is launched, so its first backfill iteration (they
    come every 30 s) takes it. Two partitions: one run each is the point, and each run is a
    process of its own."""
    keys = EPISODE_KEYS[:2]
    store = make_store(tmp_path, short_uploads[:2])
    home = instance_home(tmp_path / "home")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("episodes", keys)
    env = {"ROBODATA_ROOT": store.root, "ROBODATA_UPLOADS": store.uploads_root}
    with running_webserver(home, env, tmp_path / "webserver.log") as server:
        server.stop_sensor("upload_sensor")
        backfill = server.launch_backfill(["raw_episodes", "gop_blobs", "aligned_frames"], keys)
        with running_daemon(home, env, tmp_path / "daemon.log"):
            assert server.wait_for_backfill(backfill) in ("COMPLETED", "COMPLETED_SUCCESS")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": server.last_backfill}))
        assert sorted(run.tags["dagster/partition"] for run in runs) == keys
        assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}
        assert {run.job_name for run in runs} == {"__ASSET_JOB"}
        assert len(instance.get_runs()) == len(keys)
        for run in runs:
            engine = [e.message for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)]
            assert any(m.startswith("Executing steps in process") for m in engine), engine
            assert not any("multiprocess" in m for m in engine), engine
            starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)
            assert len(starts) >= 3 and len({e.dagster_event.pid for e in starts}) == 1
    assert robodata.open(store.root).episodes()["rows"].to_pylist() == [97, 97]

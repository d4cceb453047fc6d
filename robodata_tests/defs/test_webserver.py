"""`dagster dev`'s UI end to end: a real dagster-webserver on 127.0.0.1 loads workspace.yaml,
lists the assets over GraphQL, launches a run for each of three partitions at once (each run in
a process of its own, all committing to one dataset) and sees every episode land exactly once."""

import dagster as dg

import robodata
from robodata_tests.defs.conftest import EPISODE_KEYS, make_store
from robodata_tests.defs.webserver import instance_home, running_webserver

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
        assert server.location == "robodata.definitions"
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

"""Batch partitioning under a real dagster-webserver (the rest of batch mode: test_batches.py)."""

import dagster as dg
import pytest

import robodata
from robodata.format._provenance import stored_uploads
from robodata.ingest._upload_summary import upload_state_samples
from robodata.orchestration.defs.batches.batches import register_upload_batches
from robodata_tests.orchestration.conftest import batch_store


@pytest.mark.slow
def test_a_real_webserver_runs_batches_in_batch_mode(tmp_path, eight_short_uploads, monkeypatch):
    """The code location loads in batch mode under dagster-webserver, and two batch runs launched
    at once (each in its own run worker, which inherits ROBODATA_PARTITIONING) land every episode once."""
    from robodata_tests.orchestration.webserver import instance_home, running_webserver

    store = batch_store(tmp_path, {"a": eight_short_uploads[:2], "b": eight_short_uploads[2:3]})
    home = instance_home(tmp_path / "home")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert register_upload_batches(instance, store) == ["a", "b"]
    env = {"ROBODATA_ROOT": store.root, "ROBODATA_UPLOADS": store.uploads_root, "ROBODATA_PARTITIONING": "batch"}
    with running_webserver(home, env, tmp_path / "webserver.log") as server:
        assert server.run_partitions("ingest_batch", ["a", "b"]) == ["SUCCESS", "SUCCESS"]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.fetch_materializations(dg.AssetKey("aligned_frames"), limit=10).records
        assert sorted(r.asset_materialization.partition for r in records) == ["a", "b"]
    assert sorted(stored_uploads(store.root)) == [u.name for u in eight_short_uploads[:3]]
    keys = robodata.open(store.root).to_table(columns=["episode_index", "frame_index"]).to_pylist()
    assert len({(k["episode_index"], k["frame_index"]) for k in keys}) == len(keys)
    assert len(keys) == sum(upload_state_samples(str(u)) for u in eight_short_uploads[:3])

"""A multi-episode backfill: one run per partition, each with the multiprocess executor (every
step in a process of its own), against a real SQLite instance; every episode lands exactly once
in one dataset.

The runs go one after another from this process: Dagster's in-process run API is not
thread-safe, and a separate run-worker process per partition costs minutes of imports on a
busy 2-core machine; concurrent commits to one dataset are Lance's job and the library's.
"""

import os
from pathlib import Path

import dagster as dg
import lance
import numpy as np

import robodata
from robodata.dagster_home import prepare_dagster_home
from robodata.format.tables import frames_uri, gops_uri
from robodata_tests.defs.conftest import EPISODE_KEYS, make_store

REPO = Path(__file__).resolve().parents[2]
# Steps fork from one server that has already imported the heavy, fork-safe modules (not Lance:
# it is not fork-safe), so a step process does not import Dagster, Arrow and PyAV again.
PRELOAD = ["dagster", "numpy", "pyarrow", "pyarrow.dataset", "pandas", "av"]
MULTIPROCESS = {
    "execution": {
        "config": {
            "multiprocess": {
                "max_concurrent": 4,
                "start_method": {"forkserver": {"preload_modules": PRELOAD}},
            }
        }
    }
}


def backfill_job() -> dg.JobDefinition:
    """The episode assets of the production definitions, without their checks (tested elsewhere),
    loaded the way a code location loads them (a reconstructable target)."""
    from robodata.definitions import defs
    from robodata.defs.ingest.episodes import aligned_frames, gop_blobs, raw_episodes

    selection = dg.AssetSelection.assets(raw_episodes, gop_blobs, aligned_frames).without_checks()
    job = dg.define_asset_job("backfill_episodes", selection=selection)
    return dg.Definitions.merge(defs, dg.Definitions(jobs=[job])).resolve_job_def("backfill_episodes")


def test_backfill_with_multiprocess_executor_lands_each_episode_once(tmp_path, short_uploads, monkeypatch):
    store = make_store(tmp_path, short_uploads)
    monkeypatch.setenv("ROBODATA_ROOT", store.root)  # read by the step processes' resource
    monkeypatch.setenv("ROBODATA_UPLOADS", store.uploads_root)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    # the step processes import the reconstructable job from this module
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    prepare_dagster_home(tmp_path / "home")

    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("episodes", EPISODE_KEYS)
        for key in EPISODE_KEYS:
            result = dg.execute_job(
                dg.reconstructable(backfill_job),
                instance=instance,
                run_config=MULTIPROCESS,
                tags={"dagster/partition": key},
            )
            assert result.success, key

    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert sorted(run.tags["dagster/partition"] for run in runs) == EPISODE_KEYS
        assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}
        records = instance.fetch_materializations(dg.AssetKey("aligned_frames"), limit=100).records
        assert sorted(r.asset_materialization.partition for r in records) == EPISODE_KEYS
        # each run ran its steps in processes of their own
        for run in runs:
            starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)
            assert len({event.dagster_event.pid for event in starts}) == 3

    frames = lance.dataset(frames_uri(store.root))
    keys = frames.to_table(columns=["episode_index", "frame_index"])
    pairs = keys["episode_index"].to_numpy() * 10_000 + keys["frame_index"].to_numpy()
    assert len(np.unique(pairs)) == len(pairs) == 3 * 97
    assert robodata.open(store.root).episodes()["rows"].to_pylist() == [97, 97, 97]
    assert len(frames.versions()) == 3  # one frames commit per episode
    gops = lance.dataset(gops_uri(store.root)).to_table(columns=["ref_id", "episode_index"])
    assert len(set(gops["ref_id"].to_pylist())) == gops.num_rows == 3 * 24  # 3 cameras x 8 GOPs each

"""A multi-episode backfill: one run per partition, each on the code location's executor (every
step in the run's own process, none started per step), against a real SQLite instance; every
episode lands exactly once in one dataset.

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
from robodata.format._tables import frames_uri, gops_uri
from robodata.orchestration import prepare_dagster_home
from robodata_tests.orchestration.conftest import EPISODE_KEYS, make_store

REPO = Path(__file__).resolve().parents[2]


def backfill_job() -> dg.JobDefinition:
    """An asset job over the episode assets of the production definitions, without their checks
    (tested elsewhere), as a backfill launched from the UI makes one: it runs on the executor the
    definitions set. The store is made now, from ROBODATA_* (this process may have loaded the
    definitions before the test set them)."""
    from robodata.orchestration.definitions import defs
    from robodata.orchestration.defs.ingest.episodes import aligned_frames, gop_blobs, raw_episodes
    from robodata.orchestration.defs.resources import store_from_env

    location = defs()
    selection = dg.AssetSelection.assets(raw_episodes, gop_blobs, aligned_frames).without_checks()
    job = dg.define_asset_job("backfill_episodes", selection=selection)
    return dg.Definitions(
        assets=location.assets,
        executor=location.executor,
        resources={**location.resources, "store": store_from_env()},
        jobs=[job],
    ).resolve_job_def("backfill_episodes")


def test_backfill_runs_steps_in_the_run_process_and_lands_each_episode_once(tmp_path, short_uploads, monkeypatch):
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
                tags={"dagster/partition": key},
            )
            assert result.success, key

    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert sorted(run.tags["dagster/partition"] for run in runs) == EPISODE_KEYS
        assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}
        records = instance.fetch_materializations(dg.AssetKey("aligned_frames"), limit=100).records
        assert sorted(r.asset_materialization.partition for r in records) == EPISODE_KEYS
        # an ad-hoc asset job, as a UI backfill makes: the Definitions' executor, no process per step
        for run in runs:
            starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)
            assert len(starts) == 3 and {event.dagster_event.pid for event in starts} == {os.getpid()}

    frames = lance.dataset(frames_uri(store.root))
    keys = frames.to_table(columns=["episode_index", "frame_index"])
    pairs = keys["episode_index"].to_numpy() * 10_000 + keys["frame_index"].to_numpy()
    assert len(np.unique(pairs)) == len(pairs) == 3 * 97
    assert robodata.open(store.root).episodes()["rows"].to_pylist() == [97, 97, 97]
    assert len(frames.versions()) == 3  # one frames commit per episode
    gops = lance.dataset(gops_uri(store.root)).to_table(columns=["ref_id", "episode_index"])
    assert len(set(gops["ref_id"].to_pylist())) == gops.num_rows == 3 * 24  # 3 cameras x 8 GOPs of G=4 each

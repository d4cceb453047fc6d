"""ingest_episode: one episode's steps and checks run one after another in the run's process."""

import os
from pathlib import Path

import dagster as dg

import robodata
from robodata.orchestration import prepare_dagster_home
from robodata_tests.orchestration.conftest import EPISODE_KEYS, make_store

REPO = Path(__file__).resolve().parents[2]


def ingest_job() -> dg.JobDefinition:
    """The production job with its assets and checks, the code location's executor, and a store
    made now (from ROBODATA_*)."""
    from robodata.orchestration.defs import execution
    from robodata.orchestration.defs.ingest.checks import episode_checks
    from robodata.orchestration.defs.ingest.jobs import ingest_episode_job
    from robodata.orchestration.defs.resources import DatasetStore
    from robodata_tests.orchestration.conftest import EPISODE_ASSETS

    defs = dg.Definitions.merge(
        execution.defs,
        dg.Definitions(
            assets=EPISODE_ASSETS,
            asset_checks=episode_checks,
            jobs=[ingest_episode_job],
            resources={"store": DatasetStore()},
        ),
    )
    return defs.resolve_job_def("ingest_episode")


def test_ingest_episode_runs_every_step_and_check_in_one_process(tmp_path, short_uploads, monkeypatch):
    store = make_store(tmp_path, short_uploads[:1])
    monkeypatch.setenv("ROBODATA_ROOT", store.root)
    monkeypatch.setenv("ROBODATA_UPLOADS", store.uploads_root)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    prepare_dagster_home(tmp_path / "home")
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("episodes", EPISODE_KEYS[:1])
        result = dg.execute_job(
            dg.reconstructable(ingest_job), instance=instance, tags={"dagster/partition": EPISODE_KEYS[0]}
        )
        assert result.success
        starts = instance.all_logs(result.run_id, of_type=dg.DagsterEventType.STEP_START)
        steps = {event.dagster_event.step_key for event in starts}
        assert {"raw_episodes", "gop_blobs", "aligned_frames"} <= steps
        assert len(steps) > 3  # the episode checks run in the same job
        assert {event.dagster_event.pid for event in starts} == {os.getpid()}  # no process per step
    assert robodata.open(store.root).episodes()["rows"].to_pylist() == [97]

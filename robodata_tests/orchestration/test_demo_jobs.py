"""The demo's runs carry job names (ingest_episode, then one for labels, snapshot and report), not
Dagster's ``__ephemeral_asset_job__``."""

import dagster as dg

from robodata.orchestration._demo import materialize_all
from robodata_tests.orchestration.conftest import EPISODE_KEYS, new_instance


def test_demo_runs_are_named_jobs(store, tmp_path):
    labels = tmp_path / "success.csv"
    labels.write_text("episode_index,success\n0,true\n")
    instance = new_instance(store)
    report = materialize_all(instance, store, EPISODE_KEYS[:1], str(labels), "demo-run-test")
    runs = instance.get_runs()
    assert sorted(run.job_name for run in runs) == ["demo_labels_snapshot_report", "ingest_episode"]
    assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}
    assert report["benchmark_report"].endswith(".md")

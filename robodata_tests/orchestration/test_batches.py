"""Batch partitioning (ROBODATA_PARTITIONING=batch): the code location loads with one partition
per upload batch, a batch run ingests exactly its new episodes with their checks, a bad episode
fails the batch with nothing committed, the sensor requests one run per complete batch, and
episodes ingested per episode are not ingested again after the switch. Under a real webserver:
test_batches_served.py; ``robodata bench batches``: test_batches_bench.py (files of their own, so
the test workers share the minutes out)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

import robodata
from robodata.format._provenance import stored_uploads
from robodata.format._versions import current_versions
from robodata.ingest._upload_summary import upload_state_samples
from robodata.orchestration import migrate_partitioning
from robodata.orchestration.defs import resources
from robodata.orchestration.defs.batches import batches, checks
from robodata.orchestration.defs.batches.batches import (
    BATCH_ASSETS,
    ingest_batch_job,
    register_upload_batches,
    upload_batch_sensor,
    upload_batches,
)
from robodata.orchestration.defs.ingest.episodes import FINGERPRINT_TAG
from robodata.orchestration.defs.ingest.sensor import ATTEMPT_TAG
from robodata.orchestration.defs.resources import DatasetStore
from robodata.storage._upload_batches import batch_fingerprint
from robodata.storage._uploads import scan_uploads
from robodata_tests.orchestration.conftest import (
    batch_store,
    make_store,
    materialize_episode,
    metadata_of,
    new_instance,
)
from robodata_tests.orchestration.sensor_ticks import evaluate

pytestmark = pytest.mark.scheduled_first  # many Dagster runs, minutes

REPO = Path(__file__).resolve().parents[2]


def materialize_batch(store: DatasetStore, batch: str, instance=None) -> dg.ExecuteInProcessResult:
    instance = instance or dg.DagsterInstance.ephemeral()
    register_upload_batches(instance, store)
    return dg.materialize(
        [*BATCH_ASSETS, *checks.batch_checks],
        partition_key=batch,
        instance=instance,
        resources={"store": store},
        raise_on_error=False,
    )


def tick(instance, store, cursor, **settings):
    """One tick of the batch sensor, applying its partition requests as the daemon would."""
    return evaluate(instance, store, cursor, sensor=upload_batch_sensor, **settings)


def test_batch_partitioning_loads():
    script = (
        "import json, pathlib, dagster as dg\n"
        "from robodata.orchestration.definitions import defs as location\n"
        "defs = location()\n"
        "dg.Definitions.validate_loadable(defs)\n"
        "def summary(d):\n"
        "    repo = d.get_repository_def()\n"
        "    return {'jobs': sorted(j for j in repo.job_names if not j.startswith('__')),\n"
        "            'sensors': sorted(s.name for s in repo.sensor_defs),\n"
        "            'checks': len(repo.asset_graph.asset_check_keys),\n"
        "            'partitions': str(repo.asset_graph.get(dg.AssetKey('aligned_frames')).partitions_def)}\n"
        "print(json.dumps(summary(defs)))\n"
    )
    env = dict(os.environ, ROBODATA_PARTITIONING="batch", PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    module = json.loads(done.stdout.strip().splitlines()[-1])
    assert module["partitions"] == 'Dynamic partitions: "upload_batches"'
    # the batches' sensor instead of the episodes'; the automation sensor either way
    assert module["sensors"] == ["robodata_automation_sensor", "upload_batch_sensor"]
    assert "ingest_batch" in module["jobs"]
    assert "ingest_episode" not in module["jobs"] and module["checks"] == 6


def test_partitioning_names_its_two_values(monkeypatch):
    monkeypatch.delenv(resources.PARTITIONING_ENV, raising=False)
    assert resources.partitioning() == "episode"
    monkeypatch.setenv(resources.PARTITIONING_ENV, " Batch ")
    assert resources.partitioning() == "batch"
    monkeypatch.setenv(resources.PARTITIONING_ENV, "daily")
    with pytest.raises(ValueError, match="ROBODATA_PARTITIONING='daily': use 'episode' .* or 'batch'"):
        resources.partitioning()


def test_a_batch_run_ingests_its_episodes_with_exact_rows_and_checks(tmp_path, eight_short_uploads):
    store = batch_store(tmp_path, {"2026-12-01": eight_short_uploads[:3]})
    result = materialize_batch(store, "2026-12-01")
    assert result.success
    ids = [u.name for u in eight_short_uploads[:3]]
    samples = {u.name: upload_state_samples(str(u)) for u in eight_short_uploads[:3]}

    raw = metadata_of(result, "raw_episodes")
    assert json.loads(raw["episodes_to_ingest"]) == ids and json.loads(raw["episodes_already_stored"]) == []
    assert raw["state_samples"] == sum(samples.values())
    frames = metadata_of(result, "aligned_frames")
    assert json.loads(frames["episodes"]) == ids
    assert json.loads(frames["rows_per_episode"]) == samples
    assert frames["rows_written"] == sum(samples.values())
    versions = current_versions(store.root)
    assert frames["frames_version"] == versions.frames and frames["gops_version"] == versions.gops
    assert json.loads(frames["frames_version_per_episode"]) == dict(zip(ids, [1, 2, 3], strict=True))
    assert frames["dagster/row_count"] == sum(samples.values())

    ds = robodata.open(store.root)
    assert len(ds) == sum(samples.values())
    assert sorted(stored_uploads(store.root)) == ids

    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == 6 and all(e.passed for e in evaluations)
    by_name = {e.check_name: e for e in evaluations}
    assert by_name["row_count_matches_upload"].metadata["episodes_checked"].value == 3


def test_a_bad_episode_fails_its_batch_naming_it_and_commits_nothing(tmp_path, eight_short_uploads):
    store = batch_store(tmp_path, {"a": eight_short_uploads[:1], "b": eight_short_uploads[1:3]})
    instance = dg.DagsterInstance.ephemeral()
    assert materialize_batch(store, "a", instance).success
    before = current_versions(store.root)
    bad = Path(store.uploads_root) / "b" / eight_short_uploads[2].name / "states.parquet"
    bad.write_bytes(b"not parquet")

    result = materialize_batch(store, "b", instance)
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    message = failure.step_failure_data.error.message
    assert f"batch b: episode {eight_short_uploads[2].name} failed" in message
    assert str(bad) in message and "no episode of the batch was committed" in message
    assert failure.step_key == "raw_episodes"  # found before any encoding
    assert current_versions(store.root) == before  # frames.lance and gops.lance unchanged
    assert sorted(stored_uploads(store.root)) == [eight_short_uploads[0].name]


def test_the_sensor_requests_one_run_per_complete_batch_then_nothing(tmp_path, eight_short_uploads):
    store = batch_store(tmp_path, {"a": eight_short_uploads[:2], "b": eight_short_uploads[2:4]})
    uploads = Path(store.uploads_root)
    still_uploading = uploads / "b" / eight_short_uploads[3].name / "episode.json"
    held_back = still_uploading.read_bytes()
    still_uploading.unlink()  # episode.json comes last: batch b is not complete yet
    shutil.copytree(eight_short_uploads[4], uploads / eight_short_uploads[4].name)  # a per-episode upload
    instance = dg.DagsterInstance.ephemeral()

    first = tick(instance, store, None)
    [request] = first.run_requests
    assert request.partition_key == "a" and upload_batch_sensor.job_name == "ingest_batch"
    listed = scan_uploads(str(uploads / "a")).complete
    assert request.tags == {FINGERPRINT_TAG: batch_fingerprint(listed), ATTEMPT_TAG: "1"}
    assert instance.get_dynamic_partitions(upload_batches.name) == ["a"]
    assert tick(instance, store, first.cursor).run_requests == []

    job = dg.Definitions(assets=BATCH_ASSETS, jobs=[ingest_batch_job], resources={"store": store})
    run = job.resolve_job_def("ingest_batch").execute_in_process(
        partition_key="a", instance=instance, tags=request.tags
    )
    assert run.success and sorted(stored_uploads(store.root)) == [u.name for u in eight_short_uploads[:2]]

    still_uploading.write_bytes(held_back)
    second = tick(instance, store, first.cursor)
    assert [r.partition_key for r in second.run_requests] == ["b"]
    assert instance.get_dynamic_partitions(upload_batches.name) == ["a", "b"]
    assert tick(instance, store, second.cursor).run_requests == []  # a succeeded, b in flight


def test_a_stalled_folder_no_longer_holds_its_batch_back(tmp_path, eight_short_uploads):
    store = batch_store(tmp_path, {"a": eight_short_uploads[:2]})
    (Path(store.uploads_root) / "a" / eight_short_uploads[1].name / "episode.json").unlink()
    assert tick(dg.DagsterInstance.ephemeral(), store, None).run_requests == []
    stalled = tick(dg.DagsterInstance.ephemeral(), store, None, stalled_after_s=0.0)
    assert [r.partition_key for r in stalled.run_requests] == ["a"]


def test_switching_to_batches_does_not_ingest_stored_episodes_again(tmp_path, eight_short_uploads):
    # Per-episode partitioning first: two uploads directly under the uploads root.
    store = make_store(tmp_path, eight_short_uploads[:2])
    instance = new_instance(store)
    for upload in eight_short_uploads[:2]:
        assert materialize_episode(instance, store, upload.name).success
    stored_before = stored_uploads(store.root)
    version_before = current_versions(store.root)

    # The switch: the old uploads moved into a batch folder (a rename keeps their fingerprints),
    # a new batch next to it. The per-episode listing no longer sees either.
    uploads = Path(store.uploads_root)
    for upload in eight_short_uploads[:2]:
        shutil.move(uploads / upload.name, uploads / "legacy" / upload.name)
    shutil.copytree(eight_short_uploads[2], uploads / "new" / eight_short_uploads[2].name)
    shutil.copytree(eight_short_uploads[3], uploads / "legacy" / eight_short_uploads[3].name)
    assert scan_uploads(store.uploads_root).complete == []

    # The instance still holds the per-episode partitions: the switch is refused, naming the command.
    refused = tick(instance, store, None)
    assert refused.run_requests == [] and "`robodata repartition batch`" in refused.skip_reason.skip_message
    instance.add_dynamic_partitions(upload_batches.name, ["legacy"])  # as a person in the UI might
    run = dg.materialize(
        BATCH_ASSETS, partition_key="legacy", instance=instance, resources={"store": store}, raise_on_error=False
    )
    [failure] = [e for e in run.all_events if e.is_step_failure]
    assert "`robodata repartition batch`" in failure.step_failure_data.user_failure_data.description
    assert migrate_partitioning(instance, store, "batch") == {"stored": [], "new": ["legacy", "new"]}
    assert instance.get_dynamic_partitions("episodes") == []
    assert instance.get_dynamic_partitions(upload_batches.name) == ["legacy", "new"]

    first = tick(instance, store, None)
    assert sorted(r.partition_key for r in first.run_requests) == ["legacy", "new"]
    # 'legacy' holds one new episode: only it is ingested, the stored two are skipped.
    result = materialize_batch(store, "legacy", instance)
    assert result.success
    frames = metadata_of(result, "aligned_frames")
    assert json.loads(frames["episodes"]) == [eight_short_uploads[3].name]
    assert json.loads(frames["episodes_already_stored"]) == [u.name for u in eight_short_uploads[:2]]
    assert current_versions(store.root).frames == version_before.frames + 1
    after = stored_uploads(store.root)
    assert {k: after[k] for k in stored_before} == stored_before  # same fingerprints, not rewritten

    # Only stored episodes: a run writes nothing, and the sensor registers the batch without a run.
    shutil.rmtree(uploads / "new")
    again = materialize_batch(store, "legacy", instance)
    assert again.success and metadata_of(again, "aligned_frames")["rows_written"] == 0
    assert current_versions(store.root).frames == version_before.frames + 1
    fresh = dg.DagsterInstance.ephemeral()
    assert tick(fresh, store, None).run_requests == []
    assert fresh.get_dynamic_partitions(upload_batches.name) == ["legacy"]
    assert batches.register_upload_batches(fresh, store) == ["legacy"]


def test_migrating_records_batches_already_ingested_per_episode(tmp_path, eight_short_uploads):
    store = make_store(tmp_path, eight_short_uploads[:2])
    instance = new_instance(store)
    for upload in eight_short_uploads[:2]:
        assert materialize_episode(instance, store, upload.name).success
    uploads = Path(store.uploads_root)
    for upload in eight_short_uploads[:2]:
        shutil.move(uploads / upload.name, uploads / "legacy" / upload.name)
    assert migrate_partitioning(instance, store, "batch") == {"stored": ["legacy"], "new": []}
    [record] = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("aligned_frames"), asset_partitions=["legacy"]), limit=5
    ).records
    assert record.asset_materialization.metadata["episodes"].value == ", ".join(u.name for u in eight_short_uploads[:2])
    # the per-episode history stays in the event log under its old partition keys
    old = instance.fetch_materializations(dg.AssetKey("aligned_frames"), limit=10).records
    assert {r.asset_materialization.partition for r in old} == {"legacy", *(u.name for u in eight_short_uploads[:2])}
    assert tick(instance, store, None).run_requests == []  # nothing to ingest
    with pytest.raises(ValueError, match="'daily'"):
        migrate_partitioning(instance, store, "daily")


def test_a_batch_repeating_an_episode_of_another_batch_is_skipped(tmp_path, eight_short_uploads):
    # An episode id names one episode of the dataset: two batches holding it would replace each
    # other's copy on every run.
    store = batch_store(
        tmp_path, {"a": eight_short_uploads[:2], "b": eight_short_uploads[1:3], "c": eight_short_uploads[3:4]}
    )
    assert [r.partition_key for r in tick(dg.DagsterInstance.ephemeral(), store, None).run_requests] == ["a", "c"]


def test_a_batch_on_s3_lands_and_leaks_no_credentials(s3, s3_root, eight_short_uploads, monkeypatch):
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    uploads = f"{s3_root}/uploads"
    for upload in eight_short_uploads[:2]:
        s3.put_tree(upload, f"{uploads}/2026-12-01/{upload.name}")
    store = DatasetStore(root=f"{s3_root}/dataset", uploads_root=uploads)
    instance = dg.DagsterInstance.ephemeral()

    [request] = tick(instance, store, None).run_requests
    assert request.partition_key == "2026-12-01"
    result = materialize_batch(store, "2026-12-01", instance)
    assert result.success
    frames = metadata_of(result, "aligned_frames")
    assert json.loads(frames["episodes"]) == [u.name for u in eight_short_uploads[:2]]
    ds = robodata.open(store.root, storage_options=s3.storage_options)
    assert len(ds) == sum(upload_state_samples(str(u)) for u in eight_short_uploads[:2])
    entries = [dg.serialize_value(e) for run in instance.get_runs() for e in instance.all_logs(run.run_id)]
    assert entries and not [text for text in entries if s3.secret_key in text or s3.access_key in text]


def test_a_batch_released_by_a_stalled_folder_is_requested_though_its_files_are_old():
    from robodata.orchestration._upload_queue import UploadCursor, UploadSensorSettings, plan_tick
    from robodata.orchestration.defs.batches.batches import batch_listing
    from robodata.storage._upload_batches import UploadBatch
    from robodata.storage._uploads import IncompleteUpload, UploadInfo

    old = UploadBatch(
        "a", "u/a", [UploadInfo("e0", "u/a/e0", "f0", 1_000.0)], [IncompleteUpload("e1", "u/a/e1", 1_000.0)]
    )
    fresh = UploadBatch("b", "u/b", [UploadInfo("e2", "u/b/e2", "f2", 4_000.0)], [])
    settings = UploadSensorSettings(stalled_after_s=3_600.0, slack_s=900.0)
    waiting = batch_listing([old, fresh], now=4_000.0, stalled_after_s=settings.stalled_after_s)
    assert [u.episode_id for u in waiting.complete] == ["b"] and [u.episode_id for u in waiting.incomplete] == ["a/e1"]
    first = plan_tick(waiting, UploadCursor(), dict, [], 4_000.0, settings)
    assert [r.upload.episode_id for r in first.requests] == ["b"]

    released = batch_listing([old, fresh], now=4_700.0, stalled_after_s=settings.stalled_after_s)
    assert [(u.episode_id, u.last_write) for u in released.complete] == [("a", 4_600.0), ("b", 4_000.0)]
    second = plan_tick(released, first.cursor, dict, [], 4_700.0, settings)
    assert [r.upload.episode_id for r in second.requests] == ["a"]
    assert second.warnings and "a/e1" in second.warnings[0]


def test_register_uploads_adds_batches_without_runs_in_batch_mode(tmp_path, eight_short_uploads, monkeypatch, capsys):
    from robodata.cli import main
    from robodata.orchestration import prepare_dagster_home

    store = batch_store(tmp_path, {"2026-12-01": eight_short_uploads[:1], "2026-12-02": eight_short_uploads[1:2]})
    shutil.copytree(eight_short_uploads[2], Path(store.uploads_root) / eight_short_uploads[2].name)  # no batch
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(resources.PARTITIONING_ENV, "batch")
    prepare_dagster_home(tmp_path / "home")
    assert main(["register-uploads", "--dataset", store.root, "--uploads", store.uploads_root]) == 0
    assert capsys.readouterr().out.split() == ["2026-12-01", "2026-12-02"]
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions(upload_batches.name) == ["2026-12-01", "2026-12-02"]
        assert instance.get_dynamic_partitions("episodes") == [] and instance.get_runs() == []

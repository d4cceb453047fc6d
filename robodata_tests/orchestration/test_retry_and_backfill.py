"""The episode assets retry a storage hiccup, fail a bad upload at once and end a terminated run
CANCELED without retrying it; aligned_frames can be materialized (backfilled) on its own."""

import json
import logging
from pathlib import Path

import dagster as dg
import lance
from dagster._core.errors import DagsterExecutionInterruptedError

import robodata
from robodata.errors import StorageUnreachableError
from robodata.format._tables import gops_uri
from robodata.orchestration.defs.ingest import episodes
from robodata_tests.orchestration.conftest import (
    EPISODE_ASSETS,
    EPISODE_KEYS,
    materialize_episode,
    metadata_of,
    new_instance,
)


def _events(result: dg.ExecuteInProcessResult, kind: dg.DagsterEventType, step: str) -> list:
    return [e for e in result.all_events if e.event_type == kind and e.step_key == step]


def test_a_transient_storage_error_is_retried(store, monkeypatch):
    real, calls = episodes.stage_gops, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise StorageUnreachableError("s3://lab/ds/gops.lance: could not reach object storage while writing")
        return real(*args, **kwargs)

    monkeypatch.setattr(episodes, "stage_gops", flaky)
    result = materialize_episode(new_instance(store), store, EPISODE_KEYS[0], assets=EPISODE_ASSETS)
    assert result.success and len(calls) == 2
    assert len(_events(result, dg.DagsterEventType.STEP_UP_FOR_RETRY, "gop_blobs")) == 1
    assert robodata.open(store.root).episodes()["rows"].to_pylist() == [97]


def test_a_terminated_run_ends_canceled_without_a_step_retry(store, monkeypatch):
    """Terminate, as Dagster's run worker sees it: the run is marked CANCELING, then the step is
    interrupted (the worker's SIGTERM handler raises DagsterExecutionInterruptedError in it). The
    storage retry must not treat that as a hiccup: the run stops and ends CANCELED."""
    instance, calls = new_instance(store), []

    def terminated(*args, **kwargs):
        calls.append(1)
        [run] = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        instance.report_run_canceling(run)
        raise DagsterExecutionInterruptedError()

    monkeypatch.setattr(episodes, "stage_gops", terminated)
    result = materialize_episode(instance, store, EPISODE_KEYS[0], assets=EPISODE_ASSETS, raise_on_error=False)
    assert instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.CANCELED
    assert calls == [1]
    assert _events(result, dg.DagsterEventType.STEP_UP_FOR_RETRY, "gop_blobs") == []
    assert _events(result, dg.DagsterEventType.STEP_START, "aligned_frames") == []
    assert not Path(store.root, "frames.lance").exists()  # nothing committed


def test_a_bad_upload_fails_at_once_without_retries(store):
    meta_path = f"{store.uploads_root}/{EPISODE_KEYS[1]}/episode.json"
    with open(meta_path) as handle:
        meta = json.load(handle)
    meta["control_hz"] = 10  # the states are at 100 Hz
    with open(meta_path, "w") as handle:
        json.dump(meta, handle)
    instance = new_instance(store)
    result = materialize_episode(instance, store, EPISODE_KEYS[1], assets=EPISODE_ASSETS, raise_on_error=False)
    assert not result.success
    assert _events(result, dg.DagsterEventType.STEP_UP_FOR_RETRY, "raw_episodes") == []
    [failed] = _events(result, dg.DagsterEventType.STEP_FAILURE, "raw_episodes")
    assert "'control_hz' is 10 Hz" in failed.event_specific_data.error.message
    # The run's log gives the reason as one ERROR line before Dagster's "Steps failed" summary
    # and its stack: the step's last message.
    reason = failed.event_specific_data.user_failure_data.description
    logs = [e for e in instance.all_logs(result.run_id) if e.step_key == "raw_episodes"]
    last_message = [e for e in logs if not e.is_dagster_event][-1]
    assert (last_message.level, last_message.user_message) == (logging.ERROR, reason)
    assert "\n" not in reason and "'control_hz' is 10 Hz" in reason


def test_an_unexpected_error_fails_at_once_with_its_stack(store, monkeypatch):
    """Only a transient storage failure is retried: a bug is not, and keeps its traceback."""
    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise TypeError("stage_gops() got an unexpected keyword argument 'gop'")

    monkeypatch.setattr(episodes, "stage_gops", broken)
    result = materialize_episode(
        new_instance(store), store, EPISODE_KEYS[0], assets=EPISODE_ASSETS, raise_on_error=False
    )
    assert not result.success and calls == [1]
    assert _events(result, dg.DagsterEventType.STEP_UP_FOR_RETRY, "gop_blobs") == []
    [failed] = _events(result, dg.DagsterEventType.STEP_FAILURE, "gop_blobs")
    error = failed.event_specific_data.error
    assert error.cause.cls_name == "TypeError" and any("in broken" in frame for frame in error.cause.stack)


def test_aligned_frames_backfilled_alone_restages_without_new_gops(store):
    instance = new_instance(store)
    assert materialize_episode(instance, store, EPISODE_KEYS[0], assets=EPISODE_ASSETS).success
    gops_before = lance.dataset(gops_uri(store.root))
    before = robodata.open(store.root)

    # A backfill of aligned_frames only finds the episode stored from this upload: nothing written.
    skipped = materialize_episode(instance, store, EPISODE_KEYS[0], assets=[episodes.aligned_frames])
    assert skipped.success and "already_stored" in metadata_of(skipped, "aligned_frames")
    assert robodata.open(store.root).version == before.version

    # Forced: the staged layout is gone since the first commit, so the GOPs are staged again.
    force = {"ops": {"aligned_frames": {"config": {"force": True}}}}
    again = materialize_episode(instance, store, EPISODE_KEYS[0], assets=[episodes.aligned_frames], run_config=force)
    assert again.success
    meta = metadata_of(again, "aligned_frames")
    assert meta["restaged_gops"] is True and meta["gops_written"] == 0 and meta["rows_written"] == 97
    # No new GOPs: the identical ones are matched by ref_id (and, by the writer's design, stored
    # again in place, which keeps them safe from a concurrent garbage collection).
    assert lance.dataset(gops_uri(store.root)).count_rows() == gops_before.count_rows()
    after = robodata.open(store.root)
    assert after.version == before.version + 1
    assert after.to_table().equals(before.to_table())

    # An episode whose GOPs were never staged gets them now, and its rows.
    fresh = materialize_episode(instance, store, EPISODE_KEYS[1], assets=[episodes.aligned_frames])
    assert fresh.success and metadata_of(fresh, "aligned_frames")["gops_written"] == 24
    assert robodata.open(store.root).episodes()["episode_index"].to_pylist() == [0, 1]

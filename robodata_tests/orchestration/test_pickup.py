"""Uploads picked up within one tick: a re-uploaded (changed) folder is ingested on the next
sensor tick wherever its name sorts, on a local folder and on s3://; the same bytes copied again
are not a change; a bad upload gives exactly one failed run, with a one-line reason and nothing chained to it."""

import shutil
from pathlib import Path

import dagster as dg
import pytest

import robodata
from robodata.format._provenance import stored_uploads
from robodata.orchestration.defs.ingest.episodes import FINGERPRINT_TAG
from robodata.orchestration.defs.lineage import BAD_INPUT, FAILURE_KIND
from robodata.orchestration.defs.resources import DatasetStore
from robodata.sample_data import write_sample_uploads
from robodata_tests.orchestration.conftest import EPISODE_KEYS
from robodata_tests.orchestration.sensor_ticks import evaluate, keys_of, run_ingest

# The ticks here list the whole uploads root, as every tick does while one listing costs under the
# default 2 s budget: on a loaded machine a listing of moto can cost more, and the sensor then lists
# only the tail, which a re-upload of the first folder is not in (the tail's own tests set the cost).
WHOLE_LISTINGS = {"full_listing_budget_s": 3600.0}


def _tick_and_run(instance, store, cursor):
    """One sensor tick listing the whole root, then each requested run as the daemon would."""
    tick = evaluate(instance, store, cursor, **WHOLE_LISTINGS)
    results = {r.partition_key: run_ingest(instance, store, r) for r in tick.run_requests}
    return tick, results


def _put(where: str, source: Path, dest: str, s3=None) -> None:
    """Upload ``source``'s files to ``dest``, episode.json last (as the upload format asks)."""
    if where == "s3":
        s3.put_tree(source, dest)
        return
    Path(dest).mkdir(parents=True, exist_ok=True)
    for name in sorted(p.name for p in source.iterdir() if p.name != "episode.json") + ["episode.json"]:
        shutil.copyfile(source / name, Path(dest) / name)  # new file times, whatever the bytes


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_reupload_is_ingested_on_the_next_tick(where, request, short_uploads, tmp_path, monkeypatch):
    s3 = request.getfixturevalue("s3") if where == "s3" else None
    for name, value in (s3.environ if s3 else {}).items():
        monkeypatch.setenv(name, value)  # the store's credentials come from the environment only
    base = s3.fresh_uri("pickup") if s3 else str(tmp_path)
    store = DatasetStore(root=f"{base}/dataset", uploads_root=f"{base}/uploads")
    options = s3.storage_options if s3 else None
    keys = EPISODE_KEYS[:2]  # two uploads: the first re-uploaded, the other left as it is
    for upload in short_uploads[:2]:
        _put(where, upload, f"{store.uploads_root}/{upload.name}", s3)
    instance = dg.DagsterInstance.ephemeral()

    first, results = _tick_and_run(instance, store, None)
    assert keys_of(first) == keys and all(r.success for r in results.values())
    idle, _ = _tick_and_run(instance, store, first.cursor)
    assert idle.run_requests == []
    before = stored_uploads(store.root, storage_options=options)

    # The first folder (sorting before every other) re-uploaded with other content.
    [fixed] = write_sample_uploads(tmp_path / "fixed", episodes=1, seed=99, seconds=1.0)
    _put(where, fixed, f"{store.uploads_root}/{keys[0]}", s3)
    redo, results = _tick_and_run(instance, store, idle.cursor)
    assert keys_of(redo) == [keys[0]] and results[keys[0]].success
    after = stored_uploads(store.root, storage_options=options)
    assert after[keys[0]].fingerprint == redo.run_requests[0].tags[FINGERPRINT_TAG]
    assert after[keys[0]].fingerprint != before[keys[0]].fingerprint
    assert {k: after[k] for k in keys[1:]} == {k: before[k] for k in keys[1:]}
    assert robodata.open(store.root, storage_options=options).episodes()["rows"].to_pylist() == [97, 97]

    # The same bytes copied again (new file times, on S3 new LastModified): not a change.
    _put(where, short_uploads[1], f"{store.uploads_root}/{keys[1]}", s3)
    same, _ = _tick_and_run(instance, store, redo.cursor)
    assert same.run_requests == []


def test_identical_bytes_have_one_fingerprint_whatever_their_file_times(short_uploads, tmp_path):
    from robodata.storage._uploads import upload_fingerprint

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(short_uploads[0], a)  # copy2: the times kept
    _put("local", short_uploads[0], str(b))  # copyfile: new times
    assert upload_fingerprint(str(a)) == upload_fingerprint(str(b))
    states = b / "states.parquet"
    data = bytearray(states.read_bytes())
    data[-100] ^= 1  # same size, one bit changed
    states.write_bytes(bytes(data))
    assert upload_fingerprint(str(a)) != upload_fingerprint(str(b))


def test_a_bad_upload_gives_exactly_one_failed_run_and_its_fix_is_ingested_next_tick(store):
    video = Path(store.uploads_root) / EPISODE_KEYS[1] / "top.mp4"
    good = video.read_bytes()
    video.write_bytes(good[: len(good) // 3])  # truncated in transfer
    instance = dg.DagsterInstance.ephemeral()
    cursor = None
    for _ in range(4):
        tick, _ = _tick_and_run(instance, store, cursor)
        cursor = tick.cursor
    runs = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": EPISODE_KEYS[1]}))
    assert [run.status for run in runs] == [dg.DagsterRunStatus.FAILURE]
    assert robodata.open(store.root).episodes()["episode_index"].to_pylist() == [0, 2]

    [failure] = instance.all_logs(runs[0].run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    data = failure.dagster_event.step_failure_data
    assert data.user_failure_data.metadata[FAILURE_KIND].value == BAD_INPUT
    reason = data.user_failure_data.description
    assert "\n" not in reason and "top.mp4" in reason
    # Dagster's public Failure: its message is the reason (after the class name), with nothing
    # chained to it (the library error is raised `from None`).
    one_line = f"{dg.Failure.__module__}.Failure: {reason}\n"
    assert (data.error.message, data.error.cls_name, data.error.cause) == (one_line, "Failure", None)
    # The run's summary (its failure event, which the UI and CLI show) is that one line too.
    [run_failure] = instance.all_logs(runs[0].run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    summary = run_failure.dagster_event.event_specific_data.error
    assert (summary.message, summary.cls_name, summary.cause) == (one_line, "Failure", None)
    assert instance.all_logs(runs[0].run_id, of_type=dg.DagsterEventType.STEP_UP_FOR_RETRY) == []

    video.write_bytes(good)  # the upload fixed: the next tick ingests it
    fixed, results = _tick_and_run(instance, store, cursor)
    assert keys_of(fixed) == [EPISODE_KEYS[1]] and results[EPISODE_KEYS[1]].success
    assert robodata.open(store.root).episodes()["episode_index"].to_pylist() == [0, 1, 2]

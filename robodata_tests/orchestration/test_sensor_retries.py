"""upload_sensor and runs that fail: a lost run is retried up to max_attempts, a run Dagster's run
retries will retry is left to its retry (the chain counted once), a run that failed on bad
input is given up at once, an upload is done only when its run succeeded, and a run never
heard of is requested again after retry_after_s."""

import json

import dagster as dg

from robodata.orchestration._upload_queue import RunOutcome, UploadCursor, UploadSensorSettings, plan_tick
from robodata.orchestration.defs.ingest.episodes import FINGERPRINT_TAG, aligned_frames, gop_blobs, raw_episodes
from robodata.orchestration.defs.ingest.jobs import ingest_episode_job
from robodata.orchestration.defs.ingest.sensor import ATTEMPT_TAG
from robodata.orchestration.defs.resources import DatasetStore
from robodata.storage._uploads import UploadListing
from robodata_tests.orchestration.conftest import EPISODE_KEYS
from robodata_tests.orchestration.sensor_ticks import evaluate, keys_of, run_ingest, upload


def lost_run(
    instance, store: DatasetStore, request: dg.RunRequest, retry_of: dg.DagsterRun | None = None
) -> dg.DagsterRun:
    """A run of the request whose worker died: run monitoring fails it, no step failed. With
    ``retry_of``, the run Dagster's run retries started for that failed run (its tags, its group)."""
    job = dg.Definitions(
        assets=[raw_episodes, gop_blobs, aligned_frames], jobs=[ingest_episode_job], resources={"store": store}
    ).resolve_job_def(ingest_episode_job.name)
    tags = {**request.tags, "dagster/partition": request.partition_key}
    if retry_of is not None:
        tags.update(retry_tags(retry_of))
    run = instance.create_run_for_job(
        job_def=job,
        tags=tags,
        root_run_id=tags.get("dagster/root_run_id"),
        parent_run_id=tags.get("dagster/parent_run_id"),
    )
    instance.report_run_failed(run, message="run worker lost")
    return instance.get_run_by_id(run.run_id)


def retry_tags(parent: dg.DagsterRun) -> dict[str, str]:
    """The run-group tags Dagster's run retries give the retry of ``parent`` (its tags are copied)."""
    return {
        "dagster/root_run_id": parent.root_run_id or parent.run_id,
        "dagster/parent_run_id": parent.run_id,
        "dagster/retry_number": str(int(parent.tags.get("dagster/retry_number", "0")) + 1),
    }


def test_sensor_retries_a_lost_run_and_gives_up_after_max_attempts(store):
    instance = dg.DagsterInstance.ephemeral()
    cursor, attempts = None, []
    for _ in range(3):
        tick = evaluate(instance, store, cursor, max_attempts=2)
        cursor = tick.cursor
        attempts.append(sorted((r.partition_key, r.tags[ATTEMPT_TAG]) for r in tick.run_requests))
        for request in tick.run_requests:
            if request.partition_key == EPISODE_KEYS[0]:
                lost_run(instance, store, request)
    assert attempts == [[(k, "1") for k in EPISODE_KEYS], [(EPISODE_KEYS[0], "2")], []]
    assert EPISODE_KEYS[0] in json.loads(cursor)["failed"]  # given up until the upload changes
    assert set(json.loads(cursor)["pending"]) == set(EPISODE_KEYS[1:])  # not finished: not done


def test_sensor_leaves_a_run_that_dagster_retries_to_its_retry_and_counts_the_chain_once(store):
    """Run retries on (as every shipped dagster.yaml has them): a failed run tagged
    dagster/will_retry=true is not the attempt's outcome; the retry's is, once."""
    settings = {"run_retries": {"enabled": True, "max_retries": 1}}
    with dg.DagsterInstance.ephemeral(settings=settings) as instance:
        first = evaluate(instance, store, None)
        [lost, landed] = [r for r in first.run_requests if r.partition_key in EPISODE_KEYS[:2]]
        lost_root = lost_run(instance, store, lost)
        landed_root = lost_run(instance, store, landed)
        assert lost_root.tags["dagster/will_retry"] == landed_root.tags["dagster/will_retry"] == "true"
        waiting = evaluate(instance, store, first.cursor)
        assert waiting.run_requests == []  # the retry daemon retries them: no attempt 2 beside it
        assert json.loads(waiting.cursor)["pending"][lost.partition_key][1] == 1

        # The retries: one lost again (Dagster's last retry: will_retry=false), one succeeds.
        assert lost_run(instance, store, lost, retry_of=lost_root).tags["dagster/will_retry"] == "false"
        retried = dg.RunRequest(
            partition_key=landed.partition_key,
            tags={**landed.tags, **retry_tags(landed_root)},
        )
        assert run_ingest(instance, store, retried).success
        settled = evaluate(instance, store, waiting.cursor)
        # The lost chain counts as one failed attempt: attempt 2, once; the landed one is done.
        assert [(r.partition_key, r.tags[ATTEMPT_TAG]) for r in settled.run_requests] == [(lost.partition_key, "2")]
        pending = json.loads(settled.cursor)["pending"]
        assert landed.partition_key not in pending and pending[lost.partition_key][1] == 2
        again = evaluate(instance, store, settled.cursor)  # the same outcomes seen again (a minute back)
        assert again.run_requests == [] and json.loads(again.cursor)["pending"][lost.partition_key][1] == 2


def test_sensor_gives_up_at_once_on_a_run_that_failed_on_bad_input(store, tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    broken = DatasetStore(root=store.root, uploads_root=str(tmp_path / "nowhere"))  # no such upload
    first = evaluate(instance, store, None, max_attempts=3)
    [request] = [r for r in first.run_requests if r.partition_key == EPISODE_KEYS[0]]
    assert not run_ingest(instance, broken, request).success
    second = evaluate(instance, store, first.cursor, max_attempts=3)
    assert second.run_requests == []
    assert EPISODE_KEYS[0] in json.loads(second.cursor)["failed"]


def test_sensor_marks_an_upload_done_only_when_its_run_succeeded(store):
    instance = dg.DagsterInstance.ephemeral()
    first = evaluate(instance, store, None, max_in_flight=1)
    [request] = first.run_requests
    assert json.loads(first.cursor)["pending"][request.partition_key][:2] == [request.tags[FINGERPRINT_TAG], 1]
    assert evaluate(instance, store, first.cursor, max_in_flight=1).run_requests == []  # still running: no room
    assert run_ingest(instance, store, request).success  # stores the upload's fingerprint with the episode
    second = evaluate(instance, store, first.cursor, max_in_flight=1)
    assert request.partition_key not in json.loads(second.cursor)["pending"]
    assert keys_of(second) == [EPISODE_KEYS[1]]


def test_a_run_never_heard_of_is_requested_again_after_retry_after():
    listing = UploadListing([upload("a")], [])
    settings = UploadSensorSettings(retry_after_s=600)
    first = plan_tick(listing, UploadCursor(), dict, [], now=2000, settings=settings)
    quiet = plan_tick(listing, first.cursor, dict, [], now=2500, settings=settings)
    late = plan_tick(listing, quiet.cursor, dict, [], now=2700, settings=settings)
    assert [(r.upload.episode_id, r.attempt) for r in first.requests] == [("a", 1)]
    assert quiet.requests == [] and [(r.upload.episode_id, r.attempt) for r in late.requests] == [("a", 2)]
    # An outcome of the earlier attempt does not count against the new one.
    stale = plan_tick(listing, late.cursor, dict, [RunOutcome("a", "f", 1, True)], now=2800, settings=settings)
    assert stale.cursor.pending["a"].attempt == 2

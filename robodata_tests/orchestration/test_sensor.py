"""upload_sensor: new, repeated, incomplete, changed, already-ingested and failed uploads, the
per-tick cap, the bounded cursor, and the single listing behind each tick."""

import json
import os
import re
import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

from robodata.format._provenance import StoredUpload
from robodata.orchestration._upload_queue import (
    RunOutcome,
    UploadCursor,
    UploadSensorSettings,
    listing_start,
    plan_tick,
)
from robodata.orchestration.defs.ingest import sensor as sensors
from robodata.orchestration.defs.ingest.episodes import (
    FINGERPRINT_TAG,
    aligned_frames,
    episode_partitions,
    gop_blobs,
    raw_episodes,
)
from robodata.orchestration.defs.ingest.jobs import ingest_episode_job
from robodata.orchestration.defs.ingest.sensor import ATTEMPT_TAG, upload_sensor
from robodata.orchestration.defs.resources import DatasetStore
from robodata.storage import fsspec_filesystem
from robodata.storage._uploads import (
    IncompleteUpload,
    UploadInfo,
    UploadListing,
    _fingerprint,
    folder_sorts_after,
    list_complete_uploads,
    scan_uploads,
)
from robodata_tests.orchestration.conftest import EPISODE_KEYS


def evaluate(instance, store, cursor, *, sensor=upload_sensor, **settings):
    """One tick of ``sensor``, applying its partition requests as the daemon would."""
    resources = {"store": store, "upload_sensor_settings": UploadSensorSettings(**settings)}
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources)
    result = sensor(context)
    for request in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def keys_of(result) -> list[str]:
    return [r.partition_key for r in result.run_requests]


def stored_as(monkeypatch, fingerprints: dict[str, str]) -> None:
    """Make the dataset report these uploads as ingested (the fingerprint stored with an episode)."""
    stored = {k: StoredUpload(k, i, fp, f"uploads/{k}") for i, (k, fp) in enumerate(fingerprints.items())}
    monkeypatch.setattr(sensors, "stored_uploads", lambda root, **kwargs: stored)


def test_sensor_requests_each_upload_once_until_it_changes(store):
    instance = dg.DagsterInstance.ephemeral()
    uploads = Path(store.uploads_root)
    pending = uploads / "episode_000009"
    shutil.copytree(uploads / EPISODE_KEYS[0], pending)
    (pending / "episode.json").unlink()  # still uploading: episode.json comes last

    first = evaluate(instance, store, None)
    assert keys_of(first) == EPISODE_KEYS
    assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [EPISODE_KEYS]
    assert instance.get_dynamic_partitions(episode_partitions.name) == EPISODE_KEYS
    assert upload_sensor.job_name == "ingest_episode"
    listed = {u.episode_id: u.fingerprint for u in list_complete_uploads(store.uploads_root)}
    assert [r.tags[FINGERPRINT_TAG] for r in first.run_requests] == [listed[k] for k in EPISODE_KEYS]
    assert [r.tags[ATTEMPT_TAG] for r in first.run_requests] == ["1"] * 3

    repeated = evaluate(instance, store, first.cursor)
    assert repeated.run_requests == [] and repeated.dynamic_partitions_requests == []

    shutil.copyfile(uploads / EPISODE_KEYS[0] / "episode.json", pending / "episode.json")
    completed = evaluate(instance, store, repeated.cursor)
    assert keys_of(completed) == ["episode_000009"]
    assert [list(r.partition_keys) for r in completed.dynamic_partitions_requests] == [["episode_000009"]]

    states = uploads / EPISODE_KEYS[1] / "states.parquet"
    states.write_bytes(states.read_bytes() + b"\0")  # a re-upload: new bytes, new size
    os.utime(states, (1, 1))  # with an old mtime, as `cp -p` or `rsync -a` leave it
    changed = evaluate(instance, store, completed.cursor)
    [request] = changed.run_requests
    assert request.partition_key == EPISODE_KEYS[1]
    assert request.run_key != first.run_requests[1].run_key
    assert changed.dynamic_partitions_requests == []  # the partition already exists
    assert evaluate(instance, store, changed.cursor).run_requests == []


def test_sensor_skips_uploads_the_dataset_already_holds(store, monkeypatch):
    """Ingested by the CLI, the demo or a backfill: the stored fingerprint matches, no run."""
    instance = dg.DagsterInstance.ephemeral()
    listed = {u.episode_id: u.fingerprint for u in list_complete_uploads(store.uploads_root)}
    stored_as(monkeypatch, {EPISODE_KEYS[0]: listed[EPISODE_KEYS[0]], EPISODE_KEYS[1]: "an-older-upload"})
    result = evaluate(instance, store, None)
    assert keys_of(result) == EPISODE_KEYS[1:]  # episode 1's stored copy is of another upload version
    # The already-ingested upload still gets its partition, so the UI shows it.
    assert instance.get_dynamic_partitions(episode_partitions.name) == EPISODE_KEYS


def test_sensor_skips_an_upload_the_cli_ingested(store):
    import robodata

    robodata.ingest_episode(str(Path(store.uploads_root) / EPISODE_KEYS[0]), store.root)
    assert keys_of(evaluate(dg.DagsterInstance.ephemeral(), store, None)) == EPISODE_KEYS[1:]


def test_sensor_ignores_an_old_format_cursor(store, monkeypatch):
    listed = {u.episode_id: u.fingerprint for u in list_complete_uploads(store.uploads_root)}
    stored_as(monkeypatch, listed)
    old_cursor = json.dumps(dict.fromkeys(EPISODE_KEYS, "0123456789abcdef"))
    assert evaluate(dg.DagsterInstance.ephemeral(), store, old_cursor).run_requests == []


def test_sensor_caps_run_requests_per_tick_and_takes_the_rest_next_tick(store):
    instance = dg.DagsterInstance.ephemeral()
    first = evaluate(instance, store, None, max_requests_per_tick=2)
    second = evaluate(instance, store, first.cursor, max_requests_per_tick=2)
    third = evaluate(instance, store, second.cursor, max_requests_per_tick=2)
    assert len(first.run_requests) == 2 and len(second.run_requests) == 1 and third.run_requests == []
    assert sorted(keys_of(first) + keys_of(second)) == EPISODE_KEYS


def run_ingest(instance, store: DatasetStore, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    """Run the sensor's request as the daemon would: the ingest job, the request's tags."""
    job = dg.Definitions(
        assets=[raw_episodes, gop_blobs, aligned_frames], jobs=[ingest_episode_job], resources={"store": store}
    ).resolve_job_def(ingest_episode_job.name)
    return job.execute_in_process(
        partition_key=request.partition_key, instance=instance, tags=request.tags, raise_on_error=False
    )


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


def upload(episode_id: str, fingerprint: str = "f", last_write: float = 1000.0) -> UploadInfo:
    return UploadInfo(episode_id, f"s3://b/uploads/{episode_id}", fingerprint, last_write)


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


def test_an_idle_tick_reads_nothing_but_the_listing():
    listing = UploadListing([upload(f"e{i}") for i in range(5)], [])
    reads = []

    def stored():
        reads.append(1)
        return {f"e{i}": "f" for i in range(5)}

    first = plan_tick(listing, UploadCursor(), stored, [], now=5000, settings=UploadSensorSettings())
    idle = plan_tick(listing, first.cursor, stored, [], now=5030, settings=UploadSensorSettings())
    assert first.requests == [] and first.known == [f"e{i}" for i in range(5)]
    assert idle.requests == [] and not idle.read_dataset and len(reads) == 1


def test_the_cursor_stays_small_at_ten_thousand_uploads():
    listing = UploadListing([upload(f"episode_{i:06d}", f"{i:016x}", 1000.0 + i) for i in range(10_000)], [])
    settings = UploadSensorSettings()
    stored: dict[str, str] = {}
    tick = plan_tick(listing, UploadCursor(), lambda: stored, [], now=20_000, settings=settings)
    sizes = [len(tick.cursor.dumps())]
    while tick.requests:  # every requested run succeeds before the next tick
        outcomes = [RunOutcome(r.upload.episode_id, r.upload.fingerprint, r.attempt, True) for r in tick.requests]
        stored.update({r.upload.episode_id: r.upload.fingerprint for r in tick.requests})
        tick = plan_tick(listing, tick.cursor, lambda: stored, outcomes, now=20_030, settings=settings)
        sizes.append(len(tick.cursor.dumps()))
    assert stored == {u.episode_id: u.fingerprint for u in listing.complete}
    assert len(sizes) == 101 and max(sizes) < 64 * 1024
    assert tick.cursor.pending == {} and tick.cursor.hwm == 1000.0 + 9_999
    assert tick.cursor.after == "episode_009999"  # the next tail listing starts after the last upload


def test_uploads_written_before_the_high_water_mark_are_not_looked_at_again():
    """An episode deleted from the dataset does not come back because another upload arrived."""
    settings = UploadSensorSettings(slack_s=60)
    both = {"a": "f", "b": "f"}
    listing = [upload("a", last_write=1000), upload("b", last_write=2000)]
    old = plan_tick(UploadListing(listing, []), UploadCursor(), lambda: both, [], now=2100, settings=settings)
    newer = UploadListing([*listing, upload("c", last_write=3000)], [])
    tick = plan_tick(newer, old.cursor, lambda: {"b": "f"}, [], now=3100, settings=settings)  # "a" deleted
    assert old.requests == [] and [r.upload.episode_id for r in tick.requests] == ["c"]


def test_a_folder_without_episode_json_for_too_long_is_warned_about():
    listing = UploadListing(
        [],
        [
            IncompleteUpload("late", "s3://b/uploads/late", 1000.0),
            IncompleteUpload("busy", "s3://b/uploads/busy", 4000.0),
        ],
    )
    settings = UploadSensorSettings(stalled_after_s=3600)
    assert plan_tick(listing, UploadCursor(), dict, [], now=4500, settings=settings).warnings == []
    [warning] = plan_tick(listing, UploadCursor(), dict, [], now=5000, settings=settings).warnings
    assert warning == "1 upload folder(s) without episode.json for over 1 h: late"


def test_sensor_warns_on_the_tick_about_a_stalled_upload(store, capfd):
    stalled = Path(store.uploads_root) / "episode_000042"
    stalled.mkdir()
    (stalled / "states.parquet").write_bytes(b"half")
    evaluate(dg.DagsterInstance.ephemeral(), store, None, stalled_after_s=0)
    assert "WARNING - 1 upload folder(s) without episode.json for over 0 h: episode_000042" in capfd.readouterr().err


def test_sensor_skips_folders_that_are_not_episode_ids(store):
    instance = dg.DagsterInstance.ephemeral()
    bad = Path(store.uploads_root) / ".hidden upload"
    shutil.copytree(Path(store.uploads_root) / EPISODE_KEYS[0], bad)
    result = evaluate(instance, store, None)
    assert keys_of(result) == EPISODE_KEYS


def test_sensor_lists_the_tail_and_finds_an_out_of_order_upload_on_a_full_listing(store, monkeypatch):
    instance = dg.DagsterInstance.ephemeral()
    uploads = Path(store.uploads_root)
    stored_as(monkeypatch, {u.episode_id: u.fingerprint for u in list_complete_uploads(store.uploads_root)})
    first = evaluate(instance, store, None)
    assert first.run_requests == [] and json.loads(first.cursor)["after"] == EPISODE_KEYS[-1]
    shutil.copytree(uploads / EPISODE_KEYS[0], uploads / "episode_000009")  # sorts last: in the tail
    shutil.copytree(uploads / EPISODE_KEYS[0], uploads / f"{EPISODE_KEYS[0]}-b")  # sorts before the tail
    tail_only = {"full_listing_every_s": 600, "full_listing_budget_s": 0}  # as on a root too big to list each tick
    tail = evaluate(instance, store, first.cursor, **tail_only)
    assert keys_of(tail) == ["episode_000009"]
    assert evaluate(instance, store, tail.cursor, **tail_only).run_requests == []
    full = evaluate(instance, store, tail.cursor, full_listing_every_s=0, full_listing_budget_s=0)
    assert keys_of(full) == [f"{EPISODE_KEYS[0]}-b"]


def test_sensor_is_running_by_default():
    assert upload_sensor.default_status == dg.DefaultSensorStatus.RUNNING


@pytest.mark.parametrize("where", ["local", "s3"])
def test_one_listing_fingerprints_an_upload_as_listing_its_folder_does(where, request, short_uploads, tmp_path):
    if where == "s3":
        s3 = request.getfixturevalue("s3")
        root, options = s3.fresh_uri("fingerprint") + "/uploads", s3.storage_options
        for upload_dir in short_uploads:
            s3.put_tree(upload_dir, f"{root}/{upload_dir.name}")
    else:
        root, options = str(tmp_path / "uploads"), None
        for upload_dir in short_uploads:
            shutil.copytree(upload_dir, tmp_path / "uploads" / upload_dir.name)
    fs = fsspec_filesystem(root, options)
    fs.makedirs(f"{root}/{EPISODE_KEYS[0]}/extra", exist_ok=True)
    fs.pipe_file(f"{root}/{EPISODE_KEYS[0]}/extra/notes.txt", b"not part of the upload")
    fs.pipe_file(f"{root}/{EPISODE_KEYS[1]}/notes v1+2 & ü.txt", b"a name S3 lists url-encoded")
    listed = scan_uploads(root, options).complete
    assert [u.episode_id for u in listed] == EPISODE_KEYS
    for u in listed:
        assert u.fingerprint == _fingerprint(fs.ls(u.uri, detail=True), fs)


def test_a_tick_lists_an_s3_root_with_one_paginated_listing(s3):
    """1,100 objects: two pages of one ListObjectsV2 without a delimiter, not one per folder."""
    from concurrent.futures import ThreadPoolExecutor

    root = s3.fresh_uri("one-listing") + "/uploads"
    fs = fsspec_filesystem(root, s3.storage_options)
    names = [f"{root}/episode_{i:06d}/{name}" for i in range(550) for name in ("states.parquet", "episode.json")]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: fs.pipe_file(n, b"x"), names))
    mark = s3.mark()
    listing = scan_uploads(root, s3.storage_options)
    lists = [r for r in s3.requests(mark) if r.is_list]
    assert len(listing.complete) == 550 and len(s3.requests(mark)) == 2 == len(lists)
    assert not any(re.search(r"delimiter=[^&]", r.query) for r in lists)  # no delimiter: no per-folder listing

    # The tail after folder episode_000539: one request that starts after that folder's keys.
    fs.pipe_file(f"{root}/episode_000539-b/episode.json", b"x")  # "-" < "/": its keys sort before 539's
    mark = s3.mark()
    tail = scan_uploads(root, s3.storage_options, after="episode_000539")
    [request] = s3.requests(mark)
    assert request.is_list and "start-after=" in request.query
    assert [u.episode_id for u in tail.complete] == [f"episode_{i:06d}" for i in range(540, 550)]


class Lab:
    """An uploads folder and the sensor's decisions on it tick by tick (real listings, the
    tick's clock given): every requested run succeeds and stores its fingerprint before the
    next tick, unless the upload is in ``failing``."""

    def __init__(self, root: Path, **settings):
        self.root, self.settings = root, UploadSensorSettings(**settings)
        self.cursor, self.stored, self.outcomes, self.failing = UploadCursor(), {}, [], set()
        self.listed: list[str] = []
        root.mkdir(exist_ok=True)

    def upload(self, name: str, complete: bool = True, content: bytes = b"{}") -> None:
        (self.root / name).mkdir(exist_ok=True)
        (self.root / name / "states.parquet").write_bytes(content)
        if complete:
            (self.root / name / "episode.json").write_bytes(b"{}")

    def tick(self, now: float) -> list[str]:
        after = listing_start(self.cursor, now, self.settings)
        listing = scan_uploads(str(self.root), None, after)
        self.listed = [u.episode_id for u in listing.complete + listing.incomplete]
        plan = plan_tick(listing, self.cursor, lambda: dict(self.stored), self.outcomes, now, self.settings, after)
        self.cursor = plan.cursor
        self.outcomes = []
        for r in plan.requests:
            ok = r.upload.episode_id not in self.failing
            self.outcomes.append(RunOutcome(r.upload.episode_id, r.upload.fingerprint, r.attempt, ok))
            if ok:
                self.stored[r.upload.episode_id] = r.upload.fingerprint
        return [r.upload.episode_id for r in plan.requests]


def test_folder_order_is_the_order_s3_lists_keys_in():
    names = ["a", "a-b", "a.b", "a0", "a_b", "ab", "b"]
    keys = sorted(f"{n}/episode.json" for n in names)  # S3 returns keys in this (byte) order
    in_key_order = [k.split("/")[0] for k in keys]
    for i, after in enumerate(in_key_order):
        assert [n for n in names if folder_sorts_after(n, after)] == sorted(in_key_order[i + 1 :]), after
    assert all(folder_sorts_after(n, "") for n in names)


def test_idle_ticks_list_only_the_tail_and_a_new_upload_is_found_on_the_next_tick(tmp_path):
    lab = Lab(tmp_path / "uploads", full_listing_every_s=600, full_listing_budget_s=0)
    for i in range(5):
        lab.upload(f"episode_{i:06d}")
    now = time.time()
    assert lab.tick(now) == [f"episode_{i:06d}" for i in range(5)]
    assert lab.cursor.after == "" and lab.cursor.full_at == now  # in flight: still watched
    assert lab.tick(now + 30) == [] and lab.listed == [f"episode_{i:06d}" for i in range(5)]
    assert lab.cursor.after == "episode_000004"  # all five succeeded
    assert lab.tick(now + 60) == [] and lab.listed == []  # idle: the tail is empty
    lab.upload("episode_000005")
    assert lab.tick(now + 90) == ["episode_000005"] and lab.listed == ["episode_000005"]
    assert lab.tick(now + 120) == [] and lab.tick(now + 150) == [] and lab.listed == []
    assert lab.cursor.after == "episode_000005" and lab.cursor.full_at == now + 30  # no full listing yet


def test_an_out_of_order_or_changed_upload_is_found_by_the_next_full_listing(tmp_path):
    lab = Lab(tmp_path / "uploads", full_listing_every_s=600, full_listing_budget_s=0)
    for i in (0, 1, 3):
        lab.upload(f"episode_{i:06d}")
    now = time.time()
    lab.tick(now), lab.tick(now + 30)
    assert lab.cursor.after == "episode_000003"
    lab.upload("episode_000002")  # sorts before the mark
    lab.upload("episode_000001", content=b"re-uploaded")  # changed
    changed = {u.episode_id: u.fingerprint for u in list_complete_uploads(str(lab.root))}
    assert lab.tick(now + 60) == [] and lab.tick(now + 600) == []  # the tail does not see them
    assert sorted(lab.tick(now + 630)) == ["episode_000001", "episode_000002"]  # 600 s after the last full one
    assert lab.stored == changed
    assert lab.cursor.after == "episode_000000"  # watched until their runs succeed
    assert lab.tick(now + 660) == [] and lab.cursor.after == "episode_000003"
    assert lab.tick(now + 690) == [] and lab.listed == []


def test_a_folder_still_uploading_holds_the_tail_until_it_completes_or_stalls(tmp_path):
    lab = Lab(tmp_path / "uploads", full_listing_every_s=600, full_listing_budget_s=0, stalled_after_s=3600)
    lab.upload("episode_000000")
    lab.upload("episode_000001", complete=False)  # a slow upload: a later one completes first
    lab.upload("episode_000002")
    now = time.time()
    assert lab.tick(now) == ["episode_000000", "episode_000002"]
    lab.tick(now + 30)
    assert lab.cursor.after == "episode_000000"
    assert lab.tick(now + 45) == [] and sorted(lab.listed) == ["episode_000001", "episode_000002"]
    lab.upload("episode_000001")
    assert lab.tick(now + 60) == ["episode_000001"]  # found by the tail, no full listing needed
    lab.tick(now + 90)
    assert lab.cursor.after == "episode_000002"

    lab.upload("episode_000003", complete=False)
    lab.tick(now + 120)
    assert lab.cursor.after == "episode_000002"  # younger than stalled_after_s: still watched
    lab.tick(now + 3800)
    assert lab.cursor.after == "episode_000003"  # stalled: left to the full listings (and warned about)


def test_a_failing_upload_is_retried_from_the_tail_and_stays_given_up_after_the_mark_passes(tmp_path):
    lab = Lab(tmp_path / "uploads", full_listing_every_s=600, full_listing_budget_s=0, max_attempts=2)
    lab.upload("episode_000000")
    lab.upload("episode_000001")
    lab.failing.add("episode_000000")
    now = time.time()
    assert lab.tick(now) == ["episode_000000", "episode_000001"]
    assert lab.tick(now + 30) == ["episode_000000"]  # attempt 2
    assert lab.tick(now + 60) == [] and "episode_000000" in lab.cursor.failed
    lab.upload("episode_000002")
    assert lab.tick(now + 90) == ["episode_000002"] and lab.cursor.after == "episode_000001"
    assert lab.tick(now + 120) == [] and lab.cursor.after == "episode_000002"
    assert lab.tick(now + 150) == [] and lab.listed == []
    assert "episode_000000" in lab.cursor.failed  # not listed by the tail: still given up
    assert lab.tick(now + 700) == [] and lab.listed  # the full listing does not request it again either
    assert "episode_000000" in lab.cursor.failed


def test_a_version_two_cursor_keeps_its_runs_in_flight_and_lists_everything_next():
    v2 = {"v": 2, "hwm": 5.0, "window": "w", "checked_at": 1.0, "pending": {"a": ["f", 1, 1.0]}, "failed": {}}
    cursor = UploadCursor.loads(json.dumps(v2))
    assert cursor.pending["a"].fingerprint == "f" and cursor.hwm == 5.0
    assert listing_start(cursor, 2.0, UploadSensorSettings()) == ""
    assert UploadCursor.loads(cursor.dumps()) == cursor

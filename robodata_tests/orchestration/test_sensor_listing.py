"""The single listing behind each upload_sensor tick: one paginated listing fingerprints uploads
as listing each folder would, idle ticks list only the tail after the last upload, and a full
listing now and then finds out-of-order, changed and slow uploads."""

import json
import re
import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

from robodata.orchestration._upload_queue import (
    RunOutcome,
    UploadCursor,
    UploadSensorSettings,
    listing_start,
    plan_tick,
)
from robodata.storage import fsspec_filesystem
from robodata.storage._uploads import _fingerprint, folder_sorts_after, list_complete_uploads, scan_uploads
from robodata_tests.orchestration.conftest import EPISODE_KEYS
from robodata_tests.orchestration.sensor_ticks import evaluate, keys_of, stored_as


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

"""upload_sensor's bounded cursor: an idle tick reads nothing but the listing, the cursor stays
small at ten thousand uploads, uploads written before the high-water mark are not looked at
again, and a version-two cursor keeps its runs in flight."""

import json

from robodata.orchestration._upload_queue import (
    RunOutcome,
    UploadCursor,
    UploadSensorSettings,
    listing_start,
    plan_tick,
)
from robodata.storage._uploads import UploadListing
from robodata_tests.orchestration.sensor_ticks import upload


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


def test_a_version_two_cursor_keeps_its_runs_in_flight_and_lists_everything_next():
    v2 = {"v": 2, "hwm": 5.0, "window": "w", "checked_at": 1.0, "pending": {"a": ["f", 1, 1.0]}, "failed": {}}
    cursor = UploadCursor.loads(json.dumps(v2))
    assert cursor.pending["a"].fingerprint == "f" and cursor.hwm == 5.0
    assert listing_start(cursor, 2.0, UploadSensorSettings()) == ""
    assert UploadCursor.loads(cursor.dumps()) == cursor

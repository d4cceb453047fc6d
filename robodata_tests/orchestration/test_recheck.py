"""A retried or re-requested run re-checks the dataset first: an episode already stored from the
upload the run was asked for is not ingested again (the run succeeds saying so), and the sensor
does not request it again after a run that failed or was lost once the episode had landed."""

import dagster as dg
import lance

from robodata.format._tables import frames_uri, gops_uri
from robodata.orchestration._upload_queue import RunOutcome, UploadCursor, UploadSensorSettings, plan_tick
from robodata.orchestration.defs.ingest.episodes import FINGERPRINT_TAG
from robodata.orchestration.defs.ingest.sensor import ATTEMPT_TAG
from robodata.storage._uploads import UploadInfo, UploadListing, upload_fingerprint
from robodata_tests.orchestration.conftest import EPISODE_KEYS, metadata_of, new_instance
from robodata_tests.orchestration.sensor_ticks import run_ingest


def _versions(store) -> tuple[int, int]:
    return lance.dataset(frames_uri(store.root)).version, lance.dataset(gops_uri(store.root)).version


def test_a_retried_run_finds_its_episode_stored_and_writes_nothing(store):
    instance = new_instance(store)
    key = EPISODE_KEYS[0]
    fingerprint = upload_fingerprint(f"{store.uploads_root}/{key}")
    request = dg.RunRequest(partition_key=key, tags={FINGERPRINT_TAG: fingerprint, ATTEMPT_TAG: "1"})
    assert run_ingest(instance, store, request).success
    before = _versions(store)

    retried = run_ingest(instance, store, request)  # the same request again: a retry, a re-request
    assert retried.success
    assert _versions(store) == before  # not a single commit
    for asset in ("gop_blobs", "aligned_frames"):
        metadata = metadata_of(retried, asset)
        assert metadata["rows_written"] == 0
        assert (
            metadata["already_stored"]
            == f"{key} is already stored from this upload (fingerprint {fingerprint}): nothing written"
        )
    assert metadata_of(retried, "aligned_frames")["dagster/row_count"] == 97  # the episode's rows
    assert metadata_of(retried, "gop_blobs")["dagster/row_count"] == 24  # its GOPs: 3 cameras x 8 of G=4 (30 frames)

    # Asked for another version of the upload than the one stored: ingested.
    other = dg.RunRequest(partition_key=key, tags={FINGERPRINT_TAG: "another-upload", ATTEMPT_TAG: "1"})
    again = run_ingest(instance, store, other)
    assert again.success and metadata_of(again, "aligned_frames")["rows_written"] == 97
    assert _versions(store)[0] > before[0]


def test_a_failed_run_whose_episode_landed_is_not_requested_again():
    """A worker killed after the commit: the run is marked failed, the episode is stored."""
    upload = UploadInfo("episode_000000", "uploads/episode_000000", "f1", 1000.0)
    listing = UploadListing([upload], [])
    first = plan_tick(listing, UploadCursor(), dict, [], now=2000, settings=UploadSensorSettings())
    assert [r.upload.episode_id for r in first.requests] == ["episode_000000"]
    lost = [RunOutcome("episode_000000", "f1", 1, succeeded=False)]
    landed = plan_tick(
        listing, first.cursor, lambda: {"episode_000000": "f1"}, lost, now=2030, settings=UploadSensorSettings()
    )
    assert landed.requests == [] and landed.cursor.pending == {} and landed.known == ["episode_000000"]
    not_landed = plan_tick(listing, first.cursor, dict, lost, now=2030, settings=UploadSensorSettings())
    assert [(r.upload.episode_id, r.attempt) for r in not_landed.requests] == [("episode_000000", 2)]

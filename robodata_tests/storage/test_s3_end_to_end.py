"""The whole library on an s3:// dataset root (moto's S3 server), by the same code paths as a local
directory: uploads read from s3://, ingest, reads, windows, edits, tags and time travel."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import robodata
from robodata._summary import dataset_summary
from robodata.storage._uploads import list_complete_uploads

SCALARS = ["episode_index", "frame_index", "timestamp_ns", "observation_state", "action", "source"]


def test_s3_dataset_matches_the_local_one(s3, s3_root, eight_short_uploads, tmp_path):
    options = s3.storage_options
    uploads = f"{s3_root}/uploads"
    for upload in eight_short_uploads[:2]:
        s3.put_tree(upload, f"{uploads}/{upload.name}")
    # A third upload still in flight (no episode.json yet) must not be picked up.
    s3.put_tree(eight_short_uploads[2], f"{uploads}/{eight_short_uploads[2].name}", skip=("episode.json",))
    listed = list_complete_uploads(uploads, options)
    assert [u.episode_id for u in listed] == [u.name for u in eight_short_uploads[:2]]
    # The same two episodes in a local directory: what the s3:// dataset must match.
    local_root = str(tmp_path / "local")
    for upload in eight_short_uploads[:2]:
        robodata.ingest_episode(str(upload), local_root)

    root = f"{s3_root}/ds"
    for upload in listed:
        robodata.ingest_episode(upload.uri, root, storage_options=options, uploads_root=uploads)
    ds = robodata.open(root, storage_options=options)
    local = robodata.open(local_root)
    n = len(ds)
    assert ds.episodes()["episode_index"].to_pylist() == [0, 1]
    assert ds.to_table(SCALARS).equals(local.to_table(SCALARS))

    # Encoding is deterministic, so the GOPs (content-addressed ids) are the local ones.
    assert _ref_ids(ds) == _ref_ids(local)
    for i in (0, 17, n - 1):
        item, expected = ds[i], local[i]
        for column in ds.image_columns:
            np.testing.assert_array_equal(item[column], expected[column])
    picks = [3, n // 2, n // 2 + 1, n - 1, 4]
    batch = ds.get_frames(picks)
    expected = local.get_frames(picks)
    for camera in ds.cameras:
        np.testing.assert_array_equal(batch[camera], expected[camera])
    windows = ds.get_windows([0, n - 1], range(-2, 2), cameras="wrist_left", columns="action")
    local_windows = local.get_windows([0, n - 1], range(-2, 2), cameras="wrist_left", columns="action")
    np.testing.assert_array_equal(windows.data["wrist_left"], local_windows.data["wrist_left"])
    np.testing.assert_array_equal(windows.columns["action"], local_windows.columns["action"])
    np.testing.assert_array_equal(windows.is_pad, local_windows.is_pad)

    # Edits, tags and time travel.
    before = ds.version
    assert ds.tag("before-edits") == before
    labels = pa.table({"episode_index": [1, 1], "frame_index": [0, 5], "success": [True, False]})
    labelled = robodata.add_annotations(root, labels, storage_options=options)
    deleted = robodata.delete_episodes(root, [0], storage_options=options)
    assert before < labelled < deleted
    latest = robodata.open(root, storage_options=options)
    assert latest.version == deleted
    assert latest.episodes()["episode_index"].to_pylist() == [1]
    success = latest.to_table(["frame_index", "success"], filter="success IS NOT NULL").to_pylist()
    assert success == [{"frame_index": 0, "success": True}, {"frame_index": 5, "success": False}]
    old = robodata.open(root, version="before-edits", storage_options=options)
    assert (old.version, len(old)) == (before, n)
    np.testing.assert_array_equal(old[17]["observation_images_top"], local[17]["observation_images_top"])
    assert latest.checkout(labelled).to_table(["success"]).num_rows == n
    assert latest.tags == {"before-edits": before}

    summary = dataset_summary(root, storage_options=options)
    assert (summary["episodes"], summary["version"], summary["gop_rows"]) == (1, deleted, len(_ref_ids(ds)))
    assert summary["gops_bytes_on_disk"] > 0


def _ref_ids(ds) -> set[int]:
    return {
        ref
        for camera in ds.cameras
        for ref in ds.to_table([f"observation_images_{camera}_ref_id"]).column(0).to_pylist()
    }

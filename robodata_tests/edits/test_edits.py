"""Append, delete and annotate never touch a gops.lance data file; old versions still read."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import robodata
from robodata.format._tables import gops_uri, open_table


def _gops_data_files(root: str) -> dict[str, str]:
    folder = Path(root) / "gops.lance" / "data"
    files = [p for p in folder.rglob("*") if p.is_file()]  # blob v2 puts large blobs in sub-folders
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _frames(root, version=None):
    ds = robodata.open(root, version=version)
    return ds.get_frames([0, 77, len(ds) - 1]).data


def test_delete_leaves_video_untouched_and_old_version_readable(dataset_copy):
    files = _gops_data_files(dataset_copy)
    before = robodata.open(dataset_copy)
    frames = _frames(dataset_copy)
    version = robodata.delete_episodes(dataset_copy, [1])
    assert version == before.version + 1
    after = robodata.open(dataset_copy)
    assert after.episodes()["episode_index"].to_pylist() == [0, 2]
    assert _gops_data_files(dataset_copy) == files
    old = _frames(dataset_copy, before.version)
    for column in frames:
        np.testing.assert_array_equal(old[column], frames[column])
    with pytest.raises(ValueError, match="episode_index"):
        robodata.delete_episodes(dataset_copy, ["1; DROP TABLE frames"])


def test_append_adds_gop_files_and_changes_none(dataset_copy, sample_uploads, tmp_path):
    from robodata.sample_data import write_sample_uploads

    files = _gops_data_files(dataset_copy)
    frames = _frames(dataset_copy)
    old_version = robodata.open(dataset_copy).version
    [upload] = write_sample_uploads(tmp_path / "more", episodes=1, seconds=1.0, start_index=3)
    robodata.ingest_episode(str(upload), dataset_copy)
    now = _gops_data_files(dataset_copy)
    assert {k: now[k] for k in files} == files and len(now) > len(files)  # new files only
    assert robodata.open(dataset_copy).episodes()["episode_index"].to_pylist() == [0, 1, 2, 3]
    old = _frames(dataset_copy, old_version)
    for column in frames:
        np.testing.assert_array_equal(old[column], frames[column])


def test_annotations_add_and_correct_columns_without_touching_video(dataset_copy):
    files = _gops_data_files(dataset_copy)
    start = robodata.open(dataset_copy).version
    labels = pa.table(
        {
            "episode_index": [0, 0, 2],
            "frame_index": [0, 5, 7],
            "success": [True, False, True],
            "grasp_score": [0.5, 0.25, 1.0],
        }
    )
    version = robodata.add_annotations(dataset_copy, labels)
    assert version == start + 1
    table = robodata.open(dataset_copy).to_table(columns=["episode_index", "frame_index", "success", "grasp_score"])
    by_key = {(r["episode_index"], r["frame_index"]): r for r in table.to_pylist()}
    assert by_key[(0, 5)]["success"] is False and by_key[(2, 7)]["grasp_score"] == 1.0
    assert by_key[(1, 0)]["success"] is None
    correction = pa.table({"episode_index": [0], "frame_index": [5], "success": [True]})
    assert robodata.add_annotations(dataset_copy, correction) == start + 2
    table = robodata.open(dataset_copy).to_table(columns=["episode_index", "frame_index", "success"])
    rows = {(r["episode_index"], r["frame_index"]): r["success"] for r in table.to_pylist()}
    assert rows[(0, 5)] is True and rows[(0, 0)] is True and rows[(1, 0)] is None
    assert _gops_data_files(dataset_copy) == files
    assert "success" not in robodata.open(dataset_copy, version=start).columns
    with pytest.raises(ValueError, match="cannot overwrite"):
        robodata.add_annotations(
            dataset_copy, pa.table({"episode_index": [0], "frame_index": [0], "observation_images_top_ref_id": [1]})
        )


def test_garbage_collection_removes_only_unreferenced_gops(dataset_copy):
    gops = open_table(gops_uri(dataset_copy))
    total = gops.count_rows()
    assert robodata.collect_garbage(dataset_copy).unreferenced == 0
    robodata.delete_episodes(dataset_copy, [2])
    # Episode 2 is still referenced by older versions, so nothing goes yet.
    assert robodata.collect_garbage(dataset_copy).unreferenced == 0
    ds = robodata.open(dataset_copy)
    ds.lance_dataset.cleanup_old_versions(older_than=__import__("datetime").timedelta(0))
    report = robodata.collect_garbage(dataset_copy)
    per_episode = total // 3
    assert report.deleted == per_episode
    assert open_table(gops_uri(dataset_copy)).count_rows() == total - per_episode
    frames = robodata.open(dataset_copy)
    frames.get_frames(list(range(len(frames))))

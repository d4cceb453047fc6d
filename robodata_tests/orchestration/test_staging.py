"""The two-step ingest the episode assets use: stage GOPs, later commit rows."""

from pathlib import Path

import pytest

import robodata
from robodata.ingest import read_upload
from robodata.ingest._two_step import commit_staged_frames, load_staged_gops, stage_gops, staged_gops_uri


def test_staged_gops_commit_in_a_later_step_like_write_episode(short_uploads, tmp_path):
    root = str(tmp_path / "dataset")
    upload = str(short_uploads[0])
    staged = stage_gops(read_upload(upload), root)
    assert staged.gops == staged.gops_written == 24  # 3 cameras x 8 GOPs of G=4 (30 frames)
    assert load_staged_gops(root, 0) == staged  # survives a round trip through the dataset root
    with pytest.raises(FileNotFoundError, match="frames.lance does not exist"):
        robodata.open(root)  # nothing a reader sees until the rows commit

    result = commit_staged_frames(read_upload(upload), root)
    assert (result.rows, result.frames_version, result.gops_version) == (97, 1, 1)
    assert not Path(staged_gops_uri(root, 0)).exists()  # committed: nothing left staged
    reference = robodata.ingest_episode(upload, str(tmp_path / "direct"))
    ds, direct = robodata.open(root), robodata.open(str(tmp_path / "direct"))
    assert ds.to_table().equals(direct.to_table())
    assert (ds[50]["observation_images_top"] == direct[50]["observation_images_top"]).all()
    assert reference.rows == result.rows


def test_committing_without_staged_gops_names_the_missing_step(short_uploads, tmp_path):
    root = str(tmp_path / "dataset")
    with pytest.raises(FileNotFoundError) as error:
        commit_staged_frames(read_upload(str(short_uploads[1])), root)
    assert str(error.value) == (
        f"{staged_gops_uri(root, 1)}: no staged GOPs for episode 1; write its GOPs (gop_blobs) first"
    )


def test_garbage_collection_keeps_staged_gops_until_they_commit(short_uploads, tmp_path):
    root = str(tmp_path / "dataset")
    robodata.ingest_episode(str(short_uploads[0]), root)
    staged = stage_gops(read_upload(str(short_uploads[1])), root)
    report = robodata.collect_garbage(root)
    assert report.unreferenced == 0  # episode 1's GOPs wait for their rows
    commit_staged_frames(read_upload(str(short_uploads[1])), root)
    ds = robodata.open(root)
    assert ds.episodes()["episode_index"].to_pylist() == [0, 1]
    assert ds.get_frames([len(ds) - 1], cameras="top")["top"].shape == (
        1,
        480,
        640,
        3,
    )
    assert staged.gops_written == 24  # 3 cameras x 8 GOPs of G=4

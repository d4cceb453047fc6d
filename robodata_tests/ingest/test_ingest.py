"""Ingest: alignment, zero duplication, schema metadata, atomic re-ingest, real footage."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

import robodata
from robodata.codec import EncoderSettings, plain_decode_gop
from robodata.format._schema import ref_columns
from robodata.format._tables import gops_uri, open_table
from robodata.ingest import read_upload
from robodata_tests.ingest.camera_uploads import REAL_STEPS, write_real_video_upload


def _gops(root):
    return open_table(gops_uri(root)).to_table(
        columns=["ref_id", "episode_index", "camera", "gop_index", "n_frames", "timestamps_ns", "packet_sizes"]
    )


def test_every_row_points_at_the_nearest_camera_frame(ingested, sample_uploads):
    ds = robodata.open(ingested)
    rows = ds.to_table()
    gops = _gops(ingested)
    times = {(r["episode_index"], r["camera"], r["gop_index"]): r["timestamps_ns"] for r in gops.to_pylist()}
    for camera, info in ds.metadata.cameras.items():
        ref_id, gop_index, in_gop = ref_columns(camera)
        for episode in range(3):
            mine = rows.filter(rows["episode_index"].to_numpy() == episode)
            frame_times = np.concatenate(
                [times[(episode, camera, j)] for j in range(max(mine[gop_index].to_pylist()) + 1)]
            )
            pointed = np.asarray(
                [
                    times[(episode, camera, g)][k]
                    for g, k in zip(mine[gop_index].to_pylist(), mine[in_gop].to_pylist(), strict=True)
                ]
            )
            row_times = mine["timestamp_ns"].to_numpy()
            error = np.abs(pointed - row_times)
            best = np.min(np.abs(frame_times[None, :] - row_times[:, None]), axis=1)
            np.testing.assert_array_equal(error, best)  # nearest
            assert error.max() <= 0.5e9 / info.fps + 1  # half a camera period (+1 ns of timestamp rounding)


def test_row_count_equals_state_samples(ingested, sample_uploads):
    ds = robodata.open(ingested)
    episodes = ds.episodes().to_pydict()
    for upload, rows in zip(sample_uploads, episodes["rows"], strict=True):
        assert rows == pq.read_metadata(upload / "states.parquet").num_rows


def test_video_is_stored_once_however_many_rows_point_at_it(ingested):
    gops = _gops(ingested)
    assert len(set(gops["ref_id"].to_pylist())) == gops.num_rows
    blobs = open_table(gops_uri(ingested))
    bytes_stored = sum(len(b) for _, b in blobs.read_blobs("gop", indices=list(range(blobs.count_rows()))))
    assert bytes_stored == sum(sum(p) for p in gops["packet_sizes"].to_pylist())
    rows = robodata.open(ingested).to_table()
    for camera in robodata.open(ingested).cameras:
        refs = rows[ref_columns(camera)[0]].to_numpy()
        _, shares = np.unique(refs, return_counts=True)
        assert shares.min() >= 2  # 100 Hz rows over 30 fps frames in GOPs of 4
        assert set(refs.tolist()) <= set(gops["ref_id"].to_pylist())


def test_schema_metadata_describes_the_dataset(ingested):
    meta = robodata.open(ingested).metadata
    assert meta.control_hz == 100
    assert meta.gop_size == EncoderSettings().gop_size == 4
    assert len(meta.joint_names) == 14 and meta.joint_names[0] == "left_waist"
    assert {c: (i.width, i.height, round(i.fps)) for c, i in meta.cameras.items()} == {
        "top": (640, 480, 30),
        "wrist_left": (320, 240, 30),
        "wrist_right": (320, 240, 30),
    }
    assert meta.camera_fps == {c: i.fps for c, i in meta.cameras.items()}
    assert meta.codec["name"] == "h264" and meta.codec["crf"] == EncoderSettings().crf == 20
    assert meta.format_version == "2"  # 2: GOP checksums


def test_reingest_replaces_the_episode_in_one_commit(uploads, tmp_path):
    root = str(tmp_path / "ds")
    for upload in uploads:
        robodata.ingest_episode(str(upload), root)
    before = robodata.open(root)
    frame = before.get_frames([10], cameras="top")["top"]
    gop_rows = open_table(gops_uri(root)).count_rows()

    result = robodata.ingest_episode(str(uploads[1]), root)
    after = robodata.open(root)
    assert result.frames_version == before.version + 1 == after.version
    assert len(after) == len(before)
    assert after.episodes().to_pydict()["rows"] == before.episodes().to_pydict()["rows"]
    assert result.gops_written == 0  # identical video: already stored
    assert open_table(gops_uri(root)).count_rows() == gop_rows
    keys = after.to_table(columns=["episode_index", "frame_index"]).to_pylist()
    assert len({(k["episode_index"], k["frame_index"]) for k in keys}) == len(keys)
    np.testing.assert_array_equal(after.get_frames([10], cameras="top")["top"], frame)


def test_reingest_with_new_states_swaps_old_copy_for_new(uploads, tmp_path):
    root = str(tmp_path / "ds")
    robodata.ingest_episode(str(uploads[0]), root)
    old = robodata.open(root)
    states = pq.read_table(uploads[0] / "states.parquet")
    shorter = states.slice(0, states.num_rows - 20)
    pq.write_table(shorter, uploads[0] / "states.parquet")
    robodata.ingest_episode(str(uploads[0]), root)
    new = robodata.open(root)
    assert len(old) == states.num_rows and len(new) == shorter.num_rows
    assert new.version == old.version + 1
    assert len(new.checkout(old.version)) == states.num_rows


def test_a_real_camera_video_ingests(tmp_path):
    upload = write_real_video_upload(tmp_path / "uploads" / "real_000")
    n = REAL_STEPS
    episode = read_upload(str(upload))
    assert (episode.cameras[0].width, episode.cameras[0].height) == (176, 144)
    result = robodata.ingest_episode(str(upload), str(tmp_path / "ds"))
    assert result.rows == n and result.gops == 30  # 120 frames in GOPs of 4
    ds = robodata.open(str(tmp_path / "ds"))
    gops = open_table(gops_uri(str(tmp_path / "ds")))
    first_gop = plain_decode_gop(gops.read_blobs("gop", indices=[0])[0][1])
    np.testing.assert_array_equal(ds[0]["observation_images_car"], first_gop[0])

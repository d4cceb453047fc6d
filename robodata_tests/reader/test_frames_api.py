"""The read API by camera: FrameBatch and WindowBatch, the public row index shared between
processes, and construction through ``robodata.open`` only."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.format._schema import ref_columns
from robodata.format._tables import gops_uri, open_table
from robodata.reader import RowIndex
from robodata.reader._dataset import adopt_rows, share_rows

TOP = "observation_images_top"


def _stored_times(root: str, ds, camera: str, rows: list[int]) -> list[int]:
    """Each row's camera-frame capture time, from the two tables directly (not the reader)."""
    ref_id, _, in_gop = ref_columns(camera)
    pointers = ds.to_table(columns=[ref_id, in_gop]).to_pylist()
    gops = open_table(gops_uri(root)).to_table(columns=["ref_id", "timestamps_ns"]).to_pylist()
    times = {g["ref_id"]: g["timestamps_ns"] for g in gops}
    return [times[pointers[r][ref_id]][pointers[r][in_gop]] for r in rows]


def test_get_frames_returns_every_camera_with_frame_times_in_request_order(ingested):
    ds = robodata.open(ingested)
    rows = [400, 5, 5, 199]
    batch = ds.get_frames(rows)
    assert isinstance(batch, robodata.FrameBatch)
    assert batch.cameras == ["top", "wrist_left", "wrist_right"] and len(batch) == 4
    assert batch.indices.tolist() == rows
    assert batch.data["top"].shape == (4, 480, 640, 3) and batch.data["top"].dtype == np.uint8
    assert batch.data["wrist_left"].shape == (4, 240, 320, 3)
    for camera in ds.cameras:
        assert batch.timestamps_ns[camera].tolist() == _stored_times(ingested, ds, camera, rows)
        for k, row in enumerate(rows):
            np.testing.assert_array_equal(batch.data[camera][k], ds[row][f"observation_images_{camera}"])
    np.testing.assert_array_equal(batch["top"], batch[TOP])  # by camera or by image column


def test_get_frames_takes_cameras_by_name_or_column_and_refuses_unknown_ones(ingested):
    ds = robodata.open(ingested)
    assert ds.get_frames([1], cameras="top").cameras == ["top"]
    assert ds.get_frames([1], cameras=[TOP, "wrist_right"]).cameras == ["top", "wrist_right"]
    assert ds.get_frames([], cameras="top").data["top"].shape == (0, 480, 640, 3)
    with pytest.raises(KeyError, match="no camera 'nope'; the cameras are top, wrist_left, wrist_right"):
        ds.get_frames([0], cameras="nope")
    with pytest.raises(IndexError, match=f"row {len(ds)} is out of range"):
        ds.get_frames([len(ds)])


def test_get_windows_returns_frames_columns_times_and_one_pad_mask(ingested):
    ds = robodata.open(ingested)
    first_of_second = int(np.flatnonzero(ds.rows.episode_index == 1)[0])
    window = ds.get_windows([first_of_second, 50], [-1, 0, 2], cameras=["top"], columns=["action", "frame_index"])
    assert isinstance(window, robodata.WindowBatch)
    assert window.offsets.tolist() == [-1, 0, 2]
    assert window.rows.tolist() == [[first_of_second] * 2 + [first_of_second + 2], [49, 50, 52]]
    assert window.is_pad.tolist() == [[True, False, False], [False, False, False]]
    assert window.data["top"].shape == (2, 3, 480, 640, 3)
    frames = ds.get_frames(window.rows.reshape(-1), cameras="top")
    np.testing.assert_array_equal(window.data["top"].reshape(6, 480, 640, 3), frames.data["top"])
    assert window.timestamps_ns["top"].reshape(-1).tolist() == frames.timestamps_ns["top"].tolist()
    actions = ds.lance_dataset.take(window.rows.reshape(-1).tolist(), columns=["action"])["action"].to_pylist()
    np.testing.assert_array_equal(window.columns["action"].reshape(6, -1), np.array(actions, dtype=np.float32))
    assert window["frame_index"].tolist() == [[0, 0, 2], [49, 50, 52]]
    assert set(ds.get_windows([3], [0]).data) == set(ds.cameras)  # every camera by default
    assert ds.get_windows([3], [0], cameras=[], columns="action").data == {}
    with pytest.raises(KeyError, match="is a camera"):
        ds.get_windows([3], [0], columns=[TOP])
    with pytest.raises(KeyError, match="no column 'nope'"):
        ds.get_windows([3], [0], columns=["nope"])


def test_a_dataset_is_made_by_open_only(ingested):
    ds = robodata.open(ingested)
    with pytest.raises(TypeError, match=r"robodata\.open\(uri, version=\.\.\.\)"):
        robodata.RoboDataset(ingested, ds.lance_dataset)


def test_a_second_handle_adopts_the_shared_row_index(ingested):
    owner = robodata.open(ingested)
    shared = share_rows(owner)
    assert share_rows(owner) is shared  # made once
    other = robodata.open(ingested)
    adopt_rows(other, shared)
    assert isinstance(other.rows, RowIndex)
    assert isinstance(other.rows.episode_index, np.memmap)  # mapped, not scanned again
    np.testing.assert_array_equal(other.rows.ref_id["top"], owner.rows.ref_id["top"])
    np.testing.assert_array_equal(other.get_frames([7, 300]).data["top"], owner.get_frames([7, 300]).data["top"])
    assert other.storage_options is None

"""Reader: rows, decoded takes in request order, windows, versions and tags."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import robodata
from robodata.codec import plain_decode_gop
from robodata.format._schema import ref_columns
from robodata.format._tables import gops_uri, open_table


def _reference_frame(root, ds, camera, row):
    """Row ``row``'s frame of ``camera`` decoded by a fresh plain PyAV decoder."""
    ref_id, _, in_gop = ref_columns(camera)
    pointer = ds.to_table(columns=[ref_id, in_gop]).slice(row, 1).to_pylist()[0]
    gops = open_table(gops_uri(root))
    table = gops.to_table(columns=["ref_id"], with_row_id=True).to_pylist()
    row_id = next(r["_rowid"] for r in table if r["ref_id"] == pointer[ref_id])
    data = gops.read_blobs("gop", ids=[row_id])[0][1]
    return plain_decode_gop(data)[pointer[in_gop]]


def test_item_holds_row_values_and_every_camera_frame(ingested):
    ds = robodata.open(ingested)
    item = ds[123]
    assert item["episode_index"] == 0 and item["frame_index"] == 123
    assert item["timestamp_ns"] == 1_230_000_000
    assert item["observation_state"].shape == (14,) and item["observation_state"].dtype == np.float32
    assert item["source"] in ("human", "policy", "intervention")
    assert item["observation_images_top"].shape == (480, 640, 3)
    assert item["observation_images_wrist_left"].shape == (240, 320, 3)
    for camera in ds.cameras:
        np.testing.assert_array_equal(item[f"observation_images_{camera}"], _reference_frame(ingested, ds, camera, 123))


def test_item_holds_the_users_columns_with_their_own_types(dataset_copy):
    points = pa.array([[3, -2]], pa.list_(pa.int16()))
    labels = pa.table({"episode_index": [0], "frame_index": [7], "grasp_points": points})
    robodata.add_annotations(dataset_copy, labels)
    ds = robodata.open(dataset_copy)
    item = ds[7]
    assert set(item) == set(ds.columns) | set(ds.image_columns)
    assert not [k for k in item if k.endswith(("_ref_id", "_gop_index", "_frame_index_in_gop"))]
    assert item["grasp_points"].dtype == np.int16 and item["grasp_points"].tolist() == [3, -2]
    assert item["action"].dtype == np.float32 and isinstance(item["is_intervention"], bool)
    assert ds[8]["grasp_points"] is None or ds[8]["grasp_points"].size == 0


def test_rows_come_before_columns_as_in_lance_take(ingested):
    ds = robodata.open(ingested)
    with pytest.raises(TypeError, match="pass \\(indices, columns\\)"):
        ds.get_frames("observation_images_top", cameras=[1])


def test_batched_take_equals_item_by_item_in_request_order(ingested):
    ds = robodata.open(ingested)
    rng = np.random.default_rng(3)
    indices = np.concatenate([rng.integers(0, len(ds), 40), [5, 5, 0, len(ds) - 1]])
    batch = ds.get_frames(indices, concurrency=2)
    assert batch.data["top"].shape == (len(indices), 480, 640, 3)
    for position, row in enumerate(indices[:12].tolist() + indices[-4:].tolist()):
        item = ds[row]
        slot = position if position < 12 else len(indices) - 16 + position
        for camera in ds.cameras:
            np.testing.assert_array_equal(batch.data[camera][slot], item[f"observation_images_{camera}"])


def test_zero_copy_reuses_one_buffer(ingested):
    ds = robodata.open(ingested)
    first = ds.get_frames([1, 2], cameras="top", zero_copy=True).data["top"]
    kept = first.copy()
    second = ds.get_frames([300, 400], cameras="top", zero_copy=True).data["top"]
    assert second is first
    assert not np.array_equal(second, kept)
    fresh = ds.get_frames([300, 400], cameras="top").data["top"]
    np.testing.assert_array_equal(second, fresh)


def test_bad_requests_raise(ingested):
    ds = robodata.open(ingested)
    with pytest.raises(IndexError, match="out of range"):
        ds.get_frames([len(ds)], cameras="top")
    with pytest.raises(KeyError, match="observation_images_top"):
        ds.get_frames([0], cameras="observation_images_nope")


def test_windows_pad_at_episode_edges(ingested):
    ds = robodata.open(ingested)
    episodes = ds.episodes().to_pydict()
    first_of_second = episodes["rows"][0]
    last_of_first = first_of_second - 1
    offsets = range(-2, 3)
    window = ds.get_windows([first_of_second, last_of_first, 50], offsets, cameras=["top"], columns=["action"])
    assert window.columns["action"].shape == (3, 5, 14)
    assert window.data["top"].shape == (3, 5, 480, 640, 3)
    np.testing.assert_array_equal(
        window.is_pad,
        [
            [True, True, False, False, False],
            [False, False, False, True, True],
            [False, False, False, False, False],
        ],
    )
    actions = ds.to_table(columns=["action"])["action"].to_pylist()
    # Padding repeats the episode's edge row; it never crosses into the neighbouring episode.
    np.testing.assert_allclose(window.columns["action"][0, 0], actions[first_of_second])
    np.testing.assert_allclose(window.columns["action"][0, 4], actions[first_of_second + 2])
    np.testing.assert_allclose(window.columns["action"][1, 4], actions[last_of_first])
    np.testing.assert_allclose(window.columns["action"][2, 0], actions[48])
    np.testing.assert_array_equal(window.data["top"][2, 4], ds[52]["observation_images_top"])


def test_versions_tags_and_time_travel(dataset_copy):
    ds = robodata.open(dataset_copy)
    assert [v["version"] for v in ds.versions()] == [1, 2, 3]
    assert ds.tag("run-a") == 3
    robodata.delete_episodes(dataset_copy, [0])
    now = robodata.open(dataset_copy)
    assert now.version == 4 and now.tags == {"run-a": 3}
    tagged = robodata.open(dataset_copy, version="run-a")
    assert tagged.version == 3 and len(tagged) == len(ds)
    assert len(robodata.open(dataset_copy, version=1)) == ds.episodes().to_pydict()["rows"][0]
    with pytest.raises(ValueError, match="already names version 3"):
        now.tag("run-a")
    with pytest.raises(FileNotFoundError, match="no robodata dataset"):
        robodata.open(dataset_copy + "-missing")

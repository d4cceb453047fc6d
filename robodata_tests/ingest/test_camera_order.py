"""A dataset lists its cameras in the order they were recorded (an upload's episode.json, a
LeRobot dataset's features), not alphabetically; the first episode ingested fixes the order.
LeRobotCompatDataset's ``camera_keys``: test_camera_order_lerobot.py."""

from __future__ import annotations

import json
import re

import numpy as np

import robodata
from robodata.format._schema import CameraInfo, DatasetMetadata
from robodata.ingest import ingest_episode
from robodata.ingest._batch import ingest_batch
from robodata.view._page import render_episode_page
from robodata_tests.ingest.aloha_cameras import RECORDED, aloha_uploads


def assert_lists_recorded_order(dataset: str) -> None:
    ds = robodata.open(dataset)
    assert ds.cameras == RECORDED
    assert ds.image_columns == [f"observation_images_{camera}" for camera in RECORDED]
    assert list(ds.metadata.cameras) == RECORDED
    assert list(ds.get_frames([0]).data) == RECORDED
    assert list(ds.get_windows([0], [0]).data) == RECORDED
    assert [key for key in ds[0] if key.startswith("observation_images_")] == ds.image_columns
    page = render_episode_page(ds, 0)
    assert re.findall(r'<figure class="camera" data-camera="([^"]+)"', page) == RECORDED


def test_a_later_episode_listing_the_cameras_in_another_order_reads_in_the_datasets_order(tmp_path):
    uploads = aloha_uploads(tmp_path / "uploads", [RECORDED, ["front_close", "top", "angle"]])
    dataset = str(tmp_path / "ds")
    for upload in uploads:
        ingest_episode(str(upload), dataset)
    ds = robodata.open(dataset)
    assert ds.episodes()["episode_index"].to_pylist() == [0, 1]
    assert_lists_recorded_order(dataset)
    batch = ds.get_frames(np.flatnonzero(ds.rows.episode_index == 1)[:2])
    assert list(batch.data) == RECORDED
    # Each camera shows its own frames: top is 640x480, the two others 320x240.
    assert [batch.data[camera].shape[1:3] for camera in RECORDED] == [(480, 640), (240, 320), (240, 320)]


def test_a_batch_ingest_keeps_the_first_episodes_order(tmp_path):
    batch = tmp_path / "uploads" / "2026-12-04"
    aloha_uploads(batch, [RECORDED, ["angle", "front_close", "top"]])
    dataset = str(tmp_path / "ds")
    assert ingest_batch(str(batch), dataset).episodes == ["episode_000000", "episode_000001"]
    assert robodata.open(dataset).cameras == RECORDED


def test_a_dataset_that_recorded_no_order_lists_its_cameras_alphabetically():
    """Datasets from before robodata recorded the camera order keep reading, sorted as before."""
    cameras = {name: CameraInfo(64, 48, 30.0) for name in RECORDED}
    recorded = DatasetMetadata(50.0, ["j"], cameras, 8, {}, extra={"camera_order": RECORDED})
    legacy = DatasetMetadata(50.0, ["j"], cameras, 8, {})
    assert DatasetMetadata.from_json(recorded.to_json()).camera_names == RECORDED
    assert DatasetMetadata.from_json(legacy.to_json()).camera_names == ["angle", "front_close", "top"]
    # An order naming a camera the dataset lacks, or missing one, still lists every camera once.
    partial = DatasetMetadata(50.0, ["j"], cameras, 8, {}, extra={"camera_order": ["top", "side"]})
    assert DatasetMetadata.from_json(partial.to_json()).camera_names == ["top", "angle", "front_close"]


def test_the_sample_uploads_list_their_cameras_in_episode_json_order(ingested, sample_uploads):
    listed = list(json.loads((sample_uploads[0] / "episode.json").read_text())["cameras"])
    assert robodata.open(ingested).cameras == listed == ["top", "wrist_left", "wrist_right"]

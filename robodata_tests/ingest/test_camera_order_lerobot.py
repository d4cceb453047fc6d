"""LeRobotCompatDataset's ``meta.camera_keys`` (which LeRobot policies stack, in order, into their
image encoders) follow the order an upload's episode.json recorded, as do ``RoboDataset.cameras``
and the LeRobot export's features; the same for a LeRobot dataset imported from that export."""

from __future__ import annotations

import pytest

import robodata
from robodata.ingest import ingest_episode
from robodata.lerobot import import_lerobot
from robodata_tests.ingest.aloha_cameras import RECORDED, VIDEO_KEYS, aloha_uploads, export_video_keys

# Without torch the module is skipped, not an error: the import below needs it.
torch = pytest.importorskip("torch")
from robodata.lerobot import LeRobotCompatDataset  # noqa: E402


def assert_recorded_order(dataset: str) -> None:
    assert robodata.open(dataset).cameras == RECORDED
    compat = LeRobotCompatDataset(dataset)
    assert compat.meta.camera_keys == VIDEO_KEYS and compat.meta.video_keys == VIDEO_KEYS
    assert [key for key in compat.features if key.startswith("observation.images.")] == VIDEO_KEYS
    assert [key for key in compat[0] if key.startswith("observation.images.")] == VIDEO_KEYS


def test_cameras_listed_out_of_alphabetical_order_keep_it_in_camera_keys_and_the_export(tmp_path):
    [upload] = aloha_uploads(tmp_path / "uploads", [RECORDED])
    dataset = str(tmp_path / "ds")
    ingest_episode(str(upload), dataset)
    assert_recorded_order(dataset)
    assert export_video_keys(dataset, tmp_path / "export") == VIDEO_KEYS

    imported = str(tmp_path / "imported")
    assert import_lerobot(str(tmp_path / "export"), imported, progress=False).imported == [0]
    assert_recorded_order(imported)
    assert export_video_keys(imported, tmp_path / "export_again") == VIDEO_KEYS

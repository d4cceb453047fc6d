"""``export-lerobot --rate camera``: one LeRobot frame per camera frame at the cameras' 30 fps,
each frame's state from the robodata row nearest in time, and an import that brings it back."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import av
import numpy as np
import pytest

import robodata
from robodata.cli import main
from robodata.codec._quality import psnr
from robodata.format._schema import CameraInfo, ref_columns
from robodata.format._tables import gops_uri, open_table
from robodata.lerobot import LeRobotFormatError, import_lerobot
from robodata.lerobot._rate import camera_rate_rows, export_fps

ROUND_TRIP_PSNR_DB = 30.0  # robodata H.264 -> H.264 crf 30 -> H.264 crf 23, against robodata's frames


@pytest.fixture(scope="module")
def camera_export(ingested, tmp_path_factory) -> Path:
    """The CLI's camera-rate export in H.264: what these tests check does not depend on the codec,
    and LeRobot's AV1 is covered by the shared ``exported`` fixture (robodata_tests/conftest.py)
    and the export docstrings. SVT-AV1 4.1.0 has, rarely and under load, hung at the end of a file
    or handed the MP4 muxer an invalid timestamp; fewer AV1 encodes, fewer chances of that."""
    root = tmp_path_factory.mktemp("camera_rate") / "lerobot"
    argv = [
        "export-lerobot",
        ingested,
        str(root),
        "--rate",
        "camera",
        "--episodes-per-file",
        "2",
        "--vcodec",
        "libx264",
    ]
    assert main(argv) == 0
    return root


def _expected(ingested: str) -> dict[int, dict]:
    """Per episode, worked out here from robodata's own tables: the time of each distinct top
    camera frame the rows show, and the row nearest each (the earlier on a tie)."""
    ds = robodata.open(ingested)
    ref, _, in_gop = ref_columns("top")
    table = ds.to_table(columns=["episode_index", "frame_index", "timestamp_ns", "observation_state", ref, in_gop])
    gops = open_table(gops_uri(ingested)).to_table(columns=["ref_id", "timestamps_ns"])
    times_of = dict(zip(gops["ref_id"].to_pylist(), gops["timestamps_ns"].to_pylist(), strict=True))
    out = {}
    for episode in sorted(set(table["episode_index"].to_pylist())):
        mask = table["episode_index"].to_numpy() == episode
        offsets = np.flatnonzero(mask)[np.argsort(table["frame_index"].to_numpy()[mask])]
        rows = table.take(offsets)
        shown = [times_of[r][k] for r, k in zip(rows[ref].to_pylist(), rows[in_gop].to_pylist(), strict=True)]
        frames = sorted(set(shown))
        row_times = rows["timestamp_ns"].to_numpy()
        nearest = [int(np.argmin(np.abs(row_times - t))) for t in frames]
        out[episode] = {"frame_times": frames, "offsets": offsets[nearest], "rows": len(offsets)}
    return out


@pytest.mark.slow
def test_info_and_mp4s_hold_each_camera_frame_once_at_30_fps(ingested, camera_export):
    info = json.loads((camera_export / "meta/info.json").read_text())
    expected = _expected(ingested)
    camera_frames = sum(len(e["frame_times"]) for e in expected.values())
    assert info["fps"] == 30 and info["total_frames"] == camera_frames
    assert camera_frames < sum(e["rows"] for e in expected.values())  # 30 of every 100 rows
    for camera in ("top", "wrist_left", "wrist_right"):
        key = f"observation.images.{camera}"
        assert info["features"][key]["info"]["video.fps"] == 30
        decoded = 0
        for path in sorted((camera_export / "videos" / key).rglob("*.mp4")):
            with av.open(str(path)) as container:
                assert container.streams.video[0].average_rate == 30
                decoded += sum(1 for _ in container.decode(video=0))
        assert decoded == camera_frames, camera


@pytest.mark.slow
def test_import_gives_one_row_per_camera_frame_with_the_nearest_rows_state(ingested, camera_export, tmp_path):
    target = str(tmp_path / "back")
    assert import_lerobot(str(camera_export), target, progress=False).imported == [0, 1, 2]
    original, back = robodata.open(ingested), robodata.open(target)
    assert back.metadata.control_hz == 30
    table = back.to_table(columns=["episode_index", "frame_index", "observation_state"])
    states = original.to_table(columns=["observation_state"])["observation_state"]
    for episode, want in _expected(ingested).items():
        mask = table["episode_index"].to_numpy() == episode
        index = np.flatnonzero(mask)[np.argsort(table["frame_index"].to_numpy()[mask])]
        assert len(index) == len(want["frame_times"])
        got = table["observation_state"].take(index).to_pylist()
        assert got == states.take(want["offsets"]).to_pylist()  # exact: float32 in, float32 out
        for camera in back.cameras:
            column = f"observation_images_{camera}"
            ours = original.get_frames(want["offsets"], cameras=column)[column]
            theirs = back.get_frames(index, cameras=column)[column]
            worst = min(psnr(a, b) for a, b in zip(ours, theirs, strict=True))
            assert worst > ROUND_TRIP_PSNR_DB, (episode, camera, worst)


def test_camera_rate_rows_picks_the_nearest_row_showing_each_frame():
    row_times = np.arange(0, 100, 10)  # 100 Hz rows in ms, a 30 fps camera at 0, 33, 67
    shown = np.array([0, 0, 33, 33, 33, 33, 67, 67, 67, 67])
    assert camera_rate_rows(row_times, shown).tolist() == [0, 3, 7]
    assert camera_rate_rows(np.array([0, 10, 20]), np.array([5, 5, 5])).tolist() == [0]  # tie: the earlier


def test_cameras_at_different_rates_are_refused_by_name():
    cameras = {"top": CameraInfo(640, 480, 30.0), "wrist_left": CameraInfo(320, 240, 15.0)}
    metadata = SimpleNamespace(control_hz=100.0, cameras=cameras)
    refused = r"data/demo: cameras run at different rates \(top 30 fps, wrist_left 15 fps\)"
    with pytest.raises(LeRobotFormatError, match=refused):
        export_fps(metadata, "camera", "data/demo")
    assert export_fps(metadata, "control", "data/demo") == 100
    with pytest.raises(ValueError, match="rate must be one of"):
        export_fps(metadata, "frames", "data/demo")

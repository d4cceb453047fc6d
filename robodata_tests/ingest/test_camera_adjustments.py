"""How ingest changed an episode's camera frames (turned upright, cropped to even sizes) is
recorded with the episode: in the ingest result, in the dataset (``stored_uploads``), in
``robodata info`` and in the ``robodata ingest`` output; a re-ingest replaces the record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import robodata
from robodata.format._provenance import stored_uploads
from robodata_tests.ingest.camera_uploads import (
    CROP_WHY,
    ODD_SIZE_NOTE,
    ODD_SIZE_RECORD,
    marked_frame,
    write_camera_upload,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMES_MS = [0, 33, 67, 100, 133, 167]


def _robodata(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "robodata.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done


def test_an_odd_frame_size_is_recorded_with_the_episode(tmp_path):
    upload = write_camera_upload(tmp_path / "up" / "ep0", [marked_frame(641, 481)] * 6, TIMES_MS)
    note, expected = ODD_SIZE_NOTE, [ODD_SIZE_RECORD]
    dataset = str(tmp_path / "ds")
    result = robodata.ingest_episode(str(upload), dataset)
    assert result.camera_adjustments == expected
    stored = stored_uploads(dataset)["ep0"]
    assert stored.adjustments == expected and json.loads(stored.camera_adjustments) == expected
    # every row of the episode carries the same record (one value per episode, like its upload)
    column = robodata.open(dataset).to_table(columns=["camera_adjustments"])["camera_adjustments"]
    assert set(column.to_pylist()) == {json.dumps(expected)}

    # The command line: `robodata ingest` prints what it changed, `robodata info` shows it per episode.
    cli_dataset = str(tmp_path / "cli-ds")
    ingested = _robodata("ingest", str(upload), cli_dataset)
    assert f"ep0: {result.rows} rows, 2 GOPs, version 1\n  {note}\n" in ingested.stdout  # 6 frames, G=4
    info = json.loads(_robodata("info", cli_dataset).stdout)
    assert info["camera_adjustments"] == {"0": [note]}


def test_a_rotated_odd_sized_video_records_rotation_and_crop(tmp_path):
    upright = marked_frame(49, 65)  # a phone held upright, 49 wide and 65 high
    coded = np.ascontiguousarray(np.rot90(upright, k=-1))  # the sensor's 65x49 frames
    upload = write_camera_upload(tmp_path / "up" / "ep0", [coded] * 6, TIMES_MS, rotation=90)
    result = robodata.ingest_episode(str(upload), str(tmp_path / "ds"))
    expected = [
        {
            "camera": "cam",
            "file": "cam.mp4",
            "original_size": [65, 49],
            "stored_size": [48, 64],
            "rotation_degrees": 90,
            "done": [
                "cam.mp4: rotated 90 degrees counter-clockwise, as its display matrix asks",
                f"cam.mp4: cropped 49x65 to 48x64 {CROP_WHY}",
            ],
        }
    ]
    assert result.camera_adjustments == expected
    assert stored_uploads(str(tmp_path / "ds"))["ep0"].adjustments == expected
    frame = robodata.open(str(tmp_path / "ds"))[0]["observation_images_cam"]
    assert frame.shape == (64, 48, 3) and frame[:6, :6].min() > 230  # upright: the mark top-left


def test_a_reingest_replaces_the_record_and_an_unchanged_video_records_nothing(tmp_path):
    upload = write_camera_upload(tmp_path / "up" / "ep0", [marked_frame(641, 481)] * 6, TIMES_MS)
    dataset = str(tmp_path / "ds")
    robodata.ingest_episode(str(upload), dataset)
    assert stored_uploads(dataset)["ep0"].adjustments[0]["stored_size"] == [640, 480]

    # The lab fixes its camera: the same episode, re-uploaded at an even size.
    fixed = write_camera_upload(tmp_path / "fixed" / "ep0", [marked_frame(640, 480)] * 6, TIMES_MS)
    result = robodata.ingest_episode(str(fixed), dataset)
    assert result.camera_adjustments == []
    stored = stored_uploads(dataset)["ep0"]
    assert (stored.camera_adjustments, stored.adjustments) == ("", [])
    ds = robodata.open(dataset)
    assert ds.to_table(columns=["camera_adjustments"])["camera_adjustments"].null_count == len(ds) == result.rows
    from robodata._summary import dataset_summary

    assert dataset_summary(dataset)["camera_adjustments"] == {}

"""Unusual but legitimate camera videos are accepted and stored as the camera meant them: an odd
frame size is cropped to even (and said so), frames jittering by up to half a period each give
the rows their nearest frame, a rotated phone video is stored upright. A real gap of missing
frames is still refused."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.errors import BadUploadError
from robodata_tests.ingest.camera_uploads import marked_frame, write_camera_upload


def stored_frames_of(dataset: str, rows: list[int]) -> np.ndarray:
    return robodata.open(dataset).get_frames(rows, cameras="cam")["cam"]


def test_odd_frame_size_is_cropped_to_even_and_said(tmp_path, caplog):
    upload = write_camera_upload(tmp_path / "up" / "ep0", [marked_frame(641, 481)] * 6, [0, 33, 67, 100, 133, 167])
    dataset = str(tmp_path / "ds")
    with caplog.at_level("WARNING", logger="robodata.ingest"):
        robodata.ingest_episode(str(upload), dataset)
    note = "cam.mp4: cropped 641x481 to 640x480"
    assert note in caplog.text
    assert robodata.ingest.read_upload(str(upload)).notes[0].startswith(note)
    from robodata.ingest._upload_summary import describe_upload

    assert describe_upload(str(upload)).notes[0].startswith(note)
    ds = robodata.open(dataset)
    assert ds.metadata.cameras["cam"].width == 640 and ds.metadata.cameras["cam"].height == 480
    frame = stored_frames_of(dataset, [0])[0]
    assert frame.shape == (480, 640, 3)
    assert frame[:6, :6].min() > 230 and abs(int(frame[200:280, 200:280].mean()) - 60) < 4


def test_variable_frame_rate_with_half_period_jitter_is_accepted(tmp_path):
    period_ms, n = 33.333, 30
    jitter = np.random.default_rng(3).uniform(-0.49, 0.49, n) * period_ms
    jitter[[5, 6, 7]] = [-0.49 * period_ms, 0.49 * period_ms, -0.49 * period_ms]  # gaps of ~2 and ~0 periods
    times_ms = np.round(np.arange(n) * period_ms + jitter).astype(int)
    times_ms -= times_ms[0]
    assert (np.diff(times_ms) > 0).all()
    frames = [np.full((48, 64, 3), 8 * i, np.uint8) for i in range(n)]
    upload = write_camera_upload(tmp_path / "up" / "ep0", frames, times_ms.tolist())
    dataset = str(tmp_path / "ds")
    result = robodata.ingest_episode(str(upload), dataset)
    assert result.camera_adjustments == []  # frames kept as they are: nothing to record
    rows = list(range(result.rows))
    row_times_ms = np.arange(result.rows) * 10.0
    expected = np.abs(row_times_ms[:, None] - times_ms[None, :]).argmin(axis=1)  # nearest frame
    shown = stored_frames_of(dataset, rows).reshape(len(rows), -1).mean(axis=1)
    np.testing.assert_allclose(shown, 8 * expected, atol=3)


def test_gap_of_missing_frames_is_still_refused(tmp_path):
    times_ms = [0, 33, 67, 100, 233, 267]  # 133 ms without a frame: four periods
    upload = write_camera_upload(tmp_path / "up" / "ep0", [marked_frame(64, 48)] * 6, times_ms)
    with pytest.raises(BadUploadError, match=r"cam.mp4: camera has no frame for 133.0 ms around"):
        robodata.ingest_episode(str(upload), str(tmp_path / "ds"))


@pytest.mark.parametrize("rotation", [90, -90, 180])
def test_rotated_phone_video_is_stored_upright(tmp_path, rotation):
    upright = marked_frame(64, 48)
    # What the phone's sensor recorded: the upright picture turned the other way.
    coded = np.ascontiguousarray(np.rot90(upright, k=-rotation // 90))
    upload = write_camera_upload(tmp_path / "up" / "ep0", [coded] * 6, [0, 33, 67, 100, 133, 167], rotation)
    dataset = str(tmp_path / "ds")
    result = robodata.ingest_episode(str(upload), dataset)
    note = f"cam.mp4: rotated {rotation % 360} degrees counter-clockwise, as its display matrix asks"
    assert robodata.ingest.read_upload(str(upload)).notes == [note]
    [recorded] = result.camera_adjustments  # and stored with the episode: test_camera_adjustments.py
    assert recorded == {
        "camera": "cam",
        "file": "cam.mp4",
        "original_size": list(coded.shape[1::-1]),
        "stored_size": [64, 48],
        "rotation_degrees": rotation % 360,
        "done": [note],
    }
    frame = stored_frames_of(dataset, [0])[0]
    assert frame.shape == (48, 64, 3)
    assert frame[:6, :6].min() > 230  # the mark is top-left again
    assert frame[-6:, -6:].max() < 100 and frame[:6, -6:].max() < 100 and frame[-6:, :6].max() < 100

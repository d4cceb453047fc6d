"""Hand-made one-camera uploads, for the tests of what ingest does to a camera's frames (odd
sizes, jittering frame times, display rotations): test_unusual_video_input.py,
test_camera_adjustments.py and orchestration/test_camera_adjustments_metadata.py; and an upload
of the repository's real footage (test_ingest.py, test_renditions.py)."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from robodata_tests.conftest import REAL_VIDEO


def write_camera_upload(
    folder: Path, frames: list[np.ndarray], times_ms: list[int], rotation: int = 0, control_hz: int = 100
) -> Path:
    """An upload with one camera ``cam`` (frames at ``times_ms``, display rotation ``rotation``
    degrees counter-clockwise) and two joints sampled at ``control_hz`` over the camera's span."""
    folder.mkdir(parents=True)
    height, width = frames[0].shape[:2]
    with av.open(str(folder / "cam.mp4"), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(30))
        # 4:4:4 takes odd sizes, as a phone or a webcam's MJPEG can deliver them.
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv444p" if width % 2 or height % 2 else "yuv420p"
        stream.codec_context.time_base = Fraction(1, 1000)
        stream.options = {"crf": "12", "preset": "ultrafast"}
        if rotation:
            stream.set_display_rotation(rotation)
        for rgb, t in zip(frames, times_ms, strict=True):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts, frame.time_base = t, Fraction(1, 1000)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    step_ns = 1_000_000_000 // control_hz
    n = times_ms[-1] * 1_000_000 // step_ns + 1
    state = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(2 * n, np.float32)), 2)
    pq.write_table(
        pa.table({"timestamp_ns": np.arange(n, dtype=np.int64) * step_ns, "observation_state": state, "action": state}),
        folder / "states.parquet",
    )
    meta = {
        "episode_index": 0,
        "joint_names": ["a", "b"],
        "control_hz": control_hz,
        "cameras": {"cam": {"file": "cam.mp4"}},
    }
    (folder / "episode.json").write_text(json.dumps(meta))
    return folder


def marked_frame(width: int, height: int, value: int = 60) -> np.ndarray:
    """A flat frame with a white 8x8 mark in its top-left corner."""
    rgb = np.full((height, width, 3), value, np.uint8)
    rgb[:8, :8] = 255
    return rgb


CROP_WHY = "(H.264 4:2:0 needs an even width and height; the last column/row is dropped)"
ODD_SIZE_NOTE = f"cam.mp4: cropped 641x481 to 640x480 {CROP_WHY}"
# What ingest records of a 641x481 camera ``cam`` (cam.mp4), cropped to 640x480
ODD_SIZE_RECORD = {
    "camera": "cam",
    "file": "cam.mp4",
    "original_size": [641, 481],
    "stored_size": [640, 480],
    "rotation_degrees": 0,
    "done": [ODD_SIZE_NOTE],
}

REAL_STEPS = 390  # 3.9 s of 100 Hz states beside the real clip (120 frames at 30 fps, 176x144)


def write_real_video_upload(upload: Path) -> Path:
    """An upload folder of the repository's real footage (``car.mp4``, carphone_pristine.mp4)
    and ``REAL_STEPS`` rows of 100 Hz states, as episode 0."""
    upload.mkdir(parents=True)
    shutil.copy(REAL_VIDEO, upload / "car.mp4")
    times = np.arange(REAL_STEPS, dtype=np.int64) * 10_000_000
    states = {
        "timestamp_ns": times,
        "observation_state": [[0.0, 1.0]] * REAL_STEPS,
        "action": [[0.5, 0.5]] * REAL_STEPS,
    }
    pq.write_table(pa.table(states), upload / "states.parquet")
    meta = {"episode_index": 0, "joint_names": ["a", "b"], "control_hz": 100, "cameras": {"car": {"file": "car.mp4"}}}
    (upload / "episode.json").write_text(json.dumps({**meta, "task": "drive"}))
    return upload

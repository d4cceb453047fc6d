"""Which robodata rows become LeRobot frames: every row (control rate) or one per camera frame.

LeRobot has one fps per dataset. ``rate="control"`` exports every row at the control rate and
repeats camera frames in the MP4s, which round-trips exactly. ``rate="camera"`` exports one
LeRobot frame per camera frame, as LeRobot's own recorders do (one frame per camera tick): the
frame's state, action and other per-row features come from the row nearest in time to that camera
frame, so the MP4s hold each camera frame exactly once at the camera fps.

>>> camera_rate_rows(np.array([0, 10, 20, 30, 40]), np.array([0, 0, 33, 33, 33]))
array([0, 3])
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from robodata.lerobot._format import LeRobotFormatError

Rate = Literal["control", "camera"]
RATES = ("control", "camera")


def export_fps(metadata, rate: Rate, uri: str) -> int:
    """The LeRobot fps for ``rate``: the control rate, or the one fps every camera shares.

    >>> export_fps(ds.metadata, "camera", "data/demo")
    30
    """
    if rate not in RATES:
        raise ValueError(f"rate must be one of {list(RATES)}, got {rate!r}")
    if rate == "control":
        return whole_fps(metadata.control_hz, f"{uri}: control rate")
    rates = {name: info.fps for name, info in metadata.cameras.items()}
    if not rates:
        raise LeRobotFormatError(f"{uri}: has no cameras, so there is no camera rate to export at")
    if len(set(rates.values())) > 1:
        found = ", ".join(f"{name} {fps:g} fps" for name, fps in rates.items())
        raise LeRobotFormatError(
            f"{uri}: cameras run at different rates ({found}); a camera-rate LeRobot export needs one fps "
            "(export with rate='control' instead)"
        )
    return whole_fps(next(iter(rates.values())), f"{uri}: camera rate")


def whole_fps(hz: float, what: str) -> int:
    fps = round(hz)
    if fps <= 0 or abs(hz - fps) > 1e-6:
        raise LeRobotFormatError(f"{what} {hz} Hz is not a whole number; LeRobot v3 needs an integer fps")
    return fps


def camera_rate_rows(row_times_ns: np.ndarray, frame_times_ns: np.ndarray) -> np.ndarray:
    """Positions of the rows that stand for each camera frame: ``frame_times_ns[i]`` is the time
    of the camera frame row ``i`` shows; for every distinct frame, the row nearest to it in time
    among the rows showing it (the earlier row on a tie). Ascending, one per camera frame."""
    distance = np.abs(row_times_ns.astype(np.int64) - frame_times_ns.astype(np.int64))
    order = np.lexsort((np.arange(len(distance)), distance, frame_times_ns))
    _, first = np.unique(frame_times_ns[order], return_index=True)
    return np.sort(order[first])

"""Map control-rate rows to the camera frame nearest in time."""

from __future__ import annotations

import numpy as np

from robodata.errors import BadUploadError
from robodata.format.alignment import TIMESTAMP_SLACK_NS, alignment_tolerance_ns

__all__ = ["TIMESTAMP_SLACK_NS", "alignment_tolerance_ns", "nearest_frames"]


def nearest_frames(row_times_ns: np.ndarray, frame_times_ns: np.ndarray, fps: float, source: str) -> np.ndarray:
    """Index of the camera frame nearest each row time.

    Raises BadUploadError when a row is more than half a camera period from every frame, which
    is what a camera that covers less time than the states (or has a gap) looks like.
    """
    if len(frame_times_ns) == 0:
        raise BadUploadError(source, "camera has no frames")
    after = np.searchsorted(frame_times_ns, row_times_ns, side="left")
    after = np.clip(after, 0, len(frame_times_ns) - 1)
    before = np.clip(after - 1, 0, len(frame_times_ns) - 1)
    pick_before = np.abs(row_times_ns - frame_times_ns[before]) <= np.abs(
        frame_times_ns[after] - row_times_ns
    )
    nearest = np.where(pick_before, before, after)
    error = np.abs(frame_times_ns[nearest] - row_times_ns)
    half_period_ns = 0.5e9 / fps
    tolerance_ns = alignment_tolerance_ns(fps)
    if (error > tolerance_ns).any():
        row = int(np.argmax(error > tolerance_ns))
        raise BadUploadError(
            source,
            f"camera covers {frame_times_ns[0] / 1e9:.3f}-{frame_times_ns[-1] / 1e9:.3f} s but the "
            f"states run {row_times_ns[0] / 1e9:.3f}-{row_times_ns[-1] / 1e9:.3f} s (row {row} is "
            f"{error[row] / 1e6:.1f} ms from the nearest frame; at most half a period, "
            f"{half_period_ns / 1e6:.1f} ms, is allowed)",
        )
    return nearest

"""How control-rate rows align with camera frames: each row points at the camera frame nearest
in time (ingest builds rows with ``nearest_frames``), and that frame must be within
``alignment_tolerance_ns`` of the row (what ingest enforces and the integrity checks verify)."""

from __future__ import annotations

import numpy as np

from robodata.errors import BadUploadError

TIMESTAMP_SLACK_NS = 1_000_000  # 1 ms for container timestamp rounding


def alignment_tolerance_ns(fps: float) -> float:
    """The largest allowed distance between a row and its camera frame: one camera period plus
    the rounding slack. Inside the camera's span a row is at most half the gap between the two
    frames around it away, and a variable-rate camera whose frames jitter by up to half a
    period leaves gaps of up to two periods.

    >>> alignment_tolerance_ns(50.0)
    21000000.0
    """
    return 1e9 / fps + TIMESTAMP_SLACK_NS


def nearest_frames(row_times_ns: np.ndarray, frame_times_ns: np.ndarray, fps: float, source: str) -> np.ndarray:
    """Index of the camera frame nearest each row time.

    Raises BadUploadError when a row lies more than half a camera period beyond the first or
    last frame (a camera that covers less time than the states), or more than one period from
    every frame inside it (a gap longer than two periods: frames are missing; frames jittering
    by up to half a period, as a variable-rate camera's do, are fine).
    """
    if len(frame_times_ns) == 0:
        raise BadUploadError(source, "camera has no frames")
    after = np.searchsorted(frame_times_ns, row_times_ns, side="left")
    after = np.clip(after, 0, len(frame_times_ns) - 1)
    before = np.clip(after - 1, 0, len(frame_times_ns) - 1)
    pick_before = np.abs(row_times_ns - frame_times_ns[before]) <= np.abs(frame_times_ns[after] - row_times_ns)
    nearest = np.where(pick_before, before, after)
    error = np.abs(frame_times_ns[nearest] - row_times_ns)
    half_period_ns = 0.5e9 / fps
    outside = (row_times_ns < frame_times_ns[0]) | (row_times_ns > frame_times_ns[-1])
    beyond = outside & (error > half_period_ns + TIMESTAMP_SLACK_NS)
    if beyond.any():
        row = int(np.argmax(beyond))
        raise BadUploadError(
            source,
            f"camera covers {frame_times_ns[0] / 1e9:.3f}-{frame_times_ns[-1] / 1e9:.3f} s but the "
            f"states run {row_times_ns[0] / 1e9:.3f}-{row_times_ns[-1] / 1e9:.3f} s (row {row} is "
            f"{error[row] / 1e6:.1f} ms from the nearest frame; at most half a period, "
            f"{half_period_ns / 1e6:.1f} ms, is allowed)",
        )
    in_gap = ~outside & (error > alignment_tolerance_ns(fps))
    if in_gap.any():
        row = int(np.argmax(in_gap))
        gap = frame_times_ns[after[row]] - frame_times_ns[before[row]]
        raise BadUploadError(
            source,
            f"camera has no frame for {gap / 1e6:.1f} ms around {row_times_ns[row] / 1e9:.3f} s "
            f"(row {row} is {error[row] / 1e6:.1f} ms from the nearest frame); frames may jitter by "
            f"half a period, so gaps of at most two periods, {4 * half_period_ns / 1e6:.1f} ms, are allowed",
        )
    return nearest

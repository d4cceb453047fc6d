"""Decoded camera frames re-encoded as an MP4 a browser plays: H.264, yuv420p, the index at the
front (faststart) so it plays and seeks from a data: URI, each frame at its own time."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from fractions import Fraction

import av
import numpy as np

# 90 kHz is the usual video clock: exact for 30 fps and for control rates up to kHz.
TIME_BASE = Fraction(1, 90_000)


def browser_mp4(
    frames: Iterable[np.ndarray], seconds: Sequence[float] | np.ndarray, duration: float, *, crf: int = 23
) -> bytes:
    """Encode ``frames`` (H x W x 3 uint8), frame k shown from ``seconds[k]`` until the next frame
    (the last one until ``duration``), as H.264 MP4 bytes.

    >>> frames = [np.full((48, 64, 3), 80 * i, np.uint8) for i in range(3)]
    >>> data = browser_mp4(frames, [0.0, 0.033, 0.066], duration=0.1)
    >>> data[4:8]  # an MP4 file
    b'ftyp'
    """
    ticks = [round(s / TIME_BASE) for s in seconds]
    end = max(round(duration / TIME_BASE), ticks[-1] + 1) if ticks else 0
    # faststart moves the index in a second pass over a real file (it cannot over a BytesIO).
    with tempfile.TemporaryDirectory(prefix="robodata-view-") as folder:
        path = f"{folder}/camera.mp4"
        _encode(path, frames, ticks, end, seconds, crf)
        with open(path, "rb") as f:
            return f.read()


def _encode(path: str, frames: Iterable[np.ndarray], ticks: list[int], end: int, seconds, crf: int) -> None:
    with av.open(path, "w", format="mp4", options={"movflags": "+faststart"}) as container:
        stream = None
        pending = None  # the newest packet: its duration is only known once the next one arrives
        for k, rgb in enumerate(frames):
            rgb = _even(rgb)
            if stream is None:
                stream = _h264_stream(container, rgb.shape[1], rgb.shape[0], seconds, crf)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts, frame.time_base = ticks[k], TIME_BASE
            for packet in stream.encode(frame):
                pending = _mux_previous(container, pending, packet)
        if stream is None:
            raise ValueError("no frames to encode")
        for packet in stream.encode(None):
            pending = _mux_previous(container, pending, packet)
        if pending is not None:
            pending.duration = end - pending.pts
            container.mux(pending)


def _h264_stream(container, width: int, height: int, seconds: Sequence[float], crf: int):
    # Average rate: only a rate-control hint, frames carry their own times.
    span = seconds[-1] - seconds[0] if len(seconds) > 1 else 0
    rate = Fraction(len(seconds) - 1) / Fraction(span).limit_denominator(90_000) if span > 0 else Fraction(30)
    stream = container.add_stream("libx264", rate=rate.limit_denominator(1001))
    stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
    stream.time_base = TIME_BASE
    stream.codec_context.time_base = TIME_BASE
    # No B-frames: packets leave the encoder in display order, so each one's duration is the
    # gap to the next.
    stream.options = {"crf": str(crf), "preset": "veryfast", "bf": "0", "profile": "high"}
    return stream


def _mux_previous(container, pending, packet):
    if pending is not None:
        pending.duration = packet.pts - pending.pts
        container.mux(pending)
    return packet


def _even(rgb: np.ndarray) -> np.ndarray:
    """yuv420p needs even sides: repeat the last row / column of an odd-sized frame."""
    h, w = rgb.shape[:2]
    if h % 2 or w % 2:
        rgb = np.pad(rgb, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
    return np.ascontiguousarray(rgb)

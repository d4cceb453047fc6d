"""LeRobot's camera MP4s: several episodes back to back in one file per camera, written and
read with PyAV (AV1 through libsvtav1 by default, as LeRobot's VideoEncoderConfig does)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from fractions import Fraction

import av
import numpy as np

from robodata.codec._realtime_threads import no_realtime_threads_left
from robodata.errors import BadUploadError

LIBSVTAV1_DEFAULT_PRESET = 12  # lerobot/configs/video.py


def resolved_preset(vcodec: str, preset: int | str | None) -> int | str | None:
    """The preset LeRobot's VideoEncoderConfig settles on: the one given, else libsvtav1's default
    (12) for libsvtav1 and the encoder's own for any other (x264 has no preset 12)."""
    if preset is None and vcodec == "libsvtav1":
        return LIBSVTAV1_DEFAULT_PRESET
    return preset


def codec_options(vcodec: str, g: int, crf: int, preset: int | str | None) -> dict[str, str]:
    """Encoder options as LeRobot's VideoEncoderConfig.get_codec_options builds them."""
    options = {"g": str(g), "crf": str(crf)}
    preset = resolved_preset(vcodec, preset)
    if preset is not None:
        options["preset"] = str(preset)
    if vcodec == "libsvtav1":
        options["svtav1-params"] = "fast-decode=0"
    return options


class SharedVideoWriter:
    """One camera's MP4: frames are appended episode after episode with continuous timestamps
    (frame k sits at k / fps), so an episode's span is [first / fps, end / fps).

    >>> with SharedVideoWriter("file-000.mp4", 64, 48, 30) as video:
    ...     for shade in range(3):
    ...         video.add(np.full((48, 64, 3), 80 * shade, np.uint8))
    >>> video.frames
    3
    """

    def __init__(
        self,
        path: str,
        width: int,
        height: int,
        fps: int,
        vcodec: str = "libsvtav1",
        g: int = 2,
        crf: int = 30,
        pix_fmt: str = "yuv420p",
        preset: int | str | None = None,
    ) -> None:
        self.path, self.fps, self.frames = path, fps, 0
        os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints a banner per file at its default level
        self._container = av.open(path, "w")
        try:
            stream = self._container.add_stream(
                vcodec, rate=Fraction(fps), options=codec_options(vcodec, g, crf, preset)
            )
            if not isinstance(stream, av.VideoStream):
                raise ValueError(f"{vcodec!r} is not a video codec")
            self._stream = stream
            self._stream.width, self._stream.height, self._stream.pix_fmt = width, height, pix_fmt
            with no_realtime_threads_left():  # libsvtav1 run as root makes its threads real-time
                self._stream.codec_context.open()
        except Exception:
            self._container.close()
            raise
        self._time_base = Fraction(1, fps)

    def add(self, rgb: np.ndarray) -> None:
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        frame.pts, frame.time_base = self.frames, self._time_base
        self.frames += 1
        for packet in self._stream.encode(frame):
            self._container.mux(packet)

    def close(self) -> None:
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()

    def __enter__(self) -> SharedVideoWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self._container.close()


def probe_video_info(path: str) -> dict:
    """The stream-derived ``video.*`` entries LeRobot's get_video_info records."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        if stream.base_rate is None:
            raise ValueError(f"{path}: its video stream has no frame rate")
        return {
            "video.height": stream.height,
            "video.width": stream.width,
            "video.codec": stream.codec.canonical_name,
            "video.pix_fmt": stream.pix_fmt,
            "video.fps": int(stream.base_rate),
            "video.channels": 3,
            "has_audio": bool(container.streams.audio),
        }


def decode_span(handle, source: str, from_s: float, to_s: float, fps: float) -> Iterator[tuple[float, np.ndarray]]:
    """Frames of an opened MP4 whose time lies in [from_s, to_s), as (seconds after from_s, RGB).

    Raises BadUploadError when the file ends before ``to_s``: an episodes table pointing past
    the end of the video.
    """
    half_frame = 0.5 / fps
    try:
        container = av.open(handle)
    except av.error.FFmpegError as exc:
        raise BadUploadError(source, f"not a readable video ({exc})") from None
    with container:
        if not container.streams.video:
            raise BadUploadError(source, "file has no video stream")
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        container.seek(max(0, int((from_s - half_frame) / stream.time_base)), backward=True, stream=stream)
        last = None
        for frame in container.decode(stream):
            if frame.pts is None:
                continue
            t = float(frame.pts * stream.time_base)
            last = t
            if t < from_s - half_frame:
                continue
            if t >= to_s - half_frame:
                return
            yield t - from_s, frame.to_ndarray(format="rgb24")
    if last is not None and last >= to_s - 1.0 / fps - half_frame:
        return  # the span's last frame is the file's last frame
    end = "no frames" if last is None else f"its last frame at {last:.4f} s"
    raise BadUploadError(
        source,
        f"the episodes table points past the end of the video (span {from_s:.4f}-{to_s:.4f} s, video has {end})",
    )

"""Read a camera video of any container and codec FFmpeg decodes, with frame times from its
timestamps, through fsspec so that uploads on s3:// read the same way as local ones."""

from __future__ import annotations

from collections.abc import Iterator

import av
import numpy as np

from robodata.errors import BadUploadError
from robodata.ingest.episode import CameraStream


def probe_camera(name: str, path: str, fs, start_offset_ns: int = 0) -> CameraStream:
    """Open ``path`` far enough to know its size and rate; frames decode later, on demand."""
    try:
        size = fs.size(path)
    except FileNotFoundError:
        raise BadUploadError(path, f"camera {name!r} video file is missing") from None
    if not size:
        raise BadUploadError(path, f"camera {name!r} video file is empty (0 bytes)")
    with _open(path, fs) as container:
        stream = _video_stream(container, path)
        width, height = stream.codec_context.width, stream.codec_context.height
        rate = stream.average_rate or stream.base_rate or stream.guessed_rate
        if not width or not height or not rate:
            raise BadUploadError(path, "video stream has no frame size or frame rate")
    return CameraStream(
        name=name,
        width=width,
        height=height,
        fps=float(rate),
        frames=lambda: _decode(path, fs, width, height, start_offset_ns),
        source=path,
    )


def _open(path: str, fs):
    handle = fs.open(path, "rb")
    try:
        return av.open(handle, mode="r")
    except (av.error.FFmpegError, UnicodeDecodeError) as exc:
        handle.close()
        raise BadUploadError(
            path, f"not a readable video: truncated, damaged or not a video at all ({exc.__class__.__name__}: {exc})"
        ) from None


def _video_stream(container, path: str):
    if not container.streams.video:
        raise BadUploadError(path, "file has no video stream")
    return container.streams.video[0]


def _decode(path: str, fs, width: int, height: int, offset_ns: int) -> Iterator[tuple[int, np.ndarray]]:
    with _open(path, fs) as container:
        stream = _video_stream(container, path)
        stream.thread_type = "AUTO"
        expected = stream.frames
        count = 0
        try:
            for frame in container.decode(stream):
                if (frame.width, frame.height) != (width, height):
                    raise BadUploadError(
                        path,
                        f"resolution changes mid-stream: frame {count} is "
                        f"{frame.width}x{frame.height}, stream starts at {width}x{height}",
                    )
                if frame.pts is None:
                    raise BadUploadError(path, f"frame {count} has no timestamp")
                t_ns = round(float(frame.pts * frame.time_base) * 1e9) + offset_ns
                yield t_ns, frame.to_ndarray(format="rgb24")
                count += 1
        except av.error.FFmpegError as exc:
            raise BadUploadError(path, f"video is corrupt or truncated after frame {count}: {exc}") from None
        if count == 0:
            raise BadUploadError(path, "video has no decodable frames")
        if expected and count < expected:
            raise BadUploadError(
                path, f"video is truncated: the container lists {expected} frames, {count} decode"
            )

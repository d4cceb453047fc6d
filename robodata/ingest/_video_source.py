"""Read a camera video of any container and codec FFmpeg decodes, with frame times from its
timestamps, through fsspec so that uploads on s3:// read the same way as local ones.

Frames come out as they are meant to be seen: a display rotation in the container (a phone
held upright) is applied, and an odd width or height (641x481) loses its last column or row,
because H.264 in 4:2:0 needs even sizes. Both are logged and listed in ``CameraStream.notes``.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterator

import av
import numpy as np

from robodata.errors import BadUploadError
from robodata.ingest._episode import CameraStream

log = logging.getLogger("robodata.ingest")


def probe_camera(name: str, path: str, fs, start_offset_ns: int = 0) -> CameraStream:
    """Open ``path`` far enough to know its upright size and rate; frames decode later, on demand.

    >>> import fsspec
    >>> probe_camera("top", "uploads/episode_000000/top.mp4", fsspec.filesystem("file")).width
    640
    """
    try:
        info = fs.info(path)
    except FileNotFoundError:
        raise BadUploadError(path, f"camera {name!r} video file is missing") from None
    if info.get("type") == "directory":
        raise BadUploadError(path, f"camera {name!r} file is a directory, not a video")
    if not info.get("size"):
        raise BadUploadError(path, f"camera {name!r} video file is empty (0 bytes)")
    with _open(path, fs) as container:
        stream = _video_stream(container, path)
        rate = stream.average_rate or stream.base_rate or stream.guessed_rate
        if not stream.codec_context.width or not stream.codec_context.height or not rate:
            raise BadUploadError(path, "video stream has no frame size or frame rate")
        rotation = _first_frame_rotation(container, stream, path)
    coded = (stream.codec_context.width, stream.codec_context.height)
    upright = coded[::-1] if rotation % 180 else coded
    width, height = upright[0] - upright[0] % 2, upright[1] - upright[1] % 2
    notes = []
    file = posixpath.basename(path)
    if rotation:
        notes.append(f"{file}: rotated {rotation} degrees counter-clockwise, as its display matrix asks")
    if (width, height) != upright:
        notes.append(
            f"{file}: cropped {upright[0]}x{upright[1]} to {width}x{height} "
            "(H.264 4:2:0 needs an even width and height; the last column/row is dropped)"
        )
    for note in notes:
        log.warning(note)
    return CameraStream(
        name=name,
        width=width,
        height=height,
        fps=float(rate),
        frames=lambda: _decode(path, fs, coded, rotation, (width, height), start_offset_ns),
        source=path,
        notes=notes,
        coded_size=coded,
        rotation=rotation,
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


def _first_frame_rotation(container, stream, path: str) -> int:
    """The display rotation (degrees counter-clockwise, a multiple of 90) of the first frame."""
    try:
        frame = next(iter(container.decode(stream)), None)
    except av.error.FFmpegError as exc:
        raise BadUploadError(path, f"video is corrupt: its first frame does not decode ({exc})") from None
    if frame is None:
        raise BadUploadError(path, "video has no decodable frames")
    rotation = int(round(frame.rotation or 0)) % 360
    if rotation % 90:
        raise BadUploadError(path, f"display rotation of {rotation} degrees is not a multiple of 90")
    return rotation


def _upright(rgb: np.ndarray, rotation: int, size: tuple[int, int]) -> np.ndarray:
    if rotation:
        rgb = np.rot90(rgb, k=rotation // 90)  # np.rot90 turns counter-clockwise, like the matrix
    width, height = size
    if rotation or rgb.shape[:2] != (height, width):
        rgb = np.ascontiguousarray(rgb[:height, :width])
    return rgb


def _decode(
    path: str, fs, coded: tuple[int, int], rotation: int, size: tuple[int, int], offset_ns: int
) -> Iterator[tuple[int, np.ndarray]]:
    width, height = coded
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
                yield t_ns, _upright(frame.to_ndarray(format="rgb24"), rotation, size)
                count += 1
        except av.error.FFmpegError as exc:
            raise BadUploadError(path, f"video is corrupt or truncated after frame {count}: {exc}") from None
        if count == 0:
            raise BadUploadError(path, "video has no decodable frames")
        if expected and count < expected:
            raise BadUploadError(path, f"video is truncated: the container lists {expected} frames, {count} decode")

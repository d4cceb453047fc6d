"""Read a camera video of any container and codec FFmpeg decodes, with frame times from its
timestamps, through fsspec so that uploads on s3:// read the same way as local ones.

Frames come out as they are meant to be seen: a display rotation in the container (a phone
held upright) is applied, and an odd width or height (641x481) loses its last column or row,
because H.264 in 4:2:0 needs even sizes. Both are logged and listed in ``CameraStream.notes``.

A camera file is hostile until decoded: it is read no further than its size when checked, for
no longer than the upload file time limit, and decoded strictly: FFmpeg conceals damaged data
(it logs "error while decoding MB ..." and returns patched frames), so the decoder runs with
``err_detect=explode`` in frame-threaded mode, where FFmpeg's H.264 decoder does raise on a
damaged slice, and a frame FFmpeg marks corrupt is refused too. Every failure is a
BadUploadError naming the file.
"""

from __future__ import annotations

import logging
import os
import posixpath
from collections.abc import Iterator

import av
import numpy as np

from robodata.errors import BadUploadError
from robodata.ingest._episode import CameraStream
from robodata.ingest._upload_limits import (
    MAX_CAMERA_FPS,
    MAX_FRAME_SIDE,
    MAX_VIDEO_BYTES,
    MIN_CAMERA_FPS,
    MIN_FRAME_SIDE,
    BoundedFile,
    FileClock,
    check_file_size,
)

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
    size = info.get("size")
    if not size:
        raise BadUploadError(path, f"camera {name!r} video file is empty (0 bytes)")
    check_file_size(path, size, MAX_VIDEO_BYTES)
    clock = FileClock(path)
    with _open(path, fs, size, clock) as container:
        stream = _video_stream(container, path)
        rate = _frame_rate(stream, path)
        rotation = _first_frame_rotation(container, stream, path, clock)
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
        frames=lambda: _decode(path, fs, size, coded, rotation, (width, height), start_offset_ns),
        source=path,
        notes=notes,
        coded_size=coded,
        rotation=rotation,
    )


def _open(path: str, fs, size: int, clock: FileClock):
    handle = fs.open(path, "rb")
    source = BoundedFile(handle, size, clock)
    try:
        return av.open(source, mode="r")
    except (av.error.FFmpegError, UnicodeDecodeError) as exc:
        handle.close()
        clock.check()
        raise BadUploadError(
            path, f"not a readable video: truncated, damaged or not a video at all ({exc.__class__.__name__}: {exc})"
        ) from None


def _video_stream(container, path: str):
    """The file's first video stream, refused unless FFmpeg knows its codec and its frame size
    is one H.264 can store (2x2 to 8192x8192 pixels)."""
    if not container.streams.video:
        raise BadUploadError(path, "file has no video stream")
    stream = container.streams.video[0]
    codec = stream.codec_context
    if codec is None:  # a damaged codec tag: FFmpeg has no decoder for it
        raise BadUploadError(path, "video stream's codec is unknown or its header is damaged")
    width, height = codec.width, codec.height
    if not (MIN_FRAME_SIDE <= width <= MAX_FRAME_SIDE and MIN_FRAME_SIDE <= height <= MAX_FRAME_SIDE):
        raise BadUploadError(
            path,
            f"frame size {width}x{height} is outside {MIN_FRAME_SIDE}x{MIN_FRAME_SIDE} to "
            f"{MAX_FRAME_SIDE}x{MAX_FRAME_SIDE} pixels, the sizes a camera may have",
        )
    return stream


def _frame_rate(stream, path: str) -> float:
    """The stream's frames per second, refused outside 1 to 1000 (a broken time base)."""
    rate = stream.average_rate or stream.base_rate or stream.guessed_rate
    if not rate:
        raise BadUploadError(path, "video stream has no frame rate")
    fps = float(rate)
    if not MIN_CAMERA_FPS <= fps <= MAX_CAMERA_FPS:
        raise BadUploadError(
            path,
            f"frame rate {fps:.4g} fps is outside {MIN_CAMERA_FPS:g} to {MAX_CAMERA_FPS:g} fps, the rates a camera may have",
        )
    return fps


def _first_frame_rotation(container, stream, path: str, clock: FileClock) -> int:
    """The display rotation (degrees counter-clockwise, a multiple of 90) of the first frame."""
    try:
        frame = next(iter(container.decode(stream)), None)
    except av.error.FFmpegError as exc:
        clock.check()
        raise BadUploadError(path, f"video is corrupt: its first frame does not decode ({exc})") from None
    clock.check()
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


def _strict(stream) -> None:
    """Decode ``stream`` so that damaged data raises instead of being concealed: FFmpeg's H.264
    decoder honours ``err_detect=explode`` when it decodes in frame threads (measured on MP4s
    with flipped bytes: every damaged one raised, in slice or single-thread mode almost none
    did), so frame threading is asked for with at least two threads, also on one core."""
    stream.codec_context.options = {**stream.codec_context.options, "err_detect": "explode"}
    stream.thread_type = "FRAME"
    stream.codec_context.thread_count = max(2, min(os.cpu_count() or 1, 8))


def _decode(
    path: str, fs, size: int, coded: tuple[int, int], rotation: int, size_out: tuple[int, int], offset_ns: int
) -> Iterator[tuple[int, np.ndarray]]:
    width, height = coded
    clock = FileClock(path)
    with _open(path, fs, size, clock) as container:
        stream = _video_stream(container, path)
        _strict(stream)
        expected = stream.frames
        count = 0
        try:
            for frame in container.decode(stream):
                clock.check()
                if frame.is_corrupt:
                    raise BadUploadError(path, f"video data is damaged: frame {count} decodes with errors")
                if (frame.width, frame.height) != (width, height):
                    raise BadUploadError(
                        path,
                        f"resolution changes mid-stream: frame {count} is "
                        f"{frame.width}x{frame.height}, stream starts at {width}x{height}",
                    )
                if frame.pts is None:
                    raise BadUploadError(path, f"frame {count} has no timestamp")
                t_ns = round(float(frame.pts * frame.time_base) * 1e9) + offset_ns
                rgb = _upright(frame.to_ndarray(format="rgb24"), rotation, size_out)
                clock.pause()  # the ingest's work on the frame is not the file's time
                yield t_ns, rgb
                clock.resume()
                count += 1
        except av.error.FFmpegError as exc:
            clock.check()
            raise BadUploadError(
                path,
                f"video data is damaged or truncated: {count} frame{'' if count == 1 else 's'} decoded, then the decoder failed ({_one_line(exc)})",
            ) from None
        clock.check()
        if count == 0:
            raise BadUploadError(path, "video has no decodable frames")
        if expected and count < expected:
            raise BadUploadError(path, f"video is truncated: the container lists {expected} frames, {count} decode")


def _one_line(exc: Exception) -> str:
    return " ".join(f"{exc.__class__.__name__}: {exc}".split())

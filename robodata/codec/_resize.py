"""The one resize robodata applies to camera frames: FFmpeg's swscale, through PyAV.

Training renditions are written with it (decoded full-resolution GOP -> resized RGB -> encoded
GOP) and the reader uses it when no stored rendition has the requested size, so a frame read
at a size looks the same whichever path produced it. Area averaging: every source pixel
counts, which is what a downscale for a policy's input wants (bilinear would alias at 3x).
"""

from __future__ import annotations

import av
import numpy as np

from robodata.codec._swscale import convert_into

INTERPOLATION = "AREA"
# What a decoded frame can be handed over as: RGB (H x W x 3) or the decoder's own planar YUV
# 4:2:0 (I420: H*3/2 x W, Y then U then V), half the bytes and no colour conversion on the CPU
# (robodata.torch._yuv.yuv420_to_rgb converts on the training device).
PIXEL_FORMATS = ("rgb24", "yuv420p")
# RGB channels first (3 x H x W), for consumers that want CHW (PyTorch models, LeRobot's items):
# swscale writes planar RGB (its "gbrp") and each plane is copied to its channel, so no
# transposing copy of packed RGB follows. The same pixels as rgb24 (the tests compare them).
PLANAR_RGB = "rgbp"


def _one_sws_thread() -> dict:
    """swscale on one thread: recent PyAV (18) defaults to ``threads=0``, a slice-thread pool set
    up for every frame's conversion (about as much CPU as the conversion itself; measured in
    benchmarks/lerobot_path.py), while the decode pool already runs one conversion per core.
    PyAV 15 has no such option and converts on one thread."""
    try:
        av.VideoFrame(2, 2, "yuv420p").reformat(format="rgb24", threads=1)
    except TypeError:
        return {}
    return {"threads": 1}


_SWS = _one_sws_thread()


def frame_shape(height: int, width: int, pixel_format: str = "rgb24") -> tuple[int, ...]:
    """The array shape of one frame of ``height`` x ``width`` in ``pixel_format``.

    >>> frame_shape(480, 640), frame_shape(480, 640, "yuv420p"), frame_shape(480, 640, "rgbp")
    ((480, 640, 3), (720, 640), (3, 480, 640))
    """
    if pixel_format == "rgb24":
        return (height, width, 3)
    if pixel_format == "yuv420p":
        return (height * 3 // 2, width)
    if pixel_format == PLANAR_RGB:
        return (3, height, width)
    raise ValueError(f"pixel_format must be one of {(*PIXEL_FORMATS, PLANAR_RGB)}, got {pixel_format!r}")


def frame_array(
    frame: av.VideoFrame,
    size: tuple[int, int] | None = None,
    pixel_format: str = "rgb24",
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``frame`` as an array in ``pixel_format``, scaled to ``size`` (height, width) if given;
    written into ``out`` (and returned) when given.

    >>> frame = av.VideoFrame.from_ndarray(np.arange(24, dtype=np.uint8).reshape(2, 4, 3), format="rgb24")
    >>> bool((frame_array(frame, pixel_format="rgbp") == frame_array(frame).transpose(2, 0, 1)).all())
    True
    """
    height, width = size or (frame.height, frame.width)
    shape = frame_shape(height, width, pixel_format)
    target = np.empty(shape, np.uint8) if out is None else out
    if target.shape == shape and convert_into(frame, target, pixel_format):
        return target
    if pixel_format == PLANAR_RGB:
        return _planar_rgb(frame, size, out)
    if pixel_format == "rgb24":
        array = _pyav_rgb(frame, height, width)
    else:
        if (frame.height, frame.width) != (height, width):
            frame = frame.reformat(width=width, height=height, format=pixel_format, interpolation=INTERPOLATION, **_SWS)
        array = frame.to_ndarray(format=pixel_format)
    if out is None:
        return array
    out[...] = array
    return out


def _planar_rgb(frame: av.VideoFrame, size: tuple[int, int] | None, out: np.ndarray | None) -> np.ndarray:
    height, width = (frame.height, frame.width) if size is None else size
    if out is None:
        out = np.empty((3, height, width), np.uint8)
    if (height, width) != (frame.height, frame.width):
        # swscale scales planar output differently (by a level here and there): keep rgb24's pixels
        out[...] = resized_rgb(frame, height, width).transpose(2, 0, 1)
        return out
    planar = frame.reformat(format="gbrp", **_SWS)
    for channel, plane in zip((1, 2, 0), planar.planes, strict=True):  # gbrp: G, B, R planes
        out[channel] = np.frombuffer(memoryview(plane), np.uint8).reshape(height, plane.line_size)[:, :width]
    return out


def resized_rgb(frame: av.VideoFrame, height: int, width: int) -> np.ndarray:
    """``frame`` scaled to ``height`` x ``width`` and converted to RGB in one swscale pass.

    >>> frame = av.VideoFrame.from_ndarray(np.zeros((480, 640, 3), np.uint8), format="rgb24")
    >>> resized_rgb(frame, 224, 224).shape
    (224, 224, 3)
    """
    out = np.empty((height, width, 3), np.uint8)
    return out if convert_into(frame, out) else _pyav_rgb(frame, height, width)


def _pyav_rgb(frame: av.VideoFrame, height: int, width: int) -> np.ndarray:
    if (frame.height, frame.width) == (height, width):
        return frame.to_ndarray(format="rgb24", **_SWS)
    return frame.to_ndarray(format="rgb24", width=width, height=height, interpolation=INTERPOLATION, **_SWS)

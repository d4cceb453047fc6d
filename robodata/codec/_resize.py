"""The one resize robodata applies to camera frames: FFmpeg's swscale, through PyAV.

Training renditions are written with it (decoded full-resolution GOP -> resized RGB -> encoded
GOP) and the reader uses it when no stored rendition has the requested size, so a frame read
at a size looks the same whichever path produced it. Area averaging: every source pixel
counts, which is what a downscale for a policy's input wants (bilinear would alias at 3x).
"""

from __future__ import annotations

import av
import numpy as np

from robodata.codec._planar_rgb import planar_rgb_into, plane_array
from robodata.codec._reformat import reformat

INTERPOLATION = "AREA"
# What a decoded frame can be handed over as: RGB (H x W x 3) or the decoder's own planar YUV
# 4:2:0 (I420: H*3/2 x W, Y then U then V), half the bytes and no colour conversion on the CPU
# (robodata.torch._yuv.yuv420_to_rgb converts on the training device).
PIXEL_FORMATS = ("rgb24", "yuv420p")
# RGB channels first (3 x H x W), for consumers that want CHW (PyTorch models, LeRobot's items):
# the same pixels as rgb24, written without a transposing copy at a frame's own size
# (robodata.codec._planar_rgb).
PLANAR_RGB = "rgbp"


def frame_shape(height: int, width: int, pixel_format: str = "rgb24") -> tuple[int, ...]:
    """The array shape of one frame of ``height`` x ``width`` in ``pixel_format``.

    >>> frame_shape(480, 640), frame_shape(480, 640, "yuv420p"), frame_shape(480, 640, "rgbp")
    ((480, 640, 3), (720, 640), (3, 480, 640))
    """
    if pixel_format == "rgb24":
        return (height, width, 3)
    if pixel_format == "yuv420p":
        if height % 2 or width % 2:
            raise ValueError(f"yuv420p (I420) frames have an even height and width, got {width}x{height}")
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
    if out is not None and (out.shape != shape or out.dtype != np.uint8):
        raise ValueError(f"out is {out.dtype} {out.shape}; a {pixel_format} frame of {width}x{height} is uint8 {shape}")
    native = (height, width) == (frame.height, frame.width)
    if pixel_format == PLANAR_RGB:
        target = np.empty(shape, np.uint8) if out is None else out
        if native:
            return planar_rgb_into(frame, target)
        # swscale scales planar output differently (by a level here and there): keep rgb24's pixels
        target[...] = resized_rgb(frame, height, width).transpose(2, 0, 1)
        return target
    if pixel_format == "rgb24":
        array = _pyav_rgb(frame, height, width)
    elif native and frame.format.name == "yuv420p":
        return _i420_copy(frame, np.empty(shape, np.uint8) if out is None else out)
    else:
        scaled = {} if native else {"width": width, "height": height, "interpolation": INTERPOLATION}
        array = reformat(frame, format=pixel_format, **scaled).to_ndarray()
    if out is None:
        return array
    out[...] = array
    return out


def _i420_copy(frame: av.VideoFrame, out: np.ndarray) -> np.ndarray:
    """The decoder's own planes, copied into ``out`` (H*3/2 x W: Y, then U, then V): no conversion."""
    height, width = frame.height, frame.width
    flat = out.reshape(-1) if out.flags.c_contiguous else np.empty(out.size, np.uint8)
    start = 0
    for plane, (rows, columns) in zip(frame.planes, [(height, width), *[(height // 2, width // 2)] * 2], strict=True):
        flat[start : start + rows * columns].reshape(rows, columns)[...] = plane_array(plane, rows, columns)
        start += rows * columns
    if not out.flags.c_contiguous:
        out[...] = flat.reshape(out.shape)
    return out


def resized_rgb(frame: av.VideoFrame, height: int, width: int) -> np.ndarray:
    """``frame`` scaled to ``height`` x ``width`` and converted to RGB in one swscale pass.

    >>> frame = av.VideoFrame.from_ndarray(np.zeros((480, 640, 3), np.uint8), format="rgb24")
    >>> resized_rgb(frame, 224, 224).shape
    (224, 224, 3)
    """
    return _pyav_rgb(frame, height, width)


def _pyav_rgb(frame: av.VideoFrame, height: int, width: int) -> np.ndarray:
    if (frame.height, frame.width) == (height, width):
        return reformat(frame, format="rgb24").to_ndarray()
    return reformat(frame, format="rgb24", width=width, height=height, interpolation=INTERPOLATION).to_ndarray()

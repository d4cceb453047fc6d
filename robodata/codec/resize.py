"""The one resize robodata applies to camera frames: FFmpeg's swscale, through PyAV.

Training renditions are written with it (decoded full-resolution GOP -> resized RGB -> encoded
GOP) and the reader uses it when no stored rendition has the requested size, so a frame read
at a size looks the same whichever path produced it. Area averaging: every source pixel
counts, which is what a downscale for a policy's input wants (bilinear would alias at 3x).
"""

from __future__ import annotations

import av
import numpy as np

INTERPOLATION = "AREA"
# What a decoded frame can be handed over as: RGB (H x W x 3) or the decoder's own planar YUV
# 4:2:0 (I420: H*3/2 x W, Y then U then V), half the bytes and no colour conversion on the CPU
# (robodata.torch.yuv.yuv420_to_rgb converts on the training device).
PIXEL_FORMATS = ("rgb24", "yuv420p")


def frame_shape(height: int, width: int, pixel_format: str = "rgb24") -> tuple[int, ...]:
    """The array shape of one frame of ``height`` x ``width`` in ``pixel_format``.

    >>> frame_shape(480, 640), frame_shape(480, 640, "yuv420p")
    ((480, 640, 3), (720, 640))
    """
    if pixel_format == "rgb24":
        return (height, width, 3)
    if pixel_format == "yuv420p":
        return (height * 3 // 2, width)
    raise ValueError(f"pixel_format must be one of {PIXEL_FORMATS}, got {pixel_format!r}")


def frame_array(frame: av.VideoFrame, size: tuple[int, int] | None = None, pixel_format: str = "rgb24") -> np.ndarray:
    """``frame`` as an array in ``pixel_format``, scaled to ``size`` (height, width) if given."""
    if pixel_format == "rgb24":
        return frame.to_ndarray(format="rgb24") if size is None else resized_rgb(frame, *size)
    if size is not None and (frame.height, frame.width) != tuple(size):
        frame = frame.reformat(width=size[1], height=size[0], format=pixel_format, interpolation=INTERPOLATION)
    return frame.to_ndarray(format=pixel_format)


def resized_rgb(frame: av.VideoFrame, height: int, width: int) -> np.ndarray:
    """``frame`` scaled to ``height`` x ``width`` and converted to RGB in one swscale pass.

    >>> frame = av.VideoFrame.from_ndarray(np.zeros((480, 640, 3), np.uint8), format="rgb24")
    >>> resized_rgb(frame, 224, 224).shape
    (224, 224, 3)
    """
    if (frame.height, frame.width) == (height, width):
        return frame.to_ndarray(format="rgb24")
    return frame.to_ndarray(format="rgb24", width=width, height=height, interpolation=INTERPOLATION)

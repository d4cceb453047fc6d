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


def resized_rgb(frame: av.VideoFrame, height: int, width: int) -> np.ndarray:
    """``frame`` scaled to ``height`` x ``width`` and converted to RGB in one swscale pass.

    >>> frame = av.VideoFrame.from_ndarray(np.zeros((480, 640, 3), np.uint8), format="rgb24")
    >>> resized_rgb(frame, 224, 224).shape
    (224, 224, 3)
    """
    if (frame.height, frame.width) == (height, width):
        return frame.to_ndarray(format="rgb24")
    return frame.to_ndarray(format="rgb24", width=width, height=height, interpolation=INTERPOLATION)

"""RGB channels first (3 x H x W) from a decoded YUV 4:2:0 picture at its own size, the same
pixels as PyAV's ``to_ndarray(format="rgb24")`` transposed, without the transposing copy.

swscale writes planar RGB (its "gbrp") and each plane is copied to its channel. Two things of
swscale's keep that from being exact on its own, so the fast path is checked, per frame size,
before it is trusted:

- its YUV 4:2:0 -> gbrp SIMD converter works in blocks of 16 pixels and leaves the columns of a
  partial last block wrong (columns 80-87 of an 88-pixel row, up to 255 levels off; FFmpeg 8's
  swscale, PyAV 18). Those columns are converted again, through rgb24, from a strip of the
  picture's last 16 or so columns (about 0.04 ms a frame, PyAV's per-call costs mostly).
- at odd heights its gbrp output rounds differently from its rgb24 output.

The check (``_fast_path_is_exact``) converts a pseudo-random picture of the frame's size, format
and colour tags both ways, once per process; where they differ the frame goes through rgb24 and
is transposed (exact by construction, two to three times the time at 640x480). So a swscale that
behaves differently costs speed, never pixels.
"""

from __future__ import annotations

from functools import lru_cache

import av
import numpy as np
from av.video.plane import VideoPlane

from robodata.codec._reformat import reformat

_BLOCK = 16  # pixels per step of swscale's planar converter (measured: columns past the last whole block are wrong)
_GBRP_CHANNELS = (1, 2, 0)  # gbrp's planes are G, B, R: the output channel of each


def planar_rgb_into(frame: av.VideoFrame, out: np.ndarray) -> np.ndarray:
    """Write ``frame`` into ``out`` (3 x H x W uint8, H and W the frame's) as RGB channels first.

    >>> rgb = np.random.default_rng(0).integers(0, 256, (6, 88, 3), dtype=np.uint8)
    >>> frame = av.VideoFrame.from_ndarray(rgb).reformat(format="yuv420p")
    >>> out = planar_rgb_into(frame, np.empty((3, 6, 88), np.uint8))
    >>> bool((out == frame.to_ndarray(format="rgb24").transpose(2, 0, 1)).all())
    True
    """
    key = (frame.format.name, frame.width, frame.height, frame.colorspace, frame.color_range)
    if _fast_path_is_exact(*key):
        return _through_gbrp(frame, out)
    out[...] = reformat(frame, format="rgb24").to_ndarray().transpose(2, 0, 1)
    return out


def _through_gbrp(frame: av.VideoFrame, out: np.ndarray) -> np.ndarray:
    height, width = frame.height, frame.width
    planar = reformat(frame, format="gbrp")
    for channel, plane in zip(_GBRP_CHANNELS, planar.planes, strict=True):
        out[channel] = plane_array(plane, height, width)
    if width % _BLOCK:
        start = max(0, width - _BLOCK) & ~1  # even: the strip's chroma starts on a chroma sample
        out[:, :, start:] = reformat(_strip(frame, start), format="rgb24").to_ndarray().transpose(2, 0, 1)
    return out


def _strip(frame: av.VideoFrame, start: int) -> av.VideoFrame:
    """Columns ``start`` onwards of a YUV 4:2:0 ``frame``, as a frame of its own (same tags)."""
    strip = av.VideoFrame(frame.width - start, frame.height, frame.format.name)
    strip.colorspace, strip.color_range = frame.colorspace, frame.color_range
    for index, (target, source) in enumerate(zip(strip.planes, frame.planes, strict=True)):
        offset = start if index == 0 else start // 2
        rows, columns = target.height, target.width
        plane_array(target, rows, columns)[...] = plane_array(source, rows, offset + columns)[:, offset:]
    return strip


def plane_array(plane: VideoPlane, rows: int, columns: int) -> np.ndarray:
    """The ``rows`` x ``columns`` picture of ``plane`` (its rows are ``line_size`` bytes apart)."""
    return np.frombuffer(memoryview(plane), np.uint8).reshape(-1, plane.line_size)[:rows, :columns]


@lru_cache(maxsize=256)
def _fast_path_is_exact(pixel_format: str, width: int, height: int, colorspace: int, color_range: int) -> bool:
    """Whether ``_through_gbrp`` gives rgb24's pixels for frames of this kind, tried on a
    pseudo-random picture (every level, so every rounding and clipping case shows)."""
    if pixel_format != "yuv420p":
        return False
    probe = av.VideoFrame(width, height, pixel_format)
    probe.colorspace, probe.color_range = colorspace, color_range
    rng = np.random.default_rng([width, height])
    for plane in probe.planes:
        plane_array(plane, plane.height, plane.width)[...] = rng.integers(0, 256, (plane.height, plane.width))
    expected = reformat(probe, format="rgb24").to_ndarray().transpose(2, 0, 1)
    return bool(np.array_equal(_through_gbrp(probe, np.empty_like(expected)), expected))

"""Every swscale conversion robodata makes of a decoded frame, through PyAV's public reformatter.

``VideoFrame.reformat`` (and ``to_ndarray(format=...)``) keeps one reformatter in each frame:
a new swscale context for every decoded frame, and a race when two threads convert the same
frame at once (wrong pixels, or a hang). Each thread keeps its own reformatter per kind of
conversion instead: the context is set up once and never shared (about 15% off a 640x480
conversion).

This replaced ``_swscale``, which called PyAV's libswscale through ctypes to convert straight
into the output array (issue 39). swscale's SIMD converters write past a row's end, and the
frames of a window or a DataLoader slab are packed back to back, so no frame but the last can
be given room for that: kept safe, it could not apply where it saved time. Its A/B against this
module (``benchmarks/pixel_conversions.py``, CPU time): its rgb24 and rgbp conversions at
640x480 took 22% and 33% less, an 8-frame window x 3 cameras at 640x480 10-13% less; its
yuv420p took more (CHANGELOG.md).
"""

from __future__ import annotations

import threading

import av
from av.video.reformatter import VideoReformatter

_local = threading.local()
_MOST_KINDS = 64  # per thread; past that (sizes come and go) the reformatters start again


def _one_sws_thread() -> dict:
    """swscale on one thread: recent PyAV (18) defaults to ``threads=0``, a slice-thread pool set
    up for every frame's conversion (about as much CPU as the conversion itself; measured in
    benchmarks/lerobot_path.py), while the decode pool already runs one conversion per core.
    PyAV 15 has no such option and converts on one thread."""
    try:
        VideoReformatter().reformat(av.VideoFrame(2, 2, "yuv420p"), format="rgb24", threads=1)
    except TypeError:
        return {}
    return {"threads": 1}


_SWS = _one_sws_thread()


def reformat(frame: av.VideoFrame, **options) -> av.VideoFrame:
    """``frame.reformat(**options)`` on this thread's reformatter for this kind of conversion.

    >>> frame = av.VideoFrame(64, 48, "yuv420p")
    >>> reformat(frame, format="rgb24").to_ndarray().shape
    (48, 64, 3)
    """
    kind = (frame.format.name, frame.width, frame.height, *sorted(options.items()))
    reformatters = _local.__dict__.setdefault("reformatters", {})
    reformatter = reformatters.get(kind)
    if reformatter is None:
        if len(reformatters) >= _MOST_KINDS:
            reformatters.clear()
        reformatter = reformatters[kind] = VideoReformatter()
    return reformatter.reformat(frame, **options, **_SWS)

"""Convert a decoded picture straight into the caller's array, with the swscale library PyAV
itself loaded.

PyAV's ``VideoFrame.to_ndarray`` converts into a frame PyAV allocates, which the reader then
copied into its output (a window array, a DataLoader slab): a second pass over every output
byte. Calling the same library's ``sws_scale`` through ctypes, with the output array as the
destination, does the same arithmetic in one pass (an 8-frame window x 3 cameras at 640x480:
9.5 -> 8.1 ms wall on 2 cores; docs/benchmark_levers.md, "Converting straight into the output").

The same arithmetic, because the conversion is configured as PyAV configures it for these
frames: planar YUV 4:2:0 with no colourspace or range tagged (what robodata's encoder writes),
swscale's BT.601 limited-range default, at the frame's own size. The tests compare every layout
with PyAV's pixel for pixel. Anything else returns ``False`` and the caller converts through
PyAV: a tagged colourspace or range, another source format, an array of another layout, a
width that is not a multiple of 64 pixels (``_WIDTH_MULTIPLE``), no loadable library, or a scale (PyAV's ``sws_scale_frame`` scales differently from this legacy
entry point, by a level here and there).
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from functools import cache

import av
import numpy as np

# swscale's flags, as PyAV passes them (av.video.reformatter.Interpolation)
_BILINEAR = 2  # PyAV's default; unscaled, it only picks swscale's converter
# swscale's SIMD converters write whole blocks of pixels, past the end of a row whose width is
# not a multiple of the block (16 pixels here, measured): harmless inside PyAV's padded frames,
# a write past the caller's array on its last row. Widths of whole 64-pixel blocks (640, 1280,
# 1920) leave room for wider SIMD; other widths go through PyAV.
_WIDTH_MULTIPLE = 64
_UNTAGGED_COLORSPACE = 2  # AVCOL_SPC_UNSPECIFIED
_UNTAGGED_RANGE = 0  # AVCOL_RANGE_UNSPECIFIED
# robodata's pixel formats -> FFmpeg's; "rgbp" is swscale's "gbrp" with the planes pointed at
# the output's channels G, B, R (robodata.codec._resize.PLANAR_RGB).
_FFMPEG_FORMAT = {"rgb24": "rgb24", "yuv420p": "yuv420p", "rgbp": "gbrp"}
_RGBP_PLANES = (1, 2, 0)


class _Library:
    """The loaded libswscale and libavutil entry points this module calls."""

    def __init__(self, swscale: ctypes.CDLL, avutil: ctypes.CDLL) -> None:
        self.get_context = swscale.sws_getContext
        self.get_context.restype = ctypes.c_void_p
        self.get_context.argtypes = [ctypes.c_int] * 7 + [ctypes.c_void_p] * 3
        self.scale = swscale.sws_scale
        self.scale.restype = ctypes.c_int
        pointers, ints = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int)
        self.scale.argtypes = [ctypes.c_void_p, pointers, ints, ctypes.c_int, ctypes.c_int, pointers, ints]
        self.free_context = swscale.sws_freeContext
        self.free_context.argtypes = [ctypes.c_void_p]
        pixel_format = avutil.av_get_pix_fmt
        pixel_format.restype = ctypes.c_int
        pixel_format.argtypes = [ctypes.c_char_p]
        self.formats = {name: pixel_format(ffmpeg.encode()) for name, ffmpeg in _FFMPEG_FORMAT.items()}


def _loaded_path(stem: str) -> str | None:
    """The file of the library ``stem`` (e.g. ``libswscale``) this process has mapped: the one
    PyAV links, whichever build of PyAV it is."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if os.path.basename(path).startswith((stem + "-", stem + ".")):
                    return path
    except OSError:
        pass
    package = os.path.dirname(av.__file__)
    for folder in (os.path.join(package, os.pardir, "av.libs"), os.path.join(package, ".dylibs")):
        found = sorted(glob.glob(os.path.join(folder, stem + "[-.]*")))
        if found:
            return found[0]
    return None


@cache
def _library() -> _Library | None:
    if os.environ.get("ROBODATA_PYAV_CONVERT"):  # the PyAV path, for comparison and bisecting
        return None
    paths = _loaded_path("libswscale"), _loaded_path("libavutil")
    if None in paths:
        return None
    try:
        library = _Library(*(ctypes.CDLL(path) for path in paths))
    except (OSError, AttributeError):
        return None
    return library if min(library.formats.values()) >= 0 else None


class _Contexts:
    """One SwsContext per conversion shape, for one thread (a context is not thread-safe);
    freed with the thread."""

    def __init__(self, library: _Library) -> None:
        self.library = library
        self.by_shape: dict[tuple[int, ...], int] = {}

    def get(self, shape: tuple[int, ...]) -> int:
        context = self.by_shape.get(shape)
        if context is None:
            context = self.library.get_context(*shape, None, None, None)
            if not context:
                raise MemoryError(f"swscale could not set up the conversion {shape}")
            self.by_shape[shape] = context
        return context

    def __del__(self) -> None:
        for context in self.by_shape.values():
            self.library.free_context(context)


_local = threading.local()


def _thread_contexts(library: _Library) -> _Contexts:
    contexts = getattr(_local, "contexts", None)
    if contexts is None:
        contexts = _local.contexts = _Contexts(library)
    return contexts


def available() -> bool:
    """Whether conversions can go straight into the caller's array here."""
    return _library() is not None


def convert_into(frame: av.VideoFrame, out: np.ndarray, pixel_format: str = "rgb24") -> bool:
    """Convert ``frame`` into ``out`` at its own size; ``False`` (``out`` untouched) when this
    path does not apply and PyAV must convert.

    ``out`` is ``[H, W, 3]`` for ``"rgb24"``, ``[3, H, W]`` for ``"rgbp"`` and ``[H*3/2, W]``
    (I420) for ``"yuv420p"``, uint8, C-contiguous, of the frame's height and width, the width a
    multiple of 64.

    >>> import numpy as np
    >>> frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 90, np.uint8)).reformat(format="yuv420p")
    >>> out = np.zeros((48, 64, 3), np.uint8)
    >>> convert_into(frame, out) == available(), bool((out == frame.to_ndarray(format="rgb24")).all())
    (True, True)
    """
    library = _library()
    if library is None or frame.format.name != "yuv420p" or pixel_format not in library.formats:
        return False
    if frame.colorspace != _UNTAGGED_COLORSPACE or frame.color_range != _UNTAGGED_RANGE:
        return False
    if out.dtype != np.uint8 or not out.flags.c_contiguous or not out.flags.writeable:
        return False
    height, width = _output_size(out, pixel_format)
    if width < 1 or height < 1 or width % _WIDTH_MULTIPLE or (pixel_format == "yuv420p" and height % 2):
        return False
    if (height, width) != (frame.height, frame.width):
        return False
    shape = (width, height, library.formats["yuv420p"], width, height, library.formats[pixel_format])
    context = _thread_contexts(library).get((*shape, _BILINEAR))
    planes = frame.planes
    source = (ctypes.c_void_p * 4)(*(plane.buffer_ptr for plane in planes), None)
    source_strides = (ctypes.c_int * 4)(*(plane.line_size for plane in planes), 0)
    targets, strides = _destination(out, pixel_format, height, width)
    # ctypes releases the GIL for the call, so the decode pool's threads convert in parallel
    written = library.scale(context, source, source_strides, 0, frame.height, targets, strides)
    if written != height:
        raise RuntimeError(f"swscale wrote {written} of {height} rows converting {frame} to {pixel_format}")
    return True


def _output_size(out: np.ndarray, pixel_format: str) -> tuple[int, int]:
    if pixel_format == "rgb24" and out.ndim == 3 and out.shape[2] == 3:
        return out.shape[0], out.shape[1]
    if pixel_format == "rgbp" and out.ndim == 3 and out.shape[0] == 3:
        return out.shape[1], out.shape[2]
    if pixel_format == "yuv420p" and out.ndim == 2 and out.shape[0] % 3 == 0:
        return out.shape[0] * 2 // 3, out.shape[1]
    return 0, 0


def _destination(out: np.ndarray, pixel_format: str, height: int, width: int):
    base = out.ctypes.data
    if pixel_format == "rgb24":
        pointers, strides = [base], [width * 3]
    elif pixel_format == "rgbp":
        pointers = [base + channel * height * width for channel in _RGBP_PLANES]
        strides = [width] * 3
    else:  # I420 in one array: Y, then U and V at half size each way
        chroma = (height // 2) * (width // 2)
        pointers = [base, base + height * width, base + height * width + chroma]
        strides = [width, width // 2, width // 2]
    targets = (ctypes.c_void_p * 4)(*pointers, *[None] * (4 - len(pointers)))
    return targets, (ctypes.c_int * 4)(*strides, *[0] * (4 - len(strides)))

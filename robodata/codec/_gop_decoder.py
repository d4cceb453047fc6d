"""Decode frames out of one closed GOP, stopping at the last frame asked for.

Packet boundaries are stored next to the GOP bytes, so no bitstream parser runs on the
read path. Each thread keeps one single-threaded decoder and reuses it: every GOP starts
with an IDR and carries its own SPS/PPS, so the previous GOP leaves nothing behind that
could change a pixel (the tests compare against a fresh plain PyAV decoder).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import accumulate

import av
import numpy as np

from robodata.codec._codecs import codec_named
from robodata.codec._resize import frame_array

_local = threading.local()


def _decoder(codec: str) -> av.VideoCodecContext:
    decoders = getattr(_local, "decoders", None)
    if decoders is None:
        decoders = _local.decoders = {}
    ctx = decoders.get(codec)
    if ctx is None:
        ctx = av.Codec(codec, "r").create("video")
        ctx.thread_count = 1
        ctx.thread_type = "NONE"
        decoders[codec] = ctx
    return ctx


def decode_gop_frames(
    data: bytes | memoryview,
    packet_sizes: Sequence[int] | np.ndarray,
    wanted: Sequence[int],
    out: Sequence[np.ndarray] | None = None,
    codec: str = "h264",
    size: tuple[int, int] | None = None,
    pixel_format: str = "rgb24",
) -> list[np.ndarray]:
    """Decode GOP frames ``wanted`` (indices in the GOP) to RGB, decoding no further than needed.

    ``out``, when given, holds one H x W x 3 uint8 array per wanted frame to write into.
    ``size`` (height, width) scales each frame on its way to RGB (``robodata.codec._resize``);
    ``pixel_format="yuv420p"`` hands frames over as planar YUV 4:2:0 (H*3/2 x W), unconverted;
    ``"rgbp"`` as RGB channels first (3 x H x W, ``out`` arrays of that shape).

    >>> from robodata.codec import EncoderSettings
    >>> from robodata.codec._gop_encoder import encode_gops
    >>> frames = [np.full((48, 64, 3), 40 * i, np.uint8) for i in range(4)]
    >>> [gop] = encode_gops(iter(frames), 64, 48, 30, EncoderSettings(gop_size=4))
    >>> rgb = decode_gop_frames(gop.data, gop.packet_sizes, [3])[0]
    >>> rgb.shape, abs(float(rgb.mean()) - 120) < 3  # frame 3 (all 120), within the codec's loss
    ((48, 64, 3), True)
    """
    if not wanted:
        return []
    last = max(wanted)
    if last >= len(packet_sizes):
        raise IndexError(f"frame {last} asked of a GOP with {len(packet_sizes)} frames")
    slots: dict[int, list[int]] = {}
    for position, k in enumerate(wanted):
        slots.setdefault(k, []).append(position)
    results: list[np.ndarray | None] = [None] * len(wanted)
    name = codec_named(codec).name
    starts = [0, *accumulate(packet_sizes[: last + 1])]
    ctx = _decoder(name)
    view = memoryview(data)
    decoded = 0
    try:
        for k in range(last + 1):
            # PyAV takes any buffer (no copy); its stub names only bytes
            for frame in ctx.decode(av.Packet(view[starts[k] : starts[k + 1]])):  # type: ignore[arg-type]
                _store(frame, decoded, slots, results, out, size, pixel_format)
                decoded += 1
        if decoded <= last:  # the decoder held frames back: drain it
            for frame in ctx.decode(None):
                _store(frame, decoded, slots, results, out, size, pixel_format)
                decoded += 1
            ctx.flush_buffers()
    except av.error.FFmpegError:
        _local.decoders.pop(name, None)
        raise
    if decoded <= last:
        raise ValueError(f"GOP yielded {decoded} frames, frame {last} was asked for")
    return results  # type: ignore[return-value]


def _store(frame, index, slots, results, out, size=None, pixel_format="rgb24") -> None:
    for position in slots.get(index, ()):
        results[position] = frame_array(frame, size, pixel_format, None if out is None else out[position])


def plain_decode_gop(data: bytes, codec: str = "h264") -> list[np.ndarray]:
    """Every frame of a GOP through a fresh PyAV decoder and parser: the reference decode."""
    name = codec_named(codec).name
    parser = av.CodecContext.create(name, "r")
    packets = parser.parse(data) + parser.parse(None)
    return [f.to_ndarray(format="rgb24") for f in _fresh_decode(name, packets)]


def _fresh_decode(decoder: str, packets: list[av.Packet]) -> list[av.VideoFrame]:
    ctx = av.Codec(decoder, "r").create("video")
    frames = []
    for packet in packets:
        frames.extend(ctx.decode(packet))
    frames.extend(ctx.decode(None))
    return frames


def decode_gop_pictures(
    data: bytes | memoryview, packet_sizes: Sequence[int] | np.ndarray, last: int, codec: str = "h264"
) -> list[av.VideoFrame]:
    """Frames 0..``last`` of a GOP as the decoder's own pictures (planar YUV 4:2:0, not converted),
    for a reader that keeps some and converts each when it hands it over (``frame_array``).

    >>> from robodata.codec import EncoderSettings
    >>> from robodata.codec._gop_encoder import encode_gops
    >>> [gop] = encode_gops(iter([np.zeros((48, 64, 3), np.uint8)] * 4), 64, 48, 30, EncoderSettings(gop_size=4))
    >>> [(p.format.name, p.height) for p in decode_gop_pictures(gop.data, gop.packet_sizes, 1)]
    [('yuv420p', 48), ('yuv420p', 48)]
    """
    if last >= len(packet_sizes):
        raise IndexError(f"frame {last} asked of a GOP with {len(packet_sizes)} frames")
    name = codec_named(codec).name
    starts = [0, *accumulate(packet_sizes[: last + 1])]
    ctx = _decoder(name)
    view = memoryview(data)
    pictures: list[av.VideoFrame] = []
    try:
        for k in range(last + 1):
            pictures.extend(ctx.decode(av.Packet(view[starts[k] : starts[k + 1]])))  # type: ignore[arg-type]
        if len(pictures) <= last:  # the decoder held frames back: drain it
            pictures.extend(ctx.decode(None))
            ctx.flush_buffers()
    except av.error.FFmpegError:
        _local.decoders.pop(name, None)
        raise
    if len(pictures) <= last:
        raise ValueError(f"GOP yielded {len(pictures)} frames, frame {last} was asked for")
    return pictures[: last + 1]

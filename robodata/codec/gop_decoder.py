"""Decode frames out of one closed GOP, stopping at the last frame asked for.

Packet boundaries are stored next to the GOP bytes, so no bitstream parser runs on the
read path. Each thread keeps one single-threaded decoder and reuses it: every GOP starts
with an IDR and carries its own SPS/PPS, so the previous GOP leaves nothing behind that
could change a pixel (the tests compare against a fresh plain PyAV decoder).

An anchored GOP (``codecs.Codec.anchored``) has P frames that all refer to the IDR and share
one frame_num, so they cannot follow each other: frame k is decoded by feeding [IDR, P_k], and
several wanted frames by feeding IDR, P_a, IDR, P_b, ... (each IDR resets the decoder's
references). Any frame costs at most two decodes; the whole GOP costs 2G - 1.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import accumulate

import av
import numpy as np

from robodata.codec.codecs import codec_named
from robodata.codec.resize import resized_rgb

_local = threading.local()


def _decoder(codec: str) -> av.CodecContext:
    decoders = getattr(_local, "decoders", None)
    if decoders is None:
        decoders = _local.decoders = {}
    ctx = decoders.get(codec)
    if ctx is None:
        ctx = av.CodecContext.create(codec, "r")
        ctx.thread_count = 1
        ctx.thread_type = "NONE"
        decoders[codec] = ctx
    return ctx


def decode_gop_frames(
    data: bytes | memoryview,
    packet_sizes: Sequence[int],
    wanted: Sequence[int],
    out: Sequence[np.ndarray] | None = None,
    codec: str = "h264",
    size: tuple[int, int] | None = None,
) -> list[np.ndarray]:
    """Decode GOP frames ``wanted`` (indices in the GOP) to RGB, decoding no further than needed.

    ``out``, when given, holds one H x W x 3 uint8 array per wanted frame to write into.
    ``size`` (height, width) scales each frame on its way to RGB (``robodata.codec.resize``).

    >>> rgb = decode_gop_frames(gop_bytes, packet_sizes, [3])[0]  # doctest: +SKIP
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
    stored = codec_named(codec)
    # feed: the packets to decode, in order; shows: the GOP frame each one's output is (None: an
    # anchored GOP's IDR decoded again only as the reference of the next P frame).
    feed, shows = _anchored_plan(slots) if stored.anchored else (range(last + 1), range(last + 1))
    starts = [0, *accumulate(packet_sizes[: max(feed) + 1])]
    ctx = _decoder(stored.ffmpeg_decoder)
    view = memoryview(data)
    decoded = 0
    try:
        for k in feed:
            for frame in ctx.decode(av.Packet(view[starts[k] : starts[k + 1]])):
                _store(frame, shows[decoded], slots, results, out, size)
                decoded += 1
        if decoded < len(feed):  # the decoder held frames back: drain it
            for frame in ctx.decode(None):
                _store(frame, shows[decoded], slots, results, out, size)
                decoded += 1
            ctx.flush_buffers()
    except av.error.FFmpegError:
        _local.decoders.pop(stored.ffmpeg_decoder, None)
        raise
    if decoded < len(feed):
        raise ValueError(f"GOP yielded {decoded} frames, frame {last} was asked for")
    return results  # type: ignore[return-value]


def _anchored_plan(slots: dict[int, list[int]]) -> tuple[list[int], list[int | None]]:
    """Packets to feed for the wanted frames of an anchored GOP: IDR, P_a, IDR, P_b, ..."""
    feed, shows = [0], [0]
    for n, k in enumerate(sorted(set(slots) - {0})):
        if n:
            feed.append(0)
            shows.append(None)
        feed.append(k)
        shows.append(k)
    return feed, shows


def _store(frame, index, slots, results, out, size=None) -> None:
    for position in slots.get(index, ()):
        rgb = frame.to_ndarray(format="rgb24") if size is None else resized_rgb(frame, *size)
        if out is not None:
            out[position][...] = rgb
            rgb = out[position]
        results[position] = rgb


def plain_decode_gop(data: bytes, codec: str = "h264") -> list[np.ndarray]:
    """Every frame of a GOP through a fresh PyAV decoder and parser: the reference decode. An
    anchored GOP's frame k comes from a fresh decoder fed [IDR, P_k], as it was encoded."""
    stored = codec_named(codec)
    parser = av.CodecContext.create(stored.ffmpeg_decoder, "r")
    packets = parser.parse(data) + parser.parse(None)
    if not stored.anchored:
        return [f.to_ndarray(format="rgb24") for f in _fresh_decode(stored.ffmpeg_decoder, packets)]
    idr = packets[:1]
    pictures = [_fresh_decode(stored.ffmpeg_decoder, idr)[0]]
    pictures += [_fresh_decode(stored.ffmpeg_decoder, idr + [p])[1] for p in packets[1:]]
    return [f.to_ndarray(format="rgb24") for f in pictures]


def _fresh_decode(decoder: str, packets: list[av.Packet]) -> list[av.VideoFrame]:
    ctx = av.CodecContext.create(decoder, "r")
    frames = []
    for packet in packets:
        frames.extend(ctx.decode(packet))
    frames.extend(ctx.decode(None))
    return frames

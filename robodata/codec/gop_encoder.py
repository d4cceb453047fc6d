"""Encode RGB frames into closed, fixed-length GOPs (H.264 Annex B by default), one bytes object each.

Every GOP starts with an IDR frame and repeats SPS/PPS, so it decodes with a fresh decoder
and nothing else. No B-frames and zero-latency tuning make display order equal decode order,
so decoding frame k of a GOP needs exactly packets 0..k.

Anchored GOPs (a codec with ``anchored=True``, e.g. ``h264-anchored``) are written pair by pair:
a fresh encoder encodes [frame 0, frame k] for each k, so P_k refers to the IDR only. The GOP
stores the IDR once, then P_1..P_{G-1}; decoding frame k needs exactly packets 0 and k. The IDR
of every pair must be byte-identical (x264 with one thread is deterministic), or the stored IDR
would not be the picture P_k was predicted from: the encoder checks it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import av
import numpy as np

from robodata.codec.codecs import Codec, codec_named
from robodata.codec.settings import EncoderSettings


@dataclass
class EncodedGop:
    """One closed GOP: its Annex B bytes and the size of each frame's packet inside them."""

    data: bytes
    packet_sizes: list[int] = field(default_factory=list)

    @property
    def n_frames(self) -> int:
        return len(self.packet_sizes)


class GopEncoder:
    """Feed RGB frames one at a time; completed GOPs come back as they close.

    >>> enc = GopEncoder(640, 480, fps=30)  # doctest: +SKIP
    >>> gops = [g for f in frames for g in enc.add(f)] + enc.finish()  # doctest: +SKIP
    """

    def __init__(self, width: int, height: int, fps: float, settings: EncoderSettings | None = None) -> None:
        self.settings = settings or EncoderSettings()
        self.width, self.height = width, height
        codec = codec_named(self.settings.codec)
        self._anchored = _AnchoredGops(codec, width, height, fps, self.settings) if codec.anchored else None
        self._ctx = None if self._anchored else codec.open_encoder(width, height, fps, self.settings)
        self._pts = 0
        self._current: EncodedGop | None = None
        self._chunks: list[bytes] = []

    def add(self, rgb: np.ndarray) -> list[EncodedGop]:
        """Encode one H x W x 3 uint8 frame; returns the GOPs this frame closed (0 or 1)."""
        if rgb.shape != (self.height, self.width, 3):
            raise ValueError(
                f"frame {self._pts} is {rgb.shape[1]}x{rgb.shape[0]}, stream is {self.width}x{self.height}"
            )
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        frame.pts = self._pts
        self._pts += 1
        if self._anchored is not None:
            return self._anchored.add(frame)
        return self._collect(self._ctx.encode(frame))

    def finish(self) -> list[EncodedGop]:
        """Flush the encoder and return the remaining GOPs (the last may be short)."""
        if self._anchored is not None:
            return self._anchored.finish()
        done = self._collect(self._ctx.encode(None))
        if self._current is not None:
            done.append(self._close_current())
        return done

    def _collect(self, packets: list[av.Packet]) -> list[EncodedGop]:
        done = []
        for packet in packets:
            if packet.is_keyframe and self._current is not None:
                done.append(self._close_current())
            if self._current is None:
                if not packet.is_keyframe:
                    raise RuntimeError("encoder produced a GOP that does not start with a keyframe")
                self._current = EncodedGop(b"")
            payload = bytes(packet)
            self._chunks.append(payload)
            self._current.packet_sizes.append(len(payload))
        return done

    def _close_current(self) -> EncodedGop:
        gop = self._current
        assert gop is not None
        gop.data = b"".join(self._chunks)
        self._current, self._chunks = None, []
        return gop


class _AnchoredGops:
    """Collects a GOP's frames, then writes it as [IDR, P_1, ..., P_{G-1}], each P_k encoded
    after the IDR alone by a fresh encoder."""

    def __init__(self, codec: Codec, width: int, height: int, fps: float, settings: EncoderSettings) -> None:
        self._open = lambda: codec.open_encoder(width, height, fps, settings)
        self._size = settings.gop_size
        self._frames: list[av.VideoFrame] = []

    def add(self, frame: av.VideoFrame) -> list[EncodedGop]:
        self._frames.append(frame)
        return self.finish() if len(self._frames) == self._size else []

    def finish(self) -> list[EncodedGop]:
        if not self._frames:
            return []
        first, rest = self._frames[0], self._frames[1:]
        self._frames = []
        packets = self._pair(first, rest[0] if rest else None)  # [IDR] or [IDR, P_1]
        for k, frame in enumerate(rest[1:], start=2):
            pair = self._pair(first, frame)
            if pair[0] != packets[0]:
                raise RuntimeError(f"the encoder wrote a different IDR for frame {k} of an anchored GOP")
            packets.append(pair[1])
        return [EncodedGop(b"".join(packets), [len(p) for p in packets])]

    def _pair(self, first: av.VideoFrame, frame: av.VideoFrame | None) -> list[bytes]:
        ctx = self._open()
        packets = []
        for pts, picture in enumerate(f for f in (first, frame) if f is not None):
            picture.pts = pts
            packets += ctx.encode(picture)
        packets += ctx.encode(None)
        expected = 1 if frame is None else 2
        if len(packets) != expected or not packets[0].is_keyframe or any(p.is_keyframe for p in packets[1:]):
            raise RuntimeError(f"the encoder wrote {len(packets)} packets for an anchored pair, not IDR + P")
        return [bytes(p) for p in packets]


def encode_gops(
    frames: Iterator[np.ndarray], width: int, height: int, fps: float, settings: EncoderSettings
) -> Iterator[EncodedGop]:
    """Encode a stream of RGB frames, yielding each GOP as soon as it closes."""
    encoder = GopEncoder(width, height, fps, settings)
    for rgb in frames:
        yield from encoder.add(rgb)
    yield from encoder.finish()

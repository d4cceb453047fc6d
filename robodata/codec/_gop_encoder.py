"""Encode RGB frames into closed, fixed-length GOPs (H.264 Annex B by default), one bytes object each.

Every GOP starts with an IDR frame and repeats SPS/PPS, so it decodes with a fresh decoder
and nothing else. No B-frames and zero-latency tuning make display order equal decode order,
so decoding frame k of a GOP needs exactly packets 0..k.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import av
import numpy as np

from robodata.codec._codecs import codec_named
from robodata.codec._settings import EncoderSettings


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

    >>> frames = [np.full((48, 64, 3), 40 * i, np.uint8) for i in range(6)]
    >>> enc = GopEncoder(64, 48, fps=30, settings=EncoderSettings(gop_size=4))
    >>> gops = [g for f in frames for g in enc.add(f)] + enc.finish()
    >>> [g.n_frames for g in gops]  # the last GOP is short
    [4, 2]
    """

    def __init__(self, width: int, height: int, fps: float, settings: EncoderSettings | None = None) -> None:
        self.settings = settings or EncoderSettings()
        self.width, self.height = width, height
        self._ctx = codec_named(self.settings.codec).open_encoder(width, height, fps, self.settings)
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
        return self._collect(self._ctx.encode(frame))

    def finish(self) -> list[EncodedGop]:
        """Flush the encoder and return the remaining GOPs (the last may be short)."""
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


def encode_gops(
    frames: Iterator[np.ndarray], width: int, height: int, fps: float, settings: EncoderSettings
) -> Iterator[EncodedGop]:
    """Encode a stream of RGB frames, yielding each GOP as soon as it closes."""
    encoder = GopEncoder(width, height, fps, settings)
    for rgb in frames:
        yield from encoder.add(rgb)
    yield from encoder.finish()

"""The codecs robodata can store GOPs in. Adding one is an entry here: its FFmpeg encoder and
options for closed, fixed-length GOPs; the read path decodes each GOP with the codec its
gops.lance row names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

import av

if TYPE_CHECKING:
    from robodata.codec._settings import EncoderSettings


@dataclass(frozen=True)
class Codec:
    """One stored codec: ``name`` is the FFmpeg decoder (and the value in gops.lance's ``codec``
    column), ``encoder`` the FFmpeg encoder that writes it."""

    name: str
    encoder: str
    pix_fmt: str
    options: Callable[[EncoderSettings], dict[str, str]]
    # Recorded in frames.lance's codec metadata next to the settings.
    stream_properties: dict[str, object] = field(default_factory=dict)

    def open_encoder(self, width: int, height: int, fps: float, settings: EncoderSettings) -> av.VideoCodecContext:
        """An opened encoder writing closed GOPs of ``settings.gop_size`` frames, display order
        equal to decode order (no B-frames), each GOP with its own parameter sets."""
        if self.pix_fmt == "yuv420p" and (width % 2 or height % 2):
            raise ValueError(f"{self.name} {self.pix_fmt} needs even frame sizes, got {width}x{height}")
        ctx = av.Codec(self.encoder, "w").create("video")
        ctx.width, ctx.height, ctx.pix_fmt = width, height, self.pix_fmt
        rate = Fraction(fps).limit_denominator(1001)
        ctx.framerate, ctx.time_base = rate, 1 / rate
        ctx.options = self.options(settings)
        ctx.open()
        return ctx


def _x264_options(settings: EncoderSettings) -> dict[str, str]:
    g = settings.gop_size
    return {
        "crf": str(settings.crf),
        "preset": settings.preset,
        "tune": "zerolatency,fastdecode" if settings.fast_decode else "zerolatency",
        "x264-params": f"keyint={g}:min-keyint={g}:scenecut=0:bframes=0:open-gop=0:repeat-headers=1:annexb=1",
    }


_H264_STREAM = {"pix_fmt": "yuv420p", "bframes": 0, "closed_gop": True}

CODECS: dict[str, Codec] = {
    "h264": Codec("h264", "libx264", "yuv420p", _x264_options, _H264_STREAM),
}


def codec_named(name: str) -> Codec:
    """The codec called ``name``, or a ValueError naming the ones robodata has.

    >>> codec_named("h264").encoder
    'libx264'
    """
    try:
        return CODECS[name]
    except KeyError:
        raise ValueError(f"unknown codec {name!r}; robodata stores {', '.join(sorted(CODECS))}") from None

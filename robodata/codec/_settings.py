"""How camera streams are cut and compressed: the one place robodata's encoding defaults live."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from robodata.codec._codecs import codec_named


@dataclass(frozen=True)
class EncoderSettings:
    """How camera streams are cut and compressed. ``gop_size`` is G, frames per closed GOP; ``codec`` names
    an entry of ``robodata.codec._codecs.CODECS`` (what gops.lance stores in each row's ``codec``).

    >>> EncoderSettings(gop_size=16).crf
    20
    """

    # G=4, CRF 20, preset faster: in the G x CRF x preset sweep on gym-aloha footage at 640x480
    # (CHANGELOG.md, 2026-12-04) the cheapest random read (a random frame decodes 2.5 frames
    # on average, 4.5 at G=8: 4.27 against 5.75 ms of CPU per sampled row at the old G=8 veryfast)
    # within the bytes per frame of LeRobot 0.6.1's own writer (0.98x) and above its PSNR against
    # the source (+0.49 dB). At veryfast G=4 was 0.3% over LeRobot's bytes; medium saved 1% more
    # bytes but lost 6% of the decode bound.
    gop_size: int = 4
    crf: int = 20
    preset: str = "faster"
    codec: str = "h264"
    # fastdecode (CAVLC, no deblocking) doubles decode speed on the read path for ~25% more
    # bytes at the same PSNR; reads outnumber writes, and the bytes are still far below JPEG's.
    fast_decode: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.gop_size <= 1024:
            raise ValueError(f"gop_size must be in 1..1024, got {self.gop_size}")
        if not 0 <= self.crf <= 51:
            raise ValueError(f"crf must be in 0..51, got {self.crf}")
        codec_named(self.codec)  # an unknown codec fails here, not at the first frame

    def describe(self) -> dict[str, object]:
        """What frames.lance's metadata records about the encoding (``codec.name`` and the rest).

        >>> EncoderSettings().describe()["name"]
        'h264'
        """
        body = asdict(self)
        del body["gop_size"]  # recorded on its own, as DatasetMetadata.gop_size
        body["name"] = body.pop("codec")
        body.update(codec_named(self.codec).stream_properties)
        return body

    @classmethod
    def described(cls, gop_size: int, description: Mapping[str, Any]) -> EncoderSettings:
        """The settings a dataset was written with, from its ``gop_size`` and ``describe()`` record.

        >>> EncoderSettings.described(8, EncoderSettings(crf=28).describe()).crf
        28
        """
        return cls(
            gop_size=gop_size,
            crf=int(description["crf"]),
            preset=str(description["preset"]),
            codec=str(description["name"]),
            fast_decode=bool(description["fast_decode"]),
        )

"""The run config of every asset that encodes video, mapped field for field onto EncoderSettings
(whose defaults are robodata's)."""

import dagster as dg
from pydantic import Field

from robodata.codec import CODECS, EncoderSettings

_DEFAULTS = EncoderSettings()


class EncodingConfig(dg.Config):
    """How camera video is cut into closed GOPs and compressed (through PyAV/FFmpeg)."""

    gop_size: int = Field(
        default=_DEFAULTS.gop_size, description="Frames per closed GOP (G): a random read decodes at most G."
    )
    crf: int = Field(default=_DEFAULTS.crf, description="Constant rate factor: lower is better quality, bigger.")
    preset: str = Field(default=_DEFAULTS.preset, description="Encoder speed preset.")
    codec: str = Field(default=_DEFAULTS.codec, description=f"Stored codec, one of: {', '.join(sorted(CODECS))}.")

    def encoder_settings(self) -> EncoderSettings:
        """These fields as the library's EncoderSettings (which checks them)."""
        return EncoderSettings(gop_size=self.gop_size, crf=self.crf, preset=self.preset, codec=self.codec)

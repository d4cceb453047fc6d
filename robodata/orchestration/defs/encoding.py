"""The run config of every asset that encodes video, mapped field for field onto EncoderSettings.
A field left unset keeps the dataset's own value (a new dataset: robodata's defaults)."""

import dagster as dg
from pydantic import Field

from robodata.codec import CODECS, EncoderSettings
from robodata.ingest import requested_settings

_DEFAULTS = EncoderSettings()
_KEEP = "Unset: the dataset's own; a new dataset gets {}."


class EncodingConfig(dg.Config):
    """How camera video is cut into closed GOPs and compressed (through PyAV/FFmpeg)."""

    gop_size: int | None = Field(
        default=None,
        description="Frames per closed GOP (G): a random read decodes at most G. " + _KEEP.format(_DEFAULTS.gop_size),
    )
    crf: int | None = Field(
        default=None,
        description="Constant rate factor: lower is better quality, bigger. " + _KEEP.format(_DEFAULTS.crf),
    )
    preset: str | None = Field(default=None, description="Encoder speed preset. " + _KEEP.format(_DEFAULTS.preset))
    codec: str | None = Field(
        default=None,
        description=f"Stored codec, one of: {', '.join(sorted(CODECS))}. " + _KEEP.format(_DEFAULTS.codec),
    )

    def encoder_settings(self, dataset_uri: str, storage_options: dict | None = None) -> EncoderSettings:
        """The settings to write into ``dataset_uri`` with: its own, with the fields set here."""
        return requested_settings(
            dataset_uri, storage_options, gop_size=self.gop_size, crf=self.crf, preset=self.preset, codec=self.codec
        )

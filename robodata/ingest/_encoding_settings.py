"""The encoder settings an episode is written with: the dataset's own (what its GOPs were
encoded with) unless the user asks for other values. The CLI's ``--crf``/``--gop-size`` and
Dagster's encoding config resolve through here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from robodata.codec import EncoderSettings
from robodata.format._schema import read_metadata
from robodata.format._tables import frames_uri, open_table
from robodata.storage._failures import storage_step


def stored_settings(dataset_uri: str, storage_options: dict | None = None) -> EncoderSettings:
    """The encoder settings the dataset was written with (defaults for a new dataset): an episode
    appended without settings of its own is encoded as the dataset's GOPs are, whatever the
    current defaults.

    >>> stored_settings("data/demo").gop_size
    4
    """
    with storage_step("reading the dataset's schema", frames_uri(dataset_uri), storage_options):
        frames = open_table(frames_uri(dataset_uri), storage_options)
    if frames is None:
        return EncoderSettings()
    meta = read_metadata(frames.schema, dataset_uri)
    return EncoderSettings.described(meta.gop_size, meta.codec)


def requested_settings(
    dataset_uri: str,
    storage_options: dict | None = None,
    *,
    gop_size: int | None = None,
    crf: int | None = None,
    preset: str | None = None,
    codec: str | None = None,
) -> EncoderSettings:
    """The dataset's own encoder settings (``stored_settings``) with the fields a user asked for
    replaced; a field left None keeps the dataset's value. This is what ``--crf 28`` or a Dagster
    ``crf`` means for a dataset written with other settings than today's defaults.

    >>> requested_settings("data/demo", crf=28).gop_size  # the dataset's GOP size kept
    4
    """
    asked: dict[str, Any] = {"gop_size": gop_size, "crf": crf, "preset": preset, "codec": codec}
    return replace(stored_settings(dataset_uri, storage_options), **{k: v for k, v in asked.items() if v is not None})

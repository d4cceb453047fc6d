"""Dagster's encoding config keeps an existing dataset's encoding for every field it leaves unset."""

from __future__ import annotations

import robodata
from robodata.codec import EncoderSettings
from robodata.orchestration.defs.encoding import EncodingConfig


def test_unset_fields_keep_the_datasets_encoding(sample_uploads, tmp_path):
    root = str(tmp_path / "ds")
    assert EncodingConfig().encoder_settings(root) == EncoderSettings()  # a new dataset: the defaults
    robodata.ingest_episode(str(sample_uploads[0]), root, settings=EncoderSettings(gop_size=8, crf=28))
    assert EncodingConfig().encoder_settings(root) == EncoderSettings(gop_size=8, crf=28)
    assert EncodingConfig(crf=30).encoder_settings(root) == EncoderSettings(gop_size=8, crf=30)

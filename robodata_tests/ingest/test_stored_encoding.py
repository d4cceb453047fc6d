"""A dataset keeps the encoding it was created with when the defaults change: an episode
appended without settings is encoded as the dataset's GOPs are; explicit settings that differ
in G are refused with nothing written."""

from __future__ import annotations

import pytest

import robodata
from robodata.codec import EncoderSettings
from robodata.errors import IncompatibleEpisodeError
from robodata.format._tables import gops_uri, open_table
from robodata.format._versions import current_versions
from robodata.ingest import stored_settings


def _gop_lengths(root: str, episode: int) -> list[int]:
    table = open_table(gops_uri(root)).to_table(
        columns=["n_frames"], filter=f"episode_index = {episode} AND camera = 'top'"
    )
    return table["n_frames"].to_pylist()


def test_appending_uses_the_datasets_stored_encoding_not_the_defaults(sample_uploads, tmp_path):
    assert EncoderSettings().gop_size != 6
    root = str(tmp_path / "ds")
    written = EncoderSettings(gop_size=6, crf=28, preset="ultrafast")
    robodata.ingest_episode(str(sample_uploads[0]), root, settings=written)
    assert stored_settings(root) == written
    robodata.ingest_episode(str(sample_uploads[1]), root)  # no settings: the dataset's
    # 2 s of 30 fps camera = 60 frames: GOPs of 6, in both episodes.
    assert _gop_lengths(root, 0) == _gop_lengths(root, 1) == [6] * 10
    ds = robodata.open(root)
    assert ds.metadata.gop_size == 6 and ds.metadata.codec["crf"] == 28

    before = current_versions(root)
    gop_rows = open_table(gops_uri(root)).count_rows()
    with pytest.raises(IncompatibleEpisodeError, match=r"episode_000002.*gop_size 4 != dataset's 6"):
        robodata.ingest_episode(str(sample_uploads[2]), root, settings=EncoderSettings())
    assert current_versions(root) == before and open_table(gops_uri(root)).count_rows() == gop_rows


def test_a_new_dataset_takes_the_defaults(tmp_path):
    assert stored_settings(str(tmp_path / "none")) == EncoderSettings()


def test_the_cli_keeps_the_datasets_encoding_and_changes_only_what_it_is_asked(sample_uploads, tmp_path, capsys):
    from robodata.cli import main

    root = str(tmp_path / "ds")
    robodata.ingest_episode(str(sample_uploads[0]), root, settings=EncoderSettings(gop_size=8, preset="ultrafast"))
    assert main(["ingest", str(sample_uploads[1]), root]) == 0  # no options: the dataset's G=8
    assert _gop_lengths(root, 1) == [8] * 7 + [4]
    assert main(["ingest", str(sample_uploads[2]), root, "--crf", "30"]) == 0  # G stays 8
    assert _gop_lengths(root, 2) == [8] * 7 + [4]
    before = current_versions(root)
    capsys.readouterr()
    assert main(["ingest", str(sample_uploads[2]), root, "--gop-size", "4"]) == 2
    assert "gop_size 4 != dataset's 8" in capsys.readouterr().err
    assert current_versions(root) == before


def test_requested_settings_replace_only_the_fields_asked_for(sample_uploads, tmp_path):
    from robodata.ingest import requested_settings

    root = str(tmp_path / "ds")
    robodata.ingest_episode(str(sample_uploads[0]), root, settings=EncoderSettings(gop_size=8, crf=28))
    assert requested_settings(root) == EncoderSettings(gop_size=8, crf=28)
    assert requested_settings(root, crf=30, preset="ultrafast") == EncoderSettings(
        gop_size=8, crf=30, preset="ultrafast"
    )
    assert requested_settings(str(tmp_path / "new"), crf=30) == EncoderSettings(crf=30)

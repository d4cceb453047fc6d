"""The ``h264-anchored`` codec was removed (its benchmark showed it did not pay): a dataset whose
metadata names it is refused on open and on ingest with one line naming the dataset, and nothing
is written."""

import json

import lance
import pytest

import robodata
from robodata.cli import main
from robodata.codec import CODECS, EncoderSettings
from robodata.errors import RemovedCodecError, RoboDataError
from robodata.format.schema import METADATA_KEY
from robodata.format.tables import frames_uri, gops_uri


@pytest.fixture
def anchored_dataset(dataset_copy) -> str:
    """A dataset whose frames.lance metadata says it was written with h264-anchored, as the
    release that had the codec wrote it."""
    frames = lance.dataset(frames_uri(dataset_copy))
    key = METADATA_KEY.decode()
    body = json.loads(frames.schema.metadata[METADATA_KEY])
    body["codec"] = {**body["codec"], "name": "h264-anchored", "anchored": True}
    frames.update_schema_metadata({key: json.dumps(body, sort_keys=True)}, replace=True)
    return dataset_copy


def _versions(root: str) -> tuple[int, int]:
    return lance.dataset(frames_uri(root)).version, lance.dataset(gops_uri(root)).version


def test_the_codec_is_gone_from_the_codecs_robodata_writes():
    assert "h264-anchored" not in CODECS
    with pytest.raises(ValueError, match="unknown codec 'h264-anchored'; robodata stores h264"):
        EncoderSettings(codec="h264-anchored")


def test_opening_a_dataset_written_with_it_names_the_dataset_and_what_to_do(anchored_dataset):
    with pytest.raises(RemovedCodecError) as caught:
        robodata.open(anchored_dataset)
    message = str(caught.value)
    assert isinstance(caught.value, RoboDataError) and "\n" not in message
    assert message.startswith(f"{anchored_dataset}: written with codec 'h264-anchored', which robodata removed")
    assert "re-ingest its uploads into a new dataset with this release" in message
    assert "robodata export-lerobot" in message


@pytest.mark.parametrize("settings", [None, EncoderSettings()], ids=["dataset-settings", "explicit-settings"])
def test_ingesting_into_it_is_refused_before_anything_is_written(anchored_dataset, sample_uploads, settings):
    before = _versions(anchored_dataset)
    with pytest.raises(RemovedCodecError, match=f"^{anchored_dataset}: written with codec 'h264-anchored'"):
        robodata.ingest_episode(str(sample_uploads[0]), anchored_dataset, settings=settings)
    assert _versions(anchored_dataset) == before


def test_the_cli_prints_one_line_and_exits_2(anchored_dataset, capsys):
    assert main(["info", anchored_dataset]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"robodata info: {anchored_dataset}: written with codec 'h264-anchored'")

"""robodata reads and writes one format (``FORMAT_VERSION``): a dataset whose frames.lance
metadata names another, or none, is refused on open and on ingest with one line naming the
dataset and its format version, and nothing is written."""

from __future__ import annotations

import json

import lance
import pytest

import robodata
from robodata.cli import main
from robodata.codec import EncoderSettings
from robodata.errors import RoboDataError, UnsupportedFormatError
from robodata.format._schema import FORMAT_VERSION, METADATA_KEY, read_metadata
from robodata.format._tables import frames_uri, gops_uri

WRITTEN = {"1": "robodata format 1", "3": "robodata format 3", None: "a robodata format without a version"}


def _set_format(root: str, version: str | None) -> None:
    """frames.lance's metadata as a robodata of format ``version`` (None: one that recorded none) wrote it."""
    frames = lance.dataset(frames_uri(root))
    body = json.loads(frames.schema.metadata[METADATA_KEY])
    if version is None:
        del body["format_version"]
    else:
        body["format_version"] = version
    frames.update_schema_metadata({METADATA_KEY.decode(): json.dumps(body, sort_keys=True)}, replace=True)


def _refusal(root: str, version: str | None) -> str:
    return (
        f"{root}: written in {WRITTEN[version]}; this robodata reads format {FORMAT_VERSION} only: "
        "open it with the robodata that wrote it, or ingest its uploads into a new dataset"
    )


def _versions(root: str) -> tuple[int, int]:
    return lance.dataset(frames_uri(root)).version, lance.dataset(gops_uri(root)).version


def test_a_dataset_this_release_writes_is_in_its_format(ingested):
    assert FORMAT_VERSION == "2"
    assert read_metadata(lance.dataset(frames_uri(ingested)).schema).format_version == FORMAT_VERSION


@pytest.mark.parametrize("version", ["1", "3", None], ids=["older", "newer", "unversioned"])
def test_opening_another_format_names_the_dataset_and_its_version(dataset_copy, version):
    _set_format(dataset_copy, version)
    with pytest.raises(UnsupportedFormatError) as caught:
        robodata.open(dataset_copy)
    assert isinstance(caught.value, RoboDataError)
    assert str(caught.value) == _refusal(dataset_copy, version)


@pytest.mark.parametrize("settings", [None, EncoderSettings()], ids=["dataset-settings", "explicit-settings"])
def test_ingesting_into_another_format_is_refused_before_anything_is_written(dataset_copy, sample_uploads, settings):
    _set_format(dataset_copy, "1")
    before = _versions(dataset_copy)
    with pytest.raises(UnsupportedFormatError) as caught:
        robodata.ingest_episode(str(sample_uploads[0]), dataset_copy, settings=settings)
    assert str(caught.value) == _refusal(dataset_copy, "1")
    assert _versions(dataset_copy) == before


def test_the_cli_prints_one_line_and_exits_2(dataset_copy, capsys):
    _set_format(dataset_copy, "1")
    assert main(["info", dataset_copy]) == 2
    assert capsys.readouterr().err == f"robodata info: {_refusal(dataset_copy, '1')}\n"

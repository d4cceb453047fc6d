"""A gops.lance data file cut short, or two swapped, on a local disk: every read that meets it
says the file is damaged, names it and says to restore it from a copy, in one line; never
"could not reach the file system", never Lance's raw text or its source paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import robodata
from robodata.errors import DamagedFileError, MissingGopsError
from robodata.integrity._verify import verify_dataset


def _gop_files(root: str) -> list[Path]:
    return sorted((Path(root) / "gops.lance" / "data").glob("*.lance"))


def _assert_names_damage(raised: pytest.ExceptionInfo, path: Path) -> None:
    message = str(raised.value)
    assert "\n" not in message and ".rs:" not in message and "could not reach" not in message, message
    assert f"data file {path} (" in message and "is damaged" in message, message
    assert "restore it from a copy" in message, message


@pytest.mark.parametrize("keep", [0.0, 0.5, 0.999])
def test_a_truncated_gop_data_file_is_named_as_damaged(dataset_copy, keep):
    path = _gop_files(dataset_copy)[1]
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(DamagedFileError) as raised:
        robodata.open(dataset_copy).get_frames(np.arange(0, 300, 7))
    _assert_names_damage(raised, path)
    assert f"({int(len(data) * keep)} bytes, written {len(data)})" in str(raised.value)
    with pytest.raises(DamagedFileError) as raised:
        verify_dataset(dataset_copy)
    _assert_names_damage(raised, path)


def test_two_swapped_gop_data_files_are_named_as_damaged(dataset_copy):
    first, second = _gop_files(dataset_copy)[:2]
    a, b = first.read_bytes(), second.read_bytes()
    assert len(a) != len(b)
    first.write_bytes(b)
    second.write_bytes(a)
    with pytest.raises(DamagedFileError) as raised:
        robodata.open(dataset_copy).get_frames(np.arange(0, 300, 7))
    _assert_names_damage(raised, first)
    assert "(and 1 more damaged data files)" in str(raised.value)


def test_rows_pointing_at_gops_a_swapped_manifest_lost_are_named(dataset_copy):
    """gops.lance's newest manifest swapped with an older one: the rows of the last episode point
    at GOPs the table no longer lists; said as such, not as a bare KeyError of ref_ids."""
    newest, older = sorted((Path(dataset_copy) / "gops.lance" / "_versions").glob("*.manifest"))[:2]
    a, b = newest.read_bytes(), older.read_bytes()
    newest.write_bytes(b)
    older.write_bytes(a)
    with pytest.raises(MissingGopsError) as raised:
        robodata.open(dataset_copy).get_frames(np.arange(0, 591, 7))
    message = str(raised.value)
    assert (
        message.startswith(f"{dataset_copy}/gops.lance version ") and "GOPs the rows point at are not stored" in message
    )
    assert "restore gops.lance from a copy" in message and "\n" not in message

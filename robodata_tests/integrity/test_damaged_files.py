"""A gops.lance data file cut short, or two swapped, on a local disk: every read that meets it
says the file is damaged, names it and says to restore it from a copy, in one line; never
"could not reach the file system", never Lance's raw text or its source paths."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pytest

import robodata
from robodata.errors import DamagedFileError, MissingGopsError
from robodata.integrity._verify import verify_dataset
from robodata.storage._lance_errors import explain


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


def _index_files(table: Path) -> list[Path]:
    return sorted((table / "_indices").rglob("*.lance"))


def test_a_truncated_index_file_is_damage_not_an_unreachable_store(dataset_copy):
    frames = Path(dataset_copy) / "frames.lance"
    lance.dataset(str(frames)).create_scalar_index("episode_index", "BTREE")
    [*_, page] = _index_files(frames)
    page.write_bytes(page.read_bytes()[: page.stat().st_size // 2])
    with pytest.raises(DamagedFileError) as raised:
        robodata.open(dataset_copy).to_table(filter="episode_index = 1")
    message = str(raised.value)
    assert "\n" not in message and "could not reach" not in message, message
    assert "a file of the table (data or index) is damaged" in message and "restore the table from a copy" in message


def test_an_index_that_lost_its_rows_is_damage_without_lances_bug_report_plea():
    text = (
        "External error: Encountered internal error. Please file a bug report at https://github.com/lance-format/"
        "lance/issues. fragment_id=2 row-id sequence has no entry at physical_offset=7 (sequence len=194), "
        "/home/runner/work/lance/lance/rust/lance/src/dataset/rowids.rs:290:25"
    )
    explained = explain(ValueError(text), "ds/frames.lance", "reading rows")
    assert isinstance(explained, DamagedFileError)
    assert str(explained).startswith(
        "ds/frames.lance: a file of the table (data or index) is damaged while reading rows"
    )
    assert "bug report" not in str(explained) and ".rs:" not in str(explained)


def test_a_truncated_old_manifest_is_named_by_verify_not_a_traceback(dataset_copy):
    """Lance raises a RuntimeError ("Encountered corrupt file ... magic number does not match")."""
    manifests = sorted((Path(dataset_copy) / "frames.lance" / "_versions").glob("*.manifest"))
    oldest = manifests[-1]  # Lance's newer naming: u64::MAX - version, so the oldest sorts last
    oldest.write_bytes(oldest.read_bytes()[:-300])
    with pytest.raises(DamagedFileError, match="the table is damaged: its manifest cannot be read"):
        verify_dataset(dataset_copy)

"""When reading GOP bytes in place goes wrong (Lance's blob descriptors of a data file no longer
say where its bytes are), training still gets the right frames: the file's first read compares
one GOP both ways, a GOP that fails its checksum in place is read again through Lance's
read_blobs, and either way the dataset reads through read_blobs from then on, with one
ReadInPlaceWarning. Bytes corrupt on disk are corrupt both ways: CorruptGopError, no warning.
``verify`` reads what training reads and says where the two ways differ."""

from __future__ import annotations

import warnings

import lance
import numpy as np
import pytest

import robodata
from robodata.errors import CorruptGopError
from robodata.format._tables import gops_uri
from robodata.integrity._local_gop_files import OFF_SWITCH, ReadInPlaceWarning
from robodata.integrity._verify import verify_dataset
from robodata.reader._dataset import gop_store
from robodata_tests.integrity.test_corruption import flip_gop_bytes
from robodata_tests.integrity.test_local_gop_files import drift_descriptors

TOP = "observation_images_top"


def _rows_of(ds, episode: int) -> np.ndarray:
    return np.flatnonzero(ds.to_table(columns=["episode_index"])["episode_index"].to_numpy() == episode)


def _fragment_and_row_ids(root: str, episode: int) -> tuple[int, list[int]]:
    """The gops.lance fragment holding ``episode``'s top-camera GOPs and their row ids, in GOP order."""
    table = lance.dataset(gops_uri(root)).to_table(
        columns=["gop_index"],
        filter=f"episode_index = {episode} AND camera = 'top'",
        with_row_id=True,
        with_row_address=True,
    )
    order = np.argsort(table["gop_index"].to_numpy())
    fragments = set((table["_rowaddr"].to_numpy() >> 32).tolist())
    assert len(fragments) == 1
    return fragments.pop(), table["_rowid"].to_numpy()[order].tolist()


def test_a_data_file_whose_descriptors_drifted_reads_through_lance_with_a_warning(dataset_copy, monkeypatch):
    ds = robodata.open(dataset_copy)
    first, second = _rows_of(ds, 0)[:40:7], _rows_of(ds, 1)[:40:7]
    expected_first, expected_second = ds.get_frames(first, cameras=TOP)[TOP], ds.get_frames(second, cameras=TOP)[TOP]
    fragment, _ = _fragment_and_row_ids(dataset_copy, 1)
    assert fragment != _fragment_and_row_ids(dataset_copy, 0)[0]
    drift_descriptors(monkeypatch, fragment)
    ds = robodata.open(dataset_copy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReadInPlaceWarning)
        np.testing.assert_array_equal(ds.get_frames(first, cameras=TOP)[TOP], expected_first)  # a sound file
    assert gop_store(ds)._local_files is not None
    with pytest.warns(ReadInPlaceWarning, match="differs from Lance's read_blobs") as caught:
        np.testing.assert_array_equal(ds.get_frames(second, cameras=TOP)[TOP], expected_second)
    assert len(caught) == 1 and "ROBODATA_LANCE_READ_BLOBS=1" in str(caught[0].message)
    assert gop_store(ds)._local_files is None  # read through Lance from now on
    np.testing.assert_array_equal(ds.get_frames(first, cameras=TOP)[TOP], expected_first)


def test_a_gop_that_fails_its_checksum_in_place_is_read_again_through_lance(dataset_copy, monkeypatch):
    ds = robodata.open(dataset_copy)
    rows = _rows_of(ds, 2)
    store = gop_store(ds)
    refs = store.refs(rows, TOP)
    expected = {int(r): data for r, data in store.read(refs).items()}
    fragment, row_ids = _fragment_and_row_ids(dataset_copy, 2)
    drift_descriptors(monkeypatch, fragment, only_row_id=row_ids[3])  # one GOP: the file check passes
    store = gop_store(robodata.open(dataset_copy))
    [at] = np.flatnonzero(store.index.row_ids(np.arange(len(store.index))) == row_ids[3])
    drifted_ref = int(store.index.ref_ids(np.array([at]))[0])
    others = [int(r) for r in refs if int(r) != drifted_ref]
    assert store.read(others) == {r: expected[r] for r in others}  # checks the data file: sound
    assert store._local_files is not None and store._local_files.checked_files == 1
    with pytest.warns(ReadInPlaceWarning, match="fail their checksum and differ from what Lance's read_blobs returns"):
        assert store.read([drifted_ref]) == {drifted_ref: expected[drifted_ref]}
    assert store._local_files is None


def test_bytes_corrupt_on_disk_are_corrupt_both_ways_and_keep_the_fast_path(dataset_copy):
    ds = robodata.open(dataset_copy)
    [ref] = gop_store(ds).refs(_rows_of(ds, 1)[:1], TOP)
    flip_gop_bytes(dataset_copy, gop_store(ds).read([ref])[int(ref)])
    store = gop_store(robodata.open(dataset_copy))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReadInPlaceWarning)
        with pytest.raises(CorruptGopError, match="GOP 0 of episode 1, camera 'top'"):
            store.read([ref])
    assert store._local_files is not None


def test_the_off_switch_reads_through_lance_from_the_start(dataset_copy, monkeypatch):
    ds = robodata.open(dataset_copy)
    rows = _rows_of(ds, 1)[:20:3]
    expected = ds.get_frames(rows, cameras=TOP)[TOP]
    drift_descriptors(monkeypatch, _fragment_and_row_ids(dataset_copy, 1)[0])
    monkeypatch.setenv(OFF_SWITCH, "1")
    ds = robodata.open(dataset_copy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReadInPlaceWarning)
        np.testing.assert_array_equal(ds.get_frames(rows, cameras=TOP)[TOP], expected)
    assert gop_store(ds)._local_files is None


def test_verify_reads_what_training_reads_and_names_where_the_two_ways_differ(dataset_copy, monkeypatch):
    assert verify_dataset(dataset_copy).notes == []
    fragment, _ = _fragment_and_row_ids(dataset_copy, 1)
    drift_descriptors(monkeypatch, fragment)
    report = verify_dataset(dataset_copy)
    assert report.ok, report.problems  # read_blobs' bytes are sound
    assert report.gops.read_in_place == report.gops.checked
    differs = report.gops.read_in_place_differs
    assert len(differs) == lance.dataset(gops_uri(dataset_copy)).count_rows(filter="episode_index = 1")
    [note] = [n for n in report.notes if "read in place differ from Lance's read_blobs" in n]
    assert "readers warn and read them through read_blobs" in note

"""The GOP store a prefetching loader uses: one per dataset (the one its reads decode through),
its answers agree with the rows and the stored GOPs, and bad requests fail as the reads do."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.format._schema import ref_columns
from robodata.reader._dataset import gop_store
from robodata.reader._gop_store import GopStore

TOP = "observation_images_top"


def test_each_dataset_has_one_store_and_its_reads_use_it(ingested):
    ds = robodata.open(ingested)
    store = gop_store(ds)
    assert isinstance(store, GopStore) and gop_store(ds) is store
    assert gop_store(robodata.open(ingested)) is not store  # another handle, its own store
    ds.get_frames([0], cameras="top")
    assert store.__dict__["index"] is store.index  # get_frames built the index the loader sees


def test_refs_sizes_and_bytes_match_gops_lance(ingested):
    ds = robodata.open(ingested)
    store = gop_store(ds)
    ref_id, _, in_gop = ref_columns("top")
    table = ds.lance_dataset.take([0, 8, 9, 200], columns=[ref_id, in_gop])
    assert store.refs([0, 8, 9, 200], TOP).tolist() == sorted(set(table[ref_id].to_pylist()))
    refs, frames = store.frame_refs([0, 8, 9, 200], "top")
    assert refs.tolist() == table[ref_id].to_pylist() and frames.tolist() == table[in_gop].to_pylist()
    stored = store.lance_dataset.to_table(columns=["ref_id"], filter=f"ref_id = {int(refs[0])}")
    assert stored.num_rows == 1
    read = store.read(refs[:2])
    assert sorted(read) == sorted({int(r) for r in refs[:2]})
    assert [len(read[int(r)]) for r in refs[:2]] == store.byte_sizes(refs[:2]).tolist()
    assert store.read([]) == {}


def test_prefetched_bytes_decode_the_same_frames(ingested):
    ds = robodata.open(ingested)
    rows = [3, 150, 400]
    prefetched = gop_store(ds).read(gop_store(ds).refs(rows, ds.cameras))
    with_bytes = ds.get_frames(rows, gop_bytes=prefetched)
    without = robodata.open(ingested).get_frames(rows)
    for camera in ds.cameras:
        np.testing.assert_array_equal(with_bytes.data[camera], without.data[camera])


def test_window_rows_are_the_rows_get_windows_reads(ingested):
    ds = robodata.open(ingested)
    rows, pad = gop_store(ds).window_rows([1, 300], range(-2, 1))
    window = ds.get_windows([1, 300], range(-2, 1), cameras=[])
    assert rows.tolist() == window.rows.tolist() == [[0, 0, 1], [298, 299, 300]]
    assert pad.tolist() == window.is_pad.tolist()


def test_bad_requests_fail_as_the_reads_do(ingested):
    ds = robodata.open(ingested)
    store = gop_store(ds)
    with pytest.raises(IndexError, match=f"row {len(ds)} is out of range for a dataset of {len(ds)} rows"):
        store.refs([0, len(ds)], TOP)
    with pytest.raises(KeyError, match="no camera 'side'; the cameras are top, wrist_left, wrist_right"):
        store.frame_refs([0], "side")
    with pytest.raises(TypeError, match="row indices expected, got the column name 'top'"):
        store.window_rows("top", [0])

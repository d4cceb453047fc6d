"""A process that adopts another's shared row index with its GOP index (what a DataLoader worker
does) maps the GOP index instead of scanning gops.lance, reads the gops.lance version it was built
from, and still checks the rows it uses against their checksums itself."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import robodata
from robodata.errors import CorruptGopError
from robodata.format._tables import gops_uri, open_table
from robodata.reader._dataset import adopt_rows, gop_store, share_rows
from robodata.reader._gop_index import GopIndex

ROWS = [0, 7, 150, 300]


def in_a_worker(shared):
    """``shared`` as a DataLoader worker receives it: pickled, mapping the files afresh."""
    return pickle.loads(pickle.dumps(shared))


def test_an_adopted_gop_index_is_mapped_and_pins_the_gops_version(dataset_copy, eight_short_uploads, monkeypatch):
    owner = robodata.open(dataset_copy)
    assert not GopIndex.is_shared(share_rows(owner))  # rows only unless asked
    shared = share_rows(owner, gop_index=True)
    assert share_rows(owner) is shared and GopIndex.is_shared(shared)
    indexed = gop_store(owner).lance_dataset.version
    robodata.ingest_episode(str(eight_short_uploads[3]), dataset_copy)  # gops.lance moves on
    assert open_table(gops_uri(dataset_copy)).version > indexed

    scans: list[int] = []
    scan = GopIndex.__init__
    monkeypatch.setattr(GopIndex, "__init__", lambda index, gops: scans.append(gops.version) or scan(index, gops))
    worker = robodata.open(dataset_copy, version=owner.version)
    adopt_rows(worker, in_a_worker(shared))
    for camera in owner.cameras:
        np.testing.assert_array_equal(
            worker.get_frames(ROWS, cameras=camera).data[camera], owner.get_frames(ROWS, cameras=camera).data[camera]
        )
    assert scans == []  # neither process scanned gops.lance again
    assert gop_store(worker).lance_dataset.version == gop_store(worker).index.version == indexed
    assert isinstance(gop_store(worker).index.ref_ids(np.arange(2)), np.ndarray)

    alone = robodata.open(dataset_copy, version=owner.version)  # no shared index: its own scan, as before
    np.testing.assert_array_equal(alone.get_frames(ROWS).data["top"], owner.get_frames(ROWS).data["top"])
    assert len(scans) == 1


def test_each_process_checks_the_shared_gop_rows_against_their_checksums(dataset_copy):
    owner = robodata.open(dataset_copy)
    shared = share_rows(owner, gop_index=True)
    owner.get_frames([0])  # the owner's rows held their checksums
    # One value of the shared files changed (a stray write, a bad page): the owner checked its
    # rows, a worker mapping the files has not.
    key = "gops.row.n_frames.values"
    n_frames = np.array(shared.get(key))
    shared.put(key, n_frames + 1)
    worker = robodata.open(dataset_copy)
    adopt_rows(worker, in_a_worker(shared))
    with pytest.raises(CorruptGopError, match="other columns"):
        worker.get_frames([0])

"""LeRobotCompatDataset shares its GOP index with the processes that read it (DataLoader workers,
which receive it pickled): built by one scan of gops.lance where the dataset is made, mapped by
every reader, never scanned again (on object storage each scan is a dozen GETs per worker)."""

from __future__ import annotations

import pickle

import pytest

from robodata.reader._gop_index import GopIndex

torch = pytest.importorskip("torch")
from robodata.lerobot import LeRobotCompatDataset  # noqa: E402

ITEMS = [0, 5, 17]


def test_readers_map_the_gop_index_the_dataset_built(short_dataset, monkeypatch):
    dataset = LeRobotCompatDataset(short_dataset)
    assert GopIndex.is_shared(dataset._shared_rows)
    scans: list[int] = []
    scan = GopIndex.__init__
    monkeypatch.setattr(GopIndex, "__init__", lambda index, gops: scans.append(gops.version) or scan(index, gops))
    worker = pickle.loads(pickle.dumps(dataset))  # what a DataLoader worker receives
    for index in ITEMS:
        mine, theirs = dataset[index], worker[index]
        for camera in dataset.cameras:
            key = f"observation.images.{camera}"
            assert torch.equal(mine[key], theirs[key]), (index, key)
    assert scans == []  # neither the dataset's process nor the worker scanned gops.lance

"""The adapter fits PyTorch's conventions: default collate, DistributedSampler, checked input,
and workers that map the training process's row index instead of holding their own."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import robodata
from robodata.reader import RowIndex
from robodata.torch._batch_reader import BatchReader

# Without torch the module is skipped, not an error: the imports below need it.
torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402

from robodata.torch._torch_dataset import RoboTorchDataset, make_dataloader  # noqa: E402

WRIST = "observation_images_wrist_left"


def test_default_collate_and_batch_size_work(ingested):
    ds = robodata.open(ingested)
    dataset = RoboTorchDataset(BatchReader(ingested, cameras=["wrist_left"], columns=["episode_index", "task"]))
    batch = next(iter(DataLoader(dataset, batch_size=8)))
    assert batch["index"].tolist() == list(range(8))
    assert batch[WRIST].shape == (8, 240, 320, 3) and batch[WRIST].dtype == torch.uint8
    assert np.array_equal(batch[WRIST].numpy(), ds.get_frames(range(8), cameras=WRIST)[WRIST])
    assert batch["task"] == ds.to_table(columns=["task"])["task"].to_pylist()[:8]


def test_torch_distributed_sampler_works(ingested):
    dataset = RoboTorchDataset(BatchReader(ingested, cameras=[], columns=["frame_index"]))
    seen = []
    for rank in range(2):
        sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, shuffle=True, seed=3)
        batches = list(DataLoader(dataset, batch_size=16, sampler=sampler))
        seen.append(torch.cat([b["index"] for b in batches]))
    assert len(seen[0]) == len(seen[1]) == 296  # DistributedSampler pads 591 rows to 592
    assert set(torch.cat(seen).tolist()) == set(range(591))


def test_unknown_columns_are_rejected_when_the_loader_is_built(ingested):
    with pytest.raises(ValueError, match="no column 'not_a_column' at version"):
        make_dataloader(ingested, batch_size=4, columns=["episode_index", "not_a_column"])
    with pytest.raises(ValueError, match="is a camera; choose cameras with cameras="):
        BatchReader(ingested, columns=[WRIST])


@pytest.mark.parametrize("bad", [[591], [-1], [3, 10_000]])
def test_bad_indices_are_named_on_every_path(ingested, bad):
    reader = BatchReader(ingested, cameras=["top"])
    with pytest.raises(IndexError, match=rf"row {bad[-1]} is out of range: version \d+ has 591 rows"):
        reader.read(bad)
    with pytest.raises(IndexError, match="out of range"):
        RoboTorchDataset(reader)[bad[-1]]
    with pytest.raises(TypeError, match="row indices must be integers"):
        reader.read([1.5])


def test_a_worker_maps_the_row_index_instead_of_building_it(ingested, monkeypatch):
    dataset = RoboTorchDataset(BatchReader(ingested, cameras=["top"], columns=["frame_index"]))
    in_worker = pickle.loads(pickle.dumps(dataset))
    shared = in_worker._shared_rows
    shared.owner_pid = -1  # as in a spawned worker
    with monkeypatch.context() as patch:
        patch.setattr(RowIndex, "__init__", None)  # building a private index would fail
        batch = in_worker.__getitems__([5, 400]).stacked
    rows = in_worker.reader.dataset.rows
    assert isinstance(rows.episode_index, np.memmap) and isinstance(rows.ref_id["top"], np.memmap)
    expected = robodata.open(ingested).get_frames([5, 400], cameras="top").data["top"]
    assert np.array_equal(batch["observation_images_top"].numpy(), expected)

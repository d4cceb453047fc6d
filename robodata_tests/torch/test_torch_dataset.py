"""The PyTorch adapter: real DataLoaders (spawned workers), exact batches, resume, pinning."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import robodata
from robodata.torch._batch_reader import BatchReader
from robodata.torch._sampler import RowSampler

# Without torch the module is skipped, not an error: the imports below need it.
torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from robodata.torch._handover import collate_batch  # noqa: E402
from robodata.torch._torch_dataset import RoboTorchDataset, make_dataloader  # noqa: E402

WRIST = "observation_images_wrist_left"


@pytest.mark.slow  # spawns DataLoader workers
def test_spawned_workers_resume_a_pinned_version_with_exact_batches(dataset_copy, extra_upload):
    options = dict(batch_size=16, cameras=["wrist_left"], columns=["episode_index"], seed=5)
    in_process = make_dataloader(dataset_copy, num_workers=0, **options)
    consumed, iterator = [], iter(in_process)
    for _ in range(3):
        batch = next(iterator)
        consumed.append(batch["index"].numpy()[~batch["padding"].numpy()])
    state = in_process.state_dict()

    # A new run with two spawned workers, created before another episode is ingested.
    workers = make_dataloader(dataset_copy, num_workers=2, **options)
    pinned = robodata.open(dataset_copy, version=workers.dataset_version)
    robodata.ingest_episode(str(extra_upload), dataset_copy)
    assert len(robodata.open(dataset_copy)) > len(pinned)
    assert isinstance(workers, DataLoader)  # a real one: Lightning and Accelerate re-wrap it
    assert workers.multiprocessing_context.get_start_method() == "spawn"

    workers.load_state_dict(state)  # 1 stream -> 2: the remaining rows planned again for two workers
    planned = [np.asarray(b)[~np.asarray(b.padding)] for b in workers.batch_sampler]
    rest = []
    for batch in workers:
        indices = batch["index"].numpy()
        assert isinstance(batch[WRIST], torch.Tensor) and batch[WRIST].dtype == torch.uint8
        expected = pinned.get_frames(indices, cameras=WRIST)[WRIST]
        assert np.array_equal(batch[WRIST].numpy(), expected)
        assert set(batch["episode_index"].tolist()) <= {0, 1, 2}
        rest.append(indices[~batch["padding"].numpy()])
    everything = np.concatenate(consumed + rest)
    assert np.array_equal(np.sort(everything), np.arange(len(pinned)))
    # Batches arrive in the rank's order although two workers made them.
    assert np.array_equal(np.concatenate(rest), np.concatenate(planned))
    workers.close()


def test_plain_dataloader_calls_getitems_with_whole_batches(ingested):
    ds = robodata.open(ingested)
    reader = BatchReader(ingested, cameras=["wrist_left"], columns=[], image_dtype="float32", pixel_format="rgbp")
    sampler = RowSampler.for_dataset(ds, batch_size=4, seed=1)
    dataset = RoboTorchDataset(reader, plan=sampler)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_batch)
    for batch, indices in zip(loader, sampler.batches()[:3], strict=False):
        assert batch["index"].tolist() == indices.tolist()
        expected = ds.get_frames(indices, cameras=WRIST)[WRIST]
        assert batch[WRIST].shape == (4, 3, 240, 320)
        assert torch.equal(batch[WRIST], torch.from_numpy(expected).permute(0, 3, 1, 2).float() / 255)
    single = dataset[7]
    assert single[WRIST].shape == (3, 240, 320) and int(single["index"]) == 7


def test_the_adapter_pickles_only_where_to_read(ingested):
    dataset = RoboTorchDataset(BatchReader(ingested, cameras=["top"]))
    dataset.__getitems__([0])  # opens Lance handles and the GOP cache
    copy = pickle.loads(pickle.dumps(dataset))
    assert copy.reader._dataset is None and copy.reader._cache is None
    assert (copy.reader.uri, copy.reader.dataset_version) == (ingested, dataset.reader.dataset_version)
    assert len(pickle.dumps(dataset)) < 4096

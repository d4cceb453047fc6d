"""How a worker's batch reaches the training process: frames in shared memory that the worker
uses again only once the training process has dropped the batch (robodata.torch._handover)."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

import robodata
from robodata.format._schema import image_column

torch = pytest.importorskip("torch")

from robodata.torch._handover import SharedOutputs  # noqa: E402
from robodata.torch._torch_dataset import make_dataloader  # noqa: E402

SHAPE = (2, 8, 8, 3)


def send(shared: SharedOutputs, batch: dict) -> dict:
    """The batch as the training process receives it: what its pickle rebuilds, with copies of the
    tensors standing in for that process's mappings of the slabs (in one process, unpickling a
    shared tensor would give back the worker's own storage, which never expires)."""
    handed = shared.hand_over(batch)
    rebuild, (values, flags, slots) = handed.__reduce__()
    assert values == dict(handed) and flags is shared._flags  # the flags go by reference (shared memory)
    return rebuild({name: value.clone() for name, value in values.items()}, flags, slots)


def test_a_slab_is_used_again_only_after_the_training_process_dropped_its_batch():
    shared = SharedOutputs()
    frames = shared.as_tensor(shared(SHAPE))
    first = send(shared, {"frames": frames, "action": torch.zeros(2)})
    assert type(first) is dict and shared.held() == [0]
    frames.fill_(7)  # the worker's own tensor is gone after the hand-over
    del frames

    again = shared.as_tensor(shared(SHAPE))  # batch 2: slab 0 is still held, a second one is taken
    second = send(shared, {"frames": again})
    assert shared.held() == [0, 1]

    del first, again
    gc.collect()
    third = send(shared, {"frames": shared.as_tensor(shared(SHAPE))})  # its arrival frees slab 0
    assert shared.held() == [1, 2]
    reused = shared(SHAPE)
    assert reused.__array_interface__["data"][0] == shared._slabs[0].data_ptr()  # the same memory again
    assert shared.held() == [0, 1, 2]
    del second, third


def test_arrays_the_batch_does_not_send_are_free_at_once():
    shared = SharedOutputs()
    decoded = shared.as_tensor(shared(SHAPE))  # e.g. uint8 frames converted to float32 below
    converted = shared.as_tensor(shared(SHAPE, np.float32))
    converted.copy_(decoded)
    batch = shared.hand_over({"frames": converted})
    assert batch.slots == {"frames": 1} and shared.held() == [1]


def test_a_batch_whose_read_failed_gives_its_slabs_back():
    shared = SharedOutputs()
    shared(SHAPE), shared(SHAPE)
    assert shared.held() == [0, 1]
    shared.clear()
    assert shared.held() == []


def test_with_every_slab_held_an_array_gets_memory_of_its_own():
    shared = SharedOutputs(slabs=1)
    kept = send(shared, {"frames": shared.as_tensor(shared(SHAPE))})
    extra = shared.as_tensor(shared(SHAPE))
    assert extra.is_shared() and extra.untyped_storage().data_ptr() != shared._slabs[0].data_ptr()
    assert shared.hand_over({"frames": extra}).slots == {}  # not kept: nothing to flag
    del kept


def slab_inode(tensor: torch.Tensor) -> int:
    fd, _ = tensor.untyped_storage()._share_fd_cpu_()
    return os.fstat(fd).st_ino


@pytest.mark.slow  # spawns DataLoader workers
def test_held_batches_stay_exact_while_workers_reuse_their_memory(ingested):
    """A training loop that keeps every third batch: those keep their frames, while the workers
    write the batches after them into memory the loop has dropped."""
    ds = robodata.open(ingested)
    column = image_column("top")
    loader = make_dataloader(ingested, batch_size=4, num_workers=2, cameras=["top"], seed=2, prefetch_factor=2)
    held, slabs, batches = [], set(), 0
    for batch in loader:
        batches += 1
        slabs.add(slab_inode(batch[column]))
        if batches % 3 == 0:
            held.append(batch)
        if batches == 30:
            break
    for batch in held:
        assert np.array_equal(batch[column].numpy(), ds.get_frames(batch["index"].numpy(), cameras="top")[column])
    # Without reuse, 30 slabs; with it, the in-flight and the held ones.
    assert len(slabs) <= 2 * 2 + 2 + len(held) + 4, len(slabs)
    loader.close()

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


def test_the_slabs_in_flight_are_kept_past_keep_bytes_and_used_again():
    """Fresh shared memory costs more than decoding into it: a batch's slabs are kept however
    many are in flight, and the next batch of that size writes into the same memory."""
    slab = int(np.prod(SHAPE))
    shared = SharedOutputs(keep_bytes=slab)

    def batch() -> dict:
        return send(shared, {f"camera{i}": shared.as_tensor(shared(SHAPE)) for i in range(3)})

    first = batch()
    assert shared.held() == [0, 1, 2] and shared.kept_bytes() == 3 * slab
    memory = [shared._slabs[slot].data_ptr() for slot in range(3)]
    del first
    gc.collect()
    second = batch()  # taken while the first was in flight; its arrival frees the first's slabs
    assert shared.held() == [3, 4, 5] and shared.kept_bytes() == 6 * slab
    third = batch()
    assert shared.held() == [0, 1, 2, 3, 4, 5]
    assert [shared._slabs[slot].data_ptr() for slot in range(3)] == memory and shared.kept_bytes() == 6 * slab
    del second, third


def test_free_slabs_of_another_size_stay_within_keep_bytes():
    slab = int(np.prod(SHAPE))
    shared = SharedOutputs(keep_bytes=2 * slab)
    first = send(shared, {f"camera{i}": shared.as_tensor(shared(SHAPE)) for i in range(3)})
    del first
    gc.collect()
    wider = (2, 8, 16, 3)  # the frames' size changed
    second = send(shared, {"frames": shared.as_tensor(shared(wider))})  # its arrival frees the first's slabs
    frames = shared.as_tensor(shared(wider))  # three free slabs of the old size: one is let go
    frames.fill_(7)
    third = send(shared, {"frames": frames})
    assert sorted(s.nbytes() for s in shared._slabs.values()) == [slab, slab, 2 * slab, 2 * slab]
    assert torch.equal(third["frames"], torch.full(wider, 7, dtype=torch.uint8))
    del second


def tmpfs_with(free_bytes: int):
    """``os.statvfs`` of a tmpfs with ``free_bytes`` left (as Docker's 64 MB /dev/shm is once used)."""
    real = os.statvfs

    def statvfs(path):
        if path != "/dev/shm":
            return real(path)
        return os.statvfs_result((4096, 4096, 16384, free_bytes // 4096, free_bytes // 4096, 0, 0, 0, 0, 255))

    return statvfs


def full_message(needed: int, free_mb: str) -> str:
    return (
        f"/dev/shm has {free_mb}, less than the {needed / 2**20:.0f} MB more this DataLoader worker's batches need: "
        "give it more (docker run --shm-size=2g), or use fewer workers (--num_workers), a smaller --prefetch_factor "
        "or --batch_size, or smaller frames (--robodata.frame_size=224x224)"
    )


def test_a_too_small_dev_shm_is_a_one_line_error(monkeypatch):
    from robodata.torch import _handover

    free = 12 << 20  # less than a batch of 8 frames of 480x640, more than the headroom
    monkeypatch.setattr(_handover.os, "statvfs", tmpfs_with(free))
    shared = SharedOutputs()
    shape = (8, 3, 480, 640)
    with pytest.raises(_handover.SharedMemoryFullError) as full:
        shared(shape)
    needed = int(np.prod(shape)) + _handover.SHM_HEADROOM_BYTES
    assert str(full.value) == full_message(needed, f"{free / 2**20:.0f} MB free")
    assert shared.held() == [] and shared.kept_bytes() == 0
    small = shared((2, 8, 8, 3))  # what fits is still given
    assert small.shape == (2, 8, 8, 3)

    # Another process took the last bytes between the check and the allocation: PyTorch reserves
    # the pages and says ENOSPC; said the same way.
    monkeypatch.setattr(_handover.os, "statvfs", tmpfs_with(1 << 30))

    def no_space(nbytes):
        raise RuntimeError(
            "unable to allocate shared memory(shm) for file </torch_1_2_3>: No space left on device (28)"
        )

    monkeypatch.setattr(torch.UntypedStorage, "_new_shared", no_space)
    with pytest.raises(_handover.SharedMemoryFullError) as raced:
        SharedOutputs()(shape)
    assert str(raced.value) == full_message(int(np.prod(shape)), f"{(1 << 30) / 2**20:.0f} MB free")


def test_a_lerobot_worker_on_a_too_small_dev_shm_says_so(short_dataset, monkeypatch):
    """What a DataLoader worker of LeRobotCompatDataset (lerobot-train's) does on a 64 MB /dev/shm
    already mostly taken: the one-line error, not a bus error, in either read path (frames decoded
    into its slabs, or read by get_frames and moved into shared memory as the batch is sent)."""
    from torch.utils.data._utils import worker as worker_state

    from robodata.lerobot import LeRobotCompatDataset
    from robodata.torch import _handover

    ds = LeRobotCompatDataset(short_dataset, return_uint8=True)
    monkeypatch.setattr(worker_state, "_worker_info", worker_state.WorkerInfo(id=0, num_workers=1, seed=0, dataset=ds))
    monkeypatch.setattr(_handover.os, "statvfs", tmpfs_with(1 << 20))
    for items in (list(range(8)), list(ds.item_sampler(batch_size=8, seed=3))[:8]):
        with pytest.raises(
            _handover.SharedMemoryFullError, match=r"^/dev/shm has 1 MB free, less than the \d+ MB more"
        ):
            ds.__getitems__(items)

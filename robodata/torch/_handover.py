"""How a batch read in a DataLoader worker reaches the training process without copying its frames.

A worker's batch crosses to the training process as shared-memory tensors. PyTorch's
``default_collate`` stacks per-sample values into shared memory, and the worker's queue moves
every other tensor there when it sends it: either way a copy of every frame, about 25 ms per
``[32, 480, 640, 3]`` camera tensor. robodata's datasets read a whole batch at once, so they can
skip both copies:

- ``SharedOutputs`` allocates the frame arrays in shared memory before the decoder writes them,
  in slabs it writes again once the training process has dropped the batch that used them
  (``hand_over`` and ``HandedOverBatch``: the batch itself carries that signal back);
- ``__getitems__`` returns a ``SampleBatch``, which holds the batch already stacked. Its samples
  are ``BatchItem`` dicts, a type this module registers in PyTorch's ``default_collate_fn_map``
  (PyTorch's documented way to extend ``default_collate``). So a plain ``DataLoader`` (LeRobot's
  training script builds one without a ``collate_fn``) hands the stacked batch over as it is.
  A list of samples from elsewhere is collated as PyTorch always does.

>>> batch = SampleBatch({"action": torch.zeros(2, 14), "task": ["pick", "place"]})
>>> torch.utils.data.default_collate(batch) is batch.stacked, batch[1]["task"]
(True, 'place')
>>> torch.utils.data.default_collate([batch[0], batch[1]])["action"].shape  # stacked again
torch.Size([2, 14])
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np
import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils.data._utils.collate import collate, default_collate_fn_map

from robodata._env_settings import megabytes_setting

# Slabs one worker keeps (each one output array: a camera's frames of a batch). A worker has its
# prefetched batches in flight and the training process holds one or two: about 7 batches of 3
# cameras at prefetch 4. With every slab held, an array is allocated anew and not kept.
RECYCLED_SLABS = 64
# A worker keeps the slabs its batches in flight used at most at once, for the next batches of that
# size: fresh shared memory for a batch costs more than decoding it. Of free slabs of other sizes (a
# short last batch, another resolution) it keeps at most $ROBODATA_SHM_KEEP_MB megabytes, else
# KEEP_MB. So a worker's /dev/shm is at most its batches in flight at their most, plus this. (When
# this bounded the slabs in flight too, make_dataloader read half as fast on 3 cameras of 640x480:
# 128 MB kept one batch of 88 MB.)
KEEP_MB_VARIABLE = "ROBODATA_SHM_KEEP_MB"
KEEP_MB = 128
# Where PyTorch's shared memory lives (shm_open), and what is left free there for others (the
# DataLoader's own queues, other processes' small tensors) when a worker sizes its allocations.
SHM_DIR = "/dev/shm"
SHM_HEADROOM_BYTES = 8 << 20


class SharedMemoryFullError(RuntimeError):
    """/dev/shm has too little room for a batch's frames (said in one line, instead of the bus error
    or the bare ENOSPC a full tmpfs would give)."""


def keep_bytes_default() -> int:
    """The bytes of slabs a worker keeps: ``$ROBODATA_SHM_KEEP_MB`` megabytes, else ``KEEP_MB``."""
    return megabytes_setting(KEEP_MB_VARIABLE, KEEP_MB)


def shared_memory_free(path: str = SHM_DIR) -> int | None:
    """Free bytes in ``path`` (None when it cannot be asked: no /dev/shm on this system)."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def shared_memory_full(needed: int, free: int | None, path: str = SHM_DIR) -> SharedMemoryFullError:
    free_text = "too little room" if free is None else f"{free / 2**20:.0f} MB free"
    return SharedMemoryFullError(
        f"{path} has {free_text}, less than the {needed / 2**20:.0f} MB more this DataLoader worker's batches "
        "need: give it more (docker run --shm-size=2g), or use fewer workers (--num_workers), a smaller "
        "--prefetch_factor or --batch_size, or smaller frames (--robodata.frame_size=224x224)"
    )


def check_room(nbytes: int, path: str = SHM_DIR) -> None:
    """A one-line ``SharedMemoryFullError`` unless ``path`` has room for ``nbytes`` and the headroom."""
    free = shared_memory_free(path)
    if free is not None and free < nbytes + SHM_HEADROOM_BYTES:
        raise shared_memory_full(nbytes + SHM_HEADROOM_BYTES, free, path)


def new_shared_storage(nbytes: int, path: str = SHM_DIR) -> torch.UntypedStorage:
    """``nbytes`` of shared memory, after checking ``path`` has room for them (and headroom): a
    one-line ``SharedMemoryFullError`` otherwise, never a bus error on the first write. A race with
    another process for the last bytes ends the same way (PyTorch reserves the pages and says ENOSPC)."""
    check_room(nbytes, path)
    try:
        return torch.UntypedStorage._new_shared(nbytes)
    except RuntimeError as exc:
        if "No space left" in str(exc) or "unable to allocate shared memory" in str(exc):
            raise shared_memory_full(nbytes, shared_memory_free(path), path) from None
        raise


class SharedOutputs:
    """Output arrays in shared memory, in a DataLoader worker: the batch's tensors then go to the
    training process without a copy. The memory is recycled: fresh shared memory costs more
    than the decode that fills it (the kernel zeroes and maps every page: ~60 ms for a
    ``[32, 480, 640, 3]`` batch of 3 cameras against ~6 ms for memory already mapped), so each
    slab is used again once the training process has dropped the batch that used it
    (``hand_over``; the training process flags it when the next batch arrives).

    >>> shared = SharedOutputs()
    >>> array = shared((2, 4, 4, 3))
    >>> tensor = shared.tensor(array)
    >>> tensor.is_shared(), tensor.shape, shared.tensor(np.zeros(3)) is None
    (True, torch.Size([2, 4, 4, 3]), True)
    >>> shared.tensor(shared((2,), np.float32)).dtype
    torch.float32
    >>> batch = shared.hand_over({"frames": tensor})  # what the worker's collate returns
    >>> batch.slots, shared.held()  # the frames' slab stays held; the float32 array's is free
    ({'frames': 0}, [0])

    It keeps as many slabs of a size as were in flight at once, and at most ``keep_bytes`` of free
    slabs of other sizes; with every slot taken an array gets memory of its own, not kept. Every new
    slab is checked against the room left in /dev/shm first (``new_shared_storage``).
    """

    def __init__(self, slabs: int = RECYCLED_SLABS, keep_bytes: int | None = None) -> None:
        self.keep_bytes = keep_bytes_default() if keep_bytes is None else int(keep_bytes)
        self._flags = torch.zeros(slabs, dtype=torch.uint8).share_memory_()
        self._held = self._flags.numpy()  # 1: this batch or the training process may use the slab
        self._slabs: dict[int, torch.UntypedStorage] = {}  # by slot
        self._taken: list[int] = []  # slabs the batch being read took
        self._tensors: dict[int, tuple[np.ndarray, torch.Tensor]] = {}

    def __call__(self, shape: tuple[int, ...], dtype: np.dtype | type = np.uint8) -> np.ndarray:
        dtype = np.dtype(dtype)
        storage = self._slab(max(int(np.prod(shape)) * dtype.itemsize, 1))
        strides = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]  # C order, in elements
        element = torch.from_numpy(np.zeros(0, dtype=dtype)).dtype
        tensor = torch.empty(0, dtype=element).set_(storage, 0, shape, strides)
        array = tensor.numpy()
        self._tensors[id(array)] = (array, tensor)
        return array

    def _slab(self, nbytes: int) -> torch.UntypedStorage:
        """A free slab of ``nbytes``: a kept one of that size, else a new one kept in an empty slot;
        memory of its own, not kept, when every slot is taken."""
        same = [slot for slot in self.spare_slots() if self._slabs[slot].nbytes() == nbytes]
        if same:
            storage = self._take(same[0])
        else:
            empty = [int(i) for i in np.flatnonzero(self._held == 0) if int(i) not in self._slabs]
            if not empty:
                return new_shared_storage(nbytes)  # released once the training process drops it
            self._slabs[empty[0]] = new_shared_storage(nbytes)  # in shared memory from the start
            storage = self._take(empty[0])
        self._let_go_beyond_keep(nbytes)
        return storage

    def _let_go_beyond_keep(self, nbytes: int) -> None:
        """Free slabs of other sizes than ``nbytes`` beyond ``keep_bytes`` go: the frames' size
        changed (another resolution, a short last batch). Free slabs of this size stay for the
        next batches: as many as were in flight at once."""
        other = [slot for slot in self.spare_slots() if self._slabs[slot].nbytes() != nbytes]
        spare = sum(self._slabs[slot].nbytes() for slot in other)
        for slot in other:
            if spare <= self.keep_bytes:
                break
            spare -= self._slabs.pop(slot).nbytes()

    def _take(self, slot: int) -> torch.UntypedStorage:
        self._held[slot] = 1
        self._taken.append(slot)
        return self._slabs[slot]

    def kept_bytes(self) -> int:
        """Bytes of the slabs kept (held or free): this worker's /dev/shm besides arrays of their own."""
        return sum(slab.nbytes() for slab in self._slabs.values())

    def spare_slots(self) -> list[int]:
        """The kept slabs no batch holds now."""
        return [int(i) for i in np.flatnonzero(self._held == 0) if int(i) in self._slabs]

    def tensor(self, array) -> torch.Tensor | None:
        """The shared tensor ``array`` views (forgotten once asked for), or None."""
        entry = self._tensors.pop(id(array), None)
        return entry[1] if entry is not None and entry[0] is array else None

    def as_tensor(self, array: np.ndarray) -> torch.Tensor:
        """``array`` as a tensor: the shared one it views, or one on its own memory."""
        tensor = self.tensor(array)
        return tensor if tensor is not None else torch.from_numpy(array)

    def hand_over(self, batch: dict) -> HandedOverBatch:
        """``batch`` as the worker sends it: the slabs its tensors use stay held until the
        training process drops them; the others the batch took (intermediate arrays) are free."""
        slot_of = {self._slabs[slot].data_ptr(): slot for slot in self._taken}
        sent = {
            name: slot_of[value.untyped_storage().data_ptr()]
            for name, value in batch.items()
            if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() in slot_of
        }
        self._taken = [slot for slot in self._taken if slot not in sent.values()]
        self.clear()
        # The worker's queue moves every other tensor into shared memory as it sends the batch.
        check_room(sum(v.nbytes for v in batch.values() if isinstance(v, torch.Tensor) and not v.is_shared()))
        return HandedOverBatch(batch, self._flags, sent)

    def clear(self) -> None:
        """Forget a batch that was not handed over (its read failed half-way): its slabs are free."""
        for slot in self._taken:
            self._held[slot] = 0
        self._taken.clear()
        self._tensors.clear()

    def held(self) -> list[int]:
        """The slabs held now (by a batch being read or one the training process may hold)."""
        return [int(i) for i in np.flatnonzero(self._held)]


class HandedOverBatch(dict):
    """A worker's batch on its way to the training process: a plain dict there, whose frame
    tensors' slabs the worker uses again once that process has dropped them."""

    def __init__(self, values: dict, flags: torch.Tensor, slots: dict[str, int]) -> None:
        super().__init__(values)
        self.flags = flags  # the worker's slab flags, in shared memory
        self.slots = slots  # the slab each frame tensor uses

    def __reduce__(self):
        return _received, (dict(self), self.flags, self.slots)


# In the training process: the slabs of the batches received, until the batch is dropped.
_in_hand: list[tuple[StorageWeakRef, torch.Tensor, int]] = []
_in_hand_lock = threading.Lock()


def _received(batch: dict, flags: torch.Tensor, slots: dict[str, int]) -> dict:
    """Unpickled in the training process: free the slabs of batches dropped since the last one
    arrived, and keep an eye on this one's."""
    with _in_hand_lock:
        kept = []
        for storage, slab_flags, slot in _in_hand:
            if storage.expired():  # no tensor of this process uses the slab any more
                slab_flags[slot] = 0
            else:
                kept.append((storage, slab_flags, slot))
        kept += [(StorageWeakRef(batch[name].untyped_storage()), flags, slot) for name, slot in slots.items()]
        _in_hand[:] = kept
    return batch


def to_tensors(batch: dict, shared: SharedOutputs | None = None) -> dict:
    """Numpy arrays as tensors (sharing memory unless read-only, e.g. straight from Arrow), arrays
    of strings or other objects as lists (as ``default_collate`` gathers them); tensors and
    anything else stay as they are. Arrays ``shared`` allocated become the shared-memory tensors
    they view.

    >>> to_tensors({"task": np.array(["pick", "place"], dtype=object), "step": np.arange(2)})
    {'task': ['pick', 'place'], 'step': tensor([0, 1])}
    """
    tensors = {}
    for name, value in batch.items():
        tensor = shared.tensor(value) if shared is not None else None
        tensors[name] = tensor if tensor is not None else _tensor(value)
    return tensors


def _tensor(value):
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype == object:
        return value.tolist()
    return torch.from_numpy(value if value.flags.writeable else value.copy())


class BatchItem(dict):
    """One sample of a ``SampleBatch``: a plain dict of its values (the type marks it for collate)."""


class SampleBatch(Sequence):
    """What ``__getitems__`` returns: per-sample dicts (``batch[i]``, ``BatchItem``) and
    ``stacked``, the whole batch as one dict, which collate returns as it is."""

    def __init__(self, stacked: dict) -> None:
        self.stacked = stacked
        self._len = len(next(iter(stacked.values()))) if stacked else 0

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._len))]
        if not -self._len <= i < self._len:
            raise IndexError(f"sample {i} of a batch of {self._len}")
        return BatchItem({name: value[i] for name, value in self.stacked.items()})


def _collate_items(batch, *, collate_fn_map=None):
    """``default_collate`` of ``BatchItem`` samples: a whole ``SampleBatch`` as it is stacked,
    any other list of them as plain dicts."""
    if isinstance(batch, SampleBatch):
        return batch.stacked
    return collate([dict(item) for item in batch], collate_fn_map=collate_fn_map)


default_collate_fn_map[BatchItem] = _collate_items


def collate_batch(samples):
    """DataLoader ``collate_fn``: PyTorch's ``default_collate``, which (with this module
    imported) returns a ``SampleBatch`` as it is stacked, without a copy.

    >>> from robodata.torch._batch_reader import BatchReader
    >>> from robodata.torch._torch_dataset import RoboTorchDataset
    >>> dataset = RoboTorchDataset(BatchReader("data/demo", cameras=[]))
    >>> loader = torch.utils.data.DataLoader(dataset, batch_sampler=[[0, 1, 2], [3, 4]], collate_fn=collate_batch)
    >>> [batch["action"].shape for batch in loader]
    [torch.Size([3, 14]), torch.Size([2, 14])]

    """
    return torch.utils.data.default_collate(samples)


class HandOff:
    """How a dataset's ``__getitems__`` hands a batch over: in a DataLoader worker its frames are
    allocated in shared memory (``SharedOutputs``) and ``SampleBatch`` carries them to the
    training process without a copy; rows that only pad the last step are flagged (``padding``)."""

    def __init__(self) -> None:
        self._shared: SharedOutputs | None = None

    def outputs(self) -> SharedOutputs | None:
        """The allocator of this batch's frames: shared memory in a DataLoader worker, else None."""
        if torch.utils.data.get_worker_info() is None:
            return None
        self._shared = self._shared or SharedOutputs()
        self._shared.clear()  # what a batch whose read failed took
        return self._shared

    def batch(self, batch: dict, indices: Sequence[int], shared: SharedOutputs | None) -> SampleBatch:
        """``batch`` (tensors) as ``__getitems__`` returns it."""
        padding = getattr(indices, "padding", None)  # a PlannedBatch's: rows that only pad the last step
        if padding is not None:
            batch["padding"] = torch.tensor(padding, dtype=torch.bool)
        return SampleBatch(batch if shared is None else shared.hand_over(batch))

    def __getstate__(self) -> dict:
        return {"_shared": None}  # each worker allocates its own

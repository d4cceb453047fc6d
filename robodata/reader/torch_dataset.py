"""PyTorch adapter: a map-style Dataset whose batched fetch is one ``take_blobs_decoded``.

DataLoader calls ``__getitems__`` with a whole batch of indices (from the RowSampler used as
``batch_sampler``), so a batch costs one coalesced GOP read and one decode per GOP. Workers
are started by spawn (Lance is not fork-safe); each opens the pinned dataset version lazily
from the pickled (uri, version, storage options). Inside a worker, ``get_worker_info`` tells
which of the rank's batches DataLoader will hand to it (batches w, w + n, ...), and a
background thread prefetches their GOPs within the byte budget.

>>> loader = make_dataloader("s3://bucket/ds", version="run-42", batch_size=64, num_workers=2)  # doctest: +SKIP
>>> for batch in loader: ...  # doctest: +SKIP
"""

from __future__ import annotations

import multiprocessing.util
import os
import sys
from collections.abc import Iterator, Sequence

import numpy as np

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("robodata's PyTorch adapter needs torch: pip install 'robodata[torch]'") from exc

from robodata.reader.batch_reader import BatchReader
from robodata.reader.loader import ResumableLoader
from robodata.reader.sampler import PlannedBatch, RowSampler, current_worker


def to_tensors(batch: dict) -> dict:
    """Numpy arrays as tensors (sharing memory unless read-only, e.g. straight from Arrow);
    tensors, strings and other objects stay as they are."""
    return {name: _tensor(value) for name, value in batch.items()}


def _tensor(value):
    if not isinstance(value, np.ndarray) or value.dtype == object:
        return value
    return torch.from_numpy(value if value.flags.writeable else value.copy())


def pass_batch(batch: dict) -> dict:
    """DataLoader ``collate_fn``: ``__getitems__`` already returns a whole, stacked batch."""
    return batch


class RoboTorchDataset(Dataset):
    """Map-style dataset over one pinned dataset version; ``__getitems__`` reads a whole batch.

    ``plan`` (the RowSampler DataLoader iterates) lets each worker prefetch the batches it
    will be asked for; any other sampler works too, just without prefetch.

    >>> ds = RoboTorchDataset(BatchReader("data/demo", cameras=["top"], channels_first=True))  # doctest: +SKIP
    >>> ds.__getitems__([0, 1])["observation_images_top"].shape  # doctest: +SKIP
    torch.Size([2, 3, 480, 640])
    """

    def __init__(self, reader: BatchReader, plan: RowSampler | None = None) -> None:
        self.reader = reader
        self.plan = plan
        self._scheduled_for: tuple | None = None

    def __len__(self) -> int:
        return self.reader.num_rows

    def __getitems__(self, indices: Sequence[int]) -> dict:
        _exit_workers_without_native_teardown()
        self._schedule_prefetch(indices)
        return to_tensors(self.reader.read(np.asarray(indices, dtype=np.int64)))

    def __getitem__(self, index: int) -> dict:
        batch = self.__getitems__([index])
        return {name: value[0] for name, value in batch.items()}

    def _schedule_prefetch(self, indices: Sequence[int]) -> None:
        """When a batch from a new plan arrives (first batch, new epoch, resumed position), tell
        the reader this worker's share of that plan: the batches DataLoader will send next."""
        if self.plan is None or not isinstance(indices, PlannedBatch):
            return
        shard = current_worker()
        key = (indices.epoch, indices.start, shard)
        if key != self._scheduled_for:
            self.reader.schedule(self.plan.positioned(indices.epoch, indices.start).batches(shard))
            self._scheduled_for = key

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_scheduled_for"] = None
        return state


_exit_registered = False


def _exit_workers_without_native_teardown() -> None:
    """In a DataLoader worker, end the process with ``os._exit`` once its loop is over.

    A spawned worker that has decoded with PyAV ends, now and then, in "terminate called
    without an active exception" (SIGABRT) while native libraries tear down after Python has
    finished, which DataLoader reports as a crashed worker. By then the worker has sent its
    last batch and closed its queues; the finalizer below runs after theirs (lowest priority),
    stops the prefetch threads and exits without the native teardown.
    """
    global _exit_registered
    if _exit_registered or torch.utils.data.get_worker_info() is None:
        return
    _exit_registered = True
    multiprocessing.util.Finalize(None, _exit_now, exitpriority=-100)


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class TorchLoader(ResumableLoader):
    """A torch DataLoader over a RoboTorchDataset with the resumable-loader interface.

    Batches are dicts of tensors; ``state_dict()`` counts batches the training loop received.
    """

    def __init__(
        self,
        reader: BatchReader,
        sampler: RowSampler,
        *,
        num_workers: int = 0,
        prefetch_factor: int | None = None,
        pin_memory: bool = False,
        persistent_workers: bool = True,
    ) -> None:
        super().__init__(reader, sampler)
        self.dataset = RoboTorchDataset(reader, plan=sampler)
        self.dataloader = DataLoader(
            self.dataset,
            batch_sampler=sampler,
            collate_fn=pass_batch,
            num_workers=num_workers,
            # Lance is not fork-safe: workers start fresh and open the dataset themselves.
            multiprocessing_context="spawn" if num_workers > 0 else None,
            prefetch_factor=prefetch_factor if num_workers > 0 else None,
            # Spawned workers are slow to start: keep them across epochs. Each batch names its
            # plan (PlannedBatch), so a worker re-plans its prefetch on a new epoch or resume.
            persistent_workers=persistent_workers and num_workers > 0,
            pin_memory=pin_memory,
        )

    def _batches(self) -> Iterator[dict]:
        return iter(self.dataloader)

    def close(self) -> None:
        """Stop the persistent workers (DataLoader only does so when it is garbage collected)."""
        super().close()
        iterator = getattr(self.dataloader, "_iterator", None)
        if iterator is not None and hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()
            self.dataloader._iterator = None


def make_dataloader(
    uri: str,
    *,
    batch_size: int,
    num_workers: int = 0,
    rank: int = 0,
    world_size: int = 1,
    seed: int = 0,
    epoch: int = 0,
    shuffle: str = "global",
    drop_last: bool = False,
    pool_episodes: int = 8,
    prefetch_factor: int | None = None,
    pin_memory: bool = False,
    persistent_workers: bool = True,
    **reader_options,
) -> TorchLoader:
    """A resumable, sharded, pinned-version PyTorch loader; ``reader_options`` go to BatchReader
    (version, storage_options, cameras, columns, offsets, delta_timestamps, image_dtype,
    channels_first, transform, budget_bytes, prefetch_batches).

    >>> loader = make_dataloader(  # doctest: +SKIP
    ...     "data/demo", batch_size=32, num_workers=2, rank=rank, world_size=world
    ... )
    >>> print(loader.dataset_version); for batch in loader: ...  # doctest: +SKIP
    """
    reader = BatchReader(uri, **reader_options)
    sampler = RowSampler.for_dataset(
        reader.dataset,
        batch_size=batch_size,
        rank=rank,
        world_size=world_size,
        seed=seed,
        epoch=epoch,
        shuffle=shuffle,
        drop_last=drop_last,
        pool_episodes=pool_episodes,
    )
    return TorchLoader(
        reader,
        sampler,
        num_workers=num_workers,
        prefetch_factor=prefetch_factor,
        pin_memory=pin_memory,
        persistent_workers=persistent_workers,
    )

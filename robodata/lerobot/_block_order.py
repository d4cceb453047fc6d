"""The decode-once block order (``robodata.torch._block_order``) for a LeRobot user's DataLoader.

LeRobot's training script builds ``DataLoader(dataset, sampler=..., batch_size=B,
num_workers=W)`` over a sampler of *item* indices (``EpisodeAwareSampler``), and accelerate
shards the batches DataLoader makes from it over the ranks (global batch ``g`` goes to rank
``g % P``; a rank's batch ``j`` goes to its worker ``j % W``). ``BlockOrderSampler`` is such a
sampler, with EpisodeAwareSampler's interface (``__iter__`` advances the epoch, ``__len__``,
``state_dict`` / ``load_state_dict`` of ``{"epoch", "start_index"}``, ``set_epoch``): it yields
every item once per epoch in the order of a ``BlockSampler`` laid out for ``P`` ranks of ``W``
workers and batches of ``B``, flattened so that the batches DataLoader cuts from it are that
sampler's batches, each landing in the worker whose stream it is. Every item it yields is a
``PlannedIndex``: an int that also names the epoch and start it comes from, so the worker that
receives it can work out every batch it will receive (``worker_batches``) and keep decoded
frames for them (``LeRobotCompatDataset.__getitems__``).

>>> sampler = BlockOrderSampler(np.repeat(np.arange(100), 8), batch_size=32, num_workers=2, window_rows=64)
>>> order = list(sampler)
>>> len(sampler), sorted(order) == list(range(800)), order[0].plan
(800, True, (0, 0))
>>> [len(b) for b in sampler.worker_batches(0, 0, WorkerShard(1, 2))][:3]  # worker 1: batches 1, 3, 5 ...
[32, 32, 32]
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from robodata.torch._block_order import DEFAULT_WINDOW_ROWS, BlockSampler
from robodata.torch._sampler import WorkerShard

__all__ = ["BlockOrderSampler", "PlannedIndex", "WorkerShard"]


class PlannedIndex(int):
    """An item index that names the plan it comes from: ``plan`` is (epoch, start index)."""

    plan: tuple[int, int]

    def __new__(cls, value: int, plan: tuple[int, int]) -> PlannedIndex:
        index = super().__new__(cls, value)
        index.plan = plan
        return index

    def __reduce__(self):
        return (PlannedIndex, (int(self), self.plan))


class BlockOrderSampler:
    """Item indices in the decode-once block order, for ``DataLoader(sampler=..., batch_size=...)``
    (module docstring).

    Parameters
    ----------
    block_of_item : numpy.ndarray
        Per item of the dataset, its block (items whose first camera's frames share a GOP).
    batch_size : int
        The DataLoader's ``batch_size`` (per rank).
    num_workers : int
        The DataLoader's ``num_workers`` (0 counts as 1).
    rank, world_size : int
        This process's place among the ranks accelerate shards the batches over.
    seed : int
        The order's seed; the epoch is counted by ``__iter__`` as in LeRobot's sampler.
    window_rows : int
        Items mixed at a time in each worker's stream (``robodata.torch._block_order``).
    items : numpy.ndarray, optional
        The items to order (default: all), e.g. without each episode's last frames.
    """

    def __init__(
        self,
        block_of_item: np.ndarray,
        *,
        batch_size: int,
        num_workers: int = 0,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        window_rows: int = DEFAULT_WINDOW_ROWS,
        items: np.ndarray | None = None,
    ) -> None:
        blocks = np.asarray(block_of_item, dtype=np.int64)
        self.items = np.arange(len(blocks), dtype=np.int64) if items is None else np.asarray(items, dtype=np.int64)
        if len(self.items) == 0:
            raise ValueError("BlockOrderSampler: no item to sample")
        # the plan of every rank (each rank's share is a view of the same plan)
        self._plan = BlockSampler(
            blocks[self.items],
            batch_size=batch_size,
            world_size=world_size,
            num_workers=num_workers,
            seed=seed,
            window_rows=window_rows,
        )
        self.batch_size = int(batch_size)
        self.num_workers = max(int(num_workers), 1)
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.seed = int(seed)
        self.window_rows = int(window_rows)
        self.shuffle = True
        self._epoch = 0
        self._start_index = 0
        self._order_cache: tuple[int, np.ndarray] | None = None

    def order(self, epoch: int) -> np.ndarray:
        """Every item of epoch ``epoch``, in the order this sampler yields them."""
        if self._order_cache is not None and self._order_cache[0] == epoch:
            return self._order_cache[1]
        self._plan.set_epoch(epoch)
        self._plan.batches()  # plans the epoch once: the ranks' views below share it
        per_rank = []
        for rank in range(self.world_size):
            view = self._plan.positioned_rank(rank)
            per_rank.append([rows[~padding] for rows, padding in view.padded_batches()])
        # rank-local batch j of every rank, then batch j + 1: accelerate deals them back out
        pieces = [batches[j] for j in range(len(per_rank[0])) for batches in per_rank]
        order = self.items[np.concatenate(pieces)]
        self._order_cache = (epoch, order)
        return order

    def worker_batches(self, epoch: int, start: int, shard: WorkerShard) -> list[np.ndarray]:
        """The batches of items worker ``shard`` of this rank receives in epoch ``epoch`` from
        ``start`` on: DataLoader cuts batches of ``batch_size`` from the order, accelerate gives
        rank ``r`` every ``world_size``-th from the ``r``-th, and DataLoader deals a rank's batches
        round its workers from worker 0."""
        rest = self.order(epoch)[start:]
        batches = [rest[i : i + self.batch_size] for i in range(0, len(rest), self.batch_size)]
        return batches[self.rank :: self.world_size][shard.worker_id :: shard.num_workers]

    # --- LeRobot's EpisodeAwareSampler interface ----------------------------------------------
    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[int]:
        epoch, start = self._epoch, self._start_index
        self._epoch += 1  # eagerly, as LeRobot's sampler does
        self._start_index = 0
        return self._iter_epoch(epoch, start)

    def _iter_epoch(self, epoch: int, start: int) -> Iterator[int]:
        plan = (epoch, start)
        order = self.order(epoch)
        for first in range(start, len(order), 1 << 16):  # Python ints a slice at a time
            for item in order[first : first + (1 << 16)].tolist():
                yield PlannedIndex(item, plan)

    def set_epoch(self, epoch: int) -> None:
        self._epoch = int(epoch)

    def state_dict(self) -> dict:
        return {"epoch": self._epoch, "start_index": self._start_index}

    def load_state_dict(self, state: dict) -> None:
        """Continue at item ``start_index`` of epoch ``epoch`` of the order (what LeRobot's
        ``compute_sampler_state`` gives for a step)."""
        start = int(state["start_index"])
        if not 0 <= start <= len(self):
            raise ValueError(f"cannot resume: start_index={start} is outside 0..{len(self)}")
        self._epoch = int(state["epoch"])
        self._start_index = start

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_order_cache"] = None  # a worker re-plans (a pure function) rather than receive it
        return state

    def __repr__(self) -> str:
        return (
            f"BlockOrderSampler(items={len(self)}, batch_size={self.batch_size}, workers={self.num_workers}, "
            f"rank={self.rank}/{self.world_size}, seed={self.seed}, window_rows={self.window_rows})"
        )

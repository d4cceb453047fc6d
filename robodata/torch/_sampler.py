"""Which rows each rank and worker reads, in which order, for one epoch of training.

The epoch's order is one permutation of all rows (a pure function of seed, epoch and the
dataset's rows at its version). It is cut into global steps of ``world_size * batch_size``
rows; in step s rank r reads the r-th batch-sized slice. So after s steps exactly the first
``s * world_size * batch_size`` rows of the order are consumed, whatever the world size was:
resuming from that count with another world size, batch size or number of workers visits each
remaining row once. Inside a rank, DataLoader worker w reads batches w, w + n, w + 2n, ... of
the rank's batches, which is the order in which PyTorch's DataLoader hands batches to workers.

Equal steps on every rank (DDP needs it: a rank with one batch more waits forever at the next
collective). The last, short step's rows are split evenly, ``ceil(tail / world_size)`` per rank,
and a rank whose share is short repeats rows from the start of the epoch's order, as torch's
``DistributedSampler`` pads. Repeated rows are flagged (``PlannedBatch.padding``, the batch's
``padding`` key), so a loss that skips them sees every row exactly once per epoch; with
``drop_last=True`` the short step is dropped instead. Every rank therefore takes the same number
of batches, and ``state_dict`` is the same on every rank.

Memory: the epoch's order is computed once per process that iterates the sampler (the training
process) and shared with its DataLoader workers as a memory-mapped file, so a worker does not
hold its own copy of a permutation of every row.

Shuffle modes: ``global`` permutes all rows; ``episode`` shuffles episodes, groups them into
pools of ``pool_episodes`` and permutes rows within each pool, so consecutive batches share
GOPs (LeRobot-style locality, still one permutation over rows).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Self

import numpy as np

from robodata.reader._row_index import SharedArrays

SHUFFLE_MODES = ("global", "episode", "none")


@dataclass(frozen=True)
class WorkerShard:
    """A DataLoader worker's position among its rank's workers."""

    worker_id: int = 0
    num_workers: int = 1


class PlannedBatch(list):
    """Row indices of one batch that also name the plan they come from (``epoch``, ``start``),
    so a DataLoader worker that receives it knows which batches follow (it pickles with them),
    and which of its rows are repeats that only pad the last step (``padding``).
    """

    def __init__(self, indices, epoch: int, start: int, padding: list[bool] | None = None) -> None:
        super().__init__(indices)
        self.epoch = epoch
        self.start = start
        self.padding = list(padding) if padding is not None else [False] * len(self)


def current_worker() -> WorkerShard:
    """This process's worker shard: from ``torch.utils.data.get_worker_info`` inside a DataLoader
    worker, else the single shard (also when PyTorch is not installed)."""
    try:
        from torch.utils.data import get_worker_info
    except ImportError:
        return WorkerShard()
    info = get_worker_info()
    return WorkerShard() if info is None else WorkerShard(info.id, info.num_workers)


class PlannedOrder:
    """What the training orders share: a rank's batches for DataLoader's ``batch_sampler``, each a
    ``PlannedBatch`` naming the plan it comes from (so a DataLoader worker knows which batches
    follow), and the same order placed at another epoch and start. Subclasses say which rows each
    worker's batches hold (``padded_batches``)."""

    epoch: int
    start: int

    def padded_batches(self, shard: WorkerShard | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        raise NotImplementedError

    def batches(self, shard: WorkerShard | None = None) -> list[np.ndarray]:
        """This rank's remaining batches for one worker ``shard`` (default: all of them); the
        last may end with padding rows (``padded_batches`` says which)."""
        return [rows for rows, _ in self.padded_batches(shard)]

    def __iter__(self) -> Iterator[PlannedBatch]:
        """The rank's batches (as DataLoader's ``batch_sampler``); inside a DataLoader worker
        only that worker's share."""
        for rows, padding in self.padded_batches(current_worker()):
            yield PlannedBatch(rows.tolist(), self.epoch, self.start, padding.tolist())

    def _check_resumable(self, state: dict, keys: tuple[str, ...]) -> None:
        """ValueError unless checkpoint ``state`` was saved by this order over the same rows: each
        of ``keys`` equal (a dataset version unknown on either side is not compared)."""
        for key in keys:
            saved, mine = state.get(key), getattr(self, key)
            if key == "dataset_version" and (saved is None or mine is None):
                continue
            if saved != mine:
                raise ValueError(
                    f"cannot resume: the checkpoint has {key}={saved!r} but this sampler has {key}={mine!r}"
                )

    def positioned(self, epoch: int, start: int) -> Self:
        """This order at another epoch and start (the plan a PlannedBatch names)."""
        other = copy.copy(self)
        other.epoch, other.start = int(epoch), int(start)
        return other


class RowSampler(PlannedOrder):
    """Batches of row indices for one rank: exactly-once per epoch, deterministic, resumable.

    >>> sampler = RowSampler.for_dataset(ds, batch_size=32, rank=0, world_size=2, seed=7)
    >>> batches = list(sampler)  # rank 0's share of the 591 rows
    >>> len(batches), sum(len(b) for b in batches)  # 10 equal steps per rank: one row repeated
    (10, 296)

    """

    def __init__(
        self,
        num_rows: int,
        *,
        batch_size: int,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        epoch: int = 0,
        shuffle: str = "global",
        drop_last: bool = False,
        episode_index: np.ndarray | None = None,
        pool_episodes: int = 8,
        dataset_version: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in range for world_size {world_size}")
        if shuffle not in SHUFFLE_MODES:
            raise ValueError(f"shuffle must be one of {SHUFFLE_MODES}, got {shuffle!r}")
        if shuffle == "episode":
            if episode_index is None or len(episode_index) != num_rows:
                raise ValueError("shuffle='episode' needs episode_index with one entry per row")
            if pool_episodes < 1:
                raise ValueError(f"pool_episodes must be at least 1, got {pool_episodes}")
        self.num_rows = int(num_rows)
        self.batch_size = int(batch_size)
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.seed = int(seed)
        self.shuffle = shuffle
        self.drop_last = bool(drop_last)
        self.pool_episodes = int(pool_episodes)
        self.dataset_version = dataset_version
        self._episode_index = None if shuffle != "episode" else np.asarray(episode_index)
        self.epoch = int(epoch)
        self.start = 0  # rows of this epoch's order consumed before iteration starts
        self._order_cache: tuple[int, np.ndarray] | None = None
        # Orders shared with DataLoader workers: made by the process that iterates the sampler.
        self._shared = SharedArrays("order")

    @classmethod
    def for_dataset(cls, dataset, *, batch_size: int, **options) -> RowSampler:
        """A sampler over every row of ``dataset`` (a RoboDataset) at its version.

        >>> sampler = RowSampler.for_dataset(ds, batch_size=64, shuffle="episode", pool_episodes=4)
        >>> len(sampler), sorted(np.concatenate(list(sampler)).tolist()) == list(range(591))
        (10, True)

        """
        episode_index = None
        if options.get("shuffle") == "episode":
            episode_index = dataset.to_table(columns=["episode_index"])["episode_index"].to_numpy()
        return cls(
            len(dataset),
            batch_size=batch_size,
            episode_index=episode_index,
            dataset_version=dataset.version,
            **options,
        )

    # --- the epoch's order -----------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Start epoch ``epoch`` from its first row (call before each epoch, as with PyTorch)."""
        self.epoch = int(epoch)
        self.start = 0

    def order(self) -> np.ndarray:
        """Every row of the dataset once, in this epoch's order (identical on every rank).

        A worker maps the order its training process shared, rather than computing its own."""
        if self._order_cache is None or self._order_cache[0] != self.epoch:
            key = f"epoch-{self.epoch}"
            shared = self._shared.get(key)
            if shared is None:
                shared = self._make_order()
                if self._shared.owner:  # share it, and map it here too rather than keep a copy
                    self._shared.put(key, shared, keep=2)
                    mapped = self._shared.get(key)
                    shared = shared if mapped is None else mapped
            self._order_cache = (self.epoch, shared)
        return self._order_cache[1]

    def _make_order(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, self.epoch])
        if self.shuffle == "none":
            return np.arange(self.num_rows, dtype=np.int64)
        if self.shuffle == "global":
            return rng.permutation(self.num_rows).astype(np.int64)
        assert self._episode_index is not None  # kept when shuffle is "episode"
        episodes, inverse = np.unique(self._episode_index, return_inverse=True)
        episode_order = rng.permutation(len(episodes))
        pool_of_episode = np.empty(len(episodes), dtype=np.int64)
        pool_of_episode[episode_order] = np.arange(len(episodes)) // self.pool_episodes
        pool_of_row = pool_of_episode[inverse]
        # A random key per row, then sort by (pool, key): rows shuffled within each pool.
        key = rng.random(self.num_rows)
        return np.lexsort((key, pool_of_row)).astype(np.int64)

    # --- this rank's share ----------------------------------------------------------------
    @property
    def _step_rows(self) -> int:
        return self.world_size * self.batch_size

    def _bounds(self) -> list[tuple[int, int]]:
        """[start, stop) in the epoch's order of each of this rank's batches, from ``start``.

        The same number on every rank. The last batch may run past the end of the order
        (``stop > num_rows``): positions past the end are padding (see ``_rows_at``)."""
        remaining = max(self.num_rows - self.start, 0)
        full_steps, tail = divmod(remaining, self._step_rows)
        bounds = []
        for step in range(full_steps):
            first = self.start + step * self._step_rows + self.rank * self.batch_size
            bounds.append((first, first + self.batch_size))
        if tail and not self.drop_last:
            # The short last step: ceil(tail / world) rows per rank; the end is padded.
            share = -(-tail // self.world_size)
            first = self.start + full_steps * self._step_rows + self.rank * share
            bounds.append((first, first + share))
        return bounds

    def _bound(self, j: int) -> tuple[int, int]:
        """[start, stop) of this rank's j-th remaining batch, without listing the others."""
        full_steps, tail = divmod(max(self.num_rows - self.start, 0), self._step_rows)
        if j < full_steps:
            first = self.start + j * self._step_rows + self.rank * self.batch_size
            return first, first + self.batch_size
        share = -(-tail // self.world_size)
        first = self.start + full_steps * self._step_rows + self.rank * share
        return first, first + share

    def worker_batches(self, shard: WorkerShard, first: int, count: int) -> list[np.ndarray]:
        """Batches ``first`` .. ``first + count - 1`` of worker ``shard``'s share (rows only):
        what its prefetcher needs next, computed without listing the whole epoch.

        >>> sampler = RowSampler.for_dataset(ds, batch_size=8, shuffle="none")
        >>> [b.tolist()[:2] for b in sampler.worker_batches(WorkerShard(1, 2), first=0, count=2)]  # batches 1, 3
        [[8, 9], [24, 25]]

        """
        total = len(self)
        order = self.order() if self.num_rows else np.empty(0, dtype=np.int64)
        picked = []
        for i in range(first, first + count):
            j = shard.worker_id + i * shard.num_workers
            if j >= total:
                break
            picked.append(self._rows_at(order, *self._bound(j))[0])
        return picked

    def _rows_at(self, order: np.ndarray, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows at positions [first, stop) of ``order`` and the padding mask: positions past the
        end wrap around to the start of the order (rows already read this epoch)."""
        positions = np.arange(first, stop, dtype=np.int64)
        padding = positions >= self.num_rows
        if not padding.any():
            return order[first:stop], padding
        return order[positions % self.num_rows], padding

    def __len__(self) -> int:
        """Batches this rank reads in the rest of the epoch (all workers together); the same on
        every rank."""
        remaining = max(self.num_rows - self.start, 0)
        full_steps, tail = divmod(remaining, self._step_rows)
        return full_steps + (1 if tail and not self.drop_last else 0)

    def padded_batches(self, shard: WorkerShard | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """(rows, padding mask) of this rank's remaining batches for one worker ``shard``."""
        shard = shard or WorkerShard()
        if self.num_rows == 0:
            return []
        order = self.order()
        mine = self._bounds()[shard.worker_id :: shard.num_workers]
        return [self._rows_at(order, first, stop) for first, stop in mine]

    # --- resume -----------------------------------------------------------------------------
    def position_after(self, batches: int) -> int:
        """Rows of the epoch's order consumed by all ranks once each rank has taken ``batches``
        batches (in order, all workers together) since iteration started."""
        if batches >= len(self):
            return self.num_rows
        return min(self.start + batches * self._step_rows, self.num_rows)

    def state_dict(self, batches_consumed: int = 0) -> dict:
        """What to checkpoint: the epoch and how many rows of its order were consumed.

        The same on every rank, so saving rank 0's state is enough.

        >>> sampler = RowSampler.for_dataset(ds, batch_size=32, seed=7)
        >>> sampler.state_dict(batches_consumed=12)
        {'seed': 7, 'epoch': 0, 'consumed': 384, 'num_rows': 591, 'shuffle': 'global', 'pool_episodes': 8, 'dataset_version': 3}

        """
        return {
            "seed": self.seed,
            "epoch": self.epoch,
            "consumed": self.position_after(batches_consumed),
            "num_rows": self.num_rows,
            "shuffle": self.shuffle,
            "pool_episodes": self.pool_episodes,
            "dataset_version": self.dataset_version,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from a checkpoint: the next batch starts at the first unconsumed row. World
        size, rank, batch size and worker count may differ from the run that saved it."""
        self._check_resumable(state, ("seed", "num_rows", "shuffle", "pool_episodes", "dataset_version"))
        consumed = int(state["consumed"])
        if not 0 <= consumed <= self.num_rows:
            raise ValueError(f"cannot resume: consumed={consumed} is outside 0..{self.num_rows}")
        self.epoch = int(state["epoch"])
        self.start = consumed

    def __getstate__(self) -> dict:
        # Workers rebuild the permutation themselves rather than receive it through a pipe.
        state = self.__dict__.copy()
        state["_order_cache"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return (
            f"RowSampler(rows={self.num_rows}, batch_size={self.batch_size}, rank={self.rank}/"
            f"{self.world_size}, seed={self.seed}, epoch={self.epoch}, shuffle={self.shuffle!r}, "
            f"start={self.start})"
        )

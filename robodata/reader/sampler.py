"""Which rows each rank and worker reads, in which order, for one epoch of training.

The epoch's order is one permutation of all rows (a pure function of seed, epoch and the
dataset's rows at its version). It is cut into global steps of ``world_size * batch_size``
rows; in step s rank r reads the r-th batch-sized slice. So after s steps exactly the first
``s * world_size * batch_size`` rows of the order are consumed, whatever the world size was:
resuming from that count with another world size, batch size or number of workers visits each
remaining row once. Inside a rank, DataLoader worker w reads batches w, w + n, w + 2n, ... of
the rank's batches, which is the order in which PyTorch's DataLoader hands batches to workers.

Shuffle modes: ``global`` permutes all rows; ``episode`` shuffles episodes, groups them into
pools of ``pool_episodes`` and permutes rows within each pool, so consecutive batches share
GOPs (LeRobot-style locality, still one permutation over rows).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

SHUFFLE_MODES = ("global", "episode", "none")


@dataclass(frozen=True)
class WorkerShard:
    """A DataLoader worker's position among its rank's workers."""

    worker_id: int = 0
    num_workers: int = 1


class PlannedBatch(list):
    """Row indices of one batch that also name the plan they come from (``epoch``, ``start``),
    so a DataLoader worker that receives it knows which batches follow (it pickles with them).
    """

    def __init__(self, indices, epoch: int, start: int) -> None:
        super().__init__(indices)
        self.epoch = epoch
        self.start = start


def current_worker() -> WorkerShard:
    """This process's worker shard: from ``torch.utils.data.get_worker_info`` inside a DataLoader
    worker, else the single shard (also when PyTorch is not installed)."""
    try:
        from torch.utils.data import get_worker_info
    except ImportError:
        return WorkerShard()
    info = get_worker_info()
    return WorkerShard() if info is None else WorkerShard(info.id, info.num_workers)


class RowSampler:
    """Batches of row indices for one rank: exactly-once per epoch, deterministic, resumable.

    >>> sampler = RowSampler.for_dataset(ds, batch_size=32, rank=0, world_size=2, seed=7)  # doctest: +SKIP
    >>> for batch in sampler: ...  # doctest: +SKIP
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

    @classmethod
    def for_dataset(cls, dataset, *, batch_size: int, **options) -> RowSampler:
        """A sampler over every row of ``dataset`` (a RoboDataset) at its version.

        >>> RowSampler.for_dataset(ds, batch_size=64, shuffle="episode", pool_episodes=4)  # doctest: +SKIP
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
        """Every row of the dataset once, in this epoch's order (identical on every rank)."""
        if self._order_cache is None or self._order_cache[0] != self.epoch:
            self._order_cache = (self.epoch, self._make_order())
        return self._order_cache[1]

    def _make_order(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, self.epoch])
        if self.shuffle == "none":
            return np.arange(self.num_rows, dtype=np.int64)
        if self.shuffle == "global":
            return rng.permutation(self.num_rows).astype(np.int64)
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
        """[start, stop) in the epoch's order of each of this rank's batches, from ``start``."""
        remaining = self.num_rows - self.start
        full_steps, tail = divmod(remaining, self._step_rows)
        bounds = []
        for step in range(full_steps):
            first = self.start + step * self._step_rows + self.rank * self.batch_size
            bounds.append((first, first + self.batch_size))
        if tail and not self.drop_last:
            # The last, short step is shared out evenly: ranks differ by at most one row.
            base = self.start + full_steps * self._step_rows
            first = base + (self.rank * tail) // self.world_size
            stop = base + ((self.rank + 1) * tail) // self.world_size
            if stop > first:
                bounds.append((first, stop))
        return bounds

    def __len__(self) -> int:
        """Batches this rank reads in the rest of the epoch (all workers together)."""
        return len(self._bounds())

    def batches(self, shard: WorkerShard | None = None) -> list[np.ndarray]:
        """This rank's remaining batches for one worker ``shard`` (default: all of them)."""
        shard = shard or WorkerShard()
        order = self.order()
        mine = self._bounds()[shard.worker_id :: shard.num_workers]
        return [order[first:stop] for first, stop in mine]

    def __iter__(self) -> Iterator[PlannedBatch]:
        """The rank's batches (as DataLoader's ``batch_sampler``); inside a DataLoader worker
        only that worker's share."""
        for batch in self.batches(current_worker()):
            yield PlannedBatch(batch.tolist(), self.epoch, self.start)

    def positioned(self, epoch: int, start: int) -> RowSampler:
        """This sampler at another epoch and start (e.g. the plan a PlannedBatch names)."""
        other = copy.copy(self)
        other.epoch, other.start = int(epoch), int(start)
        return other

    # --- resume -----------------------------------------------------------------------------
    def position_after(self, batches: int) -> int:
        """Rows of the epoch's order consumed by all ranks once each rank has taken ``batches``
        batches (in order, all workers together) since iteration started."""
        bounds = self._bounds()
        if batches >= len(bounds):
            return self.num_rows
        return self.start + batches * self._step_rows

    def state_dict(self, batches_consumed: int = 0) -> dict:
        """What to checkpoint: the epoch and how many rows of its order were consumed.

        The same on every rank, so saving rank 0's state is enough.

        >>> state = sampler.state_dict(batches_consumed=120)  # doctest: +SKIP
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
        for key in ("seed", "num_rows", "shuffle", "pool_episodes", "dataset_version"):
            saved, mine = state.get(key), getattr(self, key)
            if key == "dataset_version" and (saved is None or mine is None):
                continue
            if saved != mine:
                raise ValueError(
                    f"cannot resume: the checkpoint has {key}={saved!r} but this sampler has {key}={mine!r}"
                )
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

    def __repr__(self) -> str:
        return (
            f"RowSampler(rows={self.num_rows}, batch_size={self.batch_size}, rank={self.rank}/"
            f"{self.world_size}, seed={self.seed}, epoch={self.epoch}, shuffle={self.shuffle!r}, "
            f"start={self.start})"
        )

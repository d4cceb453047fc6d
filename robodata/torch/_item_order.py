"""The decode-once order as a ``sampler`` of items, for ``DataLoader(dataset, sampler=...,
batch_size=B, num_workers=W)`` (LeRobot's training script builds its DataLoader so).

Such a DataLoader cuts batches of ``B`` from the items the sampler yields, accelerate shards
them over the ranks (global batch ``g`` goes to rank ``g % P``) and DataLoader deals a rank's
batches round its workers (rank batch ``j`` to worker ``j % W``). ``BlockItemSampler`` yields
every item once per epoch in the order of a ``BlockSampler`` laid out for ``P`` ranks of ``W``
workers and batches of ``B``, flattened so that the batches DataLoader cuts from it are that
sampler's batches, each landing in the worker whose stream it is. Every item it yields is a
``PlannedIndex``: an int that also names the epoch and start it comes from, so the worker that
receives it works out every batch it will receive (``worker_batches``) and keeps decoded frames
for them (``robodata.torch._planned_reads``).

Resuming: ``load_state_dict({"epoch", "start_index"})`` continues at item ``start_index`` of the
epoch's order in this layout. ``resume_state`` is the full checkpoint: the position plus the
layout it counts in. Loaded into a sampler of another layout (workers, ranks, batch size), the
items the old layout had handed out (the first ``start_index`` of its order) stay first, and the
rest are planned again in the new layout, so every item is still read exactly once that epoch.

>>> sampler = BlockItemSampler(np.repeat(np.arange(100), 8), batch_size=32, num_workers=2, window_rows=64)
>>> order = list(sampler)
>>> len(sampler), sorted(order) == list(range(800)), order[0].plan
(800, True, (0, 0))
>>> [len(b) for b in sampler.worker_batches(0, 0, WorkerShard(1, 2))][:3]  # worker 1: batches 1, 3, 5 ...
[32, 32, 32]
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np

from robodata.torch._block_order import DEFAULT_WINDOW_ROWS, EARLIER_LAYOUT, BlockSampler, check_places
from robodata.torch._runs import DEFAULT_POOL_BYTES, DEFAULT_RUN_BYTES, BlockPlaces
from robodata.torch._sampler import WorkerShard

__all__ = ["BlockItemSampler", "PlannedIndex", "WorkerShard"]

LAYOUT = ("batch_size", "num_workers", "world_size", "window_rows", "run_bytes", "pool_bytes")


class PlannedIndex(int):
    """An item index that names the plan it comes from: ``plan`` is (epoch, start index)."""

    plan: tuple[int, int]

    def __new__(cls, value: int, plan: tuple[int, int]) -> PlannedIndex:
        index = super().__new__(cls, value)
        index.plan = plan
        return index

    def __reduce__(self):
        return (PlannedIndex, (int(self), self.plan))


class BlockItemSampler:
    """Item indices in the decode-once block order, for ``DataLoader(sampler=..., batch_size=...)``
    (module docstring). The interface is that of LeRobot's ``EpisodeAwareSampler``: ``__iter__``
    yields one epoch and advances the epoch, ``__len__``, ``set_epoch``, ``state_dict`` /
    ``load_state_dict`` of ``{"epoch", "start_index"}``.

    Parameters
    ----------
    block_of_item : numpy.ndarray
        Per item of the dataset, its block (``robodata.torch._block_order.block_of_rows``).
    batch_size : int
        The DataLoader's ``batch_size`` (per rank).
    num_workers : int
        The DataLoader's ``num_workers`` (0 counts as 1).
    rank, world_size : int
        This process's place among the ranks accelerate shards the batches over.
    seed : int
        The order's seed; the epoch is counted by ``__iter__``.
    window_rows : int
        Items mixed at a time in each worker's stream (``robodata.torch._block_order``).
    items : numpy.ndarray, optional
        The items to order (default: all), e.g. without each episode's last frames.
    dataset_version : int, optional
        The version the items come from: a checkpoint of another version is refused.
    places, run_bytes, pool_bytes
        Runs and the pool (``BlockSampler``'s, ``robodata.torch._runs``): without ``places``
        blocks are taken one by one.
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
        dataset_version: int | None = None,
        places: BlockPlaces | None = None,
        run_bytes: int = DEFAULT_RUN_BYTES,
        pool_bytes: int = DEFAULT_POOL_BYTES,
    ) -> None:
        self._blocks = np.asarray(block_of_item, dtype=np.int64)
        self.items = np.arange(len(self._blocks), dtype=np.int64) if items is None else np.asarray(items, np.int64)
        if len(self.items) == 0:
            raise ValueError("BlockItemSampler: no item to sample")
        self.batch_size = int(batch_size)
        self.num_workers = max(int(num_workers), 1)
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.seed = int(seed)
        self.window_rows = int(window_rows)
        self.dataset_version = dataset_version
        self.places = places
        self.run_bytes = int(run_bytes) if places is not None else 0  # 0: blocks one by one
        self.pool_bytes = int(pool_bytes) if self.run_bytes else 0  # no runs: no pool
        self.shuffle = True
        self._epoch = 0
        self._start_index = 0
        self.resumed_from: dict | None = None  # a checkpoint of another layout the epoch continues
        self._restored: dict | None = None  # a full checkpoint that outranks a bare position
        self._anchor = (0, 0, 0)  # (training step, epoch, start_index): where the order stood
        self._order_cache: tuple[tuple, np.ndarray] | None = None
        self._plan(self.items)  # checks the arguments now

    def _plan(self, items: np.ndarray, salt: int = 0) -> BlockSampler:
        """The plan of every rank over ``items`` (each rank's share is a view of the same plan)."""
        plan = BlockSampler(
            self._blocks[items],
            batch_size=self.batch_size,
            world_size=self.world_size,
            num_workers=self.num_workers,
            seed=self.seed,
            window_rows=self.window_rows,
            places=self.places,
            run_bytes=self.run_bytes,
            pool_bytes=self.pool_bytes,
        )
        plan.salt = salt
        return plan

    def order(self, epoch: int) -> np.ndarray:
        """Every item of epoch ``epoch``, in the order this sampler yields them."""
        resumed = self.resumed_from if self.resumed_from and self.resumed_from["epoch"] == epoch else None
        key = (epoch, repr(resumed))
        if self._order_cache is not None and self._order_cache[0] == key:
            return self._order_cache[1]
        if resumed is None:
            order = self.items[_flattened(self._plan(self.items), epoch, self.world_size)]
        else:
            # what the earlier layout handed out stays first; the rest is planned in this one
            earlier = _sampler_from_state(resumed, self._blocks, self.items, self.places)
            taken = earlier.order(epoch)[: resumed["start_index"]]
            rest = self.items[~np.isin(self.items, taken)]
            planned = self._plan(rest, salt=1 + _depth(resumed))
            order = np.concatenate([taken, rest[_flattened(planned, epoch, self.world_size)]])
        self._order_cache = (key, order)
        return order

    def worker_batches(self, epoch: int, start: int, shard: WorkerShard) -> list[np.ndarray]:
        """The batches of items worker ``shard`` of this rank receives in epoch ``epoch`` from
        ``start`` on: DataLoader cuts batches of ``batch_size`` from the order, accelerate gives
        rank ``r`` every ``world_size``-th from the ``r``-th, and DataLoader deals a rank's batches
        round its workers from worker 0."""
        rest = self.order(epoch)[start:]
        batches = [rest[i : i + self.batch_size] for i in range(0, len(rest), self.batch_size)]
        return batches[self.rank :: self.world_size][shard.worker_id :: shard.num_workers]

    # --- the EpisodeAwareSampler interface ----------------------------------------------------
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
        """Continue at item ``start_index`` of epoch ``epoch``. A bare ``{"epoch", "start_index"}``
        (what LeRobot's ``compute_sampler_state`` gives for a step) counts in this layout; a
        ``resume_state`` names its own layout (see the module docstring). After ``restore``, a
        bare position is checked against the restored one, which wins."""
        if self._restored is not None and set(state) == {"epoch", "start_index"}:
            mine = {"epoch": self._restored["epoch"], "start_index": self._restored["start_index"]}
            if dict(state) != mine:
                logging.warning(f"robodata: resuming at {mine}, where the order stopped, not at {dict(state)}")
            self._restored = None
            return
        start = int(state["start_index"])
        if not 0 <= start <= len(self):
            raise ValueError(f"cannot resume: start_index={start} is outside 0..{len(self)}")
        if "seed" in state:
            self._check(state)
            if any(state.get(key, EARLIER_LAYOUT.get(key)) != getattr(self, key) for key in LAYOUT):
                self.resumed_from = dict(state)
            else:
                self.resumed_from = state.get("resumed_from")
        self._epoch, self._start_index = int(state["epoch"]), start
        self._order_cache = None

    def restore(self, state: dict) -> None:
        """Load a ``resume_state`` that a later bare ``load_state_dict`` must not override; its
        ``step`` (the training steps taken when it was saved) anchors ``position_at_step``."""
        self.load_state_dict(state)
        self._restored = dict(state)
        self._anchor = (int(state.get("step", 0)), self._epoch, self._start_index)

    def position_at_step(self, step: int) -> tuple[int, int]:
        """(epoch, start_index) of the order after training step ``step``: from where the run
        started (step 0, or the ``restore``d checkpoint), one batch per rank a step."""
        anchor_step, epoch, start = self._anchor
        if step < anchor_step:
            raise ValueError(f"step {step} is before step {anchor_step}, where this run's order started")
        return self.position_after(step - anchor_step, epoch, start)

    def _check(self, state: dict) -> None:
        mine = {"seed": self.seed, "num_items": len(self), "items_digest": _digest(self.items)}
        if state.get("dataset_version") is not None and self.dataset_version is not None:
            mine["dataset_version"] = self.dataset_version
        for key, value in mine.items():
            if state.get(key) != value:
                raise ValueError(
                    f"cannot resume: the checkpoint has {key}={state.get(key)!r} but this sampler has {key}={value!r}"
                )
        check_places(state, self._places_digest())

    def _places_digest(self) -> str | None:
        return None if not self.run_bytes or self.places is None else self.places.digest()

    def resume_state(self, epoch: int, start_index: int) -> dict:
        """The full checkpoint of position (``epoch``, ``start_index``) of this order: plain JSON."""
        return {
            "epoch": int(epoch),
            "start_index": int(start_index),
            "seed": self.seed,
            "num_items": len(self),
            "items_digest": _digest(self.items),
            "dataset_version": self.dataset_version,
            **{key: getattr(self, key) for key in LAYOUT},
            "places_digest": self._places_digest(),
            "resumed_from": self.resumed_from if self.resumed_from and self.resumed_from["epoch"] == epoch else None,
        }

    def steps_in_epoch(self, start_index: int = 0) -> int:
        """Training steps (one batch per rank) from item ``start_index`` to the end of an epoch:
        DataLoader cuts ``ceil(rest / batch_size)`` batches and accelerate deals them to the ranks,
        padding the last round (``even_batches``)."""
        batches = -(-(len(self) - start_index) // self.batch_size)
        return -(-batches // self.world_size)

    def position_after(self, steps: int, epoch: int, start_index: int) -> tuple[int, int]:
        """(epoch, start_index) once ``steps`` more training steps of this layout have run from
        (``epoch``, ``start_index``)."""
        while steps > 0:
            left = self.steps_in_epoch(start_index)
            if steps < left:
                return epoch, start_index + steps * self.batch_size * self.world_size
            steps -= left
            epoch, start_index = epoch + 1, 0
        return epoch, start_index

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_order_cache"] = None  # a worker re-plans (a pure function) rather than receive it
        return state

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(items={len(self)}, batch_size={self.batch_size}, workers={self.num_workers}, "
            f"rank={self.rank}/{self.world_size}, seed={self.seed}, window_rows={self.window_rows}, "
            f"run_bytes={self.run_bytes}, pool_bytes={self.pool_bytes})"
        )


def _flattened(plan: BlockSampler, epoch: int, world_size: int) -> np.ndarray:
    """The plan's positions in the order a DataLoader over them must yield: rank-local batch j
    of every rank, then batch j + 1 (accelerate deals them back out)."""
    plan.set_epoch(epoch)
    plan.batches()  # plans the epoch once: the ranks' views below share it
    per_rank = []
    for rank in range(world_size):
        view = plan.positioned_rank(rank)
        per_rank.append([rows[~padding] for rows, padding in view.padded_batches()])
    pieces = [batches[j] for j in range(len(per_rank[0])) for batches in per_rank]
    return np.concatenate(pieces) if pieces else np.zeros(0, np.int64)


def _digest(items: np.ndarray) -> str:
    """A short fingerprint of the items ordered (e.g. which episode frames were left out)."""
    import hashlib

    return hashlib.sha1(np.ascontiguousarray(items, dtype=np.int64).tobytes()).hexdigest()[:16]


def _depth(state: dict | None) -> int:
    return 0 if state is None else 1 + _depth(state.get("resumed_from"))


def _sampler_from_state(
    state: dict, blocks: np.ndarray, items: np.ndarray, places: BlockPlaces | None
) -> BlockItemSampler:
    """The sampler (rank 0) that wrote checkpoint ``state``, with the checkpoint it continued."""
    layout: dict = {key: state.get(key, EARLIER_LAYOUT.get(key)) for key in LAYOUT}
    earlier = BlockItemSampler(blocks, items=items, seed=state["seed"], places=places, **layout)
    earlier.resumed_from = state.get("resumed_from")
    return earlier

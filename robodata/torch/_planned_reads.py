"""In the process that reads a batch of a training order: which plan the batch comes from, the
frame buffer planned with the batches that follow it, and the batch's hand-off. One piece of
code for every dataset that reads the orders (``RoboTorchDataset``, LeRobot's
``LeRobotCompatDataset``).

A batch names its plan: a ``PlannedBatch`` (from a ``BlockSampler`` or ``RowSampler`` used as
``batch_sampler``) carries (epoch, start); items of a ``BlockItemSampler`` (a ``sampler``) are
``PlannedIndex`` ints that carry it. With the order the dataset was given, that is enough to list
every batch this worker receives next (the orders are pure functions of their epoch and start),
so ``FramePlan`` keeps each decoded frame until its last use there (``FrameBuffer``) and has the
GOP prefetcher fetch the plan's GOPs ahead, each run stored together in one read (``GopCache``). The
batch's hand-off to the training process is ``robodata.torch._handover.HandOff``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from robodata.torch._frame_buffer import FrameBuffer
from robodata.torch._gop_cache import GopCache
from robodata.torch._item_order import BlockItemSampler, PlannedIndex
from robodata.torch._sampler import PlannedBatch, PlannedOrder, WorkerShard, current_worker


@dataclass(frozen=True)
class BatchPlan:
    """The plan a batch comes from, seen from the worker reading it: ``key`` (epoch, start,
    worker) tells plans apart, ``batches(first, count)`` lists the worker's batches of it."""

    key: tuple[int, int, WorkerShard]
    batches: Callable[[int, int], list[np.ndarray]]

    def upcoming(self) -> list[np.ndarray]:
        """Every batch of the plan this worker reads, from the plan's start (listed once: the
        frame buffer and the GOP prefetcher both plan with it)."""
        listed = self.__dict__.get("_upcoming")
        if listed is None:
            listed = self.__dict__["_upcoming"] = self.batches(0, -1)
        return listed


def batch_plan(indices: Sequence[int], order: object) -> BatchPlan | None:
    """The plan of ``order`` a batch ``indices`` comes from, or None (a batch from elsewhere)."""
    shard = current_worker()
    if isinstance(indices, PlannedBatch) and isinstance(order, PlannedOrder):
        planned = order.positioned(indices.epoch, indices.start)

        def of_rank(first: int, count: int) -> list[np.ndarray]:
            if count < 0:
                return planned.batches(shard)
            return planned.worker_batches(shard, first, count)

        return BatchPlan((indices.epoch, indices.start, shard), of_rank)
    if len(indices) and isinstance(indices[0], PlannedIndex) and isinstance(order, BlockItemSampler):
        epoch, start = indices[0].plan

        def of_items(first: int, count: int) -> list[np.ndarray]:
            batches = order.worker_batches(epoch, start, shard)
            return batches[first:] if count < 0 else batches[first : first + count]

        return BatchPlan((epoch, start, shard), of_items)
    return None


class FramePlan:
    """A process's frame buffer and GOP prefetcher, planned with the rest of the plan its batches
    come from: a batch of a new plan (a new epoch, a resumed one) plans them again. ``make_buffer``
    makes the buffer on first use (None: this reader keeps no frames); ``gop_cache()`` is the GOP
    prefetcher (``robodata.torch._gop_cache.GopCache``; None: none), scheduled with the plan's
    batches as they are given (its ``acquire`` takes them so)."""

    def __init__(
        self,
        make_buffer: Callable[[], FrameBuffer | None],
        gop_cache: Callable[[], GopCache | None] | None = None,
    ) -> None:
        self._make_buffer: Callable[[], FrameBuffer | None] | None = make_buffer
        self._gop_cache = gop_cache
        self.buffer: FrameBuffer | None = None
        self.planned_for: tuple | None = None

    def _made(self) -> FrameBuffer | None:
        if self._make_buffer is not None:  # made once (None: this reader keeps no frames)
            self.buffer, self._make_buffer = self._make_buffer(), None
        return self.buffer

    def for_batch(
        self, plan: BatchPlan | None, rows_of: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> FrameBuffer | None:
        """The buffer to read a batch of ``plan`` from (None for a batch of no plan); the plan's
        batches are ``rows_of(batch)`` in the buffer's dataset (default: the batch itself)."""
        if plan is None:
            return None
        buffer = self._made()
        if plan.key != self.planned_for:
            upcoming = plan.upcoming()
            if buffer is not None:
                buffer.expect(upcoming if rows_of is None else [rows_of(batch) for batch in upcoming])
            cache = self._gop_cache() if self._gop_cache is not None else None
            if cache is not None:
                cache.schedule(upcoming)
            self.planned_for = plan.key
        return buffer

    def expect(self, batches: Sequence[np.ndarray]) -> None:
        """Plan the buffer with ``batches``, the rows this process reads next, in order."""
        buffer = self._made()
        if buffer is not None:
            buffer.expect(batches)
        self.planned_for = None

"""``LeRobotCompatDataset``'s training orders, in LeRobot's names: its samplers (``item_sampler``: a
``sampler`` with the interface of LeRobot's ``EpisodeAwareSampler``; ``sampler``: a
``batch_sampler``) over its items. The orders, their frame buffer and the batch hand-off are
``robodata.torch``'s (``_block_order``, ``_item_order``, ``_planned_reads``); this module maps
LeRobot's items (episode frames in LeRobot's order, ``drop_n_*_frames``) onto them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robodata.lerobot._block_order import BlockOrderSampler
from robodata.reader import PLANAR_RGB, RowIndex
from robodata.torch._block_order import WINDOW_LIMIT, BlockSampler, block_of_rows, window_rows_for
from robodata.torch._frame_buffer import FrameBuffer
from robodata.torch._gop_cache import GopCache
from robodata.torch._planned_reads import FramePlan, batch_plan
from robodata.torch._runs import DEFAULT_POOL_BYTES, BlockPlaces, block_places, run_bytes_for
from robodata.torch._sampler import RowSampler


@dataclass
class ItemSource:
    """What the orders need of the dataset: per item its row (``rows``) in the ``index``, the
    (height, width) of each camera frame an item holds (``frame_sizes()``: cameras without
    ``delta_timestamps``), the pinned version, the frame buffer's budget, and the stored bytes of
    GOPs by ref_id (``byte_sizes``: what the runs of the decode-once order are cut by), and the
    dataset's uri (``run_bytes_for``: runs by default on object storage only)."""

    rows: np.ndarray
    index: RowIndex
    frame_sizes: Callable[[], list[tuple[int, int]]]
    version: int
    frame_buffer_bytes: int
    byte_sizes: Callable[[np.ndarray], np.ndarray] | None = None
    uri: str = ""

    def places(self, blocks: np.ndarray) -> BlockPlaces:
        """The places of the items' blocks (``blocks``: per item), bytes over every camera."""
        return block_places(self.index, blocks, self.rows, byte_sizes=self.byte_sizes)


class DecodeOnceOrder:
    """The training orders of ``LeRobotCompatDataset`` (it gives ``_item_source`` and
    ``_new_frame_buffer``), and in the process that reads their batches, the frame buffer planned
    with the batches that process reads next."""

    _order: BlockSampler | BlockOrderSampler | None = None
    _frames: FramePlan | None = None
    _gops: GopCache | None = None

    def _item_source(self) -> ItemSource:
        raise NotImplementedError

    def _new_frame_buffer(self) -> FrameBuffer | None:
        raise NotImplementedError

    def _new_gop_cache(self) -> GopCache | None:
        """The GOP prefetcher of this process's batches, keyed by the order's batches (None: none)."""
        raise NotImplementedError

    def _gop_cache(self) -> GopCache | None:
        if self._gops is None:
            self._gops = self._new_gop_cache()
        return self._gops

    def sampler(
        self,
        *,
        batch_size: int,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        shuffle: str = "block",
        num_workers: int = 0,
        window_rows: int | None = None,
        run_bytes: int | None = None,
        pool_bytes: int = DEFAULT_POOL_BYTES,
        **options,
    ) -> BlockSampler | RowSampler:
        """A resumable, DDP-safe ``batch_sampler`` over this dataset's items (equal steps per
        rank, ``state_dict`` the same on every rank): ``make_dataloader``'s orders (``shuffle``:
        ``"block"``, the default, the decode-once order laid out for ``num_workers`` workers with
        ``window_rows`` items mixed at a time (default: what ``frame_buffer_bytes`` holds), blocks
        taken in runs of ``run_bytes`` through a pool of ``pool_bytes`` (``make_dataloader``'s);
        ``"uniform"``; ``"episode"``; ``"none"``).

        >>> from torch.utils.data import DataLoader
        >>> from robodata.lerobot import LeRobotCompatDataset
        >>> from robodata.torch._torch_dataset import collate_batch
        >>> ds = LeRobotCompatDataset("data/demo")
        >>> sampler = ds.sampler(batch_size=32, rank=1, world_size=2)
        >>> loader = DataLoader(ds, batch_sampler=sampler, collate_fn=collate_batch)
        >>> len(loader), next(iter(loader))["action"].shape  # 591 items: 10 steps of 32 per rank
        (10, torch.Size([32, 14]))

        """
        source = self._item_source()
        place: dict[str, Any] = dict(
            batch_size=batch_size, rank=rank, world_size=world_size, seed=seed, dataset_version=source.version
        )
        if shuffle != "block":
            if shuffle == "episode":
                options["episode_index"] = source.index.episode_index[source.rows]
            return RowSampler(len(source.rows), shuffle=shuffle, **place, **options)
        blocks = block_of_rows(source.index, source.rows)
        window = self.window_rows() if window_rows is None else window_rows
        sampler = BlockSampler(
            blocks,
            num_workers=num_workers,
            window_rows=window,
            places=source.places(blocks),
            run_bytes=run_bytes_for(source.uri, run_bytes),
            pool_bytes=pool_bytes,
            **place,
            **options,
        )
        self._order = sampler
        return sampler

    def item_sampler(
        self,
        *,
        batch_size: int,
        num_workers: int = 0,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        window_rows: int | None = None,
        drop_n_first_frames: int = 0,
        drop_n_last_frames: int = 0,
        run_bytes: int | None = None,
        pool_bytes: int = DEFAULT_POOL_BYTES,
    ) -> BlockOrderSampler:
        """The decode-once order as a ``sampler`` of items, for ``DataLoader(ds, sampler=...,
        batch_size=batch_size, num_workers=num_workers)`` as LeRobot builds it (the interface of its
        ``EpisodeAwareSampler``; ``robodata-train`` uses it): every item once per epoch, each GOP
        decoded once per epoch per worker, blocks taken in runs of ``run_bytes`` through a pool of
        ``pool_bytes`` per worker. ``rank`` and ``world_size`` are accelerate's (it shards
        the batches); ``drop_n_*_frames`` leave out each episode's first or last frames.

        >>> from torch.utils.data import DataLoader
        >>> from robodata.lerobot import LeRobotCompatDataset
        >>> ds = LeRobotCompatDataset("data/demo")
        >>> loader = DataLoader(ds, sampler=ds.item_sampler(batch_size=32, num_workers=2), batch_size=32,
        ...                     num_workers=2, multiprocessing_context=robodata.torch.worker_context())
        >>> len(loader), next(iter(loader))["observation.images.top"].shape
        (19, torch.Size([32, 3, 480, 640]))

        """
        source = self._item_source()
        frame, length = source.index.frame_index[source.rows], source.index.episode_length[source.rows]
        items = np.flatnonzero((frame >= drop_n_first_frames) & (frame < length - drop_n_last_frames))
        blocks = block_of_rows(source.index, source.rows)
        sampler = BlockOrderSampler(
            blocks,
            batch_size=batch_size,
            num_workers=num_workers,
            rank=rank,
            world_size=world_size,
            seed=seed,
            window_rows=self.window_rows() if window_rows is None else window_rows,
            items=items,
            dataset_version=source.version,
            places=source.places(blocks),
            run_bytes=run_bytes_for(source.uri, run_bytes),
            pool_bytes=pool_bytes,
        )
        self._order = sampler
        return sampler

    def window_rows(self, limit: int = WINDOW_LIMIT) -> int:
        """The block order's mixing window the frame buffer holds (``frame_buffer_bytes``, see
        ``robodata.torch._block_order.window_rows_for``), at most ``limit``."""
        source = self._item_source()
        blocks = block_of_rows(source.index, source.rows)
        return window_rows_for(source.frame_buffer_bytes, source.frame_sizes(), blocks, limit)

    def _planned_frames(
        self, indices: Sequence[int], allocate: Callable[[tuple[int, ...]], np.ndarray] | None = None
    ) -> Callable[[np.ndarray], dict] | None:
        """For a batch of this dataset's decode-once order: the reader of its frames (cameras
        without ``delta_timestamps``) from this process's frame buffer, planned with every batch
        this process reads next in that order, into arrays ``allocate(shape)`` makes. None for
        any other batch: ``get_frames`` reads it."""
        if not isinstance(self._order, BlockSampler | BlockOrderSampler):
            return None
        if self._frames is None:
            self._frames = FramePlan(self._new_frame_buffer, self._gop_cache)
        rows = self._item_source().rows
        buffer = self._frames.for_batch(batch_plan(indices, self._order), rows_of=lambda batch: rows[batch])
        if buffer is None:
            return None
        cache, items = self._gops, np.asarray(indices, dtype=np.int64)

        def read(rows: np.ndarray) -> dict:
            # The GOPs the prefetcher fetched ahead for this batch, pinned while it decodes.
            gop_bytes = cache.acquire(items) if cache is not None else None
            try:
                return buffer.read(rows, pixel_format=PLANAR_RGB, allocate=allocate, gop_bytes=gop_bytes)
            finally:
                if cache is not None:
                    cache.release(items)

        return read

    @property
    def frame_buffer(self) -> FrameBuffer | None:
        """This process's decoded frames for the decode-once order (None until it reads a batch of it)."""
        return None if self._frames is None else self._frames.buffer

"""The decode-once order for ``LeRobotCompatDataset``: its samplers (``sampler``: a
``batch_sampler``; ``item_sampler``: a ``sampler`` as LeRobot's training script takes) and, in the
process that reads their batches, a frame buffer planned with the batches that process reads next,
so each GOP is decoded once per epoch per worker (``robodata.torch._block_order``,
``robodata.torch._frame_buffer``). A uniform order stays one option away: ``shuffle="global"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from robodata.lerobot._block_order import BlockOrderSampler, PlannedIndex
from robodata.lerobot._format import video_key
from robodata.lerobot._items import ItemLayout
from robodata.reader import PLANAR_RGB, RowIndex
from robodata.torch._block_order import BlockSampler
from robodata.torch._frame_buffer import FrameBuffer, yuv_frame_bytes
from robodata.torch._sampler import PlannedBatch, RowSampler, current_worker


class DecodeOnceOrder:
    """``LeRobotCompatDataset``'s samplers and frame buffer (a mixin: it uses the dataset's rows,
    row index, cameras, offsets, meta and ``frame_buffer_bytes``)."""

    _order: BlockSampler | BlockOrderSampler | None
    _frames: FrameBuffer | None
    _frames_for: tuple | None
    _gop_size: int
    _layout: ItemLayout
    frame_buffer_bytes: int
    version: int
    meta: Any

    if TYPE_CHECKING:  # what LeRobotCompatDataset defines

        @property
        def cameras(self) -> list[str]: ...

        @property
        def offsets(self) -> Mapping[str, Sequence[tuple[str, int]]]: ...

        def __len__(self) -> int: ...

        def _array(self, key: str) -> np.ndarray: ...

        def _row_index(self) -> RowIndex: ...

        def _lance_dataset(self) -> Any: ...

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
        **options,
    ) -> BlockSampler | RowSampler:
        """A resumable, DDP-safe ``batch_sampler`` over this dataset's items (equal steps per
        rank, ``state_dict`` the same on every rank).

        ``shuffle="block"`` (the default) is the decode-once order (``robodata.torch._block_order``):
        each GOP's items are read by one of the ``num_workers`` DataLoader workers (pass the
        DataLoader's), which decodes the GOP once per epoch and keeps its frames for their
        batches; ``window_rows`` items are mixed at a time (default: what ``frame_buffer_bytes``
        holds). ``shuffle="global"`` is a uniform random order (``RowSampler``), ``"episode"`` and
        ``"none"`` as ``make_dataloader``'s.

        >>> from torch.utils.data import DataLoader
        >>> from robodata.lerobot import LeRobotCompatDataset
        >>> from robodata.torch._torch_dataset import collate_batch
        >>> ds = LeRobotCompatDataset("data/demo")
        >>> sampler = ds.sampler(batch_size=32, rank=1, world_size=2)
        >>> loader = DataLoader(ds, batch_sampler=sampler, collate_fn=collate_batch)
        >>> len(loader), next(iter(loader))["action"].shape  # 591 items: 10 steps of 32 per rank
        (10, torch.Size([32, 14]))

        """
        if shuffle != "block":
            if shuffle == "episode":
                options["episode_index"] = self._row_index().episode_index[self._array("rows")]
            return RowSampler(
                len(self),
                batch_size=batch_size,
                rank=rank,
                world_size=world_size,
                seed=seed,
                shuffle=shuffle,
                dataset_version=self.version,
                **options,
            )
        sampler = BlockSampler(
            self._block_of_item(),
            batch_size=batch_size,
            rank=rank,
            world_size=world_size,
            num_workers=num_workers,
            seed=seed,
            window_rows=self.window_rows() if window_rows is None else window_rows,
            dataset_version=self.version,
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
    ) -> BlockOrderSampler:
        """The decode-once order as a ``sampler`` of items, for ``DataLoader(ds, sampler=...,
        batch_size=batch_size, num_workers=num_workers)`` as LeRobot builds it (the interface of its
        ``EpisodeAwareSampler``; ``robodata-train`` uses it): every item once per epoch, each GOP
        decoded once per epoch per worker. ``rank`` and ``world_size`` are accelerate's (it shards
        the batches); ``drop_n_*_frames`` leave out each episode's first or last frames.

        >>> from torch.utils.data import DataLoader
        >>> from robodata.lerobot import LeRobotCompatDataset
        >>> ds = LeRobotCompatDataset("data/demo")
        >>> loader = DataLoader(ds, sampler=ds.item_sampler(batch_size=32, num_workers=2), batch_size=32,
        ...                     num_workers=2, multiprocessing_context=robodata.torch.worker_context())
        >>> len(loader), next(iter(loader))["observation.images.top"].shape
        (19, torch.Size([32, 3, 480, 640]))

        """
        index, rows = self._row_index(), self._array("rows")
        frame, length = index.frame_index[rows], index.episode_length[rows]
        items = np.flatnonzero((frame >= drop_n_first_frames) & (frame < length - drop_n_last_frames))
        sampler = BlockOrderSampler(
            self._block_of_item(),
            batch_size=batch_size,
            num_workers=num_workers,
            rank=rank,
            world_size=world_size,
            seed=seed,
            window_rows=self.window_rows() if window_rows is None else window_rows,
            items=items,
        )
        self._order = sampler
        return sampler

    def window_rows(self, limit: int = 4096) -> int:
        """The block order's mixing window the frame buffer holds: ``frame_buffer_bytes`` over an
        item's frames (YUV 4:2:0), less two GOPs of items, at most ``limit``."""
        per_item = 0
        for camera in self.cameras:
            if video_key(camera) not in self.offsets:
                height, width, _ = self.meta.features[video_key(camera)]["shape"]
                per_item += yuv_frame_bytes(int(height), int(width))
        if per_item == 0:
            return limit
        return int(min(max(self.frame_buffer_bytes // per_item - 2 * self._gop_size, 0), limit))

    def _block_of_item(self) -> np.ndarray:
        """Per item, its block: the GOP its frame of the first camera is in (no Lance read)."""
        rows = self._array("rows")
        if not self.cameras:
            return np.arange(len(rows), dtype=np.int64)
        _, blocks = np.unique(self._row_index().ref_id[self.cameras[0]][rows], return_inverse=True)
        return blocks.astype(np.int64)

    def _planned_frames(
        self, indices: Sequence[int], allocate: Callable[[tuple[int, ...]], np.ndarray] | None = None
    ) -> Callable[[np.ndarray], dict] | None:
        """For a batch of the decode-once order: the reader of its frames (cameras without
        ``delta_timestamps``) from this process's frame buffer, which knows every batch this
        process reads next in that order (the order is a pure function of its epoch and start,
        which the batch names), into arrays ``allocate(shape)`` makes. None for any other
        batch: ``get_frames`` reads it."""
        order, shard = self._order, current_worker()
        if isinstance(indices, PlannedBatch) and isinstance(order, BlockSampler):
            key = (indices.epoch, indices.start, shard)
            planned = order.positioned(indices.epoch, indices.start)
            upcoming = lambda: planned.batches(shard)  # noqa: E731
        elif len(indices) and isinstance(indices[0], PlannedIndex) and isinstance(order, BlockOrderSampler):
            epoch, start = indices[0].plan
            key = (epoch, start, shard)
            upcoming = lambda: order.worker_batches(epoch, start, shard)  # noqa: E731
        else:
            return None
        cameras = [c for c in self.cameras if video_key(c) not in self.offsets]
        if not cameras or self.frame_buffer_bytes <= 0:
            return None
        if self._frames is None:
            self._frames = FrameBuffer(
                self._lance_dataset(), cameras, resolution=self._layout.resolution, budget_bytes=self.frame_buffer_bytes
            )
        if key != self._frames_for:  # a new epoch or a resumed one: plan the rest of it
            rows = self._array("rows")
            self._frames.expect([rows[batch] for batch in upcoming()])
            self._frames_for = key
        frames = self._frames
        return lambda rows: frames.read(rows, pixel_format=PLANAR_RGB, allocate=allocate)

    @property
    def frame_buffer(self) -> FrameBuffer | None:
        """This process's decoded frames for the decode-once order (None until it reads a batch of it)."""
        return self._frames

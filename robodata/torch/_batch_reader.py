"""Training batches from one pinned dataset version: frames, windows, per-row columns.

A BatchReader is what a training worker holds. It pickles as (uri, version, storage options,
options) only, and opens the dataset lazily in whichever process uses it, so DataLoader
workers started by spawn each open their own Lance handles (Lance is not fork-safe).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from robodata.format._renditions import Rendition
from robodata.format._schema import camera_of, image_column
from robodata.reader import PIXEL_FORMATS, PLANAR_RGB, RoboDataset, open_dataset, to_numpy
from robodata.reader._dataset import gop_store
from robodata.torch._block_order import WINDOW_LIMIT, block_of_rows, window_rows_for
from robodata.torch._delta_timestamps import resolve_delta_timestamps
from robodata.torch._frame_buffer import DEFAULT_FRAME_BUFFER_BYTES, FrameBuffer, yuv_frame_bytes
from robodata.torch._gop_cache import GopCache
from robodata.torch._planned_reads import FramePlan

# The one image-layout option: rgb24 [..., H, W, 3]; rgbp [..., 3, H, W] (channels first, as
# PyTorch models take them); yuv420p [..., H*3/2, W] (converted on the training device)
IMAGE_LAYOUTS = (PIXEL_FORMATS[0], PLANAR_RGB, *PIXEL_FORMATS[1:])
DEFAULT_COLUMNS = ("episode_index", "frame_index", "observation_state", "action")
DEFAULT_BUDGET_BYTES = 256 << 20


class BatchReader:
    """Reads batches of rows as numpy arrays, through ``get_frames`` / ``get_windows``.

    >>> reader = BatchReader("data/demo", cameras=["top"], offsets={"action": range(16)})
    >>> batch = reader.read([5, 500, 17])
    >>> batch["observation_images_top"].shape, batch["action"].shape, batch["action_is_pad"].shape
    ((3, 480, 640, 3), (3, 16, 14), (3, 16))
    """

    def __init__(
        self,
        uri: str,
        *,
        version: int | str | None = None,
        storage_options: dict | None = None,
        cameras: Sequence[str] | None = None,
        columns: Sequence[str] = DEFAULT_COLUMNS,
        offsets: Mapping[str, Sequence[int]] | None = None,
        delta_timestamps: Mapping[str, Sequence[float]] | None = None,
        image_dtype: str = "uint8",
        transform: Callable[[dict], dict] | None = None,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
        prefetch_batches: int = 4,
        resolution: tuple[int, int] | None = None,
        pixel_format: str = "rgb24",
        frame_buffer_bytes: int = DEFAULT_FRAME_BUFFER_BYTES,
    ) -> None:
        if image_dtype not in ("uint8", "float32"):
            raise ValueError(f"image_dtype must be 'uint8' or 'float32', got {image_dtype!r}")
        if pixel_format not in IMAGE_LAYOUTS:
            raise ValueError(f"pixel_format must be one of {IMAGE_LAYOUTS}, got {pixel_format!r}")
        if pixel_format == "yuv420p" and image_dtype != "uint8":
            raise ValueError(
                "pixel_format='yuv420p' hands over planar [H*3/2, W] uint8 frames: convert them on the training "
                "device with robodata.torch.yuv420_to_rgb (leave image_dtype unset)"
            )
        self.uri = uri
        self.storage_options = storage_options
        self._dataset: RoboDataset | None = open_dataset(uri, version=version, storage_options=storage_options)
        # Pin the number, not the tag or "latest": every worker and every epoch reads this version.
        self.dataset_version: int = self._dataset.version
        self.requested_version = version
        self.num_rows = len(self._dataset)
        known = self._dataset.cameras
        chosen = known if cameras is None else [_camera(c, known) for c in cameras]
        self.image_columns = [image_column(c) for c in chosen]
        self.columns = _known_columns(columns, self._dataset, uri)
        windows = dict(offsets or {})
        if delta_timestamps:
            # Whole rows only: every delta must be a whole number of control steps.
            resolved = resolve_delta_timestamps(delta_timestamps, control_hz=self._dataset.metadata.control_hz)
            windows.update({name: [step for _, step in steps] for name, steps in resolved.items()})
        self.offsets = {self._column_name(name, known): [int(o) for o in offs] for name, offs in windows.items()}
        self.image_dtype = image_dtype
        self.transform = transform
        self.budget_bytes = int(budget_bytes)
        self.prefetch_batches = int(prefetch_batches)
        # (H, W) of every camera's frames: a training rendition's GOPs when one fits (reader/_renditions.py)
        self.resolution = None if resolution is None else Rendition.parse(resolution).size
        # rgbp: decoded as planar RGB into [N, 3, H, W] (channels first), no transposing copy;
        # yuv420p: half the bytes through the worker -> trainer queue, no RGB conversion in the worker
        self.pixel_format = pixel_format
        self._cache: GopCache | None = None
        # decoded frames kept for later batches of the plan announced with ``expect`` (0: none)
        self.frame_buffer_bytes = int(frame_buffer_bytes)
        self._frames: FramePlan | None = None  # made in the process that reads (never pickled)
        # makes the frame buffer's output arrays: a DataLoader worker puts them in shared memory
        self.allocate: Callable[[tuple[int, ...]], np.ndarray] | None = None

    def _column_name(self, name: str, cameras: list[str]) -> str:
        if name in self.columns or name in self.image_columns:
            return name
        if name in cameras and image_column(name) in self.image_columns:
            return image_column(name)
        raise ValueError(
            f"offsets name {name!r}, which is not among the columns read: {self.image_columns + self.columns}"
        )

    # --- lazily opened state (never pickled) ------------------------------------------------
    @property
    def is_open(self) -> bool:
        """Whether this process has opened the dataset (a pickled copy has not, until it reads)."""
        return self._dataset is not None

    @property
    def dataset(self) -> RoboDataset:
        if self._dataset is None:
            self._dataset = open_dataset(self.uri, version=self.dataset_version, storage_options=self.storage_options)
        return self._dataset

    @property
    def cache(self) -> GopCache | None:
        """The GOP byte cache and prefetcher (None when the budget is 0)."""
        if self._cache is None and self.budget_bytes > 0 and self.image_columns:
            self._cache = GopCache(
                self.dataset, self.needed_gops, budget_bytes=self.budget_bytes, depth=self.prefetch_batches
            )
        return self._cache

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_dataset"] = None
        state["_cache"] = None
        state["_frames"] = None
        state["allocate"] = None
        return state

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    @property
    def frame_buffer(self) -> FrameBuffer | None:
        """The decoded frames this process keeps for its announced batches (None until ``expect``)."""
        return None if self._frames is None else self._frames.buffer

    @property
    def frame_plan(self) -> FramePlan:
        """This process's frame buffer and the plan it was planned with."""
        if self._frames is None:
            self._frames = FramePlan(self._new_frame_buffer, lambda: self.cache)
        return self._frames

    def frame_sizes(self) -> list[tuple[int, int]]:
        """(height, width) of each camera the frame buffer keeps (every camera read, windows aside)."""
        sizes = []
        for name in self.image_columns:
            if name not in self.offsets:
                info = self.dataset.metadata.cameras[camera_of(name, self.dataset.cameras)]
                sizes.append(self.resolution or (info.height, info.width))
        return sizes

    def frame_bytes_per_row(self) -> int:
        """Bytes the frame buffer holds per row: each camera read (windows aside) as YUV 4:2:0."""
        return sum(yuv_frame_bytes(height, width) for height, width in self.frame_sizes())

    def window_rows(self, limit: int = WINDOW_LIMIT) -> int:
        """The block order's mixing window that the frame buffer's budget holds, at most ``limit``
        (``robodata.torch._block_order.window_rows_for``)."""
        blocks = block_of_rows(self.dataset.rows)
        return window_rows_for(self.frame_buffer_bytes, self.frame_sizes(), blocks, limit)

    # --- reading ----------------------------------------------------------------------------
    def expect(self, batches: Sequence[np.ndarray]) -> None:
        """The batches this process reads next, in order (the rest of its epoch): each GOP they
        need is decoded once and its frames kept until their last use, within
        ``frame_buffer_bytes`` (``robodata.torch._frame_buffer``). Does nothing when the budget is 0."""
        self.frame_plan.expect(batches)

    def _new_frame_buffer(self) -> FrameBuffer | None:
        plain = [camera_of(c, self.dataset.cameras) for c in self.image_columns if c not in self.offsets]
        if self.frame_buffer_bytes <= 0 or not plain:
            return None
        return FrameBuffer(self.dataset, plain, resolution=self.resolution, budget_bytes=self.frame_buffer_bytes)

    def schedule(self, batches: Sequence[np.ndarray]) -> None:
        """Tell the prefetcher which batches come next, in order."""
        if self.cache is not None:
            self.cache.schedule(batches)

    def needed_gops(self, indices: np.ndarray) -> np.ndarray:
        """The GOP ref_ids a batch decodes from, windows included."""
        plain = [c for c in self.image_columns if c not in self.offsets]
        refs = [gop_store(self.dataset).refs(indices, plain, self.resolution)] if plain else []
        for column, offs in self.offsets.items():
            if column in self.image_columns:
                rows, _ = gop_store(self.dataset).window_rows(indices, offs)
                refs.append(gop_store(self.dataset).refs(rows.reshape(-1), column, self.resolution))
        return np.unique(np.concatenate(refs)) if refs else np.zeros(0, np.int64)

    def read(self, indices) -> dict[str, np.ndarray]:
        """Batch of rows ``indices`` (dataset row offsets): ``index``, each image column
        ``[N, H, W, 3]`` (or ``[N, T, ...]`` with offsets, plus ``<column>_is_pad``), each
        per-row column; then ``transform`` if one was given."""
        indices = checked_indices(indices, self.num_rows, self.uri, self.dataset_version)
        cache = self.cache
        gop_bytes = cache.acquire(indices) if cache is not None else None
        try:
            batch = self._read(indices, gop_bytes)
        finally:
            if cache is not None:
                cache.release(indices)
        return self.transform(batch) if self.transform is not None else batch

    def _read(self, indices: np.ndarray, gop_bytes) -> dict[str, np.ndarray]:
        ds = self.dataset
        batch: dict[str, np.ndarray] = {"index": indices}
        plain_images = [c for c in self.image_columns if c not in self.offsets]
        plain_columns = [c for c in self.columns if c not in self.offsets]
        if plain_images and self.frame_buffer is not None:
            data = self.frame_buffer.read(
                indices, pixel_format=self.pixel_format, gop_bytes=gop_bytes, allocate=self.allocate
            )
            batch.update({name: data[camera_of(name, ds.cameras)] for name in plain_images})
        elif plain_images:
            frames = ds.get_frames(
                indices,
                cameras=plain_images,
                gop_bytes=gop_bytes,
                resolution=self.resolution,
                pixel_format=self.pixel_format,
            )
            batch.update({name: frames.data[camera_of(name, ds.cameras)] for name in plain_images})
        if plain_columns:
            table = ds.take_rows(indices, plain_columns)
            batch.update({name: to_numpy(table[name]) for name in plain_columns})
        for offs, names in _group_by_offsets(self.offsets).items():
            images = [name for name in names if name in self.image_columns]
            columns = [name for name in names if name not in self.image_columns]
            window = ds.get_windows(
                indices,
                offs,
                cameras=images,
                columns=columns,
                gop_bytes=gop_bytes,
                resolution=self.resolution,
                pixel_format=self.pixel_format,
            )
            for name in names:
                batch[name] = window.data[camera_of(name, ds.cameras)] if name in images else window.columns[name]
                batch[f"{name}_is_pad"] = window.is_pad
        for name in self.image_columns:
            batch[name] = self._convert_images(batch[name])
        return batch

    def _convert_images(self, frames: np.ndarray) -> np.ndarray:
        if self.image_dtype == "float32":
            return np.divide(frames, np.float32(255), dtype=np.float32)
        return np.ascontiguousarray(frames)

    def __repr__(self) -> str:
        return (
            f"BatchReader({self.uri!r}, version={self.dataset_version}, images={self.image_columns}, "
            f"columns={self.columns}, offsets={self.offsets})"
        )


def checked_indices(indices, num_rows: int, uri: str, version: int) -> np.ndarray:
    """``indices`` as int64 row offsets, or an IndexError / TypeError naming the bad one (before
    Lance sees it: it answers -1 with an OverflowError and a row past the end with an OSError).

    >>> checked_indices([3, 0], 10, "data/demo", 4)
    array([3, 0])
    """
    array = np.asarray(indices).reshape(-1)
    if array.size == 0:
        return array.astype(np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{uri}: row indices must be integers, got {array.dtype} ({array[:3].tolist()})")
    array = array.astype(np.int64)
    bad = (array < 0) | (array >= num_rows)
    if bad.any():
        raise IndexError(
            f"{uri}: row {int(array[bad][0])} is out of range: version {version} has {num_rows} rows "
            f"(0..{num_rows - 1})"
        )
    return array


def _known_columns(columns: Sequence[str], dataset: RoboDataset, uri: str) -> list[str]:
    """The per-row columns to read, checked now rather than failing inside Lance at the first batch."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    available = dataset.columns
    for name in columns:
        if name in dataset.image_columns:
            raise ValueError(f"{uri}: {name!r} is a camera; choose cameras with cameras=[...], not columns")
        if name not in available:
            raise ValueError(
                f"{uri}: no column {name!r} at version {dataset.version}; its columns are {sorted(available)}"
            )
    return columns


def _camera(name: str, cameras: list[str]) -> str:
    """A camera given by name (``top``) or by image column (``observation_images_top``)."""
    return name if name in cameras else camera_of(name, cameras)


def _group_by_offsets(offsets: Mapping[str, list[int]]) -> dict[tuple[int, ...], list[str]]:
    """Columns that share the same offsets are read in one get_windows call."""
    groups: dict[tuple[int, ...], list[str]] = {}
    for name, offs in offsets.items():
        groups.setdefault(tuple(offs), []).append(name)
    return groups

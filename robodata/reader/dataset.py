"""RoboDataset: one version of a robodata dataset, read as rows with decoded camera frames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import TypeAlias

import lance
import numpy as np
import pyarrow as pa

from robodata.format.provenance import label_columns
from robodata.format.schema import camera_of, image_column, read_metadata, ref_columns
from robodata.format.tables import frames_uri, gops_uri, open_frames, open_table
from robodata.integrity.gop_checksums import verify_gop_bytes
from robodata.reader.decode_pool import GopTask, run_tasks
from robodata.reader.gop_index import GopIndex
from robodata.reader.renditions import decode_requests, output_shape
from robodata.reader.row_index import RowIndex
from robodata.storage.deadlines import call_with_deadline
from robodata.storage.failures import storage_step

_ITEM_FRAMES = ThreadPoolExecutor(4, thread_name_prefix="robodata-item")  # ds[i]: frames beside the row read

# Dataset row offsets (0..len(ds)-1): a list, a range or an integer numpy array.
RowIndices: TypeAlias = Sequence[int] | np.ndarray


def open_dataset(uri: str, *, version: int | str | None = None, storage_options: dict | None = None) -> RoboDataset:
    """Open the dataset at ``uri`` (a directory or s3://) at ``version`` (a number or a tag).

    >>> ds = robodata.open("data/demo", version="run-42")  # doctest: +SKIP
    """
    with storage_step("opening the dataset", frames_uri(uri), storage_options):
        frames = open_frames(uri, storage_options=storage_options, version=version)
    return RoboDataset(uri, frames, storage_options=storage_options)


class RoboDataset:
    """Rows of frames.lance at one version; camera frames decode from gops.lance on demand."""

    def __init__(self, uri: str, frames: lance.LanceDataset, *, storage_options: dict | None = None) -> None:
        self.uri = uri
        self._frames = frames
        self._storage_options = storage_options
        self.metadata = read_metadata(frames.schema, uri)
        self.cameras = sorted(self.metadata.cameras)
        self._buffers: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}

    # --- rows -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._rows)

    @property
    def version(self) -> int:
        """The dataset's version: the Lance version of frames.lance."""
        return self._frames.version

    @property
    def image_columns(self) -> list[str]:
        return [image_column(c) for c in self.cameras]

    @property
    def columns(self) -> list[str]:
        """The per-row (non-video) columns, annotation columns included; not the internal
        columns that point each row at its camera frames."""
        internal = {c for camera in self.cameras for c in ref_columns(camera)}
        return [name for name in self._frames.schema.names if name not in internal]

    @property
    def label_columns(self) -> list[str]:
        """The annotation columns (``robodata.add_annotations`` adds them), e.g. ``['success']``."""
        return label_columns(self._frames.schema)

    @property
    def lance_dataset(self) -> lance.LanceDataset:
        """frames.lance at this version, for anything Lance can do that robodata does not wrap."""
        return self._frames

    @cached_property
    def _rows(self) -> RowIndex:
        return RowIndex(self._frames, self.cameras)

    @cached_property
    def _gops(self) -> lance.LanceDataset:
        gops = open_table(gops_uri(self.uri), self._storage_options)
        if gops is None:
            raise FileNotFoundError(f"{gops_uri(self.uri)} does not exist")
        return gops

    @cached_property
    def _gop_index(self) -> GopIndex:
        return GopIndex(self._gops)

    @cached_property
    def gops(self) -> GopStore:
        """The GOPs behind this version's frames, for loaders that prefetch them (see GopStore)."""
        return GopStore(self)

    def episodes(self) -> pa.Table:
        """One row per episode: episode_index, rows, task, split (a scan of three columns)."""
        table = self._frames.to_table(columns=["episode_index", "task", "split"])
        grouped = table.group_by("episode_index", use_threads=False).aggregate(
            [("episode_index", "count"), ("task", "first"), ("split", "first")]
        )
        grouped = grouped.rename_columns(["episode_index", "rows", "task", "split"])
        return grouped.sort_by("episode_index")

    def to_table(self, columns: list[str] | None = None, filter: str | None = None, **kwargs) -> pa.Table:
        """Per-row columns as Arrow, straight from Lance (``filter`` is a Lance SQL filter)."""
        return self._frames.to_table(columns=columns, filter=filter, **kwargs)

    def __getitem__(self, index: int) -> dict[str, np.ndarray | object]:
        """Row ``index``: each of ``columns`` (lists as numpy arrays of their own dtype, scalars as
        Python values) and each camera's frame under its image column (H x W x 3 uint8)."""
        index = int(self._check_indices([index])[0])
        # The GOP references are in memory already: fetch and decode the frames while the row is read.
        frames = _ITEM_FRAMES.submit(self.take_blobs_decoded, [index], self.image_columns)
        with storage_step(f"reading row {index}", frames_uri(self.uri), self._storage_options):
            row = call_with_deadline(self.uri, self._storage_options, self._frames.take, [index], columns=self.columns)
        item: dict[str, np.ndarray | object] = {}
        for name in row.column_names:
            column = row[name]
            if pa.types.is_list(column.type) or pa.types.is_fixed_size_list(column.type):
                item[name] = column.combine_chunks().values.to_numpy(zero_copy_only=False)
            else:
                item[name] = column[0].as_py()
        item.update({name: array[0] for name, array in frames.result().items()})
        return item

    # --- decoded frames ---------------------------------------------------------------------
    def take_blobs_decoded(
        self,
        indices: RowIndices,
        columns: str | list[str],
        *,
        concurrency: int | None = None,
        zero_copy: bool = False,
        gop_bytes: Mapping[int, bytes] | None = None,
        resolution: tuple[int, int] | None = None,
        pixel_format: str = "rgb24",
    ) -> dict[str, np.ndarray]:
        """Decoded frames of rows ``indices`` (dataset row offsets), one ``[N, H, W, 3]`` uint8
        array per image column, in request order.

        ``resolution=(H, W)`` returns frames of that size: from a stored training rendition when
        one fits, without decoding the full frame (see ``robodata.reader.renditions``).
        ``pixel_format="yuv420p"`` returns ``[N, H*3/2, W]`` planar YUV 4:2:0 instead, half the
        bytes (``robodata.torch.yuv.yuv420_to_rgb`` converts it on the training device).

        Requests are grouped by GOP; every needed GOP is fetched in one coalesced Lance read and
        decoded once, only as far as its last requested frame, in parallel across GOPs. With
        ``zero_copy=True`` the arrays are buffers that the next call may overwrite. ``gop_bytes``
        (ref_id -> GOP bytes, e.g. prefetched by a training loader) supplies GOPs already in
        memory; only the others are read from Lance.

        >>> ds.take_blobs_decoded([5, 90, 17], "observation_images_top")["observation_images_top"].shape
        (3, 480, 640, 3)
        """
        names = _column_names(columns)
        indices = self._check_indices(indices)
        outputs = {name: self._output(name, len(indices), zero_copy, resolution, pixel_format) for name in names}
        requests = []  # (ref_ids, frames in GOP, output slots, scale-to size)
        for name in names:
            camera = camera_of(name, self.cameras)
            refs = self._rows.ref_id[camera][indices]
            frames = self._rows.frame_in_gop[camera][indices]
            requests += decode_requests(self.metadata, self._gop_index, camera, refs, frames, outputs[name], resolution)
        run_tasks(self._gop_tasks(requests, gop_bytes, pixel_format), concurrency)
        return outputs

    def _output(self, name: str, n: int, zero_copy: bool, resolution=None, pixel_format="rgb24") -> np.ndarray:
        shape = (n, *output_shape(self.metadata, camera_of(name, self.cameras), resolution, pixel_format))
        if not zero_copy:
            return np.empty(shape, dtype=np.uint8)
        buffer = self._buffers.get((name, shape))
        if buffer is None:
            buffer = self._buffers[(name, shape)] = np.empty(shape, dtype=np.uint8)
        return buffer

    def _gop_tasks(
        self, requests, gop_bytes: Mapping[int, bytes] | None = None, pixel_format: str = "rgb24"
    ) -> list[GopTask]:
        all_refs = np.concatenate([refs for refs, _, _, _ in requests])
        unique_refs, inverse = np.unique(all_refs, return_inverse=True)
        positions = self._gop_index.positions(unique_refs)
        supplied = gop_bytes or {}
        blobs = [supplied.get(int(ref)) for ref in unique_refs]
        missing = [slot for slot, data in enumerate(blobs) if data is None]
        if missing:
            for slot, data in zip(missing, self._read_gop_rows(positions[missing]), strict=True):
                blobs[slot] = data
        self._verify_gops(positions, blobs)  # supplied (prefetched) bytes too
        tasks = [
            GopTask(
                data, self._gop_index.packet_sizes(int(pos)), self._gop_index.codec(int(pos)), pixel_format=pixel_format
            )
            for data, pos in zip(blobs, positions, strict=True)
        ]
        cursor = 0
        for refs, frames, out, size in requests:
            for slot in range(len(refs)):
                task = tasks[inverse[cursor + slot]]
                task.size = size
                task.wanted.append(int(frames[slot]))
                task.out.append(out[slot])
            cursor += len(refs)
        return tasks

    def _read_gop_rows(self, positions: np.ndarray) -> list[bytes]:
        ids = self._gop_index.row_ids(positions).tolist()
        with storage_step(f"reading {len(ids)} GOPs", gops_uri(self.uri), self._storage_options):
            blobs = call_with_deadline(
                self.uri, self._storage_options, self._gops.read_blobs, "gop", ids=ids, preserve_order=True
            )
        return [data for _, data in blobs]

    def _verify_gops(self, positions: np.ndarray, blobs: list[bytes]) -> None:
        """CorruptGopError unless every GOP's bytes match the checksum stored with them."""
        index = self._gop_index
        checksums, sizes = index.checksums(positions), index.byte_sizes(positions)
        verify_gop_bytes(
            self._gops, blobs, index.ref_ids(positions), checksums, sizes, uri=self.uri, version=self.version
        )

    def take_windows(
        self,
        indices: RowIndices,
        offsets: Sequence[int],
        columns: str | list[str],
        *,
        gop_bytes: Mapping[int, bytes] | None = None,
        resolution: tuple[int, int] | None = None,
        pixel_format: str = "rgb24",
    ) -> dict[str, np.ndarray]:
        """Temporal windows around rows ``indices`` at row ``offsets`` (e.g. ``range(-7, 1)``).

        Each column comes back as ``[N, T, ...]``; rows past an episode's edge repeat the edge
        row and are flagged in ``<column>_is_pad`` ([N, T] bool), as LeRobot's delta_timestamps
        does. An offset of k rows is k / control_hz seconds. ``gop_bytes``, ``resolution`` and
        ``pixel_format`` are passed on to ``take_blobs_decoded``.

        >>> ds.take_windows([10], range(-2, 1), "action")["action"].shape
        (1, 3, 14)
        """
        names = _column_names(columns)
        indices = self._check_indices(indices)
        offsets = np.asarray(list(offsets), dtype=np.int64)
        rows, pad = self._rows.window_rows(indices, offsets)
        flat = rows.reshape(-1)
        images = [n for n in names if n in self.image_columns]
        scalars = [n for n in names if n not in self.image_columns]
        result: dict[str, np.ndarray] = {}
        if images:
            decoded = self.take_blobs_decoded(
                flat, images, gop_bytes=gop_bytes, resolution=resolution, pixel_format=pixel_format
            )
            for name, array in decoded.items():
                result[name] = array.reshape(rows.shape + array.shape[1:])
        if scalars:
            unique, inverse = np.unique(flat, return_inverse=True)
            table = self._frames.take(unique.tolist(), columns=scalars)
            for name in scalars:
                values = _to_numpy(table[name])[inverse]
                result[name] = values.reshape(rows.shape + values.shape[1:])
        for name in names:
            result[f"{name}_is_pad"] = pad
        return result

    def _check_indices(self, indices: RowIndices) -> np.ndarray:
        if isinstance(indices, str):  # the columns given where the rows belong (the old order)
            raise TypeError(f"row indices expected, got the column name {indices!r}; pass (indices, columns)")
        array = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = len(self)
        if array.size and (array.min() < 0 or array.max() >= n):
            bad = array[(array < 0) | (array >= n)][0]
            raise IndexError(f"row {bad} is out of range for a dataset of {n} rows")
        return array

    # --- versions ---------------------------------------------------------------------------
    def versions(self) -> list[dict]:
        """Every version of frames.lance: number, timestamp and Lance metadata."""
        return self._frames.versions()

    @property
    def tags(self) -> dict[str, int]:
        """Tag name -> version."""
        return {name: info["version"] for name, info in self._frames.tags.list().items()}

    def tag(self, name: str) -> int:
        """Name this version (e.g. after a training run) so ``open(uri, version=name)`` finds it."""
        existing = self.tags.get(name)
        if existing is not None and existing != self.version:
            raise ValueError(f"tag {name!r} already names version {existing}, not {self.version}")
        if existing is None:
            self._frames.tags.create(name, self.version)
        return self.version

    def checkout(self, version: int | str) -> RoboDataset:
        """The same dataset at another version (a number or a tag)."""
        return open_dataset(self.uri, version=version, storage_options=self._storage_options)

    def __repr__(self) -> str:
        return f"RoboDataset({self.uri!r}, version={self.version}, rows={len(self)}, cameras={self.cameras})"


class GopStore:
    """What a prefetching loader needs besides ``take_blobs_decoded``: which GOPs rows decode
    from, how big they are, their bytes (what ``gop_bytes`` accepts), and which rows a window
    reads. Reached as ``ds.gops``.

    >>> cols, rows = ds.image_columns, [0, 1, 2]
    >>> frames = ds.take_blobs_decoded(rows, cols, gop_bytes=ds.gops.read(ds.gops.refs(rows, cols)))
    """

    def __init__(self, dataset: RoboDataset) -> None:
        self._ds = dataset

    def refs(
        self, indices: RowIndices, columns: str | list[str], resolution: tuple[int, int] | None = None
    ) -> np.ndarray:
        """The distinct GOP ref_ids that the frames of rows ``indices`` in ``columns`` decode from
        (at ``resolution``: a training rendition's GOPs where one fits).

        >>> ds.gops.refs([0, 1, 2], "observation_images_top").shape
        (1,)
        """
        ds = self._ds
        indices = ds._check_indices(indices)
        refs = []
        for name in _column_names(columns):
            camera = camera_of(name, ds.cameras)
            rows = ds._rows.ref_id[camera][indices]
            empty = np.zeros((len(rows), 0, 0, 0), np.uint8)
            plan = decode_requests(ds.metadata, ds._gop_index, camera, rows, rows, empty, resolution)
            refs += [r for r, _, _, _ in plan]
        return np.unique(np.concatenate(refs)) if refs else np.zeros(0, np.int64)

    def frame_refs(self, indices: RowIndices, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``indices``: the full-resolution GOP ref_id its frame in image ``column`` is
        in and the frame's index in that GOP (what a decoder outside robodata needs, e.g. NVDEC).

        >>> refs, in_gop = ds.gops.frame_refs([0, 1], "observation_images_top")
        >>> refs.shape, in_gop.shape
        ((2,), (2,))
        """
        ds = self._ds
        indices = ds._check_indices(indices)
        camera = camera_of(column, ds.cameras)
        return ds._rows.ref_id[camera][indices], ds._rows.frame_in_gop[camera][indices]

    def byte_sizes(self, ref_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Stored size in bytes of each GOP in ``ref_ids``, known without reading it."""
        index = self._ds._gop_index
        return index.byte_sizes(index.positions(np.asarray(ref_ids)))

    def read(self, ref_ids: Sequence[int] | np.ndarray) -> dict[int, bytes]:
        """GOP bytes by ref_id, in one coalesced Lance read."""
        refs = np.asarray(ref_ids)
        if refs.size == 0:
            return {}
        positions = self._ds._gop_index.positions(refs)
        data = self._ds._read_gop_rows(positions)
        self._ds._verify_gops(positions, data)  # a cache holds only bytes that match their checksum
        return {int(ref): blob for ref, blob in zip(refs, data, strict=True)}

    def window_rows(self, indices: RowIndices, offsets: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The rows ``take_windows`` reads: ``([N, T] row offsets, [N, T] pad mask)``."""
        offsets = np.asarray(list(offsets), dtype=np.int64)
        return self._ds._rows.window_rows(self._ds._check_indices(indices), offsets)


def _column_names(columns: str | list[str]) -> list[str]:
    return [columns] if isinstance(columns, str) else list(columns)


def _to_numpy(column: pa.ChunkedArray) -> np.ndarray:
    column = column.combine_chunks()
    if pa.types.is_fixed_size_list(column.type):
        return column.values.to_numpy(zero_copy_only=False).reshape(len(column), column.type.list_size)
    return column.to_numpy(zero_copy_only=False)

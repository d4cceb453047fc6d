"""RoboDataset: one version of a robodata dataset, read as rows with decoded camera frames."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import TypeAlias, TypeVar

import lance
import numpy as np
import pyarrow as pa

from robodata.errors import RoboDataDeprecationWarning
from robodata.format.commits import retry_commit
from robodata.format.provenance import label_columns
from robodata.format.schema import camera_of, image_column, plain_strings, read_metadata, ref_columns
from robodata.format.tables import frames_uri, gops_uri, open_frames, open_table
from robodata.integrity.frames_checksums import adopt_frames_check, verify_frames_bytes, verify_frames_on_read
from robodata.integrity.gop_checksums import verify_gop_bytes
from robodata.reader.decode_pool import GopTask, run_tasks
from robodata.reader.gop_index import GopIndex
from robodata.reader.renditions import decode_requests, output_shape
from robodata.reader.row_index import RowIndex, SharedArrays
from robodata.storage.deadlines import call_with_deadline
from robodata.storage.failures import storage_call, storage_step

_ITEM_FRAMES = ThreadPoolExecutor(4, thread_name_prefix="robodata-item")  # ds[i]: frames beside the row read

# Dataset row offsets (0..len(ds)-1): a list, a range or an integer numpy array.
RowIndices: TypeAlias = Sequence[int] | np.ndarray
T = TypeVar("T")


@dataclass(frozen=True)
class FrameBatch:
    """Decoded camera frames of N rows, what ``RoboDataset.get_frames`` returns.

    Attributes
    ----------
    indices : numpy.ndarray
        ``[N]`` int64: the dataset row offsets asked for, in request order.
    data : dict[str, numpy.ndarray]
        Camera name -> ``[N, H, W, 3]`` uint8 RGB frames; ``batch["top"]`` is ``batch.data["top"]``.
    timestamps_ns : dict[str, numpy.ndarray]
        Camera name -> ``[N]`` int64: when each frame was captured (the camera's clock, ns). A
        camera frame is shared by the rows nearest to it in time, so neighbours may repeat it.
    """

    indices: np.ndarray
    data: dict[str, np.ndarray]
    timestamps_ns: dict[str, np.ndarray]

    @property
    def cameras(self) -> list[str]:
        """The cameras in this batch."""
        return list(self.data)

    def __getitem__(self, camera: str) -> np.ndarray:
        """A camera's frames, by its name or its image column (``observation_images_top``)."""
        if camera not in self.data:
            return self.data[camera_of(camera, list(self.data))]
        return self.data[camera]

    def __len__(self) -> int:
        return len(self.indices)


@dataclass(frozen=True)
class WindowBatch:
    """Temporal windows around N rows at T row offsets, what ``RoboDataset.get_windows`` returns.

    Attributes
    ----------
    indices : numpy.ndarray
        ``[N]`` int64: the rows the windows are centred on.
    offsets : numpy.ndarray
        ``[T]`` int64: the row offsets of each window (k rows is k / control_hz seconds).
    rows : numpy.ndarray
        ``[N, T]`` int64: the rows read; past an episode's edge, the edge row repeated.
    is_pad : numpy.ndarray
        ``[N, T]`` bool: True where the window ran past its episode (LeRobot's ``*_is_pad``).
    data : dict[str, numpy.ndarray]
        Camera name -> ``[N, T, H, W, 3]`` uint8 frames.
    timestamps_ns : dict[str, numpy.ndarray]
        Camera name -> ``[N, T]`` int64 capture times of those frames.
    columns : dict[str, numpy.ndarray]
        Per-row column -> ``[N, T, ...]`` values (e.g. ``action``: ``[N, T, joints]`` float32).
    """

    indices: np.ndarray
    offsets: np.ndarray
    rows: np.ndarray
    is_pad: np.ndarray
    data: dict[str, np.ndarray]
    timestamps_ns: dict[str, np.ndarray]
    columns: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        """A camera's frames or a column's values by name."""
        return self.data[name] if name in self.data else self.columns[name]

    def __len__(self) -> int:
        return len(self.indices)


def open_dataset(uri: str, *, version: int | str | None = None, storage_options: dict | None = None) -> RoboDataset:
    """Open a robodata dataset at one version (``robodata.open``).

    Parameters
    ----------
    uri : str
        The dataset root: a local directory or ``s3://bucket/prefix``.
    version : int or str, optional
        A version number or a tag (``RoboDataset.tag``); the latest version when omitted.
    storage_options : dict, optional
        Object-store options (endpoint, region, credentials) passed to Lance; by default they
        come from the environment.

    Returns
    -------
    RoboDataset
        The rows of that version; every later read sees exactly this version.

    Raises
    ------
    FileNotFoundError
        No dataset at ``uri``.
    ValueError
        ``version`` names no version or tag of the dataset.
    robodata.StorageError
        The store refused or failed the request (the message names the store and the step).

    Examples
    --------
    >>> ds = robodata.open("data/demo")
    >>> len(ds), ds.cameras
    (591, ['top', 'wrist_left', 'wrist_right'])
    >>> robodata.open("data/demo", version=1).episodes()["episode_index"].to_pylist()
    [0]
    """
    with storage_step("opening the dataset", frames_uri(uri), storage_options):
        frames = open_frames(uri, storage_options=storage_options, version=version)
    return RoboDataset._of(uri, frames, storage_options)


class RoboDataset:
    """Rows of frames.lance at one version; camera frames decode from gops.lance on demand.

    Made by ``robodata.open``; the class is importable for type hints.

    Examples
    --------
    >>> ds = robodata.open("data/demo")
    >>> ds.version, len(ds), ds.metadata.control_hz
    (3, 591, 100.0)
    >>> ds[0]["action"].dtype, ds[0]["observation_images_top"].shape
    (dtype('float32'), (480, 640, 3))
    """

    def __init__(self, uri: str, frames: lance.LanceDataset, *, storage_options: dict | None = None) -> None:
        warnings.warn(
            "RoboDataset(uri, frames) is deprecated and will be removed in the next release: "
            "open a dataset with robodata.open(uri, version=...)",
            RoboDataDeprecationWarning,
            stacklevel=2,
        )
        self._setup(uri, frames, storage_options)

    @classmethod
    def _of(cls, uri: str, frames: lance.LanceDataset, storage_options: dict | None) -> RoboDataset:
        """What ``open_dataset`` builds (the constructor users are pointed to is ``robodata.open``)."""
        dataset = cls.__new__(cls)
        dataset._setup(uri, frames, storage_options)
        return dataset

    def _setup(self, uri: str, frames: lance.LanceDataset, storage_options: dict | None) -> None:
        self.uri = uri
        self._frames = frames
        self._storage_options = storage_options
        self.metadata = read_metadata(frames.schema, uri)
        # Row data is vouched for like GOPs (robodata.integrity.frames_checksums): opening checks
        # every data file's size (two listings); the first read of rows checks their bytes.
        with storage_step("checking frames.lance's checksums", frames_uri(uri), storage_options):
            verify_frames_on_read(uri, frames, storage_options)
        self.cameras = sorted(self.metadata.cameras)
        self._buffers: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}
        self._row_files: SharedArrays | None = None

    # --- rows -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._rows)

    @property
    def version(self) -> int:
        """The dataset's version: the Lance version of frames.lance."""
        return self._frames.version

    @property
    def storage_options(self) -> dict | None:
        """The object-store options this dataset was opened with (None: from the environment)."""
        return self._storage_options

    @property
    def image_columns(self) -> list[str]:
        """Each camera's column name in rows (``ds[i]``), e.g. ``observation_images_top``."""
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

    @property
    def rows(self) -> RowIndex:
        """The in-memory row index (episode, frame, GOP references per row) that every read and
        window uses; built on first use by one scan of frames.lance's small columns.

        >>> ds.rows.episode_index[[0, 200, 590]]
        array([0, 1, 2])
        """
        return self._rows

    def share_rows(self) -> SharedArrays:
        """The row index as memory-mappable files that other processes ``adopt_rows`` (made
        once; this process maps the files too, rather than keep a private copy beside them).

        Returns
        -------
        SharedArrays
            Picklable: it travels to DataLoader workers as a directory name.
        """
        if self._row_files is None:
            self.adopt_rows(self._rows.share())
        assert self._row_files is not None
        return self._row_files

    def adopt_rows(self, shared: SharedArrays) -> None:
        """Use the row index another process shared (``share_rows``) instead of building one.

        Parameters
        ----------
        shared : SharedArrays
            From ``share_rows`` on a dataset of the same version.

        Raises
        ------
        FileNotFoundError
            The files are gone (the process that shared them has exited).
        """
        if self._row_files is not None and self._row_files.directory == shared.directory:
            return
        self._rows = RowIndex.mapped(shared, self.cameras)
        self._row_files = shared
        adopt_frames_check(self.uri, self._frames)  # the sharing process checked the bytes it indexed

    @cached_property
    def _rows(self) -> RowIndex:
        self._vouch()  # the index scans every fragment: their files' bytes are checked first
        return storage_call(
            "indexing rows", frames_uri(self.uri), self._storage_options, RowIndex, self._frames, self.cameras
        )

    def _vouch(self) -> None:
        """CorruptRowsError if a data file of this version's frames.lance differs from its
        checksum: each file read and hashed once per process, by the first read of rows."""
        with storage_step("checking frames.lance's data files", frames_uri(self.uri), self._storage_options):
            verify_frames_bytes(self.uri, self._frames, self._storage_options)

    @cached_property
    def _gops(self) -> lance.LanceDataset:
        gops = open_table(gops_uri(self.uri), self._storage_options)
        if gops is None:
            raise FileNotFoundError(f"{gops_uri(self.uri)} does not exist")
        return gops

    @cached_property
    def _gop_index(self) -> GopIndex:
        return storage_call("indexing GOPs", gops_uri(self.uri), self._storage_options, GopIndex, self._gops)

    @cached_property
    def gops(self) -> GopStore:
        """The GOPs behind this version's frames, for loaders that prefetch them (see GopStore)."""
        return GopStore(self)

    def episodes(self) -> pa.Table:
        """One row per episode of this version (a scan of three columns).

        Returns
        -------
        pyarrow.Table
            ``episode_index``, ``rows``, ``task``, ``split``, sorted by ``episode_index``.

        Examples
        --------
        >>> ds.episodes().to_pylist()[0]
        {'episode_index': 0, 'rows': 197, 'task': 'pick_cube', 'split': 'train'}
        """
        self._vouch()
        table = self._read("listing episodes", self._frames.to_table, columns=["episode_index", "task", "split"])
        grouped = table.group_by("episode_index", use_threads=False).aggregate(
            [("episode_index", "count"), ("task", "first"), ("split", "first")]
        )
        grouped = grouped.rename_columns(["episode_index", "rows", "task", "split"])
        return grouped.sort_by("episode_index")

    def to_table(self, columns: list[str] | None = None, filter: str | None = None, **kwargs) -> pa.Table:
        """Per-row columns as Arrow, straight from Lance.

        Parameters
        ----------
        columns : list of str, optional
            Columns to read (``ds.columns``); all of them when omitted.
        filter : str, optional
            A Lance SQL filter, e.g. ``"episode_index = 1"``.
        **kwargs
            Passed to ``lance.LanceDataset.to_table``.

        Returns
        -------
        pyarrow.Table

        Examples
        --------
        >>> ds.to_table(columns=["frame_index"], filter="episode_index = 1").num_rows
        197
        """
        self._vouch()
        return self._read("reading rows", self._frames.to_table, columns=columns, filter=filter, **kwargs)

    def __getitem__(self, index: int) -> dict[str, np.ndarray | object]:
        """Row ``index``: each of ``columns`` (lists as numpy arrays of their own dtype, scalars as
        Python values) and each camera's frame under its image column (H x W x 3 uint8)."""
        index = int(self._check_indices([index])[0])
        # The GOP references are in memory already: fetch and decode the frames while the row is read.
        frames = _ITEM_FRAMES.submit(self.get_frames, [index])
        with storage_step(f"reading row {index}", frames_uri(self.uri), self._storage_options):
            row = call_with_deadline(self.uri, self._storage_options, self._frames.take, [index], columns=self.columns)
        item: dict[str, np.ndarray | object] = {}
        for name in row.column_names:
            column = row[name]
            if pa.types.is_list(column.type) or pa.types.is_fixed_size_list(column.type):
                item[name] = column.combine_chunks().values.to_numpy(zero_copy_only=False)
            else:
                item[name] = column[0].as_py()
        item.update({image_column(camera): array[0] for camera, array in frames.result().data.items()})
        return item

    # --- decoded frames ---------------------------------------------------------------------
    def get_frames(
        self,
        indices: RowIndices,
        *,
        cameras: str | Sequence[str] | None = None,
        concurrency: int | None = None,
        zero_copy: bool = False,
        gop_bytes: Mapping[int, bytes] | None = None,
        resolution: tuple[int, int] | None = None,
        pixel_format: str = "rgb24",
    ) -> FrameBatch:
        """Decoded camera frames of rows ``indices``, in request order.

        Requests are grouped by GOP; every needed GOP is fetched in one coalesced Lance read,
        its checksum verified, and decoded once, only as far as its last requested frame, in
        parallel across GOPs.

        Parameters
        ----------
        indices : sequence of int or numpy.ndarray
            Dataset row offsets, ``0 <= i < len(ds)``; repeats are allowed.
        cameras : str or sequence of str, optional
            Camera names (``"top"``; image column names such as ``"observation_images_top"``
            are accepted too); every camera when omitted.
        concurrency : int, optional
            Decoder threads; the number of cores when omitted.
        zero_copy : bool, default False
            Decode into buffers kept by the dataset, which the next call with the same shape
            overwrites: no allocation per call, for loops that consume each batch at once.
        gop_bytes : mapping of int to bytes, optional
            GOP bytes by ref_id already in memory (``ds.gops.read``, a loader's prefetch); only
            the other GOPs are read from Lance. Supplied bytes are verified too.
        resolution : (int, int), optional
            ``(H, W)`` of the frames returned: a stored training rendition's GOPs are decoded
            when one fits, never the full frames (``robodata.reader.renditions``); otherwise the
            full frames are scaled on decode. The camera's own size when omitted.
        pixel_format : {"rgb24", "yuv420p", "rgbp"}, default "rgb24"
            ``"yuv420p"`` returns each frame as planar YUV 4:2:0, ``[H*3/2, W]`` uint8: half the
            bytes, no RGB conversion (``robodata.torch.yuv.yuv420_to_rgb`` on the device).
            ``"rgbp"`` returns RGB channels first, ``[3, H, W]``, the same pixels as ``"rgb24"``
            decoded straight into that layout (no transposing copy for a CHW consumer).

        Returns
        -------
        FrameBatch
            ``data[camera]``: ``[N, H, W, 3]`` uint8 (``[N, H*3/2, W]`` for ``"yuv420p"``,
            ``[N, 3, H, W]`` for ``"rgbp"``);
            ``timestamps_ns[camera]``: ``[N]``.

        Raises
        ------
        IndexError
            A row offset outside ``0..len(ds)-1``.
        KeyError
            A camera the dataset does not have.
        robodata.CorruptGopError
            Stored (or supplied) GOP bytes that do not match their checksum.

        Examples
        --------
        >>> batch = ds.get_frames([5, 90, 17], cameras=["top"])
        >>> batch.data["top"].shape, batch.data["top"].dtype
        ((3, 480, 640, 3), dtype('uint8'))
        >>> batch.timestamps_ns["top"].tolist()
        [33333333, 900000000, 166666667]
        >>> sorted(ds.get_frames([0]).data)
        ['top', 'wrist_left', 'wrist_right']
        >>> ds.get_frames([0], cameras="top", resolution=(224, 224)).data["top"].shape
        (1, 224, 224, 3)
        """
        indices = self._check_indices(indices)
        chosen = self._cameras(cameras)
        data = {camera: self._output(camera, len(indices), zero_copy, resolution, pixel_format) for camera in chosen}
        refs = {camera: self._rows.ref_id[camera][indices] for camera in chosen}
        in_gop = {camera: self._rows.frame_in_gop[camera][indices] for camera in chosen}
        if len(indices):
            requests = []  # (ref_ids, frames in GOP, output slots, scale-to size): renditions where they fit
            for camera in chosen:
                requests += decode_requests(
                    self.metadata, self._gop_index, camera, refs[camera], in_gop[camera], data[camera], resolution
                )
            run_tasks(self._gop_tasks(requests, gop_bytes, pixel_format), concurrency)
        timestamps = {
            camera: self._gop_index.frame_timestamps(self._gop_index.positions(refs[camera]), in_gop[camera])
            for camera in chosen
        }
        return FrameBatch(indices=indices, data=data, timestamps_ns=timestamps)

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
        """Deprecated: ``get_frames(indices, cameras=...)``; one ``[N, H, W, 3]`` array per image
        column (``observation_images_<camera>``)."""
        _deprecated(
            "take_blobs_decoded(indices, columns)", "get_frames(indices, cameras=...), which returns a FrameBatch"
        )
        names = _column_names(columns)
        batch = self.get_frames(
            indices,
            cameras=names,
            concurrency=concurrency,
            zero_copy=zero_copy,
            gop_bytes=gop_bytes,
            resolution=resolution,
            pixel_format=pixel_format,
        )
        return {name: batch.data[camera_of(name, self.cameras)] for name in names}

    def _cameras(self, cameras: str | Sequence[str] | None) -> list[str]:
        """Camera names (a camera or its image column), checked; every camera for None."""
        if cameras is None:
            return list(self.cameras)
        names = [cameras] if isinstance(cameras, str) else list(cameras)
        by_column = {image_column(camera): camera for camera in self.cameras}
        unknown = [name for name in names if name not in self.cameras and name not in by_column]
        if unknown:
            raise KeyError(
                f"{self.uri}: no camera {unknown[0]!r}; the cameras are {', '.join(self.cameras)} "
                f"(or by image column: {', '.join(by_column)})"
            )
        return list(dict.fromkeys(by_column.get(name, name) for name in names))

    def _output(self, camera: str, n: int, zero_copy: bool, resolution=None, pixel_format="rgb24") -> np.ndarray:
        shape = (n, *output_shape(self.metadata, camera, resolution, pixel_format))
        if not zero_copy:
            return np.empty(shape, dtype=np.uint8)
        buffer = self._buffers.get((camera, shape))
        if buffer is None:
            buffer = self._buffers[(camera, shape)] = np.empty(shape, dtype=np.uint8)
        return buffer

    def _gop_tasks(
        self, requests, gop_bytes: Mapping[int, bytes] | None = None, pixel_format: str = "rgb24"
    ) -> list[GopTask]:
        all_refs = np.concatenate([refs for refs, _, _, _ in requests])
        unique_refs, inverse = np.unique(all_refs, return_inverse=True)
        positions = self._gop_index.positions(unique_refs)
        supplied = gop_bytes or {}
        found = [supplied.get(int(ref)) for ref in unique_refs]
        missing = [slot for slot, data in enumerate(found) if data is None]
        read = iter(self._read_gop_rows(positions[missing]) if missing else [])
        blobs = [next(read) if data is None else data for data in found]
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
        return [data or b"" for _, data in blobs]  # a null blob fails its size check: a corrupt GOP

    def _verify_gops(self, positions: np.ndarray, blobs: list[bytes]) -> None:
        """CorruptGopError unless every GOP's bytes match the checksum stored with them."""
        index = self._gop_index
        checksums, sizes = index.checksums(positions), index.byte_sizes(positions)
        verify_gop_bytes(
            self._gops, blobs, index.ref_ids(positions), checksums, sizes, uri=self.uri, version=self.version
        )

    def get_windows(
        self,
        indices: RowIndices,
        offsets: Sequence[int] | np.ndarray,
        *,
        cameras: str | Sequence[str] | None = None,
        columns: str | Sequence[str] | None = None,
        gop_bytes: Mapping[int, bytes] | None = None,
        resolution: tuple[int, int] | None = None,
        pixel_format: str = "rgb24",
    ) -> WindowBatch:
        """Temporal windows around rows ``indices`` at row ``offsets`` (e.g. ``range(-7, 1)``).

        An offset of k rows is k / control_hz seconds. Positions past an episode's edge repeat
        the edge row and are flagged in ``is_pad``, as LeRobot's ``delta_timestamps`` does.

        Parameters
        ----------
        indices : sequence of int or numpy.ndarray
            Dataset row offsets the windows are centred on.
        offsets : sequence of int
            Row offsets of each window, relative to its row.
        cameras : str or sequence of str, optional
            Cameras whose frames to decode; every camera when omitted, none for ``[]``.
        columns : str or sequence of str, optional
            Per-row columns to read (``ds.columns``), e.g. ``["action"]``; none when omitted.
        gop_bytes : mapping of int to bytes, optional
            GOP bytes already in memory, as for ``get_frames``.
        resolution, pixel_format
            The frames' size and pixel format, as for ``get_frames``.

        Returns
        -------
        WindowBatch
            ``data[camera]``: ``[N, T, H, W, 3]``; ``columns[name]``: ``[N, T, ...]``;
            ``is_pad``: ``[N, T]`` bool; ``rows``: the ``[N, T]`` rows read.

        Raises
        ------
        IndexError
            A row offset outside ``0..len(ds)-1``.
        KeyError
            A camera or column the dataset does not have.
        robodata.CorruptGopError
            Stored GOP bytes that do not match their checksum.

        Examples
        --------
        >>> w = ds.get_windows([1, 300], range(-2, 1), cameras=[], columns=["action"])
        >>> w.columns["action"].shape, w.is_pad.tolist()
        ((2, 3, 14), [[True, False, False], [False, False, False]])
        >>> w.rows.tolist()
        [[0, 0, 1], [298, 299, 300]]
        >>> ds.get_windows([10], [-1, 0], cameras="top").data["top"].shape
        (1, 2, 480, 640, 3)
        """
        indices = self._check_indices(indices)
        chosen = self._cameras(cameras)
        scalars = self._columns(columns)
        offsets = np.asarray(list(offsets), dtype=np.int64)
        rows, pad = self._rows.window_rows(indices, offsets)
        flat = rows.reshape(-1)
        data: dict[str, np.ndarray] = {}
        timestamps: dict[str, np.ndarray] = {}
        if chosen:
            frames = self.get_frames(
                flat, cameras=chosen, gop_bytes=gop_bytes, resolution=resolution, pixel_format=pixel_format
            )
            for camera in chosen:
                data[camera] = frames.data[camera].reshape(rows.shape + frames.data[camera].shape[1:])
                timestamps[camera] = frames.timestamps_ns[camera].reshape(rows.shape)
        values: dict[str, np.ndarray] = {}
        if scalars:
            unique, inverse = np.unique(flat, return_inverse=True)
            table = self.take_rows(unique, scalars)
            for name in scalars:
                column = to_numpy(table[name])[inverse]
                values[name] = column.reshape(rows.shape + column.shape[1:])
        return WindowBatch(
            indices=indices, offsets=offsets, rows=rows, is_pad=pad, data=data, timestamps_ns=timestamps, columns=values
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
        """Deprecated: ``get_windows(indices, offsets, cameras=..., columns=...)``; each of
        ``columns`` (image or per-row) as ``[N, T, ...]`` plus ``<column>_is_pad``."""
        _deprecated(
            "take_windows(indices, offsets, columns)", "get_windows(indices, offsets, cameras=..., columns=...)"
        )
        names = _column_names(columns)
        images = [n for n in names if n in self.image_columns]
        scalars = [n for n in names if n not in self.image_columns]
        window = self.get_windows(
            indices,
            offsets,
            cameras=images,
            columns=scalars,
            gop_bytes=gop_bytes,
            resolution=resolution,
            pixel_format=pixel_format,
        )
        result: dict[str, np.ndarray] = {}
        for name in names:
            result[name] = window.data[camera_of(name, self.cameras)] if name in images else window.columns[name]
        for name in names:
            result[f"{name}_is_pad"] = window.is_pad
        return result

    def _columns(self, columns: str | Sequence[str] | None) -> list[str]:
        """Per-row column names, checked before Lance sees them."""
        names = [] if columns is None else _column_names(columns)
        known = self.columns
        for name in names:
            if name in self.image_columns or name in self.cameras:
                raise KeyError(f"{self.uri}: {name!r} is a camera: pass it in cameras=, not columns=")
            if name not in known:
                raise KeyError(f"{self.uri}: no column {name!r} at version {self.version}; its columns are {known}")
        return names

    def take_rows(self, indices: RowIndices, columns: list[str]) -> pa.Table:
        """The per-row ``columns`` of rows ``indices`` (Arrow, in the order given), under the
        storage deadline: ``lance_dataset.take`` for loaders that read a batch's rows at once."""
        indices = np.asarray(indices, dtype=np.int64).reshape(-1).tolist()
        self._vouch()
        return self._read(f"reading {len(indices)} rows", self._frames.take, indices, columns=columns)

    def _read(self, action: str, fn: Callable[..., T], /, *args, **kwargs) -> T:
        """``fn`` (a call on frames.lance) as a storage step, under the storage deadline."""
        result = storage_call(action, frames_uri(self.uri), self._storage_options, fn, *args, **kwargs)
        return plain_strings(result) if isinstance(result, pa.Table) else result  # texts as users know them

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
        """Every version of frames.lance.

        Returns
        -------
        list of dict
            One per version, oldest first: ``version``, ``timestamp`` and Lance's metadata.

        Examples
        --------
        >>> [v["version"] for v in ds.versions()]
        [1, 2, 3]
        """
        return [dict(version) for version in self._read("listing versions", self._frames.versions)]

    @property
    def tags(self) -> dict[str, int]:
        """Tag name -> version."""
        return {name: info["version"] for name, info in self._read("listing tags", self._frames.tags.list).items()}

    def tag(self, name: str) -> int:
        """Name this version (e.g. after a training run) so ``open(uri, version=name)`` finds it.

        Parameters
        ----------
        name : str
            The tag; tagging the same version twice with it is a no-op.

        Returns
        -------
        int
            This version.

        Raises
        ------
        ValueError
            ``name`` already names another version.

        Examples
        --------
        >>> ds.tag("run-42")
        3
        >>> robodata.open("data/demo", version="run-42").version, ds.tags
        (3, {'run-42': 3})
        """
        existing = self.tags.get(name)
        if existing is not None and existing != self.version:
            raise ValueError(f"tag {name!r} already names version {existing}, not {self.version}")
        if existing is None:
            action = f"tagging version {self.version} as {name!r}"
            retry_commit(
                action, self._frames.uri, lambda: self._read(action, self._frames.tags.create, name, self.version)
            )
        return self.version

    def checkout(self, version: int | str) -> RoboDataset:
        """The same dataset at another version.

        Parameters
        ----------
        version : int or str
            A version number or a tag.

        Returns
        -------
        RoboDataset

        Examples
        --------
        >>> len(ds.checkout(1))
        197
        """
        return open_dataset(self.uri, version=version, storage_options=self._storage_options)

    def __repr__(self) -> str:
        return f"RoboDataset({self.uri!r}, version={self.version}, rows={len(self)}, cameras={self.cameras})"


class GopStore:
    """What a prefetching loader needs besides ``get_frames``: which GOPs rows decode from, how
    big they are, their bytes (what ``gop_bytes`` accepts), and which rows a window reads.
    Reached as ``ds.gops``.

    >>> rows = [0, 1, 2]
    >>> prefetched = ds.gops.read(ds.gops.refs(rows, ds.cameras))
    >>> ds.get_frames(rows, gop_bytes=prefetched).data["top"].shape
    (3, 480, 640, 3)
    """

    def __init__(self, dataset: RoboDataset) -> None:
        self._ds = dataset

    @property
    def lance_dataset(self) -> lance.LanceDataset:
        """gops.lance (latest version: GOPs are never rewritten in place), for what robodata
        does not wrap."""
        return self._ds._gops

    def refs(
        self, indices: RowIndices, cameras: str | Sequence[str], resolution: tuple[int, int] | None = None
    ) -> np.ndarray:
        """The distinct GOP ref_ids that the frames of rows ``indices`` of ``cameras`` (names or
        image columns) decode from (at ``resolution``: a training rendition's GOPs where one fits).

        >>> ds.gops.refs([0, 1, 2], "top").shape
        (1,)
        """
        ds = self._ds
        indices = ds._check_indices(indices)
        refs = []
        for camera in ds._cameras(cameras):
            rows = ds._rows.ref_id[camera][indices]
            empty = np.zeros((len(rows), 0, 0, 0), np.uint8)
            plan = decode_requests(ds.metadata, ds._gop_index, camera, rows, rows, empty, resolution)
            refs += [r for r, _, _, _ in plan]
        return np.unique(np.concatenate(refs)) if refs else np.zeros(0, np.int64)

    def frame_refs(self, indices: RowIndices, camera: str) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``indices``: the full-resolution GOP ref_id its frame of ``camera`` (a name
        or image column) is in and the frame's index in that GOP (what a decoder outside robodata
        needs, e.g. NVDEC).

        >>> refs, in_gop = ds.gops.frame_refs([0, 1], "top")
        >>> refs.shape, in_gop.shape
        ((2,), (2,))
        """
        ds = self._ds
        indices = ds._check_indices(indices)
        [name] = ds._cameras(camera)
        return ds._rows.ref_id[name][indices], ds._rows.frame_in_gop[name][indices]

    def frame_plan(
        self, indices: RowIndices, camera: str, resolution: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int] | None]]:
        """Per row of ``indices``: the ref_id of the GOP its frame of ``camera`` decodes from at
        ``resolution`` (a training rendition where one fits), the frame's index in that GOP, and
        the (height, width) to scale the decoded frame to (None: as decoded); what ``get_frames``
        decodes, for a reader that keeps decoded frames (``robodata.torch.frame_buffer``).

        >>> refs, in_gop, sizes = ds.gops.frame_plan([0, 10], "top")  # rows at 100 Hz, camera at 30 fps
        >>> in_gop.tolist(), sizes
        ([0, 3], [None, None])
        """
        ds = self._ds
        indices = ds._check_indices(indices)
        [name] = ds._cameras(camera)
        refs, frames = ds._rows.ref_id[name][indices], ds._rows.frame_in_gop[name][indices]
        plan_refs, plan_frames = np.empty(len(indices), np.int64), np.empty(len(indices), np.int64)
        sizes: list[tuple[int, int] | None] = [None] * len(indices)
        slots = np.arange(len(indices))
        for ref, frame, at, size in decode_requests(ds.metadata, ds._gop_index, name, refs, frames, slots, resolution):
            at = np.asarray(at, dtype=np.int64)
            plan_refs[at], plan_frames[at] = ref, frame
            for slot in at.tolist():
                sizes[slot] = size
        return plan_refs, plan_frames, sizes

    def decodable(
        self, ref_ids: Sequence[int] | np.ndarray, gop_bytes: Mapping[int, bytes] | None = None
    ) -> list[tuple[bytes, np.ndarray, str]]:
        """(bytes, packet sizes, codec) of each GOP in ``ref_ids``: from ``gop_bytes`` where it has
        them, the rest in one coalesced read; every one verified against its checksum."""
        ds, index = self._ds, self._ds._gop_index
        refs = np.asarray(ref_ids, dtype=np.int64)
        if refs.size == 0:
            return []
        positions = index.positions(refs)
        found = [(gop_bytes or {}).get(int(ref)) for ref in refs]
        missing = [slot for slot, data in enumerate(found) if data is None]
        read = iter(ds._read_gop_rows(positions[missing]) if missing else [])
        blobs = [next(read) if data is None else data for data in found]
        ds._verify_gops(positions, blobs)
        return [
            (data, index.packet_sizes(int(p)), index.codec(int(p))) for data, p in zip(blobs, positions, strict=True)
        ]

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

    def window_rows(self, indices: RowIndices, offsets: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows ``get_windows`` reads: ``([N, T] row offsets, [N, T] pad mask)``."""
        offsets = np.asarray(list(offsets), dtype=np.int64)
        return self._ds._rows.window_rows(self._ds._check_indices(indices), offsets)


def _column_names(columns: str | Sequence[str]) -> list[str]:
    return [columns] if isinstance(columns, str) else list(columns)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"RoboDataset.{old} is deprecated and will be removed in the next release: use {new}",
        RoboDataDeprecationWarning,
        stacklevel=3,
    )


def to_numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An Arrow column as numpy: fixed-size lists (state, action) as a 2-D array of their own
    dtype, other columns as 1-D (object dtype for strings).

    >>> to_numpy(pa.chunked_array([pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32(), 2))]))
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_fixed_size_list(column.type):
        return column.values.to_numpy(zero_copy_only=False).reshape(len(column), column.type.list_size)
    return column.to_numpy(zero_copy_only=False)

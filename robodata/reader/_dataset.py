"""RoboDataset: one version of a robodata dataset, read as rows with decoded camera frames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property

import lance
import numpy as np
import pyarrow as pa

from robodata.format._provenance import label_columns
from robodata.format._schema import image_column, read_metadata, ref_columns
from robodata.format._tables import frames_uri, open_frames
from robodata.integrity._frames_checksums import adopt_frames_check, verify_frames_bytes, verify_frames_on_read
from robodata.reader._batches import FrameBatch, WindowBatch, to_numpy
from robodata.reader._decode_pool import run_tasks
from robodata.reader._gop_index import GopIndex
from robodata.reader._gop_store import GopStore
from robodata.reader._held_rows import HeldRows
from robodata.reader._output_pool import OutputPool
from robodata.reader._renditions import decode_requests, output_shape
from robodata.reader._row_index import RowIndex, SharedArrays
from robodata.reader._selection import RowIndices, checked_cameras, checked_columns, checked_rows
from robodata.reader._versions import VersionHistory
from robodata.storage._deadlines import call_with_deadline
from robodata.storage._failures import storage_call, storage_step
from robodata.storage._uris import is_remote

_ITEM_FRAMES = ThreadPoolExecutor(4, thread_name_prefix="robodata-item")  # ds[i]: frames beside the row read


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
    robodata.NotFoundError
        No dataset at ``uri``, or ``version`` names no version or tag of it (a
        ``FileNotFoundError``).
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


class RoboDataset(VersionHistory):
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

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("open a dataset with robodata.open(uri, version=...), not RoboDataset(...)")

    @classmethod
    def _of(cls, uri: str, frames: lance.LanceDataset, storage_options: dict | None) -> RoboDataset:
        """What ``open_dataset`` builds (bypassing ``__init__``, which points users to ``robodata.open``)."""
        dataset = cls.__new__(cls)
        dataset._setup(uri, frames, storage_options)
        return dataset

    def _setup(self, uri: str, frames: lance.LanceDataset, storage_options: dict | None) -> None:
        self.uri = uri
        self._frames = frames
        self._storage_options = storage_options
        self._held_rows = HeldRows(frames, remote=is_remote(uri))  # takes answered from memory on object storage
        self.metadata = read_metadata(frames.schema, uri)
        # Row data is vouched for like GOPs (robodata.integrity._frames_checksums): opening checks
        # every data file's size (two listings); the first read of rows checks their bytes.
        with storage_step("checking frames.lance's checksums", frames_uri(uri), storage_options):
            verify_frames_on_read(uri, frames, storage_options)
        self.cameras = self.metadata.camera_names  # recorded order (LeRobot policies stack them so)
        self._buffers: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}
        self._outputs = OutputPool()  # frame arrays used again once the caller drops them
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

    def _share_rows(self, gop_index: bool = False) -> SharedArrays:  # share_rows below
        if self._row_files is None:
            self._adopt_rows(self._rows.share())
        assert self._row_files is not None
        if gop_index and not GopIndex.is_shared(self._row_files):
            self._gop_store.index.share(self._row_files)
            self._adopt_gop_index(self._row_files)  # this process maps the files too
        return self._row_files

    def _adopt_rows(self, shared: SharedArrays) -> None:  # adopt_rows below
        if self._row_files is not None and self._row_files.directory == shared.directory:
            return
        self._rows = RowIndex.mapped(shared, self.cameras)
        self._row_files = shared
        adopt_frames_check(self.uri, self._frames)  # the sharing process checked the bytes it indexed
        self._adopt_gop_index(shared)

    def _adopt_gop_index(self, shared: SharedArrays) -> None:
        index = GopIndex.mapped(shared)
        if index is not None:
            self._gop_store.adopt_index(index)

    @cached_property
    def _gop_store(self) -> GopStore:  # gop_store below; get_frames decodes through it
        return GopStore(self)

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
        index = int(checked_rows([index], len(self))[0])
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
            GOP bytes by ref_id already in memory (``gop_store(ds).read``, a loader's prefetch); only
            the other GOPs are read from Lance. Supplied bytes are verified too.
        resolution : (int, int), optional
            ``(H, W)`` of the frames returned: a stored training rendition's GOPs are decoded
            when one fits, never the full frames (``robodata.format._renditions``); otherwise the
            full frames are scaled on decode. The camera's own size when omitted.
        pixel_format : {"rgb24", "yuv420p", "rgbp"}, default "rgb24"
            ``"yuv420p"`` returns each frame as planar YUV 4:2:0, ``[H*3/2, W]`` uint8: half the
            bytes, no RGB conversion (``robodata.torch._yuv.yuv420_to_rgb`` on the device).
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
        indices = checked_rows(indices, len(self))
        chosen = checked_cameras(self.uri, self.cameras, cameras)
        data = {camera: self._output(camera, len(indices), zero_copy, resolution, pixel_format) for camera in chosen}
        refs = {camera: self._rows.ref_id[camera][indices] for camera in chosen}
        in_gop = {camera: self._rows.frame_in_gop[camera][indices] for camera in chosen}
        gops = self._gop_store
        if len(indices):
            requests = []  # (ref_ids, frames in GOP, output slots, scale-to size): renditions where they fit
            for camera in chosen:
                requests += decode_requests(
                    self.metadata, gops.index, camera, refs[camera], in_gop[camera], data[camera], resolution
                )
            run_tasks(gops.decode_tasks(requests, gop_bytes, pixel_format), concurrency)
        timestamps = {camera: gops.frame_timestamps(refs[camera], in_gop[camera]) for camera in chosen}
        return FrameBatch(indices=indices, data=data, timestamps_ns=timestamps)

    def _output(self, camera: str, n: int, zero_copy: bool, resolution=None, pixel_format="rgb24") -> np.ndarray:
        shape = (n, *output_shape(self.metadata, camera, resolution, pixel_format))
        if not zero_copy:
            return self._outputs(shape)
        buffer = self._buffers.get((camera, shape))
        if buffer is None:
            buffer = self._buffers[(camera, shape)] = np.empty(shape, dtype=np.uint8)
        return buffer

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
        indices = checked_rows(indices, len(self))
        chosen = checked_cameras(self.uri, self.cameras, cameras)
        scalars = checked_columns(self, columns)
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

    def take_rows(self, indices: RowIndices, columns: list[str]) -> pa.Table:
        """The per-row ``columns`` of rows ``indices`` (Arrow, in the order given), under the
        storage deadline: ``lance_dataset.take`` for loaders that read a batch's rows at once."""
        self._vouch()
        held = self._held_rows.take(indices, columns, lambda fn, **kw: self._read(f"reading {columns}", fn, **kw))
        if held is not None:  # object storage: the columns read once per process
            return held
        indices = np.asarray(indices, dtype=np.int64).reshape(-1).tolist()
        return self._read(f"reading {len(indices)} rows", self._frames.take, indices, columns=columns)

    # --- versions (versions(), tags and tag() come from VersionHistory) -----------------------
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


# --- for training loaders, not users: the dataset module's own functions, the only code outside
# the class that touches its private state (nothing else in robodata does, test_layers pins it) ---
def share_rows(dataset: RoboDataset, *, gop_index: bool = False) -> SharedArrays:
    """``dataset``'s row index as memory-mappable files that other processes ``adopt_rows`` (made
    once; this process maps the files too, rather than keep a private copy beside them). With
    ``gop_index``, its GOP index too (built here if it was not), for processes that read frames:
    they then never scan gops.lance, and read the version of it this process indexed.

    Returns
    -------
    SharedArrays
        Picklable: it travels to DataLoader workers as a directory name.

    >>> share_rows(ds) is share_rows(ds, gop_index=True)
    True
    """
    return dataset._share_rows(gop_index)


def adopt_rows(dataset: RoboDataset, shared: SharedArrays) -> None:
    """Make ``dataset`` use the row index another process shared (``share_rows``) instead of
    building one, and the GOP index where it was shared too; a no-op when it uses those files
    already.

    Raises
    ------
    FileNotFoundError
        The files are gone (the process that shared them has exited).

    >>> worker = robodata.open("data/demo")
    >>> adopt_rows(worker, share_rows(ds))
    >>> type(worker.rows.episode_index).__name__
    'memmap'
    """
    dataset._adopt_rows(shared)


def gop_store(dataset: RoboDataset) -> GopStore:
    """The GOPs behind ``dataset``'s frames, for loaders that prefetch them (one store per
    dataset: the one ``get_frames`` decodes through, so its GOP index is built once).

    >>> gop_store(ds) is gop_store(ds)
    True
    """
    return dataset._gop_store

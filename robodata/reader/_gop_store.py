"""The GOPs behind one dataset version: gops.lance, its in-memory index, checked reads of GOP
bytes, and the plumbing a prefetching loader needs (which GOPs rows decode from, their sizes).

A ``GopStore`` is built from its dataset's public facts (uri, storage options, version, row
index, cameras) and never touches the dataset's private state; the dataset decodes its frames
through the same store (``robodata.reader._dataset.gop_store(ds)`` hands a loader that one, so the index
is built once per dataset).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import lance
import numpy as np

from robodata.errors import CorruptGopError
from robodata.format._tables import gops_uri, open_table
from robodata.integrity._gop_checksums import checksum_problem, verify_gop_bytes
from robodata.integrity._local_gop_files import (
    OFF_SWITCH,
    LayoutDriftError,
    LocalGopFiles,
    ReadInPlaceWarning,
    read_through_lance,
)
from robodata.reader._decode_pool import GopTask
from robodata.reader._gop_index import GopIndex
from robodata.reader._renditions import Request, decode_requests
from robodata.reader._selection import RowIndices, checked_cameras, checked_rows
from robodata.storage._failures import storage_call, storage_step

if TYPE_CHECKING:
    from robodata.reader._dataset import RoboDataset


class GopStore:
    """What a prefetching loader needs besides ``get_frames``: which GOPs rows decode from, how
    big they are, their bytes (what ``gop_bytes`` accepts), and which rows a window reads.
    Reached as ``robodata.reader._dataset.gop_store(ds)``.

    >>> from robodata.reader._dataset import gop_store
    >>> rows, gops = [0, 1, 2], gop_store(ds)
    >>> prefetched = gops.read(gops.refs(rows, ds.cameras))
    >>> ds.get_frames(rows, gop_bytes=prefetched).data["top"].shape
    (3, 480, 640, 3)
    """

    def __init__(self, dataset: RoboDataset) -> None:
        self._ds = dataset

    @cached_property
    def lance_dataset(self) -> lance.LanceDataset:
        """gops.lance at the version the GOP index describes, for what robodata does not wrap: the
        latest when this process builds the index (GOPs are never rewritten in place), the sharing
        process's when it adopted one (``adopt_index``)."""
        adopted = self.__dict__.get("index")
        version = None if adopted is None else adopted.version
        gops = open_table(gops_uri(self._ds.uri), self._ds.storage_options, version)
        if gops is None:
            raise FileNotFoundError(f"{gops_uri(self._ds.uri)} does not exist")
        return gops

    @cached_property
    def index(self) -> GopIndex:
        """ref_id -> where each GOP's bytes live, its packets, codec, frame times and checksum;
        built on first use by one scan of gops.lance's small columns, unless adopted."""
        ds = self._ds
        return storage_call("indexing GOPs", gops_uri(ds.uri), ds.storage_options, GopIndex, self.lance_dataset)

    def adopt_index(self, index: GopIndex) -> None:
        """Use ``index`` (another process's, ``GopIndex.mapped``) instead of scanning gops.lance:
        reads then go to the gops.lance version it was built from. Its rows are still checked
        against their checksums in this process, each once."""
        opened = self.__dict__.get("lance_dataset")
        if opened is not None and opened.version != index.version:
            self.__dict__.pop("lance_dataset")
            self.__dict__.pop("_local_files", None)  # where the other version's GOPs sit
        self.__dict__["index"] = index

    def refs(
        self, indices: RowIndices, cameras: str | Sequence[str], resolution: tuple[int, int] | None = None
    ) -> np.ndarray:
        """The distinct GOP ref_ids that the frames of rows ``indices`` of ``cameras`` (names or
        image columns) decode from (at ``resolution``: a training rendition's GOPs where one fits).

        >>> robodata.reader._dataset.gop_store(ds).refs([0, 1, 2], "top").shape
        (1,)
        """
        ds = self._ds
        indices = checked_rows(indices, len(ds))
        refs = []
        for camera in checked_cameras(ds.uri, ds.cameras, cameras):
            rows = ds.rows.ref_id[camera][indices]
            empty = np.zeros((len(rows), 0, 0, 0), np.uint8)
            plan = decode_requests(ds.metadata, self.index, camera, rows, rows, empty, resolution)
            refs += [r for r, _, _, _ in plan]
        return np.unique(np.concatenate(refs)) if refs else np.zeros(0, np.int64)

    def frame_refs(self, indices: RowIndices, camera: str) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``indices``: the full-resolution GOP ref_id its frame of ``camera`` (a name
        or image column) is in and the frame's index in that GOP (what a decoder outside robodata
        needs, e.g. NVDEC).

        >>> refs, in_gop = robodata.reader._dataset.gop_store(ds).frame_refs([0, 1], "top")
        >>> refs.shape, in_gop.shape
        ((2,), (2,))
        """
        ds = self._ds
        indices = checked_rows(indices, len(ds))
        [name] = checked_cameras(ds.uri, ds.cameras, camera)
        return ds.rows.ref_id[name][indices], ds.rows.frame_in_gop[name][indices]

    def frame_plan(
        self, indices: RowIndices, camera: str, resolution: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int] | None]]:
        """Per row of ``indices``: the ref_id of the GOP its frame of ``camera`` decodes from at
        ``resolution`` (a training rendition where one fits), the frame's index in that GOP, and
        the (height, width) to scale the decoded frame to (None: as decoded); what ``get_frames``
        decodes, for a reader that keeps decoded frames (``robodata.torch._frame_buffer``).

        >>> refs, in_gop, sizes = robodata.reader._dataset.gop_store(ds).frame_plan([0, 1, 2], "top")
        >>> in_gop.tolist(), sizes  # rows at the control rate, frames at the camera's
        ([0, 0, 1], [None, None, None])
        """
        ds = self._ds
        indices = checked_rows(indices, len(ds))
        [name] = checked_cameras(ds.uri, ds.cameras, camera)
        refs, frames = ds.rows.ref_id[name][indices], ds.rows.frame_in_gop[name][indices]
        plan_refs, plan_frames = np.empty(len(indices), np.int64), np.empty(len(indices), np.int64)
        sizes: list[tuple[int, int] | None] = [None] * len(indices)
        slots = np.arange(len(indices))
        for ref, frame, at, size in decode_requests(ds.metadata, self.index, name, refs, frames, slots, resolution):
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
        index = self.index
        refs = np.asarray(ref_ids, dtype=np.int64)
        if refs.size == 0:
            return []
        positions = index.positions(refs)
        blobs = self._checked_bytes(positions, [(gop_bytes or {}).get(int(ref)) for ref in refs])
        return [
            (data, index.packet_sizes(int(p)), index.codec(int(p))) for data, p in zip(blobs, positions, strict=True)
        ]

    def byte_sizes(self, ref_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Stored size in bytes of each GOP in ``ref_ids``, known without reading it."""
        return self.index.byte_sizes(self.index.positions(np.asarray(ref_ids)))

    def row_addresses(self, ref_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Where each GOP of ``ref_ids`` is stored: its row address in gops.lance (fragment << 32 |
        row offset). A fragment's GOP bytes lie in its data file in row order, so GOPs at
        consecutive addresses are adjacent bytes, which ``read`` fetches in one range read.

        >>> store = robodata.reader._dataset.gop_store(ds)
        >>> addresses = store.row_addresses(store.refs(range(len(ds)), ds.cameras))
        >>> bool((np.diff(np.sort(addresses)) == 1).any())
        True
        """
        index = self.index
        return index.row_addresses(index.positions(np.asarray(ref_ids, dtype=np.int64)))

    def read(self, ref_ids: Sequence[int] | np.ndarray) -> dict[int, bytes]:
        """GOP bytes by ref_id, in one coalesced Lance read.

        Raises
        ------
        robodata.CorruptGopError
            Bytes that do not match their stored checksum (a cache holds only verified bytes).
        """
        refs = np.asarray(ref_ids)
        if refs.size == 0:
            return {}
        positions = self.index.positions(refs)
        data = self._checked_bytes(positions, [None] * len(positions))
        return {int(ref): blob for ref, blob in zip(refs, data, strict=True)}

    def window_rows(self, indices: RowIndices, offsets: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows ``get_windows`` reads: ``([N, T] row offsets, [N, T] pad mask)``."""
        offsets = np.asarray(list(offsets), dtype=np.int64)
        return self._ds.rows.window_rows(checked_rows(indices, len(self._ds)), offsets)

    def decode_tasks(
        self, requests: list[Request], gop_bytes: Mapping[int, bytes] | None = None, pixel_format: str = "rgb24"
    ) -> list[GopTask]:
        """One decode task per distinct GOP of ``requests`` (``decode_requests``' plan), its bytes
        from ``gop_bytes`` where supplied, else read in one coalesced Lance read; all verified."""
        index = self.index
        all_refs = np.concatenate([refs for refs, _, _, _ in requests])
        unique_refs, inverse = np.unique(all_refs, return_inverse=True)
        positions = index.positions(unique_refs)
        supplied = gop_bytes or {}
        blobs = self._checked_bytes(positions, [supplied.get(int(ref)) for ref in unique_refs])  # supplied too
        tasks = [
            GopTask(data, index.packet_sizes(int(pos)), index.codec(int(pos)), pixel_format=pixel_format)
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

    def frame_timestamps(self, ref_ids: np.ndarray, frames_in_gop: np.ndarray) -> np.ndarray:
        """Capture time (ns) of frame ``frames_in_gop[i]`` of GOP ``ref_ids[i]``, from rows that
        hold their checksum (CorruptGopError otherwise).

        >>> store = robodata.reader._dataset.gop_store(ds)
        >>> refs, in_gop = store.frame_refs([0, 1, 2], "top")
        >>> store.frame_timestamps(refs, in_gop).tolist()
        [0, 0, 33333333]
        """
        positions = self.index.positions(np.asarray(ref_ids, dtype=np.int64))
        self._verify_rows(positions)
        return self.index.frame_timestamps(positions, frames_in_gop)

    @cached_property
    def _local_files(self) -> LocalGopFiles | None:
        """Where a local dataset's GOP bytes sit in its data files (None: Lance reads them)."""
        ds, row_ids = self._ds, self.index.row_ids(np.arange(len(self.index)))
        uri = gops_uri(ds.uri)
        return storage_call(
            "locating GOP bytes", uri, ds.storage_options, LocalGopFiles.of, self.lance_dataset, row_ids
        )

    def _checked_bytes(self, positions: np.ndarray, supplied: list[bytes | None]) -> list[bytes]:
        """The bytes of the GOPs at ``positions``: ``supplied`` where given, the rest read in one
        go; every one checked against its stored checksums (CorruptGopError naming the first that
        is not). A GOP read in place that fails its checksum is read again through Lance's
        ``read_blobs`` before it is called corrupt."""
        missing = [slot for slot, data in enumerate(supplied) if data is None]
        blobs: list[bytes] = [b"" if data is None else data for data in supplied]
        in_place: list[int] = []
        if missing:
            read, was_in_place = self._read_positions(positions[missing])
            for slot, data in zip(missing, read, strict=True):
                blobs[slot] = data
            in_place = missing if was_in_place else []
        try:
            self._verify(positions, blobs)
        except CorruptGopError:
            if not self._read_again_through_lance(positions, blobs, in_place):
                raise
            self._verify(positions, blobs)
        return blobs

    def _read_positions(self, positions: np.ndarray) -> tuple[list[bytes], bool]:
        """The bytes at ``positions`` and whether they were read in place (else through Lance)."""
        ds = self._ds
        with storage_step(f"reading {len(positions)} GOPs", gops_uri(ds.uri), ds.storage_options):
            files = self._local_files
            if files is not None:
                try:
                    return files.read(positions), True
                except LayoutDriftError as drift:
                    self._stop_reading_in_place(str(drift))
            return read_through_lance(
                self.lance_dataset, self.index.row_ids(positions).tolist(), ds.storage_options
            ), False

    def _read_again_through_lance(self, positions: np.ndarray, blobs: list[bytes], in_place: list[int]) -> bool:
        """Read the GOPs of ``in_place`` slots whose bytes fail their checksum again through
        ``read_blobs`` into ``blobs``; True (and no more reads in place) where Lance returned other
        bytes than the read in place did, False where it returned the same (they are corrupt)."""
        index = self.index
        failing = [
            slot
            for slot in in_place
            if checksum_problem(blobs[slot], int(index.checksums(positions[slot : slot + 1])[0]), None) is not None
        ]
        if not failing:
            return False
        ds = self._ds
        with storage_step(f"reading {len(failing)} GOPs again", gops_uri(ds.uri), ds.storage_options):
            again = read_through_lance(
                self.lance_dataset, index.row_ids(positions[failing]).tolist(), ds.storage_options
            )
        differs = [slot for slot, data in zip(failing, again, strict=True) if data != blobs[slot]]
        if not differs:
            return False
        files = self._local_files
        where = files.file_of(int(positions[differs[0]])) if files is not None else "its data file"
        self._stop_reading_in_place(
            f"{self.lance_dataset.uri}: {len(differs)} GOP(s) read in place from {where} fail their checksum "
            "and differ from what Lance's read_blobs returns for them"
        )
        for slot, data in zip(failing, again, strict=True):
            blobs[slot] = data
        return True

    def _stop_reading_in_place(self, why: str) -> None:
        """Read this dataset's GOPs through Lance from now on, saying so once (a warning: the data
        are sound, but the fast path's view of Lance's layout is not; a test or a run can turn it
        into an error with ``-W error::robodata.integrity._local_gop_files.ReadInPlaceWarning``)."""
        if self.__dict__.get("_local_files") is None:
            return
        self.__dict__["_local_files"] = None  # the cached answer: read through Lance
        warnings.warn(
            f"{why}: Lance's blob layout is not what robodata's read in place expects, so this dataset's GOPs "
            f"are read through read_blobs from now on ({OFF_SWITCH}=1 chooses that from the start)",
            ReadInPlaceWarning,
            stacklevel=2,
        )

    def _verify_rows(self, positions: np.ndarray) -> None:
        """CorruptGopError unless every GOP row at ``positions`` matches its row checksum."""
        problems = self.index.unchecked_row_problems(positions)
        if problems:
            position, problem = problems[0]
            episode, camera, gop_index = self.index.named(position)
            ref_id = int(self.index.ref_ids(np.array([position]))[0])
            raise CorruptGopError.of(self._ds.uri, self._ds.version, episode, camera, gop_index, ref_id, problem)

    def _verify(self, positions: np.ndarray, blobs: list[bytes]) -> None:
        """CorruptGopError unless every GOP's row and bytes match the checksums stored with them."""
        self._verify_rows(positions)
        index = self.index
        checksums, sizes = index.checksums(positions), index.byte_sizes(positions)
        verify_gop_bytes(
            self.lance_dataset,
            blobs,
            index.ref_ids(positions),
            checksums,
            sizes,
            uri=self._ds.uri,
            version=self._ds.version,
        )

"""GOP bytes of a dataset on a local disk, read straight out of Lance's data files: a fast path
around Lance's public ``read_blobs``, checked where it starts and falling back on any doubt.

Lance's ``read_blobs`` costs about 0.7-1 ms of CPU a call on a local disk whatever it reads
(planning, its runtime's thread hand-offs; docs/upstream/lance-read-blobs-cost.md), as much as decoding
three frames: for an 8-frame window that is an eighth of the read. A blob v2 column keeps a small
blob inline, in the fragment's data file, and a scan of the column returns its descriptor
``(kind, position, size)`` (the descriptor is part of Lance's public Arrow surface): so robodata
reads each GOP with one ``pread`` at that position.

It does so only where that is plainly right: a local dataset whose GOPs are all inline, each in a
data file of the dataset's own folder. Each data file is checked before its bytes are trusted:
the first time a read touches it, one of its GOPs is read both ways and compared
(``LayoutDriftError`` if they differ: a Lance release that placed blobs otherwise). Everything
else (s3://, packed or dedicated blobs, data files in other bases) reads through Lance. Both ways,
every GOP's bytes are then checked against their stored checksum; the reader
(``robodata.reader._gop_store``) reads a GOP whose in-place bytes fail it again through
``read_blobs`` before calling it corrupt, and ``robodata verify`` reads every GOP both ways.

``ROBODATA_LANCE_READ_BLOBS=1`` turns the fast path off: every GOP then reads through
``read_blobs``.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

import numpy as np

from robodata.storage._deadlines import call_with_deadline
from robodata.storage._uris import is_remote, join_uri

if TYPE_CHECKING:
    import lance

INLINE = 0  # a blob v2 descriptor's kind: the bytes are in the row's own data file
BLOB_COLUMN = "gop"
OFF_SWITCH = "ROBODATA_LANCE_READ_BLOBS"  # set (to anything but "" or "0"): always read through Lance


class ReadInPlaceWarning(RuntimeWarning):
    """A dataset's GOPs are read through ``read_blobs`` from now on: read in place, they came out
    otherwise than Lance reads them (the data are sound; robodata's view of Lance's layout is not)."""


class LayoutDriftError(Exception):
    """A GOP read in place differs from what Lance's ``read_blobs`` returns for it: the blob
    descriptors no longer say where Lance keeps the bytes."""


def read_in_place_allowed() -> bool:
    """False when ``ROBODATA_LANCE_READ_BLOBS`` asks for Lance's reads only."""
    return os.environ.get(OFF_SWITCH, "") in ("", "0")


def read_through_lance(
    gops: lance.LanceDataset, row_ids: list[int], storage_options: dict | None = None
) -> list[bytes]:
    """GOP bytes of ``row_ids`` through Lance's public ``read_blobs``, in order, under the storage
    deadline (a null blob reads as no bytes, which fails its size check: a corrupt GOP)."""
    blobs = call_with_deadline(
        gops.uri, storage_options, gops.read_blobs, BLOB_COLUMN, ids=row_ids, preserve_order=True
    )
    return [data or b"" for _, data in blobs]


class LocalGopFiles:
    """Where each GOP's bytes sit in the data files of a local gops.lance, by index position.

    >>> import lance
    >>> gops = lance.dataset("data/demo/gops.lance")
    >>> row_ids = gops.to_table(columns=["ref_id"], with_row_id=True)["_rowid"].to_numpy()
    >>> files = LocalGopFiles.of(gops, row_ids)  # None: Lance must read them
    >>> files.read(np.array([0]))[0][:4]  # row 0's GOP: Annex B opens with a start code
    b'\\x00\\x00\\x00\\x01'
    >>> files.checked_files  # the first read compared one GOP of its data file with read_blobs
    1
    """

    def __init__(
        self,
        gops: lance.LanceDataset,
        row_ids: np.ndarray,
        paths: list[str],
        file_of: np.ndarray,
        offsets: np.ndarray,
        sizes: np.ndarray,
    ) -> None:
        self._gops, self._row_ids = gops, row_ids
        self.paths = paths
        self._file_of, self._offsets, self._sizes = file_of, offsets, sizes
        self._checked = np.zeros(len(paths), dtype=bool)  # data files one GOP of which read both ways alike
        self._checking = threading.Lock()

    @classmethod
    def of(cls, gops: lance.LanceDataset, row_ids: np.ndarray) -> LocalGopFiles | None:
        """The files behind ``gops``' rows ``row_ids`` (in the caller's order), or None where
        Lance must read them."""
        if not read_in_place_allowed() or is_remote(gops.uri) or len(row_ids) == 0:
            return None
        table = gops.to_table(columns=[BLOB_COLUMN], with_row_id=True, with_row_address=True)
        described = table[BLOB_COLUMN].combine_chunks()
        if described.null_count or (described.field("kind").to_numpy() != INLINE).any():
            return None
        files = _blob_data_files(gops)
        if files is None:
            return None
        fragments = np.array(sorted(files), dtype=np.int64)  # file k is fragment k's data file
        scanned_ids = table["_rowid"].to_numpy()
        order = np.argsort(scanned_ids, kind="stable")
        at = order[np.minimum(np.searchsorted(scanned_ids[order], row_ids), len(order) - 1)]
        if (scanned_ids[at] != row_ids).any():
            return None  # rows the index names that this scan does not see: leave it to Lance
        return cls(
            gops,
            np.asarray(row_ids, dtype=np.int64),
            [files[int(f)] for f in fragments],
            np.searchsorted(fragments, table["_rowaddr"].to_numpy()[at] >> 32),
            described.field("position").to_numpy()[at].astype(np.int64),
            described.field("size").to_numpy()[at].astype(np.int64),
        )

    @property
    def checked_files(self) -> int:
        """How many data files have been checked against ``read_blobs`` so far."""
        return int(self._checked.sum())

    def file_of(self, position: int) -> str:
        """The data file the GOP at index ``position`` is read from."""
        return self.paths[int(self._file_of[position])]

    def read(self, positions: np.ndarray) -> list[bytes]:
        """The bytes at index ``positions``, in order, each data file checked before it is trusted
        (``LayoutDriftError`` if one of its GOPs reads otherwise through ``read_blobs``)."""
        blobs = self.read_in_place(positions)
        files = self._file_of[positions]
        if not self._checked[files].all():
            with self._checking:
                unchecked = np.unique(files[~self._checked[files]])
                if unchecked.size:
                    # One GOP per data file, the first this read asked of it, read through Lance too.
                    slots = [int(np.flatnonzero(files == file)[0]) for file in unchecked.tolist()]
                    lance_blobs = read_through_lance(self._gops, self._row_ids[positions[slots]].tolist())
                    for file, slot, through_lance in zip(unchecked.tolist(), slots, lance_blobs, strict=True):
                        if blobs[slot] != through_lance:
                            raise LayoutDriftError(
                                f"{self._gops.uri}: GOP row {self._row_ids[positions[slot]]} read in place from "
                                f"{self.paths[file]} differs from Lance's read_blobs"
                            )
                    self._checked[unchecked] = True
        return blobs

    def read_in_place(self, positions: np.ndarray) -> list[bytes]:
        """The bytes at index ``positions``, in order: one pread each, each file opened once, not
        compared with Lance's reads."""
        blobs: list[bytes] = [b""] * len(positions)
        files = self._file_of[positions]
        for file in np.unique(files).tolist():
            descriptor = os.open(self.paths[file], os.O_RDONLY)
            try:
                for slot in np.flatnonzero(files == file).tolist():
                    position = positions[slot]
                    blobs[slot] = os.pread(descriptor, int(self._sizes[position]), int(self._offsets[position]))
            finally:
                os.close(descriptor)
        return blobs


def _blob_data_files(gops: lance.LanceDataset) -> dict[int, str] | None:
    """fragment id -> path of the data file holding the blob column, or None if any lies outside
    the dataset's own data folder."""
    field = gops.lance_schema.field(BLOB_COLUMN)
    if field is None:
        return None
    field_id = field.id()
    files = {}
    for fragment in gops.get_fragments():
        holding = [f for f in fragment.metadata.files if field_id in f.fields]
        if len(holding) != 1 or holding[0].base_id is not None:
            return None
        files[fragment.fragment_id] = join_uri(gops.uri, "data", holding[0].path)
    return files

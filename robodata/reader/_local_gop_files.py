"""GOP bytes of a dataset on a local disk, read straight out of Lance's data files.

Lance's ``read_blobs`` costs about 0.7-1 ms of CPU a call on a local disk whatever it reads
(planning, its runtime's thread hand-offs), as much as decoding three frames: for an 8-frame
window that is an eighth of the read. A blob v2 column keeps a small blob inline, in the
fragment's data file, and a scan of the column returns its descriptor ``(kind, position, size)``
(the descriptor is part of Lance's public Arrow surface): so robodata reads each GOP with one
``pread`` at that position.

It does so only where that is plainly right: a local dataset whose GOPs are all inline, each in a
data file of the dataset's own folder, and only after one GOP read both ways came out the same
(a Lance release that placed blobs otherwise would fail that check and keep Lance's reads).
Everything else (s3://, packed or dedicated blobs, data files in other bases) reads through Lance.
Both ways, every GOP's bytes are then checked against their stored checksum.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from robodata.storage._uris import is_remote, join_uri

if TYPE_CHECKING:
    import lance

INLINE = 0  # a blob v2 descriptor's kind: the bytes are in the row's own data file
BLOB_COLUMN = "gop"


class LocalGopFiles:
    """Where each GOP's bytes sit in the data files of a local gops.lance, by index position.

    >>> import lance
    >>> gops = lance.dataset("data/demo/gops.lance")
    >>> row_ids = gops.to_table(columns=["ref_id"], with_row_id=True)["_rowid"].to_numpy()
    >>> files = LocalGopFiles.of(gops, row_ids)  # None: Lance must read them
    >>> files.read(np.array([0]))[0][:4]  # row 0's GOP: Annex B opens with a start code
    b'\\x00\\x00\\x00\\x01'
    """

    def __init__(self, paths: list[str], file_of: np.ndarray, offsets: np.ndarray, sizes: np.ndarray) -> None:
        self._paths = paths
        self._file_of, self._offsets, self._sizes = file_of, offsets, sizes

    @classmethod
    def of(cls, gops: lance.LanceDataset, row_ids: np.ndarray) -> LocalGopFiles | None:
        """The files behind ``gops``' rows ``row_ids`` (in the caller's order), or None where
        Lance must read them."""
        if is_remote(gops.uri) or len(row_ids) == 0:
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
        found = cls(
            [files[int(f)] for f in fragments],
            np.searchsorted(fragments, table["_rowaddr"].to_numpy()[at] >> 32),
            described.field("position").to_numpy()[at].astype(np.int64),
            described.field("size").to_numpy()[at].astype(np.int64),
        )
        [(_, through_lance)] = gops.read_blobs(BLOB_COLUMN, ids=[int(row_ids[0])])
        return found if found.read(np.zeros(1, np.int64)) == [through_lance] else None

    def read(self, positions: np.ndarray) -> list[bytes]:
        """The bytes at index ``positions``, in order: one pread each, each file opened once."""
        blobs: list[bytes] = [b""] * len(positions)
        files = self._file_of[positions]
        for file in np.unique(files).tolist():
            descriptor = os.open(self._paths[file], os.O_RDONLY)
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

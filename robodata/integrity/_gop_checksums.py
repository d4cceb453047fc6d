"""The checksums every GOP row carries, so flipped bits surface as CorruptGopError (naming the
dataset version, episode, camera and GOP) rather than as wrong pixels or wrong times:

- ``gop_xxh3``: xxh3-64 of the GOP's bytes, computed when the GOP is encoded and compared with
  the stored value before anything decodes the bytes or hands them out.
- ``row_xxh3``: xxh3-64 of every other column of the row (``ROW_CHECKSUM_FIELDS``: the frame
  timestamps a read returns, the packet sizes it cuts the bytes with, the codec it decodes with,
  ``n_frames``, the size, the ids, and ``gop_xxh3``, so the bytes too). A read checks the rows of
  the GOPs it decodes or takes frame times from (each row once per process: the values it checked
  stay in memory); ``verify`` checks every row.

gops.lance tables written before ``row_xxh3`` existed have no such column: their GOP bytes are
still checked on every read, their other columns are not (``verify`` says so), and episodes
added to them later carry none either (one table, one rule). Re-ingesting the uploads into a new
dataset covers them.

>>> gop_checksum(b"GOP bytes") == gop_checksum(bytearray(b"GOP bytes"))
True
>>> import lance
>>> gops = lance.dataset("data/demo/gops.lance")
>>> row = gops.to_table(columns=list(ROW_CHECKSUM_FIELDS[:-2]) + [ROW_CHECKSUM_COLUMN], limit=1).to_pylist()[0]
>>> row_problem(row, row[ROW_CHECKSUM_COLUMN]) is None  # (this dataset holds no renditions)
True
>>> row_problem({**row, "timestamps_ns": [t + 1 for t in row["timestamps_ns"]]}, row[ROW_CHECKSUM_COLUMN])[:31]
'xxh3_64 of its other columns is'
>>> first = gops.to_table(columns=["ref_id", CHECKSUM_COLUMN], limit=1)  # four bytes that are not that GOP:
>>> verify_gop_bytes(gops, [b"oops"], first["ref_id"].to_numpy(), first[CHECKSUM_COLUMN].to_numpy(), np.array([4]),
...                  uri="data/demo", version=3)
Traceback (most recent call last):
robodata.errors.CorruptGopError: ...
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from robodata.errors import CorruptGopError
from robodata.storage._deadlines import call_with_deadline

CHECKSUM_COLUMN = "gop_xxh3"
CHECKSUM_ALGORITHM = "xxh3_64"
ROW_CHECKSUM_COLUMN = "row_xxh3"
# The columns row_xxh3 covers, in the order they are hashed. The two rendition columns exist only
# in tables that hold renditions (format/_renditions.py) and are null on full-resolution rows: a
# null one is hashed as absent, so a row's checksum does not change when they are added.
ROW_CHECKSUM_FIELDS = (
    "ref_id",
    "episode_index",
    "camera",
    "gop_index",
    "n_frames",
    "timestamps_ns",
    "packet_sizes",
    "width",
    "height",
    "codec",
    "crf",
    "preset",
    CHECKSUM_COLUMN,
    "rendition",
    "source_ref_id",
)
_OPTIONAL_FIELDS = frozenset({"rendition", "source_ref_id"})
_ROW_FORMAT = b"robodata gop row 1"  # changes with the encoding below


def gop_checksum(data: bytes | bytearray | memoryview) -> int:
    """xxh3-64 of ``data`` as an unsigned 64-bit integer (stored as gops.lance ``gop_xxh3``)."""
    # xxh3 runs at memory speed (tens of GB/s): a GOP of 50 KB costs a few microseconds,
    # against milliseconds to decode it.
    return xxhash.xxh3_64_intdigest(data)


def checksum_problem(data: bytes | memoryview, expected: int, expected_size: int | None) -> str | None:
    """What is wrong with one GOP's bytes (None when they match what was stored)."""
    if expected_size is not None and len(data) != expected_size:
        return f"{len(data)} bytes, its packets add up to {expected_size}"
    actual = gop_checksum(data)
    if actual != int(expected):
        return f"{CHECKSUM_ALGORITHM} of its bytes is {actual:016x}, stored {int(expected):016x}"
    return None


def row_checksum(row: Mapping[str, Any]) -> int:
    """xxh3-64 of ``row``'s ``ROW_CHECKSUM_FIELDS`` (a gops.lance row as Python or numpy values),
    each field named and length-prefixed so no two rows encode alike."""
    parts = [_ROW_FORMAT]
    for name in ROW_CHECKSUM_FIELDS:
        value: Any = row.get(name)
        if value is None and name in _OPTIONAL_FIELDS:
            continue
        parts.append(name.encode())
        if isinstance(value, str):
            text = value.encode()
            parts += [struct.pack("<q", len(text)), text]
        elif isinstance(value, (list, tuple, np.ndarray)):
            values = np.asarray(value, dtype="<i8")
            parts += [struct.pack("<q", len(values)), values.tobytes()]
        else:  # an integer; gop_xxh3 is unsigned 64-bit, so every integer is hashed as 128 bits
            parts.append(int(value).to_bytes(16, "little", signed=True))
    return xxhash.xxh3_64_intdigest(b"".join(parts))


def row_checksums(columns: Mapping[str, Sequence | pa.Array | pa.ChunkedArray]) -> pa.Array:
    """``row_xxh3`` of each row of ``columns`` (gops.lance columns by name, as the writers build
    them), as the uint64 array stored beside them."""
    present = {
        name: values.to_pylist() if isinstance(values, (pa.Array, pa.ChunkedArray)) else list(values)
        for name, values in columns.items()
        if name in ROW_CHECKSUM_FIELDS
    }
    rows = len(next(iter(present.values()))) if present else 0
    return pa.array([row_checksum({n: v[i] for n, v in present.items()}) for i in range(rows)], pa.uint64())


def row_problem(row: Mapping[str, Any], expected: int) -> str | None:
    """What is wrong with one GOP row's columns (None when they match their stored checksum)."""
    actual = row_checksum(row)
    if actual != int(expected):
        return f"{CHECKSUM_ALGORITHM} of its other columns is {actual:016x}, stored {int(expected):016x}"
    return None


def verify_gop_bytes(
    gops,
    blobs: Sequence[bytes],
    ref_ids: np.ndarray,
    checksums: np.ndarray,
    sizes: np.ndarray,
    *,
    uri: str,
    version: int | None,
) -> None:
    """Raise CorruptGopError for the first of ``blobs`` (the GOPs ``ref_ids`` of gops.lance)
    whose size or checksum differs from what gops.lance stored with it (``sizes``, ``checksums``)."""
    for slot, data in enumerate(blobs):
        problem = checksum_problem(data, int(checksums[slot]), int(sizes[slot]))
        if problem is not None:
            raise corrupt_gop_error(gops, int(ref_ids[slot]), problem, uri=uri, version=version)


def corrupt_gop_error(gops, ref_id: int, problem: str, *, uri: str, version: int | None) -> CorruptGopError:
    """The error for GOP ``ref_id``, naming its episode, camera and GOP index (read from gops.lance)."""
    columns, where = ["episode_index", "camera", "gop_index"], f"ref_id = {int(ref_id)}"
    row = call_with_deadline(gops.uri, None, gops.to_table, columns=columns, filter=where)
    if row.num_rows == 0:
        return CorruptGopError.of(uri, version, -1, "?", -1, ref_id, problem)
    first = {name: row[name][0].as_py() for name in row.column_names}
    return CorruptGopError.of(
        uri, version, first["episode_index"], first["camera"], first["gop_index"], ref_id, problem
    )

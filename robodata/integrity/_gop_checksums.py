"""The checksum every GOP row carries: xxh3-64 of its bytes, computed when the GOP is encoded
and compared with the stored value before anything decodes the bytes or hands them out, so
flipped bits surface as CorruptGopError (naming the dataset version, episode, camera and GOP)
rather than as wrong pixels.

>>> gop_checksum(b"GOP bytes") == gop_checksum(bytearray(b"GOP bytes"))
True
>>> import lance
>>> gops = lance.dataset("data/demo/gops.lance")
>>> first = gops.to_table(columns=["ref_id", CHECKSUM_COLUMN], limit=1)  # four bytes that are not that GOP:
>>> verify_gop_bytes(gops, [b"oops"], first["ref_id"].to_numpy(), first[CHECKSUM_COLUMN].to_numpy(), np.array([4]),
...                  uri="data/demo", version=3)
Traceback (most recent call last):
robodata.errors.CorruptGopError: ...
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xxhash

from robodata.errors import CorruptGopError
from robodata.storage._deadlines import call_with_deadline

CHECKSUM_COLUMN = "gop_xxh3"
CHECKSUM_ALGORITHM = "xxh3_64"


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

"""Every GOP's bytes are compared with the checksum stored next to them before anything decodes
them or hands them out: a mismatch raises CorruptGopError naming the dataset version, episode,
camera and GOP, never wrong frames.

>>> verify_gop_bytes(gops, index, positions, blobs, uri="data/demo", version=5)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robodata.errors import CorruptGopError
from robodata.format.checksum import CHECKSUM_ALGORITHM, gop_checksum
from robodata.reader.gop_index import GopIndex


def checksum_problem(data: bytes | memoryview, expected: int | None, expected_size: int | None) -> str | None:
    """What is wrong with one GOP's bytes (None when they match what was stored)."""
    if expected_size is not None and len(data) != expected_size:
        return f"{len(data)} bytes, its packets add up to {expected_size}"
    if expected is None:
        return None
    actual = gop_checksum(data)
    if actual != int(expected):
        return f"{CHECKSUM_ALGORITHM} of its bytes is {actual:016x}, stored {int(expected):016x}"
    return None


def verify_gop_bytes(
    gops, index: GopIndex, positions: np.ndarray, blobs: Sequence[bytes], *, uri: str, version: int | None
) -> None:
    """Raise CorruptGopError for the first of ``blobs`` (the GOPs at ``positions`` of ``index``)
    whose size or checksum differs from what gops.lance stored with it."""
    positions = np.asarray(positions)
    expected = index.checksums(positions)
    sizes = index.byte_sizes(positions)
    for slot, data in enumerate(blobs):
        problem = checksum_problem(data, None if expected is None else expected[slot], int(sizes[slot]))
        if problem is not None:
            ref_id = int(index.ref_ids(positions[slot : slot + 1])[0])
            raise corrupt_gop_error(gops, ref_id, problem, uri=uri, version=version)


def corrupt_gop_error(gops, ref_id: int, problem: str, *, uri: str, version: int | None) -> CorruptGopError:
    """The error for GOP ``ref_id``, naming its episode, camera and GOP index (read from gops.lance)."""
    row = gops.to_table(columns=["episode_index", "camera", "gop_index"], filter=f"ref_id = {int(ref_id)}")
    if row.num_rows == 0:
        return CorruptGopError.of(uri, version, -1, "?", -1, ref_id, problem)
    first = {name: row[name][0].as_py() for name in row.column_names}
    return CorruptGopError.of(
        uri, version, first["episode_index"], first["camera"], first["gop_index"], ref_id, problem
    )

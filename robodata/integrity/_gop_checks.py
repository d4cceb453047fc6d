"""Check stored GOP rows: their columns match ``row_xxh3`` (where the table has it), their bytes
match ``gop_xxh3``, and (when asked) every frame decodes, the count matches ``n_frames`` and each
frame has the row's size. ``robodata verify`` runs it over every GOP; an ingest runs it over an
episode's staged GOPs before committing rows.

The bytes are read the ways a training read gets them: through Lance's ``read_blobs``, and on a
local disk also in place (``integrity/_local_gop_files.py``, the reader's fast path), compared;
a GOP that reads otherwise in place is noted (readers fall back to ``read_blobs`` for it), and
``read_blobs``' bytes are the ones checked.

>>> import lance
>>> gops = lance.dataset("data/demo/gops.lance")
>>> check_gop_rows(gops, gop_rows(gops), decode=True).problems
[]
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import av
import numpy as np
import pyarrow as pa

from robodata.codec import decode_gop_frames
from robodata.integrity._gop_checksums import (
    CHECKSUM_COLUMN,
    ROW_CHECKSUM_COLUMN,
    ROW_CHECKSUM_FIELDS,
    checksum_problem,
    row_problem,
)
from robodata.integrity._local_gop_files import LocalGopFiles, read_through_lance
from robodata.storage._deadlines import call_with_deadline

GOP_COLUMNS = [
    "ref_id",
    "episode_index",
    "camera",
    "gop_index",
    "n_frames",
    "packet_sizes",
    "width",
    "height",
    "codec",
    CHECKSUM_COLUMN,
]
READ_CHUNK = 256  # GOPs per coalesced blob read: bounds memory on a dataset of any size


@dataclass
class GopCheck:
    """What checking a set of GOP rows found."""

    checked: int = 0  # GOPs whose bytes were read and checksummed
    decoded: int = 0  # GOPs decoded frame by frame
    problems: list[str] = field(default_factory=list)
    rows_uncovered: int = 0  # GOP rows without a row checksum (a table written before it existed)
    read_in_place: int = 0  # GOPs also read in place (the reader's fast path) and compared
    read_in_place_differs: list[str] = field(default_factory=list)  # ...that came out otherwise

    def add(self, other: GopCheck) -> None:
        self.checked += other.checked
        self.decoded += other.decoded
        self.problems += other.problems
        self.rows_uncovered += other.rows_uncovered
        self.read_in_place += other.read_in_place
        self.read_in_place_differs += other.read_in_place_differs

    def notes(self) -> list[str]:
        """What this check could not vouch for, or found the reader's fast path doing: for a person."""
        notes = []
        if self.rows_uncovered:
            notes.append(
                f"gops.lance: {self.rows_uncovered} GOP rows have no row checksum (written before robodata "
                "recorded one): their bytes are checked, their timestamps, packet sizes and other columns are "
                "not vouched for; ingest the uploads into a new dataset to cover them"
            )
        if self.read_in_place_differs:
            notes.append(
                f"gops.lance: {len(self.read_in_place_differs)} GOPs read in place differ from Lance's read_blobs "
                f"(first: {self.read_in_place_differs[0]}); readers warn and read them through read_blobs "
                "(ROBODATA_LANCE_READ_BLOBS=1 does so from the start)"
            )
        return notes


def gop_rows(gops, filter: str | None = None) -> pa.Table:
    """The small columns (and row ids) of the gops.lance rows ``filter`` selects (all without one):
    every column a row checksum covers, and the checksum, where the table has them."""
    columns = list(dict.fromkeys([*GOP_COLUMNS, *ROW_CHECKSUM_FIELDS, ROW_CHECKSUM_COLUMN]))
    columns = [name for name in columns if name in gops.schema.names]
    return call_with_deadline(gops.uri, None, gops.to_table, columns=columns, filter=filter, with_row_id=True)


def check_gop_rows(
    gops, rows: pa.Table, *, decode: bool, concurrency: int | None = None, in_place: bool = False
) -> GopCheck:
    """Read the bytes of the GOPs ``rows`` (from ``gop_rows``) describe and check each one; with
    ``in_place``, also read them as the reader's fast path does and compare."""
    result = GopCheck()
    if ROW_CHECKSUM_COLUMN not in rows.column_names:
        result.rows_uncovered = rows.num_rows
    # The reader's fast path over these rows (None where it reads through Lance only).
    files = LocalGopFiles.of(gops, rows["_rowid"].to_numpy()) if in_place and rows.num_rows else None
    workers = concurrency or os.cpu_count() or 1  # one decoder per core, as the reader's decode pool
    with ThreadPoolExecutor(workers, thread_name_prefix="robodata-verify") as pool:
        for start in range(0, rows.num_rows, READ_CHUNK):
            chunk = rows.slice(start, READ_CHUNK).to_pylist()
            ids = [r["_rowid"] for r in chunk]  # one deadline per chunk: a whole verify may take long
            blobs = read_through_lance(gops, ids)
            if files is not None:
                positions = np.arange(start, start + len(chunk))
                for slot, data in enumerate(files.read_in_place(positions)):
                    result.read_in_place += 1
                    if data != blobs[slot]:
                        row = chunk[slot]
                        result.read_in_place_differs.append(
                            f"{_where(row)}, read in place from {files.file_of(int(positions[slot]))}"
                        )
            jobs = [(row, data, decode) for row, data in zip(chunk, blobs, strict=True)]
            for problem in pool.map(_check_one, jobs):
                result.checked += 1
                result.decoded += int(decode)
                if problem is not None:
                    result.problems.append(problem)
    return result


def _where(row: dict) -> str:
    return (
        f"GOP {row['gop_index']} of episode {row['episode_index']}, camera {row['camera']!r} (ref_id {row['ref_id']})"
    )


def _check_one(job: tuple[dict, bytes, bool]) -> str | None:
    row, data, decode = job
    where = _where(row)
    if ROW_CHECKSUM_COLUMN in row:
        problem = row_problem(row, row[ROW_CHECKSUM_COLUMN])
        if problem is not None:
            return f"{where} is corrupt: {problem}"
    problem = checksum_problem(data, row[CHECKSUM_COLUMN], int(np.sum(row["packet_sizes"], dtype=np.int64)))
    if problem is not None:
        return f"{where} is corrupt: {problem}"
    if len(row["packet_sizes"]) != row["n_frames"]:
        return f"{where} has {len(row['packet_sizes'])} packets for {row['n_frames']} frames"
    if not decode:
        return None
    try:
        frames = decode_gop_frames(data, row["packet_sizes"], list(range(row["n_frames"])), codec=row["codec"])
    except (av.error.FFmpegError, ValueError, IndexError) as exc:
        return f"{where} does not decode: {exc}"
    wrong = [f.shape for f in frames if f.shape != (row["height"], row["width"], 3)]
    if wrong:
        return f"{where} decodes to {wrong[0][1]}x{wrong[0][0]} frames, its row says {row['width']}x{row['height']}"
    return None

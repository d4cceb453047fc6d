"""Check stored GOP rows from their bytes: the checksum matches, and (when asked) every frame
decodes, the count matches ``n_frames`` and each frame has the row's size. ``robodata verify``
runs it over every GOP; an ingest runs it over an episode's staged GOPs before committing rows.

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
from robodata.integrity._gop_checksums import CHECKSUM_COLUMN, checksum_problem
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

    def add(self, other: GopCheck) -> None:
        self.checked += other.checked
        self.decoded += other.decoded
        self.problems += other.problems


def gop_rows(gops, filter: str | None = None) -> pa.Table:
    """The small columns (and row ids) of the gops.lance rows ``filter`` selects (all without one)."""
    return call_with_deadline(gops.uri, None, gops.to_table, columns=GOP_COLUMNS, filter=filter, with_row_id=True)


def check_gop_rows(gops, rows: pa.Table, *, decode: bool, concurrency: int | None = None) -> GopCheck:
    """Read the bytes of the GOPs ``rows`` (from ``gop_rows``) describe and check each one."""
    result = GopCheck()
    workers = concurrency or os.cpu_count() or 1  # one decoder per core, as the reader's decode pool
    with ThreadPoolExecutor(workers, thread_name_prefix="robodata-verify") as pool:
        for start in range(0, rows.num_rows, READ_CHUNK):
            chunk = rows.slice(start, READ_CHUNK).to_pylist()
            ids = [r["_rowid"] for r in chunk]  # one deadline per chunk: a whole verify may take long
            blobs = call_with_deadline(gops.uri, None, gops.read_blobs, "gop", ids=ids, preserve_order=True)
            jobs = [(row, data, decode) for row, (_, data) in zip(chunk, blobs, strict=True)]
            for problem in pool.map(_check_one, jobs):
                result.checked += 1
                result.decoded += int(decode)
                if problem is not None:
                    result.problems.append(problem)
    return result


def _check_one(job: tuple[dict, bytes, bool]) -> str | None:
    row, data, decode = job
    where = (
        f"GOP {row['gop_index']} of episode {row['episode_index']}, camera {row['camera']!r} (ref_id {row['ref_id']})"
    )
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

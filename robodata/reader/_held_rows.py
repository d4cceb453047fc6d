"""The per-row columns of a dataset version on object storage, held in memory once per process.

Why: a training loader reads each batch's rows with one ``take``, and from object storage a take
costs GETs (a first-byte latency of 20-50 ms each) on the batch's critical path, every batch. A
version never changes, its per-row columns are small beside its video (state and action of 1,800
rows: ~0.2 MB), and the first read of rows already reads every data file of frames.lance once to
check it (``robodata.integrity._frames_checksums``). So on object storage a process reads the
columns it is asked for once, in one scan, and answers every later take from memory, as long as
they fit in ``$ROBODATA_HELD_ROWS_MB`` megabytes (default ``HELD_ROWS_MB``) per process; larger
ones are taken from the store batch by batch as before. On a local disk a take reads in place
and nothing is held.

>>> held = HeldRows(lance.dataset("data/demo/frames.lance"), remote=True)
>>> held.take([3, 1], ["frame_index"]).to_pylist()  # None when the columns are too big to hold
[{'frame_index': 3}, {'frame_index': 1}]
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import lance
import numpy as np
import pyarrow as pa

from robodata._env_settings import megabytes_setting

HELD_ROWS_VARIABLE = "ROBODATA_HELD_ROWS_MB"
HELD_ROWS_MB = 64
VARIABLE_WIDTH_GUESS = 64  # bytes a row of a string or list column is counted for


def row_bytes(schema: pa.Schema, columns: list[str]) -> int:
    """About how many bytes a row of ``columns`` takes in memory (Arrow's widths; a string or list
    counted as ``VARIABLE_WIDTH_GUESS``)."""
    total = 0
    for name in columns:
        kind = schema.field(name).type
        width = 1
        while pa.types.is_fixed_size_list(kind):
            width *= kind.list_size
            kind = kind.value_type
        try:
            total += width * max(kind.bit_width // 8, 1)
        except ValueError:  # no fixed width: strings, lists, structs
            total += width * VARIABLE_WIDTH_GUESS
    return total


class HeldRows:
    """Per-row columns of one frames.lance version, read whole once and held (object storage only)."""

    def __init__(self, frames: lance.LanceDataset, *, remote: bool, limit_bytes: int | None = None) -> None:
        self._frames = frames
        self._limit = limit_bytes if limit_bytes is not None else megabytes_setting(HELD_ROWS_VARIABLE, HELD_ROWS_MB)
        self._remote = remote
        self._tables: dict[tuple[str, ...], pa.Table] = {}
        self._lock = threading.Lock()

    def take(self, indices: object, columns: list[str], read: Callable[..., pa.Table] | None = None) -> pa.Table | None:
        """Rows ``indices`` of ``columns`` from the held columns, read whole the first time
        (through ``read(fn, **kwargs)``, e.g. under the storage deadline); None on a local disk or
        when they would pass the limit: take them from the store."""
        if not self._remote or not columns:
            return None
        key = tuple(sorted(columns))
        with self._lock:
            held = self._tables.get(key)
            if held is None:
                need = row_bytes(self._frames.schema, list(key)) * self._frames.count_rows()
                if need + sum(t.nbytes for t in self._tables.values()) > self._limit:
                    return None
                scan = self._frames.to_table
                held = read(scan, columns=list(key)) if read is not None else scan(columns=list(key))
                self._tables[key] = held
        return held.select(columns).take(pa.array(np.asarray(indices, dtype=np.int64).reshape(-1)))

"""Upgrade a dataset written before GOP checksums (format 1) to format 2: compute each stored
GOP's xxh3-64 and add the ``gop_xxh3`` column to gops.lance as new column files (no video is
rewritten). From then on every read verifies, and new episodes can be appended.

The checksums vouch for the bytes as they are at upgrade time; run ``robodata verify --decode``
first if the store may already have damaged some.

>>> add_gop_checksums("data/demo")  # written with checksums already: nothing to add
0
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from robodata.errors import NotFoundError
from robodata.format.commits import retry_commit
from robodata.format.tables import gops_uri, open_table
from robodata.integrity.gop_checksums import CHECKSUM_COLUMN, gop_checksum
from robodata.storage.deadlines import call_with_deadline
from robodata.storage.failures import storage_step

READ_CHUNK = 256


def add_gop_checksums(uri: str, storage_options: dict | None = None) -> int:
    """Add the checksum column to the dataset at ``uri``; returns the GOP rows checksummed
    (0 when it already has checksums)."""
    with storage_step("adding GOP checksums", gops_uri(uri), storage_options):
        gops = open_table(gops_uri(uri), storage_options)
        if gops is None:
            raise NotFoundError(f"no robodata dataset at {uri} (gops.lance does not exist)")
        if CHECKSUM_COLUMN in gops.schema.names:
            return 0
        rows = call_with_deadline(gops_uri(uri), storage_options, gops.to_table, columns=["ref_id"], with_row_id=True)
        checksums = []
        for start in range(0, rows.num_rows, READ_CHUNK):
            ids = rows["_rowid"].slice(start, READ_CHUNK).to_pylist()
            blobs = call_with_deadline(
                gops_uri(uri), storage_options, gops.read_blobs, "gop", ids=ids, preserve_order=True
            )
            checksums += [gop_checksum(data) for _, data in blobs]
        # ref_ids are content-derived: rows sharing one hold the same bytes, so one checksum each.
        table = pa.table({"ref_id": rows["ref_id"], CHECKSUM_COLUMN: pa.array(checksums, pa.uint64())})
        first = pc.equal(pc.index_in(table["ref_id"], table["ref_id"]), pa.array(range(table.num_rows)))
        retry_commit(
            "adding GOP checksums",
            gops_uri(uri),
            lambda: open_table(gops_uri(uri), storage_options).merge(table.filter(first), left_on="ref_id"),
            storage_options=storage_options,
        )
    return rows.num_rows

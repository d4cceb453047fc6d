"""Where the two tables live under a dataset root, and how they are opened and created."""

from __future__ import annotations

import lance
import pyarrow as pa

from robodata.format.schema import FRAMES_TABLE, GOPS_TABLE
from robodata.storage import join_uri


def gops_uri(root: str) -> str:
    return join_uri(root, GOPS_TABLE)


def frames_uri(root: str) -> str:
    return join_uri(root, FRAMES_TABLE)


def open_table(uri: str, storage_options: dict | None = None, version: int | str | None = None):
    """The Lance dataset at ``uri``, or None when nothing has been written there yet."""
    try:
        return lance.dataset(uri, version=version, storage_options=storage_options)
    except ValueError as exc:
        if version is None and "not found" in str(exc).lower():
            return None
        raise


def append_or_create(
    uri: str, table: pa.Table, schema: pa.Schema, storage_options: dict | None = None
) -> lance.LanceDataset:
    """Append ``table``; the first writer creates the dataset. Two writers racing to create it
    both succeed: the loser appends."""
    if open_table(uri, storage_options) is None:
        try:
            return lance.write_dataset(
                table,
                uri,
                schema=schema,
                mode="create",
                enable_stable_row_ids=True,
                storage_options=storage_options,
            )
        except (OSError, ValueError) as exc:
            if "exist" not in str(exc).lower():
                raise
    return lance.write_dataset(
        table, uri, schema=schema, mode="append", storage_options=storage_options
    )

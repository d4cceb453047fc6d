"""Where the two tables live under a dataset root, and how they are opened and created."""

from __future__ import annotations

import lance
import pyarrow as pa
from lance.fragment import write_fragments

from robodata.format.schema import FRAMES_TABLE, GOPS_TABLE
from robodata.storage import join_uri
from robodata.storage.dataset_root import check_dataset_location


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
    """Append ``table``; the first writer creates the dataset.

    Writers may race to create it (eight ingest processes on an empty s3:// dataset). Lance
    retries a losing ``mode="create"`` commit as an Overwrite, which would silently replace the
    winner's rows; so the data files are written first and the create is committed once, with
    no retries: exactly one writer creates the dataset, the others commit the same files as an
    ordinary append.
    """
    check_dataset_location(uri.rsplit("/", 1)[0], storage_options)
    fragments = write_fragments(
        table, uri, schema=schema, storage_options=storage_options, enable_stable_row_ids=True
    )
    if open_table(uri, storage_options) is None:
        try:
            return lance.LanceDataset.commit(
                uri,
                lance.LanceOperation.Overwrite(schema, fragments),
                read_version=0,
                max_retries=0,
                storage_options=storage_options,
                enable_stable_row_ids=True,
            )
        except (OSError, ValueError):
            if open_table(uri, storage_options) is None:
                raise  # nobody else created it: a real failure
    latest = open_table(uri, storage_options)
    return lance.LanceDataset.commit(
        uri, lance.LanceOperation.Append(fragments), read_version=latest.version, storage_options=storage_options
    )

"""Where the two tables live under a dataset root, and how they are opened and created."""

from __future__ import annotations

import lance
import pyarrow as pa
from lance.fragment import write_fragments

from robodata.errors import NotFoundError
from robodata.format._commits import retry_transient
from robodata.format._schema import FRAMES_TABLE, GOPS_TABLE
from robodata.storage import join_uri
from robodata.storage._dataset_root import check_dataset_location
from robodata.storage._deadlines import call_with_deadline, lance_options
from robodata.storage._lance_errors import explain, is_missing_table


def gops_uri(root: str) -> str:
    return join_uri(root, GOPS_TABLE)


def frames_uri(root: str) -> str:
    return join_uri(root, FRAMES_TABLE)


def open_table(uri: str, storage_options: dict | None = None, version: int | str | None = None):
    """The Lance dataset at ``uri``, or None when nothing has been written there yet. On a remote
    store the open has a deadline, and every later request of the dataset a timeout."""
    options = lance_options(uri, storage_options)
    try:
        return call_with_deadline(uri, storage_options, lance.dataset, uri, version=version, storage_options=options)
    except ValueError as exc:
        if is_missing_table(exc):  # not a refused request: that is raised for the caller's step to say
            if version is None:
                return None
            raise NotFoundError(f"{uri}: version {version!r} not found (no such version number or tag)") from None
        raise explain(exc, uri, "opening the table") or exc from None
    except OSError as exc:  # a full disk, a damaged manifest: said for this table, not the step's
        raise explain(exc, uri, "opening the table") or exc from None


def open_frames(
    dataset_uri: str, *, storage_options: dict | None = None, version: int | str | None = None
) -> lance.LanceDataset:
    """frames.lance of the dataset at ``dataset_uri``, or a NotFoundError (a FileNotFoundError)
    saying there is no robodata dataset there, or no such version.

    >>> open_frames("data/nowhere")
    Traceback (most recent call last):
    robodata.errors.NotFoundError: no robodata dataset at data/nowhere (frames.lance does not exist)
    """
    frames = open_table(frames_uri(dataset_uri), storage_options, version)
    if frames is None:
        raise NotFoundError(f"no robodata dataset at {dataset_uri} (frames.lance does not exist)")
    return frames


def append_or_create(
    uri: str, table: pa.Table, schema: pa.Schema, storage_options: dict | None = None
) -> lance.LanceDataset:
    """Append ``table``; the first writer creates the dataset (see ``create_once``).

    A plain append cannot tell whether another writer already added the same rows: tables
    keyed by robodata (frames.lance, gops.lance) are written with ``create_once`` and then
    ``merge_insert`` on their declared key instead.
    """
    check_dataset_location(uri.rsplit("/", 1)[0], storage_options)
    created = create_once(uri, table, schema, storage_options)
    if created is not None:
        return created
    options = lance_options(uri, storage_options)
    fragments = _write_data_files(uri, table, schema, storage_options)
    latest = open_table(uri, storage_options)
    return call_with_deadline(
        uri,
        storage_options,
        lance.LanceDataset.commit,
        uri,
        lance.LanceOperation.Append(fragments),
        read_version=latest.version,
        storage_options=options,
    )


def create_once(
    uri: str, table: pa.Table, schema: pa.Schema, storage_options: dict | None = None
) -> lance.LanceDataset | None:
    """Create the dataset at ``uri`` holding ``table``; None if it exists or another writer
    created it first.

    Writers may race to create it (eight ingest processes on an empty s3:// dataset). Lance
    retries a losing ``mode="create"`` commit as an Overwrite, which would silently replace the
    winner's rows; so the data files are written first and the create is committed once, with
    no retries: exactly one writer creates the dataset, the others get None and add their rows
    to the winner's table.

    >>> rows = pa.table({"x": [1, 2]})
    >>> create_once("data/new.lance", rows, rows.schema).version
    1
    >>> create_once("data/new.lance", rows, rows.schema) is None  # it exists now
    True
    """
    if open_table(uri, storage_options) is not None:
        return None
    options = lance_options(uri, storage_options)
    fragments = _write_data_files(uri, table, schema, storage_options)

    def commit() -> lance.LanceDataset:
        return lance.LanceDataset.commit(
            uri,
            lance.LanceOperation.Overwrite(schema, fragments),
            read_version=0,
            max_retries=0,
            storage_options=options,
            enable_stable_row_ids=True,
        )

    def landed() -> lance.LanceDataset | None:  # our commit reached the store, its answer did not
        created = open_table(uri, storage_options)
        ours = {f.path for fragment in fragments for f in fragment.files}
        if created is None or {f.path for fragment in created.get_fragments() for f in fragment.data_files()} != ours:
            return None
        return created

    try:
        return retry_transient(f"creating {uri}", uri, commit, landed, storage_options=storage_options)
    except (OSError, ValueError):
        if open_table(uri, storage_options) is None:
            raise  # nobody else created it: a real failure
        return None


def _write_data_files(uri: str, table: pa.Table, schema: pa.Schema, storage_options: dict | None):
    """Write ``table``'s data files under ``uri`` (not yet part of any version), within the deadline."""
    return call_with_deadline(
        uri,
        storage_options,
        write_fragments,
        table,
        uri,
        schema=schema,
        storage_options=lance_options(uri, storage_options),
        enable_stable_row_ids=True,
    )

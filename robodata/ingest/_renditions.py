"""Writing training renditions (robodata.format._renditions): declare one in frames.lance's
schema metadata, then store its GOPs for every episode, from the full-resolution GOPs already
stored, without touching those GOPs or any frames.lance row.

>>> result = add_rendition("data/demo", "224x224")
>>> result.cameras, result.episodes, result.gops_written
(['top', 'wrist_left', 'wrist_right'], 3, 135)
>>> add_rendition("data/demo", "224x224").gops_written  # stored once: adding it again writes nothing
0
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import lance
import numpy as np
import pyarrow as pa

from robodata.codec import EncoderSettings
from robodata.codec._rendition import render_gop
from robodata.errors import CorruptGopError, InvalidArgumentError, StorageError
from robodata.format._ids import episode_filter, ref_id_filters, sql_string
from robodata.format._keys import GOPS_KEY, keyed_merge
from robodata.format._renditions import RENDITION_COLUMN, RENDITION_FIELDS, SOURCE_COLUMN, Rendition, rendition_ref_id
from robodata.format._schema import GOPS_SCHEMA, METADATA_KEY, DatasetMetadata, read_metadata, ref_columns
from robodata.format._tables import frames_uri, gops_uri, open_frames, open_table
from robodata.integrity._gop_checksums import (
    CHECKSUM_COLUMN,
    ROW_CHECKSUM_COLUMN,
    ROW_CHECKSUM_FIELDS,
    checksum_problem,
    gop_checksum,
    row_checksums,
    row_problem,
)
from robodata.storage._failures import storage_call

RENDITION_GOPS_SCHEMA = pa.schema([*GOPS_SCHEMA, *RENDITION_FIELDS])


@dataclass
class RenditionResult:
    """What adding a rendition wrote."""

    rendition: str
    cameras: list[str]
    frames_version: int  # after the declaration (unchanged if it was declared already)
    gops_version: int
    episodes: int
    gops_written: int
    bytes_written: int


def declare_rendition(
    dataset_uri: str, rendition, cameras: list[str] | None = None, storage_options: dict | None = None
) -> tuple[int, list[str]]:
    """Record ``rendition`` for ``cameras`` (all by default) in frames.lance's schema metadata:
    a metadata-only commit (a new version, no data file written). Returns (version, cameras).
    Nothing is written when every camera declares it already."""
    wanted = Rendition.parse(rendition)
    frames = open_frames(dataset_uri, storage_options=storage_options)
    meta = read_metadata(frames.schema)
    cameras = meta.camera_names if cameras is None else list(cameras)
    for camera in cameras:
        info = meta.cameras.get(camera)
        if info is None:
            raise InvalidArgumentError(f"{dataset_uri}: no camera {camera!r}; the dataset has {meta.camera_names}")
        if not wanted.fits_in(info.height, info.width) or wanted.size == (info.height, info.width):
            raise InvalidArgumentError(
                f"{dataset_uri}: rendition {wanted.name} is not smaller than camera {camera!r} ({info.width}x{info.height})"
            )
    for _ in range(5):
        missing = [c for c in cameras if wanted.name not in meta.renditions.get(c, [])]
        if not missing:
            return frames.version, cameras
        for camera in missing:
            meta.renditions[camera] = sorted({*meta.renditions.get(camera, []), wanted.name})
        storage_call(
            f"declaring rendition {wanted.name}",
            frames_uri(dataset_uri),
            storage_options,
            frames.update_schema_metadata,
            {METADATA_KEY.decode(): meta.to_json()},
        )
        # Another writer's metadata update may have landed over this one (two partitions
        # declaring different renditions at once): read it back and declare again if so.
        frames = open_frames(dataset_uri, storage_options=storage_options)
        meta = read_metadata(frames.schema)
    raise RuntimeError(f"{dataset_uri}: the rendition {wanted.name} declaration kept being overwritten; try again")


def add_rendition(
    dataset_uri: str, rendition, cameras: list[str] | None = None, storage_options: dict | None = None
) -> RenditionResult:
    """Declare ``rendition`` and store its GOPs for every episode of the latest version."""
    frames_version, cameras = declare_rendition(dataset_uri, rendition, cameras, storage_options)
    frames = open_frames(dataset_uri, storage_options=storage_options)
    name = Rendition.parse(rendition).name
    action = f"listing the episodes to add rendition {name} to"
    listed = storage_call(action, frames_uri(dataset_uri), storage_options, frames.to_table, columns=["episode_index"])
    episodes = np.unique(listed["episode_index"].to_numpy())
    written = nbytes = 0
    gops_version = 0
    for episode_index in episodes.tolist():
        n, b, gops_version = add_rendition_to_episode(dataset_uri, episode_index, rendition, storage_options)
        written, nbytes = written + n, nbytes + b
    return RenditionResult(name, cameras, frames_version, gops_version, len(episodes), written, nbytes)


def add_rendition_to_episode(
    dataset_uri: str, episode_index: int, rendition, storage_options: dict | None = None
) -> tuple[int, int, int]:
    """Store the GOPs of declared ``rendition`` for the full-resolution GOPs the episode's rows
    point at (those that lack it); returns (GOP rows written, their bytes, gops.lance version)."""
    wanted = Rendition.parse(rendition)
    frames = open_frames(dataset_uri, storage_options=storage_options)
    meta = read_metadata(frames.schema)
    cameras = [c for c in meta.camera_names if wanted.name in meta.renditions.get(c, [])]
    if not cameras:
        raise InvalidArgumentError(f"{dataset_uri}: rendition {wanted.name} is not declared; declare_rendition first")
    doing = f"adding rendition {wanted.name} to episode {episode_index}"
    rows = storage_call(
        f"{doing}: reading its rows",
        frames_uri(dataset_uri),
        storage_options,
        frames.to_table,
        columns=[ref_columns(c)[0] for c in cameras],
        filter=episode_filter(episode_index),
    )
    sources = np.unique(np.concatenate([rows[ref_columns(c)[0]].to_numpy() for c in cameras] or [[]]))
    gops = with_rendition_columns(dataset_uri, storage_options)
    have = storage_call(
        f"{doing}: finding the GOPs that have it",
        gops_uri(dataset_uri),
        storage_options,
        gops.to_table,
        columns=[SOURCE_COLUMN],
        filter=f"{episode_filter(episode_index)} AND {RENDITION_COLUMN} = {sql_string(wanted.name)}",
    )[SOURCE_COLUMN].to_numpy()
    todo = np.setdiff1d(sources, have)
    if todo.size == 0:
        return 0, 0, gops.version
    # Every column the source rows' checksum covers, so a rendition never vouches for a changed value.
    wanted_columns = [*ROW_CHECKSUM_FIELDS, ROW_CHECKSUM_COLUMN]  # gop_xxh3 among the fields
    columns = [c for c in wanted_columns if c in gops.schema.names]
    table = pa.concat_tables(
        [
            storage_call(
                f"{doing}: reading its full-resolution GOP rows",
                gops_uri(dataset_uri),
                storage_options,
                gops.to_table,
                columns=columns,
                filter=f"({f}) AND {RENDITION_COLUMN} IS NULL",
                with_row_id=True,
            )
            for f in ref_id_filters(todo)
        ]
    )
    # a missing blob reads as empty bytes and fails its checksum below, naming the GOP
    blobs = storage_call(
        f"{doing}: reading its full-resolution GOPs",
        gops_uri(dataset_uri),
        storage_options,
        lambda: [
            data or b"" for _, data in gops.read_blobs("gop", ids=table["_rowid"].to_pylist(), preserve_order=True)
        ],
    )
    new = rendition_rows(table, blobs, wanted, meta)
    return _store(gops, new, storage_options)


def write_declared_renditions(
    dataset_uri: str, gop_tables: dict[str, pa.Table], storage_options: dict | None = None
) -> int:
    """At ingest: the renditions the dataset declares, made from an episode's new GOP rows
    (``gop_tables``: camera -> rows for gops.lance, bytes in memory). Returns GOP rows written."""
    frames = open_table(frames_uri(dataset_uri), storage_options)
    if frames is None:
        return 0
    meta = read_metadata(frames.schema)
    written = 0
    for camera, table in gop_tables.items():
        for name in meta.renditions.get(camera, []):
            blobs = _blob_bytes(table["gop"])
            gops = with_rendition_columns(dataset_uri, storage_options)
            written += _store(gops, rendition_rows(table, blobs, Rendition.parse(name), meta), storage_options)[0]
    return written


def rendition_rows(source: pa.Table, blobs: list[bytes], rendition: Rendition, meta: DatasetMetadata) -> pa.Table:
    """gops.lance rows of ``rendition`` made from the full-resolution GOP rows ``source`` (their
    bytes in ``blobs``), with the dataset's encoder settings; each source checked first."""
    settings = EncoderSettings.described(meta.gop_size, meta.codec)
    records = source.to_pylist()
    for row, data in zip(records, blobs, strict=True):
        problem = checksum_problem(data, row[CHECKSUM_COLUMN], int(np.sum(row["packet_sizes"], dtype=np.int64)))
        if problem is None and row.get(ROW_CHECKSUM_COLUMN) is not None:
            problem = row_problem(row, row[ROW_CHECKSUM_COLUMN])
        if problem is not None:
            raise CorruptGopError(
                f"GOP {row['gop_index']} of episode {row['episode_index']}, camera {row['camera']!r} "
                f"(ref_id {row['ref_id']}) is corrupt: {problem}; no rendition made from it"
            )

    def render(job):
        row, data = job
        fps = meta.cameras[row["camera"]].fps
        return render_gop(data, row["packet_sizes"], row["codec"], rendition.size, fps, settings)

    workers = max(1, min(os.cpu_count() or 1, len(records)))
    with ThreadPoolExecutor(workers, thread_name_prefix="robodata-rendition") as pool:
        encoded = list(pool.map(render, zip(records, blobs, strict=True)))
    columns = {
        "ref_id": [rendition_ref_id(r["ref_id"], rendition.name) for r in records],
        "episode_index": [r["episode_index"] for r in records],
        "camera": [r["camera"] for r in records],
        "gop_index": [r["gop_index"] for r in records],
        "n_frames": [g.n_frames for g in encoded],
        "timestamps_ns": [r["timestamps_ns"] for r in records],
        "packet_sizes": [g.packet_sizes for g in encoded],
        "width": [rendition.width] * len(records),
        "height": [rendition.height] * len(records),
        "codec": [settings.codec] * len(records),
        "crf": [settings.crf] * len(records),
        "preset": [settings.preset] * len(records),
        "gop_xxh3": pa.array([gop_checksum(g.data) for g in encoded], pa.uint64()),
        "gop": lance.blob_array([g.data for g in encoded]),
        RENDITION_COLUMN: [rendition.name] * len(records),
        SOURCE_COLUMN: pa.array([r["ref_id"] for r in records], pa.int64()),
    }
    columns[ROW_CHECKSUM_COLUMN] = row_checksums(columns)
    return pa.table(columns, schema=RENDITION_GOPS_SCHEMA)


def with_rendition_columns(dataset_uri: str, storage_options: dict | None = None) -> lance.LanceDataset:
    """gops.lance with the rendition columns: added, all null, to a dataset without them (a
    schema-only commit: no data file is written and no row changes)."""
    gops = open_table(gops_uri(dataset_uri), storage_options)
    if gops is None:
        raise FileNotFoundError(f"{gops_uri(dataset_uri)} does not exist")
    missing = [f for f in RENDITION_FIELDS if f.name not in gops.schema.names]
    if missing:
        failure = None
        try:
            storage_call(
                "adding the rendition columns", gops_uri(dataset_uri), storage_options, gops.add_columns, missing
            )
        except (OSError, ValueError) as exc:
            failure = exc  # perhaps another writer added them first: looked at below
        gops = open_table(gops_uri(dataset_uri), storage_options)
        if any(f.name not in gops.schema.names for f in missing):
            if isinstance(failure, StorageError):
                raise failure  # the store refused the request or did not answer: said as such
            raise RuntimeError(f"{gops.uri}: could not add the rendition columns") from failure
    return gops


def _store(gops: lance.LanceDataset, rows: pa.Table, storage_options: dict | None) -> tuple[int, int, int]:
    """Insert rendition rows not stored yet, keyed on ref_id (derived from source and name, so a
    second writer of the same rendition inserts nothing)."""
    if rows.num_rows == 0:
        return 0, 0, gops.version
    rows = rows.select([n for n in gops.schema.names if n in rows.column_names])
    stats = storage_call(
        f"storing {rows.num_rows} GOPs of rendition {rows[RENDITION_COLUMN][0].as_py()}",
        gops.uri,
        storage_options,
        lambda: keyed_merge(gops, GOPS_KEY).when_not_matched_insert_all().execute(rows),
    )
    nbytes = int(pa.compute.sum(pa.compute.list_flatten(rows["packet_sizes"])).as_py() or 0)
    return int(stats["num_inserted_rows"]), nbytes, gops.version


def _blob_bytes(column: pa.ChunkedArray) -> list[bytes]:
    """The bytes of an in-memory ``lance.blob_array`` column (rows built at ingest)."""
    return [data for chunk in column.chunks for data in chunk.storage.field(0).to_pylist()]

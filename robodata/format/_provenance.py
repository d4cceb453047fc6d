"""Which upload each stored episode came from: its episode id, the upload's fingerprint, its
source folder and how ingest changed its camera frames (turned upright, cropped to even sizes),
kept in four frames.lance columns written in the same commit as the episode's rows.

Every row of an episode carries the same four values, so they can never disagree with the rows
they describe (a re-ingest replaces both at once) and nothing else has to be kept in step. They
are read back from the episode's first row only (``frame_index = 0``), which keeps
``stored_uploads`` cheap enough for a sensor tick.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import lance
import pyarrow as pa

from robodata.format._ids import episode_filter
from robodata.format._schema import frames_schema, read_metadata
from robodata.format._tables import frames_uri, open_table
from robodata.storage._failures import storage_call

EPISODE_ID = "episode_id"
UPLOAD_FINGERPRINT = "upload_fingerprint"
UPLOAD_URI = "upload_uri"
CAMERA_ADJUSTMENTS = "camera_adjustments"  # JSON list, null when ingest changed no frame
UPLOAD_FIELDS = (
    pa.field(EPISODE_ID, pa.string()),
    pa.field(UPLOAD_FINGERPRINT, pa.string()),
    pa.field(UPLOAD_URI, pa.string()),
    pa.field(CAMERA_ADJUSTMENTS, pa.string()),
)
UPLOAD_COLUMNS = tuple(f.name for f in UPLOAD_FIELDS)
_FIRST_ROW = "frame_index = 0"


@dataclass(frozen=True)
class StoredUpload:
    """Where a stored episode came from: ``fingerprint`` is the upload's fingerprint when it was
    ingested (see ``robodata.storage._uploads.upload_fingerprint``), ``source_uri`` its folder,
    ``camera_adjustments`` the JSON of how ingest changed its frames ("" when it changed none)."""

    episode_id: str
    episode_index: int
    fingerprint: str
    source_uri: str
    camera_adjustments: str = ""

    @property
    def adjustments(self) -> list[dict]:
        """``camera_adjustments`` parsed: one record per changed camera (see
        ``EpisodeData.camera_adjustments``).

        >>> stored_uploads("data/demo")["episode_000000"].adjustments  # the sample changed nothing
        []
        """
        return json.loads(self.camera_adjustments) if self.camera_adjustments else []


def with_upload_fields(schema: pa.Schema) -> pa.Schema:
    """``schema`` plus the upload columns it lacks (appended, so existing columns keep their place)."""
    for field in UPLOAD_FIELDS:
        if field.name not in schema.names:
            schema = schema.append(field)
    return schema


def upload_columns(
    n_rows: int, episode_id: str, fingerprint: str, source_uri: str, camera_adjustments: list[dict] | None = None
) -> dict[str, pa.Array]:
    """The upload columns for an episode of ``n_rows`` rows."""
    values = {
        EPISODE_ID: episode_id,
        UPLOAD_FINGERPRINT: fingerprint or None,
        UPLOAD_URI: source_uri or None,
        CAMERA_ADJUSTMENTS: json.dumps(camera_adjustments) if camera_adjustments else None,
    }
    return {name: pa.array([value] * n_rows, pa.string()) for name, value in values.items()}


def stored_uploads(
    root: str, *, storage_options: dict | None = None, version: int | None = None
) -> dict[str, StoredUpload]:
    """Every episode of frames.lance (latest, or ``version``) with its upload, by episode id;
    ``{}`` when there is no dataset yet.

    >>> uploads = stored_uploads("data/demo")
    >>> sorted(uploads), len(uploads["episode_000000"].fingerprint)
    (['episode_000000', 'episode_000001', 'episode_000002'], 16)
    """
    frames = open_table(frames_uri(root), storage_options, version)
    if frames is None:
        return {}
    return {
        u.episode_id: u
        for u in storage_call("reading stored uploads", frames_uri(root), storage_options, _read, frames, _FIRST_ROW)
    }


def stored_episodes(
    root: str, *, storage_options: dict | None = None, version: int | None = None
) -> dict[int, StoredUpload]:
    """Every episode of frames.lance (latest, or ``version``) by episode_index, with where it came
    from; ``{}`` when there is no dataset yet.

    >>> first = stored_episodes("data/demo")[0]
    >>> first.episode_id, first.source_uri.endswith("uploads/episode_000000")
    ('episode_000000', True)
    """
    frames = open_table(frames_uri(root), storage_options, version)
    if frames is None:
        return {}
    stored = storage_call("reading stored episodes", frames_uri(root), storage_options, _read, frames, _FIRST_ROW)
    return {u.episode_index: u for u in stored}


def stored_upload_of(frames: lance.LanceDataset, episode_index: int) -> StoredUpload | None:
    """The upload behind ``episode_index`` in ``frames``; None if the episode is not stored."""
    rows = _read(frames, f"{_FIRST_ROW} AND {episode_filter(episode_index)}")
    return rows[0] if rows else None


def _read(frames: lance.LanceDataset, where: str) -> list[StoredUpload]:
    table = frames.to_table(columns=["episode_index", *UPLOAD_COLUMNS], filter=where)
    return [
        StoredUpload(
            episode_id=row[EPISODE_ID],
            episode_index=int(row["episode_index"]),
            fingerprint=row[UPLOAD_FINGERPRINT] or "",
            source_uri=row[UPLOAD_URI] or "",
            camera_adjustments=row[CAMERA_ADJUSTMENTS] or "",
        )
        for row in table.to_pylist()
    ]


def label_columns(schema: pa.Schema) -> list[str]:
    """The annotation (label) columns of a frames.lance schema: every column that is neither
    recorded from the upload, nor its provenance, nor a pointer at camera frames.

    >>> label_columns(ds.lance_dataset.schema)  # no labels yet
    []
    >>> _ = robodata.add_annotations("data/demo", pa.table({"episode_index": [0], "frame_index": [5], "success": [True]}))
    >>> label_columns(robodata.open("data/demo").lance_dataset.schema)
    ['success']
    """
    recorded = set(frames_schema(read_metadata(schema)).names) | set(UPLOAD_COLUMNS)
    return [name for name in schema.names if name not in recorded]

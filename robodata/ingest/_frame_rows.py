"""An episode's rows for frames.lance: one per control step, each pointing at the camera frame
nearest in time, in the dataset's schema (the episode's schema metadata, its extra columns, and
nulls for annotation columns added later).

>>> from robodata.ingest._upload import read_upload
>>> from robodata.ingest._writer import write_gops
>>> episode = read_upload("uploads/episode_000000")
>>> staged = write_gops(episode, "data/demo")  # where each camera's frames are: the layouts
>>> rows = build_rows(episode, staged.cameras, frames_schema(dataset_metadata(episode, staged.settings)))
>>> rows.num_rows, rows["frame_index"][-1].as_py()
(197, 196)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from robodata.codec import EncoderSettings
from robodata.errors import IncompatibleEpisodeError
from robodata.format._alignment import nearest_frames
from robodata.format._provenance import with_upload_fields
from robodata.format._schema import (
    CAMERA_ORDER,
    CameraInfo,
    DatasetMetadata,
    episode_text,
    frames_schema,
    read_metadata,
    ref_columns,
)
from robodata.format._tables import frames_uri, open_table
from robodata.ingest._camera_encoding import CameraGops
from robodata.ingest._episode import EpisodeData
from robodata.storage._failures import storage_step


def dataset_metadata(episode: EpisodeData, settings: EncoderSettings) -> DatasetMetadata:
    return DatasetMetadata(
        control_hz=episode.control_hz,
        joint_names=list(episode.joint_names),
        cameras={c.name: CameraInfo(c.width, c.height, c.fps) for c in episode.cameras},
        gop_size=settings.gop_size,
        codec=settings.describe(),
        robot_type=episode.robot_type,
        # The episode's camera order (episode.json's, a LeRobot dataset's features'), kept apart
        # because DatasetMetadata.to_json sorts the cameras mapping's keys. Only the first episode's
        # order is kept: a later one joins the dataset's schema (episode_frames_schema).
        extra={**episode.extra_metadata, CAMERA_ORDER: [c.name for c in episode.cameras]},
    )


def build_rows(episode: EpisodeData, cameras: dict[str, CameraGops], schema: pa.Schema) -> pa.Table:
    """One frames.lance row per control step, each pointing at its nearest frame per camera."""
    n, joints = len(episode), len(episode.joint_names)
    columns: dict[str, object] = {
        "episode_index": np.full(n, episode.episode_index, dtype=np.int64),
        "frame_index": np.arange(n, dtype=np.int64),
        "timestamp_ns": episode.timestamps_ns.astype(np.int64),
        "task": episode_text(episode.task, n),
        "split": [episode.split] * n,
        "observation_state": pa.FixedSizeListArray.from_arrays(
            pa.array(episode.observation_state.reshape(-1), pa.float32()), joints
        ),
        "action": pa.FixedSizeListArray.from_arrays(pa.array(episode.action.reshape(-1), pa.float32()), joints),
        "language_instruction": episode_text(episode.language_instruction, n),
        "source": episode.source if episode.source is not None else ["human"] * n,
        "is_intervention": (
            episode.is_intervention
            if episode.is_intervention is not None
            else np.asarray([s == "intervention" for s in (episode.source or ["human"] * n)])
        ),
    }
    for camera, layout in cameras.items():  # the schema puts the columns in the dataset's order
        frame_times = np.asarray(layout.frame_times_ns, dtype=np.int64)
        frame = nearest_frames(episode.timestamps_ns, frame_times, layout.fps, _source_of(episode, camera))
        n_frames = np.asarray(layout.n_frames, dtype=np.int64)
        gop_start = np.concatenate([[0], np.cumsum(n_frames)[:-1]])
        gop = np.searchsorted(gop_start, frame, side="right") - 1
        ref_id, gop_index, in_gop = ref_columns(camera)
        columns[ref_id] = np.asarray(layout.ref_ids, dtype=np.int64)[gop]
        columns[gop_index] = gop.astype(np.int32)
        columns[in_gop] = (frame - gop_start[gop]).astype(np.int32)
    columns.update(episode.extra_columns)
    return pa.table(columns, schema=schema)


def _source_of(episode: EpisodeData, camera: str) -> str:
    return next(c.source for c in episode.cameras if c.name == camera)


def episode_frames_schema(
    episode: EpisodeData, meta: DatasetMetadata, dataset_uri: str, storage_options: dict | None
) -> pa.Schema:
    """The frames.lance schema ``episode`` will be written with; IncompatibleEpisodeError if the
    dataset's cameras, joints or GOP size differ from the episode's."""
    with storage_step("reading the dataset's schema", frames_uri(dataset_uri), storage_options):
        frames = open_table(frames_uri(dataset_uri), storage_options)
    if frames is None:
        return with_upload_fields(with_extra_fields(frames_schema(meta), episode))
    problems = read_metadata(frames.schema, dataset_uri).compatible_with(meta)
    if problems:
        raise IncompatibleEpisodeError(f"{episode.origin or episode.episode_id}: " + "; ".join(problems))
    return frames.schema


def with_extra_fields(schema: pa.Schema, episode: EpisodeData) -> pa.Schema:
    for name, values in episode.extra_columns.items():
        schema = schema.append(pa.field(name, values.type))
    return schema


def conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` in the dataset's column order, with nulls for annotation columns added later."""
    columns = []
    for field in schema:
        if field.name in rows.column_names:
            columns.append(rows[field.name].cast(field.type))
        else:
            columns.append(pa.nulls(rows.num_rows, field.type))
    extra = set(rows.column_names) - set(schema.names)
    if extra:
        raise IncompatibleEpisodeError(f"episode has columns the dataset lacks: {sorted(extra)}")
    return pa.table(columns, schema=schema)

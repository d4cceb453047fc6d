"""Integrity checks on one stored episode: each returns an IntegrityResult saying what held and
what did not, so any orchestrator (or a person at a prompt) can report it. ``RowRefs`` joins
rows with the gops.lance rows they point at; the ingest audit and ``robodata verify`` use it too.

>>> check_references("data/demo", 0).passed
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from robodata.format._alignment import alignment_tolerance_ns
from robodata.format._ids import episode_filter, ref_id_filters
from robodata.format._schema import GOPS_SCHEMA, METADATA_KEY, DatasetMetadata, read_metadata, ref_columns
from robodata.format._tables import frames_uri, gops_uri, open_frames, open_table
from robodata.storage._failures import storage_call

REQUIRED_METADATA = (
    "control_hz",
    "joint_names",
    "cameras",
    "camera_fps",
    "gop_size",
    "codec",
    "format_version",
)
REQUIRED_CODEC = ("name", "crf", "preset")


@dataclass
class IntegrityResult:
    passed: bool
    description: str
    details: Mapping[str, object] = field(default_factory=dict)


def check_schema_metadata(dataset_uri: str, storage_options: dict | None = None) -> IntegrityResult:
    """frames.lance's schema metadata names everything a reader needs, and every camera it lists
    has its three reference columns."""
    frames = open_frames(dataset_uri, storage_options=storage_options)
    raw = (frames.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        return IntegrityResult(False, "frames.lance has no robodata schema metadata")
    body = json.loads(raw)
    problems = [f"missing {key!r}" for key in REQUIRED_METADATA if key not in body]
    if not problems:
        problems += _metadata_problems(body, frames.schema)
    if problems:
        return IntegrityResult(False, "schema metadata is incomplete: " + "; ".join(problems))
    return IntegrityResult(
        True,
        "schema metadata is complete",
        {"cameras": sorted(body["cameras"]), "control_hz": body["control_hz"], "gop_size": body["gop_size"]},
    )


def _metadata_problems(body: dict, schema: pa.Schema) -> list[str]:
    problems = []
    if not body["control_hz"] or body["control_hz"] <= 0:
        problems.append("control_hz is not positive")
    if not body["joint_names"]:
        problems.append("joint_names is empty")
    elif schema.field("observation_state").type.list_size != len(body["joint_names"]):
        problems.append("observation_state width differs from the number of joint names")
    if not body["cameras"]:
        problems.append("no cameras")
    for name, camera in body["cameras"].items():
        if not all(camera.get(k, 0) > 0 for k in ("width", "height", "fps")):
            problems.append(f"camera {name!r} lacks a positive width, height or fps")
        if body["camera_fps"].get(name) != camera.get("fps"):
            problems.append(f"camera_fps has no matching entry for {name!r}")
        missing = [c for c in ref_columns(name) if c not in schema.names]
        if missing:
            problems.append(f"camera {name!r} has no columns {missing}")
    if not isinstance(body["gop_size"], int) or body["gop_size"] < 1:
        problems.append("gop_size is not a positive integer")
    problems += [f"codec lacks {key!r}" for key in REQUIRED_CODEC if key not in body["codec"]]
    return problems


def check_references(dataset_uri: str, episode_index: int, storage_options: dict | None = None) -> IntegrityResult:
    """Every row's camera references resolve to a gops.lance row of the same episode and camera
    whose gop_index matches and which holds the referenced frame."""
    refs = RowRefs.of_episode(dataset_uri, episode_index, storage_options)
    return references_result(refs, f"episode {episode_index}")


def references_result(refs: RowRefs, label: str) -> IntegrityResult:
    """``check_references`` on any set of rows (an episode, a staged episode, a whole version)."""
    bad: dict[str, int] = {}
    for camera in refs.cameras:
        ok = refs.resolved(camera) & refs.consistent(camera)
        if not ok.all():
            bad[camera] = int((~ok).sum())
    details = {"rows": refs.rows, "cameras": refs.cameras}
    if bad:
        first = min((refs.first_bad_row(c) for c in bad), key=lambda at: (at[0], at[1]))
        at = f"frame_index {first[1]}"
        if len(np.unique(refs.episode)) > 1:
            at = f"episode {first[0]}, {at}"
        return IntegrityResult(
            False,
            f"{label}: rows point at GOPs that are missing or belong elsewhere (per camera {bad}; first at {at})",
            {**details, "bad_references": bad},
        )
    return IntegrityResult(True, f"{label}: all {refs.rows} rows' references resolve", details)


def check_alignment(dataset_uri: str, episode_index: int, storage_options: dict | None = None) -> IntegrityResult:
    """Every row's frame is within one camera period of the row's time (half a period, plus
    half a period of frame-time jitter)."""
    refs = RowRefs.of_episode(dataset_uri, episode_index, storage_options)
    return alignment_result(refs, f"episode {episode_index}")


def alignment_result(refs: RowRefs, label: str) -> IntegrityResult:
    """``check_alignment`` on any set of rows."""
    worst_ms: dict[str, float] = {}
    problems = []
    for camera in refs.cameras:
        usable = refs.resolved(camera) & refs.consistent(camera)
        if not usable.all():
            problems.append(f"{camera}: {int((~usable).sum())} rows have unresolved references")
            continue
        error = np.abs(refs.row_times - refs.frame_times(camera))
        worst_ms[camera] = round(float(error.max()) / 1e6, 3) if len(error) else 0.0
        tolerance = alignment_tolerance_ns(refs.fps[camera])
        if (error > tolerance).any():
            problems.append(f"{camera}: a row is {worst_ms[camera]} ms from its frame (limit {tolerance / 1e6:.1f} ms)")
    details = {"max_error_ms": worst_ms}
    if problems:
        return IntegrityResult(False, f"{label}: " + "; ".join(problems), details)
    return IntegrityResult(True, f"{label}: every row is within one camera period", details)


def check_row_count(
    dataset_uri: str, episode_index: int, expected_rows: int, storage_options: dict | None = None
) -> IntegrityResult:
    """The episode has exactly ``expected_rows`` rows (its upload's state samples)."""
    frames = open_frames(dataset_uri, storage_options=storage_options)
    counting = f"counting episode {episode_index}'s rows"
    rows = storage_call(
        counting, frames_uri(dataset_uri), storage_options, frames.count_rows, episode_filter(episode_index)
    )
    return row_count_result(rows, expected_rows, f"episode {episode_index}")


def row_count_result(rows: int, expected_rows: int, label: str) -> IntegrityResult:
    """``check_row_count`` on a number of rows already known."""
    details = {"rows": rows, "expected_rows": expected_rows}
    if rows != expected_rows:
        return IntegrityResult(False, f"{label} has {rows} rows, its upload {expected_rows}", details)
    return IntegrityResult(True, f"{label} has all {rows} rows", details)


def check_sample_decodes(ds: Any, episode_index: int, samples: int = 8, seed: int = 0) -> IntegrityResult:
    """``samples`` random rows of the episode decode, every camera, to the recorded frame size,
    read through ``ds``, an opened dataset (``robodata.open(uri)``): the caller opens it, so this
    room stays below the reader that imports it for its checksums.

    >>> check_sample_decodes(robodata.open("data/demo"), 0).passed
    True
    """
    positions = np.flatnonzero(ds.to_table(columns=["episode_index"])["episode_index"].to_numpy() == episode_index)
    if len(positions) == 0:
        return IntegrityResult(False, f"episode {episode_index} has no rows")
    chosen = np.sort(np.random.default_rng(seed).choice(positions, min(samples, len(positions)), replace=False))
    try:
        frames = ds.get_frames(chosen)
    except (KeyError, ValueError, OSError) as exc:  # missing GOPs, undecodable bytes
        return IntegrityResult(False, f"episode {episode_index}: sampled frames do not decode ({exc})")
    wrong = {}
    for camera, column in zip(ds.cameras, ds.image_columns, strict=True):
        info = ds.metadata.cameras[camera]
        if frames[column].shape[1:] != (info.height, info.width, 3):
            wrong[camera] = f"{frames[column].shape[1:]} != {(info.height, info.width, 3)}"
    details = {"sampled_rows": len(chosen)}
    if wrong:
        return IntegrityResult(False, f"episode {episode_index}: decoded frames have the wrong size {wrong}", details)
    return IntegrityResult(
        True, f"episode {episode_index}: {len(chosen)} sampled rows decode to the recorded size", details
    )


class RowRefs:
    """Rows (of one episode, a staged episode or a whole version) joined, per camera, with the
    gops.lance rows they reference.

    >>> bool(RowRefs.of_episode("data/demo", 0).resolved("top").all())
    True
    """

    def __init__(self, rows: pa.Table, meta: DatasetMetadata, gops: pa.Table) -> None:
        self.cameras = sorted(meta.cameras)
        self.fps = {c: meta.cameras[c].fps for c in self.cameras}
        self.rows = rows.num_rows
        self.episode = rows["episode_index"].to_numpy()
        self.frame_index = rows["frame_index"].to_numpy()
        self.row_times = rows["timestamp_ns"].to_numpy()
        self._refs = {cam: [rows[c].to_numpy() for c in ref_columns(cam)] for cam in self.cameras}
        self._ids = gops["ref_id"].to_numpy()
        self._camera = gops["camera"].to_numpy(zero_copy_only=False)
        self._episode = gops["episode_index"].to_numpy()
        self._gop_index = gops["gop_index"].to_numpy()
        self._n_frames = gops["n_frames"].to_numpy()
        times = gops["timestamps_ns"].combine_chunks()
        self._times_start = times.offsets.to_numpy()[:-1]
        self._times = times.values.to_numpy()

    @classmethod
    def of_rows(
        cls, dataset_uri: str, rows: pa.Table, meta: DatasetMetadata, storage_options: dict | None = None
    ) -> RowRefs:
        """``rows`` (frames.lance columns, committed or not) against gops.lance at ``dataset_uri``."""
        refs = [rows[ref_columns(c)[0]].to_numpy() for c in meta.cameras]
        wanted = np.unique(np.concatenate(refs)) if refs else np.zeros(0, np.int64)
        return cls(rows, meta, _gop_rows(dataset_uri, wanted, storage_options))

    @classmethod
    def of_episode(cls, dataset_uri: str, episode_index: int, storage_options: dict | None = None) -> RowRefs:
        frames = open_frames(dataset_uri, storage_options=storage_options)
        return cls.of_table(dataset_uri, frames, episode_filter(episode_index), storage_options)

    @classmethod
    def of_table(cls, dataset_uri: str, frames, filter: str | None, storage_options: dict | None = None) -> RowRefs:
        """The rows of ``frames`` (frames.lance at some version) that ``filter`` selects."""
        meta = read_metadata(frames.schema)
        columns = ["episode_index", "frame_index", "timestamp_ns"]
        columns += [c for cam in sorted(meta.cameras) for c in ref_columns(cam)]
        rows = storage_call(
            "reading row references",
            frames_uri(dataset_uri),
            storage_options,
            frames.to_table,
            columns=columns,
            filter=filter,
        )
        return cls.of_rows(dataset_uri, rows, meta, storage_options)

    def _lookup(self, camera: str) -> tuple[np.ndarray, np.ndarray]:
        ref_id = self._refs[camera][0]
        if len(self._ids) == 0:
            return np.zeros(len(ref_id), np.int64), np.zeros(len(ref_id), bool)
        pos = np.clip(np.searchsorted(self._ids, ref_id), 0, len(self._ids) - 1)
        return pos, self._ids[pos] == ref_id

    def resolved(self, camera: str) -> np.ndarray:
        return self._lookup(camera)[1]

    def consistent(self, camera: str) -> np.ndarray:
        pos, found = self._lookup(camera)
        if len(self._ids) == 0:
            return found
        _, gop_index, in_gop = self._refs[camera]
        return (
            found
            & (self._camera[pos] == camera)
            & (self._episode[pos] == self.episode)
            & (self._gop_index[pos] == gop_index)
            & (in_gop >= 0)
            & (in_gop < self._n_frames[pos])
        )

    def frame_times(self, camera: str) -> np.ndarray:
        """The camera timestamp of each row's frame; only meaningful where references are consistent."""
        pos, _ = self._lookup(camera)
        return self._times[self._times_start[pos] + self._refs[camera][2]]

    def first_bad_row(self, camera: str) -> tuple[int, int]:
        """(episode_index, frame_index) of the first row whose reference does not hold."""
        bad = np.flatnonzero(~(self.resolved(camera) & self.consistent(camera)))
        first = bad[np.lexsort((self.frame_index[bad], self.episode[bad]))[0]]
        return int(self.episode[first]), int(self.frame_index[first])


def _gop_rows(dataset_uri: str, ref_ids: np.ndarray, storage_options: dict | None) -> pa.Table:
    """The small columns of the gops.lance rows with ``ref_ids``, sorted by ref_id."""
    columns = ["ref_id", "episode_index", "camera", "gop_index", "n_frames", "timestamps_ns"]
    gops = open_table(gops_uri(dataset_uri), storage_options)
    if gops is None or len(ref_ids) == 0:
        return pa.schema([GOPS_SCHEMA.field(c) for c in columns]).empty_table()
    if len(ref_ids) > 20_000:  # most of the table (a whole version): one scan beats many filters
        table = storage_call("reading GOP rows", gops_uri(dataset_uri), storage_options, gops.to_table, columns=columns)
        table = table.filter(pc.is_in(table["ref_id"], pa.array(ref_ids, pa.int64())))
        return table.sort_by("ref_id").combine_chunks()
    read = gops.to_table
    parts = [
        storage_call("reading GOP rows", gops_uri(dataset_uri), storage_options, read, columns=columns, filter=f)
        for f in ref_id_filters(ref_ids)
    ]
    return pa.concat_tables(parts).sort_by("ref_id").combine_chunks()

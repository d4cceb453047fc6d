"""The upload format: one folder per episode, read into an EpisodeData.

```
<uploads>/<episode_id>/
    states.parquet   timestamp_ns (int64, ns since episode start), observation_state and
                     action (lists of float, one value per joint); optional source
                     (human | policy | intervention) and is_intervention (bool); no other column
    <camera>.<ext>   one video per camera, any container and codec FFmpeg decodes
    episode.json     written last: its presence marks the upload complete
```

episode.json holds ``episode_index`` (int), ``task``, ``language_instruction``, ``split``,
``robot_type``, ``joint_names``, ``control_hz`` and ``cameras``: a mapping from camera name
to ``{"file": "<camera>.mp4"}`` (optionally ``"start_offset_ns"``). The order of ``cameras`` is
the order the dataset lists its cameras in (``RoboDataset.cameras``, LeRobot's ``camera_keys``),
as the first episode ingested into the dataset lists them.

Only regular files inside the folder are read, each under a size and a time limit
(``_upload_limits``); docs/reliability.md ("What bad input gets") states every rule an upload must follow.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from robodata.errors import BadUploadError
from robodata.format._ids import validate_episode_id, validate_episode_index
from robodata.ingest._episode import EpisodeData
from robodata.ingest._upload_limits import (
    MAX_STATES_BYTES,
    MAX_VIDEO_BYTES,
    check_episode_json_limits,
    check_file_size,
    check_rows_per_second,
    float_matrix,
    parse_episode_json,
    read_episode_json_text,
    shown_keys,
)
from robodata.ingest._validation import check_control_rate, check_signals
from robodata.ingest._video_source import probe_camera
from robodata.storage import fsspec_filesystem, is_remote
from robodata.storage._arrow_input import arrow_input
from robodata.storage._failures import in_storage_step
from robodata.storage._uploads import local_file_problem, upload_fingerprint

EPISODE_JSON = "episode.json"
STATES_FILE = "states.parquet"
VIDEO_SUFFIXES = (".mp4", ".mkv", ".mov", ".avi", ".webm", ".h264", ".264", ".ts")
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "episode_index": int,
    "joint_names": list,
    "control_hz": (int, float),
    "cameras": dict,
}
_OPTIONAL_TEXT = ("task", "language_instruction", "split", "robot_type")
# The columns states.parquet may hold; any other is refused, as episode.json's unknown keys are:
# a misspelt "is_interventon" would otherwise be dropped without a word.
STATES_COLUMNS = ("timestamp_ns", "observation_state", "action", "source", "is_intervention")
# Faster than this is a typo or an overflow, not a robot's control loop.
MAX_CONTROL_HZ = 100_000.0
# A camera that started more than a day before or after the states is not the same episode.
MAX_START_OFFSET_NS = 24 * 3600 * 10**9
_NOT_A_FILE_NAME = ("", ".", "..")


def episode_id_of(upload: str) -> str:
    return posixpath.basename(str(upload).rstrip("/"))


@in_storage_step("reading the upload")
def read_upload(
    upload: str, storage_options: dict[str, str] | None = None, uploads_root: str | None = None
) -> EpisodeData:
    """Validate the upload folder ``upload`` and return its episode (videos are decoded later).

    >>> episode = read_upload("uploads/episode_000000")
    >>> episode.episode_id, episode.episode_index, len(episode), [c.name for c in episode.cameras]
    ('episode_000000', 0, 197, ['top', 'wrist_left', 'wrist_right'])
    """
    upload = str(upload).rstrip("/")
    fs = fsspec_filesystem(upload, storage_options)
    if uploads_root is not None:
        _check_inside(upload, uploads_root)
    try:
        episode_id = validate_episode_id(episode_id_of(upload))
    except ValueError as exc:
        raise BadUploadError(upload, str(exc)) from None
    _check_folder(fs, upload, uploads_root)
    meta_path = posixpath.join(upload, EPISODE_JSON)
    _check_readable(fs, upload, meta_path)
    meta = _read_episode_json(fs, meta_path)
    states_path = posixpath.join(upload, STATES_FILE)
    _check_readable(fs, upload, states_path, MAX_STATES_BYTES)
    for spec in meta["cameras"].values():
        _check_readable(fs, upload, posixpath.join(upload, spec["file"]), MAX_VIDEO_BYTES)
    # Taken before the files are read: if they change meanwhile, the stored fingerprint is stale
    # and the upload sensor ingests the upload again.
    fingerprint = upload_fingerprint(upload, storage_options)
    timestamps, state, action, source, intervention = _read_states(fs, states_path, float(meta["control_hz"]))
    check_signals(states_path, timestamps, state, action, len(meta["joint_names"]), source)
    check_control_rate(meta_path, float(meta["control_hz"]), states_path, timestamps)
    cameras = _read_cameras(fs, upload, meta["cameras"])
    text: dict[str, Any] = {key: str(meta.get(key, "train" if key == "split" else "")) for key in _OPTIONAL_TEXT}
    return EpisodeData(
        episode_id=episode_id,
        episode_index=meta["episode_index"],
        control_hz=float(meta["control_hz"]),
        joint_names=[str(j) for j in meta["joint_names"]],
        timestamps_ns=timestamps,
        observation_state=state,
        action=action,
        cameras=cameras,
        source=source,
        is_intervention=intervention,
        origin=upload,
        fingerprint=fingerprint,
        **text,
    )


def _check_inside(upload: str, uploads_root: str) -> None:
    root = posixpath.normpath(str(uploads_root).rstrip("/"))
    path = posixpath.normpath(upload)
    if not is_remote(upload) and not is_remote(root):  # a relative root and an absolute path may agree
        root, path = os.path.abspath(root), os.path.abspath(path)
    if posixpath.dirname(path) != root:
        raise BadUploadError(upload, f"upload path is not a folder directly inside {uploads_root}")


def _check_folder(fs, upload: str, uploads_root: str | None) -> None:
    """The upload is a folder that really lives where its path says (not a link elsewhere)."""
    if not fs.isdir(upload):
        problem = "is a file, not an upload folder" if fs.exists(upload) else "upload folder does not exist"
        raise BadUploadError(upload, problem)
    if is_remote(upload):
        return  # object stores have no symbolic links
    parent = os.path.realpath(uploads_root if uploads_root is not None else os.path.dirname(upload) or ".")
    real = os.path.realpath(upload)
    if os.path.dirname(real) != parent:
        raise BadUploadError(upload, f"upload folder is a symbolic link to {real}, outside {parent}")


def _check_readable(fs, upload: str, path: str, max_bytes: int | None = None) -> None:
    """Only regular files inside the upload are read, each at most ``max_bytes``: a symbolic link
    out of the folder would copy whatever it points at (another episode, a file of the host)
    into the dataset, and a FIFO or a device (``/dev/zero``) would hold the ingest forever.
    Checked before anything of the upload is read; a missing file is the reader's to name."""
    if not is_remote(path):
        problem = local_file_problem(path, upload)
        if problem:
            raise BadUploadError(path, problem)
    if max_bytes is not None:
        try:
            info = fs.info(path)
        except FileNotFoundError:
            return
        if info.get("type") != "directory":
            check_file_size(path, info.get("size"), max_bytes)


def _read_episode_json(fs, path: str) -> dict:
    try:
        size = fs.size(path)  # refused before it is read when too large
        with fs.open(path, "rb") as handle:
            meta = parse_episode_json(path, read_episode_json_text(path, handle, size))
    except FileNotFoundError:
        raise BadUploadError(path, "is missing: the upload is incomplete") from None
    except IsADirectoryError:
        raise BadUploadError(path, "is a directory, not a JSON file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadUploadError(path, f"is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise BadUploadError(path, "must hold a JSON object")
    check_episode_json_limits(path, meta)
    missing = sorted(set(_REQUIRED) - set(meta))
    if missing:
        raise BadUploadError(path, f"is missing required keys {missing}")
    for key, kind in _REQUIRED.items():
        if not isinstance(meta[key], kind) or isinstance(meta[key], bool):
            raise BadUploadError(path, f"{key!r} has the wrong type ({type(meta[key]).__name__})")
    try:
        validate_episode_index(meta["episode_index"])
    except ValueError as exc:
        raise BadUploadError(path, str(exc)) from None
    joints = meta["joint_names"]
    if not joints or not all(isinstance(j, str) and j for j in joints) or len(set(joints)) != len(joints):
        raise BadUploadError(path, "'joint_names' must be a non-empty list of distinct, non-empty strings")
    hz = meta["control_hz"]
    if not (math.isfinite(hz) and 0 < hz <= MAX_CONTROL_HZ):
        raise BadUploadError(path, f"'control_hz' must be a finite number in (0, {MAX_CONTROL_HZ:g}] Hz, got {hz!r}")
    for key in _OPTIONAL_TEXT:
        if key in meta and not isinstance(meta[key], str):
            raise BadUploadError(path, f"{key!r} must be a string, got {type(meta[key]).__name__}")
    if not meta["cameras"]:
        raise BadUploadError(path, "lists no cameras")
    for name, spec in meta["cameras"].items():
        _check_camera_spec(path, name, spec)
    return meta


def _check_camera_spec(path: str, name: str, spec: object) -> None:
    try:
        validate_episode_id(name)
    except ValueError:
        raise BadUploadError(path, f"invalid camera name {name!r}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("file"), str):
        raise BadUploadError(path, f"camera {name!r} needs a 'file' entry")
    file = spec["file"]
    if file in _NOT_A_FILE_NAME or posixpath.basename(file) != file or "\\" in file:
        raise BadUploadError(
            path, f"camera {name!r} file must be inside the upload folder (a plain file name), got {file!r}"
        )
    if "start_offset_ns" in spec:
        offset = spec["start_offset_ns"]
        if isinstance(offset, bool) or not isinstance(offset, int) or abs(offset) > MAX_START_OFFSET_NS:
            raise BadUploadError(
                path,
                f"camera {name!r} 'start_offset_ns' must be an integer number of nanoseconds within "
                f"one day, got {offset!r}",
            )


def _read_states(fs, path: str, control_hz: float):
    try:
        states = pq.ParquetFile(arrow_input(fs, path))  # not the file object: see arrow_input
        columns = set(states.schema_arrow.names)
        unknown = sorted(columns - set(STATES_COLUMNS))
        if unknown:  # before any value is read
            raise BadUploadError(path, f"has unknown columns {shown_keys(unknown)}; known: {sorted(STATES_COLUMNS)}")
        if (
            "timestamp_ns" in columns and states.metadata.num_rows > 2
        ):  # 8 bytes a row: how many rows per second, before the values
            check_rows_per_second(
                path, _timestamps(path, states.read(columns=["timestamp_ns"])["timestamp_ns"]), control_hz
            )
        table = states.read()
    except BadUploadError:
        raise
    except FileNotFoundError:
        raise BadUploadError(path, "is missing") from None
    except IsADirectoryError:
        raise BadUploadError(path, "is a directory, not a Parquet file") from None
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise BadUploadError(path, f"is not a readable Parquet file ({exc})") from None
    missing = {"timestamp_ns", "observation_state", "action"} - set(table.column_names)
    if missing:
        raise BadUploadError(path, f"is missing columns {sorted(missing)}")
    if table.num_rows == 0:
        raise BadUploadError(path, "has no state samples (0 rows)")
    timestamps = _timestamps(path, table["timestamp_ns"])
    state = float_matrix(path, "observation_state", table["observation_state"])
    action = float_matrix(path, "action", table["action"])
    source = _column(path, table, "source", pa.types.is_string)
    flags = _column(path, table, "is_intervention", pa.types.is_boolean)
    intervention = None if flags is None else np.asarray(flags, dtype=bool)
    return timestamps, state, action, source, intervention


def _timestamps(path: str, column) -> np.ndarray:
    if not pa.types.is_integer(column.type):
        raise BadUploadError(path, f"timestamp_ns must be integer nanoseconds, got {column.type}")
    if column.null_count:
        raise BadUploadError(path, f"timestamp_ns has {column.null_count} null values")
    try:
        return column.cast(pa.int64(), safe=True).to_numpy()
    except pa.ArrowInvalid:
        raise BadUploadError(
            path, f"timestamp_ns ({column.type}) has values beyond the int64 range (2^63 ns)"
        ) from None


def _column(path: str, table: pa.Table, name: str, is_kind) -> list | None:
    """An optional column's values, refused unless every value is present and of its type
    (a string "false" must not become True)."""
    if name not in table.column_names:
        return None
    column = table[name]
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if not is_kind(column.type):
        expected = "boolean" if name == "is_intervention" else "string"
        raise BadUploadError(path, f"{name} must be {expected}, got {column.type}")
    values = column.to_pylist()
    if column.null_count:
        raise BadUploadError(path, f"{name} has a null value at sample {values.index(None)}")
    return values


def _read_cameras(fs, upload: str, cameras: dict) -> list:
    listed = {spec["file"] for spec in cameras.values()}
    for path in fs.ls(upload, detail=False):
        name = posixpath.basename(path)
        if name.lower().endswith(VIDEO_SUFFIXES) and name not in listed:
            raise BadUploadError(posixpath.join(upload, name), "video file for a camera not listed in episode.json")
    return [
        probe_camera(
            name,
            posixpath.join(upload, spec["file"]),
            fs,
            int(spec.get("start_offset_ns", 0)),
        )
        for name, spec in cameras.items()  # episode.json's order: the order the dataset lists them
    ]

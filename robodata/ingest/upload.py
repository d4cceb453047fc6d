"""The upload format: one folder per episode, read into an EpisodeData.

```
<uploads>/<episode_id>/
    states.parquet   timestamp_ns (int64, ns since episode start), observation_state and
                     action (lists of float, one value per joint); optional source
                     (human | policy | intervention) and is_intervention (bool)
    <camera>.<ext>   one video per camera, any container and codec FFmpeg decodes
    episode.json     written last: its presence marks the upload complete
```

episode.json holds ``episode_index`` (int), ``task``, ``language_instruction``, ``split``,
``robot_type``, ``joint_names``, ``control_hz`` and ``cameras``: a mapping from camera name
to ``{"file": "<camera>.mp4"}`` (optionally ``"start_offset_ns"``).
"""

from __future__ import annotations

import json
import posixpath

import numpy as np
import pyarrow.parquet as pq

from robodata.errors import BadUploadError
from robodata.format.ids import validate_episode_id, validate_episode_index
from robodata.ingest.episode import EpisodeData
from robodata.ingest.validation import check_signals
from robodata.ingest.video_source import probe_camera
from robodata.storage import fsspec_filesystem
from robodata.storage.failures import in_storage_step
from robodata.storage.uploads import upload_fingerprint

EPISODE_JSON = "episode.json"
STATES_FILE = "states.parquet"
VIDEO_SUFFIXES = (".mp4", ".mkv", ".mov", ".avi", ".webm", ".h264", ".264", ".ts")
_REQUIRED = {
    "episode_index": int,
    "joint_names": list,
    "control_hz": (int, float),
    "cameras": dict,
}
_OPTIONAL_TEXT = ("task", "language_instruction", "split", "robot_type")


def episode_id_of(upload: str) -> str:
    return posixpath.basename(str(upload).rstrip("/"))


@in_storage_step("reading the upload")
def read_upload(
    upload: str, storage_options: dict[str, str] | None = None, uploads_root: str | None = None
) -> EpisodeData:
    """Validate the upload folder ``upload`` and return its episode (videos are decoded later).

    >>> episode = read_upload("uploads/episode_000")  # doctest: +SKIP
    """
    upload = str(upload).rstrip("/")
    fs = fsspec_filesystem(upload, storage_options)
    if uploads_root is not None:
        _check_inside(upload, uploads_root)
    try:
        episode_id = validate_episode_id(episode_id_of(upload))
    except ValueError as exc:
        raise BadUploadError(upload, str(exc)) from None
    meta = _read_episode_json(fs, posixpath.join(upload, EPISODE_JSON))
    # Taken before the files are read: if they change meanwhile, the stored fingerprint is stale
    # and the upload sensor ingests the upload again.
    fingerprint = upload_fingerprint(upload, storage_options)
    states_path = posixpath.join(upload, STATES_FILE)
    timestamps, state, action, source, intervention = _read_states(fs, states_path)
    check_signals(states_path, timestamps, state, action, len(meta["joint_names"]), source)
    cameras = _read_cameras(fs, upload, meta["cameras"])
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
        **{key: str(meta.get(key, "train" if key == "split" else "")) for key in _OPTIONAL_TEXT},
    )


def _check_inside(upload: str, uploads_root: str) -> None:
    root = posixpath.normpath(str(uploads_root).rstrip("/"))
    path = posixpath.normpath(upload)
    if posixpath.dirname(path) != root:
        raise BadUploadError(upload, f"upload path is not a folder directly inside {uploads_root}")


def _read_episode_json(fs, path: str) -> dict:
    try:
        with fs.open(path, "rb") as handle:
            meta = json.loads(handle.read().decode("utf-8"))
    except FileNotFoundError:
        raise BadUploadError(path, "is missing: the upload is incomplete") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadUploadError(path, f"is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise BadUploadError(path, "must hold a JSON object")
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
    if not meta["joint_names"] or meta["control_hz"] <= 0:
        raise BadUploadError(path, "needs at least one joint name and a positive control_hz")
    if not meta["cameras"]:
        raise BadUploadError(path, "lists no cameras")
    for name, spec in meta["cameras"].items():
        try:
            validate_episode_id(name)
        except ValueError:
            raise BadUploadError(path, f"invalid camera name {name!r}") from None
        if not isinstance(spec, dict) or not isinstance(spec.get("file"), str):
            raise BadUploadError(path, f"camera {name!r} needs a 'file' entry")
        if posixpath.basename(spec["file"]) != spec["file"]:
            raise BadUploadError(path, f"camera {name!r} file must be inside the upload folder")
    return meta


def _read_states(fs, path: str):
    try:
        with fs.open(path, "rb") as handle:
            table = pq.read_table(handle)
    except FileNotFoundError:
        raise BadUploadError(path, "is missing") from None
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise BadUploadError(path, f"is not a readable Parquet file ({exc})") from None
    missing = {"timestamp_ns", "observation_state", "action"} - set(table.column_names)
    if missing:
        raise BadUploadError(path, f"is missing columns {sorted(missing)}")
    try:
        timestamps = table["timestamp_ns"].to_numpy().astype(np.int64)
        state = _matrix(table["observation_state"])
        action = _matrix(table["action"])
    except (ValueError, TypeError) as exc:
        raise BadUploadError(path, f"has malformed state or action values ({exc})") from None
    source = table["source"].to_pylist() if "source" in table.column_names else None
    intervention = (
        table["is_intervention"].to_numpy(zero_copy_only=False).astype(bool)
        if "is_intervention" in table.column_names
        else None
    )
    return timestamps, state, action, source, intervention


def _matrix(column) -> np.ndarray:
    rows = column.to_pylist()
    lengths = {len(r) if r is not None else -1 for r in rows}
    if len(lengths) != 1 or -1 in lengths:
        raise ValueError(f"rows have differing lengths {sorted(lengths)}")
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), lengths.pop())


def _read_cameras(fs, upload: str, cameras: dict) -> list:
    listed = {spec["file"] for spec in cameras.values()}
    for path in fs.ls(upload, detail=False):
        name = posixpath.basename(path)
        if name.lower().endswith(VIDEO_SUFFIXES) and name not in listed:
            raise BadUploadError(
                posixpath.join(upload, name), "video file for a camera not listed in episode.json"
            )
    return [
        probe_camera(
            name,
            posixpath.join(upload, spec["file"]),
            fs,
            int(spec.get("start_offset_ns", 0)),
        )
        for name, spec in sorted(cameras.items())
    ]

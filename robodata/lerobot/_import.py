"""Import a LeRobot v3 dataset (local or s3://) into a robodata dataset, one episode per commit.

Each camera's episode span is cut out of the shared MP4 by the episodes table's from/to
timestamps, decoded with PyAV and re-encoded into closed H.264 GOPs by ``write_episode``.
Mapping: ``observation.images.<cam>`` -> camera ``<cam>``; ``observation.state`` / ``action``
-> the row columns; ``task_index`` -> task text; timestamps, episode and frame indices kept;
every other per-frame feature becomes a column (dots become underscores). A dataset exported by
robodata comes back as it was: its ``robodata.frame_timestamp_ns.<cam>`` columns undo the
control-rate frame repetition (see ``_export``) and its ``robodata/*`` episode columns restore
episode index, task name and split. A camera-rate export (``rate="camera"``) has no repeats: it
comes back at the camera fps, one row per camera frame, with the sampled rows' states.

The import is resumable: episodes already in the dataset are skipped. Each imported episode
stores where it came from (``upload_uri`` = "<root> episode <n>") and a fingerprint of its
source content (``robodata.ingest._source_fingerprint``), so importing the same dataset again skips what is
stored, and an episode edited in the source since is imported again (its labels kept).

>>> import_lerobot("exports/demo_lerobot", "data/demo_again", progress=False).imported
[0, 1, 2]
>>> import_lerobot("exports/demo_lerobot", "data/demo_again", progress=False).skipped  # stored already
[0, 1, 2]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from robodata.codec import EncoderSettings
from robodata.errors import BadUploadError
from robodata.format._schema import CORE_COLUMNS, IMAGE_COLUMN_PREFIX
from robodata.ingest import CameraStream, EpisodeData
from robodata.ingest._episode_source import import_episodes
from robodata.ingest._import_result import ImportResult
from robodata.ingest._source_fingerprint import source_fingerprint
from robodata.lerobot._format import (
    ACTION,
    CAMERA_TIME_PREFIX,
    ROBODATA_EPISODE_INDEX,
    ROBODATA_SPLIT,
    ROBODATA_TASK,
    ROW_TIMESTAMP,
    STATE,
    LeRobotFormatError,
    arrow_of_feature,
    camera_time_column,
)
from robodata.lerobot._source import LeRobotSource, SourceEpisode, VideoFeature, matrix
from robodata.lerobot._video import decode_span
from robodata.storage._failures import storage_call

# LeRobot features that land in robodata's own columns rather than as extra columns.
_NATIVE = {"language_instruction": pa.string(), "source": pa.string(), "is_intervention": pa.bool_()}


def import_lerobot(
    root: str,
    dataset_uri: str,
    *,
    repo_id: str | None = None,
    episodes: list[int] | None = None,
    settings: EncoderSettings | None = None,
    source_storage_options: dict | None = None,
    storage_options: dict | None = None,
    progress: bool = True,
) -> ImportResult:
    """Import the LeRobot v3 dataset at ``root`` (its ``episodes``, default all) into ``dataset_uri``.

    The whole source is checked before the first episode is written; each episode is then one
    commit, so an interrupted import resumes with the episodes not yet in the dataset.

    >>> result = import_lerobot("exports/demo_lerobot", "data/one", episodes=[1], progress=False)  # or s3://
    >>> result.imported, result.rows
    ([1], 197)
    """
    options = source_storage_options if source_storage_options is not None else storage_options
    source = LeRobotEpisodes(root, storage_options=options, repo_id=repo_id)
    return import_episodes(
        source, dataset_uri, episodes=episodes, settings=settings, storage_options=storage_options, progress=progress
    )


class LeRobotEpisodes:
    """A LeRobot v3 dataset as an ``EpisodeSource``: source numbers are its episode indices."""

    format = "lerobot"

    def __init__(self, root: str, *, storage_options: dict | None = None, repo_id: str | None = None) -> None:
        self.source = LeRobotSource(root, storage_options=storage_options)
        self.location = self.source.root
        self.repo_id = repo_id
        self._episodes = {e.index: e for e in self.source.episodes}
        self._table: tuple[str, pa.Table] | None = None  # one data file in memory at a time
        self._video_sizes: dict[str, int] = {}  # video files are shared by many episodes

    def episode_numbers(self) -> list[int]:
        return list(self._episodes)

    def robodata_index(self, number: int) -> int:
        return robodata_index(self._episodes[number])

    def check(self, numbers: list[int]) -> None:
        self.source.check([self._episodes[n] for n in numbers])

    def read_episode(self, number: int) -> EpisodeData:
        episode = self._episodes[number]
        path = self.source.data_path(episode)
        if self._table is None or self._table[0] != path:  # episodes come in file order
            self._table = (path, self.source.read_data(path))
        data = episode_data(self.source, episode, self._table[1], self.repo_id)
        rows = self._table[1].filter(pc.equal(self._table[1]["episode_index"], episode.index))
        facts = [self.source.fps, self.source.features, episode.row, data.task]
        data.fingerprint = source_fingerprint([*facts, _video_facts(self.source, episode, self._video_sizes)], rows)
        return data


def robodata_index(episode: SourceEpisode) -> int:
    """The episode_index a source episode becomes: robodata's own when it exported it."""
    return int(episode.row.get(ROBODATA_EPISODE_INDEX, episode.index))


def _video_facts(source: LeRobotSource, episode: SourceEpisode, sizes: dict[str, int]) -> list:
    """What identifies the video an episode's frames are cut from, without decoding it: each
    camera's file (chunk, index), its size and the episode's span in it."""
    facts = []
    for video in source.videos:
        path = source.video_path(episode, video.key)
        if path not in sizes:
            sizes[path] = int(storage_call("sizing a video", path, source.storage_options, source.fs.size, path))
        facts.append([video.key, episode.video_location(video.key), sizes[path], episode.span(video.key)])
    return facts


def episode_data(source: LeRobotSource, episode: SourceEpisode, table: pa.Table, repo_id: str | None) -> EpisodeData:
    """One source episode as an EpisodeData whose cameras decode their MP4 span on demand."""
    data_path = source.data_path(episode)
    rows = table.filter(pc.equal(table["episode_index"], episode.index)).sort_by("frame_index")
    joints = len(source.joint_names)
    timestamps = _row_times(rows, source.fps)
    task = _task_text(source, episode, rows, data_path)
    native = {k: rows[k] for k, kind in _NATIVE.items() if k in rows.column_names and _is(rows[k], kind)}
    instruction = native["language_instruction"][0].as_py() if "language_instruction" in native else task
    return EpisodeData(
        episode_id=f"lerobot_episode_{episode.index:06d}",
        episode_index=robodata_index(episode),
        control_hz=float(source.fps),
        joint_names=source.joint_names,
        timestamps_ns=timestamps,
        observation_state=matrix(rows[STATE], joints),
        action=matrix(rows[ACTION], joints),
        cameras=[_camera(source, episode, video, rows, timestamps) for video in source.videos],
        task=episode.row.get(ROBODATA_TASK) or task,
        language_instruction=instruction or "",
        split=episode.row.get(ROBODATA_SPLIT) or _split_of(source.info.get("splits") or {}, episode.index),
        robot_type=source.info.get("robot_type") or "",
        source=native["source"].to_pylist() if "source" in native else None,
        is_intervention=(native["is_intervention"].to_numpy().astype(bool) if "is_intervention" in native else None),
        extra_columns=_extra_columns(source, rows, data_path),
        extra_metadata={
            "imported_from": {
                "format": "lerobot",
                "repo_id": repo_id or source.root.rstrip("/").rsplit("/", 1)[-1],
                "codebase_version": source.info["codebase_version"],
                "fps": source.fps,
                "features": list(source.features),
            }
        },
        origin=f"{source.root} episode {episode.index}",
    )


def _row_times(rows: pa.Table, fps: int) -> np.ndarray:
    """Row times in ns: robodata's own when it exported them, else LeRobot's float32 seconds,
    snapped to the 1/fps grid they were written on (float32 cannot hold nanoseconds)."""
    if ROW_TIMESTAMP in rows.column_names:
        return rows[ROW_TIMESTAMP].to_numpy().astype(np.int64)
    seconds = rows["timestamp"].to_numpy().astype(np.float64)
    ticks = np.round(seconds * fps)
    on_grid = np.abs(seconds * fps - ticks) < 1e-3
    return np.where(on_grid, np.round(ticks * 1e9 / fps), np.round(seconds * 1e9)).astype(np.int64)


def _task_text(source: LeRobotSource, episode: SourceEpisode, rows: pa.Table, path: str) -> str:
    indices = pc.unique(rows["task_index"]).to_pylist()
    if len(indices) > 1:
        raise LeRobotFormatError(
            f"{path}: episode {episode.index} switches between tasks {indices}; robodata holds one task per episode"
        )
    if not indices:
        return ""
    if indices[0] not in source.tasks:
        raise LeRobotFormatError(f"{path}: episode {episode.index} has task_index {indices[0]}, not in tasks.parquet")
    return source.tasks[indices[0]]


def _split_of(splits: dict[str, str], index: int) -> str:
    for name, span in splits.items():
        start, _, end = str(span).partition(":")
        if start.isdigit() and end.isdigit() and int(start) <= index < int(end):
            return name
    return "train"


def _is(column: pa.ChunkedArray, kind: pa.DataType) -> bool:
    return column.type == kind or (kind == pa.string() and pa.types.is_large_string(column.type))


def _extra_columns(source: LeRobotSource, rows: pa.Table, path: str) -> dict[str, pa.Array]:
    extras = {}
    for key, feature in source.other_features.items():
        if key.startswith(CAMERA_TIME_PREFIX) or key == ROW_TIMESTAMP:
            continue
        if key in _NATIVE and _is(rows[key], _NATIVE[key]):
            continue
        name = key.replace(".", "_")  # Lance reads dots in column names as nested fields
        if name in CORE_COLUMNS or name in _NATIVE or name.startswith(IMAGE_COLUMN_PREFIX):
            raise LeRobotFormatError(f"{path}: feature {key!r} would overwrite robodata's column {name!r}")
        extras[name] = rows[key].combine_chunks().cast(arrow_of_feature(key, feature))
    return extras


def _camera(
    source: LeRobotSource, episode: SourceEpisode, video: VideoFeature, rows: pa.Table, row_times: np.ndarray
) -> CameraStream:
    """The camera's frames for this episode. With robodata's frame-time column, only the first
    of each run of repeated frames is kept, at the camera's own time; otherwise every LeRobot
    frame is a camera frame at its row's time."""
    path = source.video_path(episode, video.key)
    start, end = episode.span(video.key)
    n = rows.num_rows
    column = camera_time_column(video.camera)
    if column in rows.column_names:
        times = rows[column].to_numpy().astype(np.int64)
        keep = np.ones(n, dtype=bool)
        keep[1:] = times[1:] != times[:-1]
        kept = times[keep]
        fps = round((len(kept) - 1) * 1e9 / (kept[-1] - kept[0]), 3) if len(kept) > 1 else float(source.fps)
    else:
        times, keep, fps = row_times, np.ones(n, dtype=bool), float(source.fps)

    def frames():
        count = 0
        with source.fs.open(path, "rb") as handle:
            for _, rgb in decode_span(handle, path, start, end, source.fps):
                if count >= n:
                    break
                if keep[count]:
                    yield int(times[count]), rgb
                count += 1
        if count != n:
            raise BadUploadError(path, f"episode {episode.index}'s span holds {count} frames, its rows number {n}")

    return CameraStream(video.camera, video.width, video.height, fps, frames, path)

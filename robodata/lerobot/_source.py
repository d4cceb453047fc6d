"""Read a LeRobot v3 dataset (local or s3:// through fsspec) and check it before anything is
imported: its info, features, tasks and episodes, that every file an episode points at exists,
that video spans lie inside their MP4s and that per-frame features have the shape info.json says.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from functools import cached_property

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from robodata.lerobot._format import (
    ACTION,
    DEFAULT_FEATURES,
    IMAGE_PREFIX,
    INFO_PATH,
    STATE,
    TASKS_PATH,
    LeRobotFormatError,
    arrow_of_feature,
)
from robodata.storage import fsspec_filesystem, is_remote
from robodata.storage._arrow_input import arrow_input
from robodata.storage._failures import storage_call


@dataclass
class VideoFeature:
    key: str  # observation.images.<camera>
    camera: str
    width: int
    height: int


@dataclass
class SourceEpisode:
    """One row of the episodes table, as the importer needs it."""

    index: int
    length: int
    row: dict  # the episodes-table row (stats columns dropped)
    tasks: list[str] = field(default_factory=list)

    def data_location(self) -> dict[str, int]:
        return {
            "chunk_index": int(self.row["data/chunk_index"]),
            "file_index": int(self.row["data/file_index"]),
        }

    def video_location(self, key: str) -> dict[str, int]:
        return {
            "chunk_index": int(self.row[f"videos/{key}/chunk_index"]),
            "file_index": int(self.row[f"videos/{key}/file_index"]),
        }

    def span(self, key: str) -> tuple[float, float]:
        return float(self.row[f"videos/{key}/from_timestamp"]), float(self.row[f"videos/{key}/to_timestamp"])


class LeRobotSource:
    """A LeRobot v3 dataset at ``root``.

    >>> source = LeRobotSource("exports/demo_lerobot")  # or an s3:// root
    >>> source.fps, [v.camera for v in source.videos]
    (100, ['top', 'wrist_left', 'wrist_right'])

    """

    def __init__(self, root: str, *, storage_options: dict | None = None) -> None:
        self.root = str(root).rstrip("/")
        self.fs = fsspec_filesystem(self.root, storage_options)
        self.storage_options = storage_options
        self.info = self._read_info()
        self.fps = int(self.info["fps"])
        self.features: dict[str, dict] = self.info["features"]
        self.videos = self._video_features()
        self._check_vectors()

    # --- paths ----------------------------------------------------------------------------------
    def path(self, relative: str) -> str:
        return posixpath.join(self.root, relative) if is_remote(self.root) else f"{self.root}/{relative}"

    def data_path(self, episode: SourceEpisode) -> str:
        return self.path(self.info["data_path"].format(**episode.data_location()))

    def video_path(self, episode: SourceEpisode, key: str) -> str:
        return self.path(self.info["video_path"].format(video_key=key, **episode.video_location(key)))

    # --- metadata -------------------------------------------------------------------------------
    def _read_info(self) -> dict:
        path = self.path(INFO_PATH)
        try:
            info = json.loads(
                storage_call("reading info.json", path, self.storage_options, self.fs.cat_file, path).decode("utf-8")
            )
        except FileNotFoundError:
            raise LeRobotFormatError(f"{path}: is missing; is {self.root} a LeRobot dataset?") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LeRobotFormatError(f"{path}: is not valid JSON ({exc})") from None
        missing = [k for k in ("codebase_version", "fps", "features", "data_path") if k not in info]
        if missing:
            raise LeRobotFormatError(f"{path}: is missing {missing}")
        if not str(info["codebase_version"]).startswith("v3."):
            raise LeRobotFormatError(
                f"{path}: codebase_version is {info['codebase_version']}; only LeRobot v3.x datasets "
                "are read (convert older ones with lerobot's convert_dataset_v21_to_v30)"
            )
        fps = info["fps"]
        if isinstance(fps, bool) or not isinstance(fps, int | float) or fps <= 0 or fps != int(fps):
            raise LeRobotFormatError(f"{path}: fps must be a positive whole number, got {fps!r}")
        return info

    def _video_features(self) -> list[VideoFeature]:
        videos, unsupported = [], []
        for key, feature in self.features.items():
            if feature.get("dtype") == "image":
                unsupported.append(f"{key} (images stored in Parquet; only video features are imported)")
                continue
            if feature.get("dtype") != "video":
                continue
            info = feature.get("info") or feature.get("video_info") or {}
            shape = list(feature.get("shape") or [])
            names = list(feature.get("names") or [])
            if info.get("is_depth_map") or info.get("video.is_depth_map"):
                unsupported.append(f"{key} (depth map video)")
            elif not key.startswith(IMAGE_PREFIX):
                unsupported.append(f"{key} (video features must be named {IMAGE_PREFIX}<camera>)")
            elif len(shape) != 3 or 3 not in shape or info.get("video.channels", 3) != 3:
                unsupported.append(f"{key} (not 3-channel RGB video: shape {shape})")
            elif str(info.get("video.pix_fmt", "yuv420p")).startswith(("gray", "ya")):
                unsupported.append(f"{key} (non-RGB pixel format {info.get('video.pix_fmt')})")
            else:
                # The stream's own size wins; else the shape, read through its axis names
                # (LeRobot writes [height, width, channels]; some ports [channels, height, width]).
                axes = dict(zip(names, shape, strict=False)) if len(names) == 3 else {}
                height = info.get("video.height") or axes.get("height") or shape[0]
                width = info.get("video.width") or axes.get("width") or shape[1]
                videos.append(VideoFeature(key, key[len(IMAGE_PREFIX) :], int(width), int(height)))
        if unsupported:
            raise LeRobotFormatError(
                f"{self.path(INFO_PATH)}: features robodata cannot import yet: " + "; ".join(unsupported)
            )
        return videos

    def _check_vectors(self) -> None:
        for key in (STATE, ACTION):
            if key not in self.features:
                raise LeRobotFormatError(f"{self.path(INFO_PATH)}: has no {key!r} feature")
        state, action = (list(self.features[k]["shape"]) for k in (STATE, ACTION))
        if len(state) != 1 or state != action:
            raise LeRobotFormatError(
                f"{self.path(INFO_PATH)}: {STATE} has shape {state} and {ACTION} {action}; robodata needs "
                "both to be vectors over the same joints"
            )

    @property
    def joint_names(self) -> list[str]:
        names = self.features[STATE].get("names")
        if isinstance(names, dict):  # older ports write {"motors": [...]}
            names = next(iter(names.values()), None)
        n = int(self.features[STATE]["shape"][0])
        if isinstance(names, list) and len(names) == n and all(isinstance(x, str) for x in names):
            return names
        return [f"joint_{i}" for i in range(n)]

    @property
    def other_features(self) -> dict[str, dict]:
        """Per-frame features besides state, action, video and LeRobot's default columns."""
        skip = {STATE, ACTION, *DEFAULT_FEATURES, *(v.key for v in self.videos)}
        return {k: f for k, f in self.features.items() if k not in skip}

    @cached_property
    def tasks(self) -> dict[int, str]:
        path = self.path(TASKS_PATH)
        try:
            table = pq.read_table(arrow_input(self.fs, path)).to_pandas()
        except FileNotFoundError:
            raise LeRobotFormatError(f"{path}: is missing") from None
        if "task" in table.columns:  # written without the pandas index
            table = table.set_index("task")
        return {int(i): str(t) for t, i in zip(table.index, table["task_index"], strict=True)}

    @cached_property
    def episodes(self) -> list[SourceEpisode]:
        pattern = self.path("meta/episodes/*/*.parquet")
        files = sorted(storage_call("listing episode files", self.root, self.storage_options, self.fs.glob, pattern))
        if not files:
            raise LeRobotFormatError(f"{self.path('meta/episodes')}: holds no episodes Parquet files")
        tables = []
        for file in files:
            table = pq.read_table(arrow_input(self.fs, file))
            tables.append(table.select([c for c in table.column_names if not c.startswith("stats/")]))
        rows = pa.concat_tables(tables, promote_options="default").sort_by("episode_index").to_pylist()
        return [SourceEpisode(int(r["episode_index"]), int(r["length"]), r, list(r.get("tasks") or [])) for r in rows]

    # --- checks before anything is written ------------------------------------------------------
    def check(self, episodes: list[SourceEpisode]) -> None:
        """Every file the episodes point at exists, every video span lies inside its MP4 and every
        data file's columns have the shapes info.json declares."""
        needed = dict.fromkeys(self.video_path(e, v.key) for e in episodes for v in self.videos)
        durations = {path: self._duration(path) for path in needed}
        for episode in episodes:
            for video in self.videos:
                path = self.video_path(episode, video.key)
                start, end = episode.span(video.key)
                if end > durations[path] + 0.5 / self.fps or start < 0 or end <= start:
                    raise LeRobotFormatError(
                        f"{path}: episode {episode.index} spans {start:.4f}-{end:.4f} s but the video is "
                        f"{durations[path]:.4f} s long: the episodes table points past the end of the video"
                    )
        for path in dict.fromkeys(self.data_path(e) for e in episodes):
            table = self._check_data_file(path)
            index, counts = np.unique(table["episode_index"].to_numpy(), return_counts=True)
            rows = dict(zip(index.tolist(), counts.tolist(), strict=True))
            for episode in episodes:
                if self.data_path(episode) == path and rows.get(episode.index, 0) != episode.length:
                    raise LeRobotFormatError(
                        f"{path}: holds {rows.get(episode.index, 0)} rows of episode {episode.index}, "
                        f"the episodes table says {episode.length}"
                    )

    def _duration(self, path: str) -> float:
        try:
            handle = storage_call("opening a video", path, self.storage_options, self.fs.open, path, "rb")
        except FileNotFoundError:
            raise LeRobotFormatError(f"{path}: video file is missing") from None
        try:
            with handle, av.open(handle) as container:
                if not container.streams.video:
                    raise LeRobotFormatError(f"{path}: file has no video stream")
                stream = container.streams.video[0]
                if stream.duration is not None:
                    return float(stream.duration * stream.time_base)
                return float(container.duration or 0) / av.time_base
        except av.error.FFmpegError as exc:
            raise LeRobotFormatError(f"{path}: not a readable video ({exc})") from None

    def _check_data_file(self, path: str) -> pa.Table:
        try:
            schema = pq.read_schema(arrow_input(self.fs, path))
        except FileNotFoundError:
            raise LeRobotFormatError(f"{path}: data file is missing") from None
        declared = {k: f for k, f in self.features.items() if f.get("dtype") != "video"}
        missing = [k for k in declared if k not in schema.names]
        if missing:
            raise LeRobotFormatError(f"{path}: lacks the columns of features {missing}")
        table = self.read_data(path)
        for key, feature in declared.items():
            check_shape(path, key, feature, table[key])
        return table

    def read_data(self, path: str) -> pa.Table:
        return pq.read_table(arrow_input(self.fs, path))


def check_shape(path: str, key: str, feature: dict, column: pa.ChunkedArray) -> None:
    """``column`` holds values of the feature's declared shape, or an error naming both."""
    shape = list(feature.get("shape") or [])
    kind = column.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        lengths = pa.compute.list_value_length(column).to_numpy(zero_copy_only=False)
        found = sorted(set(lengths.tolist()))
        if found and (len(found) != 1 or shape != found):
            raise LeRobotFormatError(
                f"{path}: feature {key!r} is declared with shape {shape} but its rows hold {found} values"
            )
    elif shape != [1]:
        raise LeRobotFormatError(f"{path}: feature {key!r} is declared with shape {shape} but holds scalars")
    if key not in DEFAULT_FEATURES:
        arrow_of_feature(key, feature)  # raises for dtypes robodata cannot carry


def matrix(column: pa.ChunkedArray, width: int) -> np.ndarray:
    """A list column as a float32 [N, width] array."""
    values = column.combine_chunks()
    return values.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(values), width)

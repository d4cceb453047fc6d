"""Export one version of a robodata dataset as a LeRobot v3.0 dataset on local disk.

Rate rule: LeRobot has one fps per dataset, robodata rows run at the control rate and cameras
at their own (slower) rate. The export keeps the control rate: one LeRobot frame per robodata
row, so no state or action sample is dropped, and each camera's MP4 repeats the camera frame the
row shows (the nearest in time, exactly what ``robodata.open(...)[i]`` returns). A per-frame
``robodata.frame_timestamp_ns.<cam>`` column names that camera frame, which is how import
collapses the repeats back into the original camera stream. This is the default because
it can be inverted exactly.

``rate="camera"`` exports at the cameras' shared fps instead, as LeRobot records (one frame per
camera tick, the encoding LeRobot users have): each LeRobot frame is one camera frame, shown once
in the MP4, and its state, action and other per-frame features come from the robodata row nearest
in time to that frame (``_rate.camera_rate_rows``). The other rows' samples are dropped.
Both rates share one writer: the camera rate only selects which rows become frames.

>>> export_lerobot("data/demo", "lerobot/demo", rate="camera", progress=False).frames  # 2 s at 30 fps, 3 episodes
180

The MP4s are AV1 (libsvtav1), as LeRobot writes them; ``vcodec`` picks another FFmpeg encoder.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from robodata.errors import import_extra
from robodata.format._ids import episode_filter
from robodata.format._provenance import UPLOAD_COLUMNS
from robodata.format._schema import CORE_COLUMNS, image_column, ref_columns
from robodata.format._tables import gops_uri, open_table
from robodata.lerobot import _stats as lerobot_stats
from robodata.lerobot._features import features as lerobot_features
from robodata.lerobot._format import (
    ACTION,
    CODEBASE_VERSION,
    DATA_PATH,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_DATA_FILE_SIZE_IN_MB,
    DEFAULT_VIDEO_FILE_SIZE_IN_MB,
    EPISODES_PATH,
    INFO_PATH,
    LEROBOT_COMMIT,
    ROBODATA_EPISODE_INDEX,
    ROBODATA_SPLIT,
    ROBODATA_TASK,
    ROW_TIMESTAMP,
    STATE,
    STATS_PATH,
    TASKS_PATH,
    VIDEO_PATH,
    LeRobotFormatError,
    camera_time_column,
    chunk_and_file,
    video_columns,
    video_key,
)
from robodata.lerobot._rate import Rate, camera_rate_rows, export_fps
from robodata.lerobot._video import SharedVideoWriter, probe_video_info, resolved_preset
from robodata.reader import open_dataset
from robodata.storage._failures import storage_call

_DECODE_BATCH = 64  # rows decoded per take: bounds memory for long episodes


@dataclass
class ExportResult:
    """What one export wrote."""

    root: str
    dataset_version: int
    episodes: int
    frames: int
    fps: int
    data_files: int
    video_files: int
    video_bytes: int


@dataclass
class _Episode:
    lerobot_index: int
    source_index: int
    rows: pa.Table  # this episode's rows in frame order, with the dataset row offset
    task_index: int
    from_index: int  # set by the writer once the episode's frames are chosen
    # Per camera, the frame time each row shows (set by _select_frames).
    camera_times: dict[str, np.ndarray] = field(default_factory=dict)


def export_lerobot(
    dataset_uri: str,
    root: str | os.PathLike,
    *,
    version: int | str | None = None,
    episodes_per_file: int = 50,
    vcodec: str = "libsvtav1",
    g: int = 2,
    crf: int = 30,
    pix_fmt: str = "yuv420p",
    preset: int | str | None = None,
    storage_options: dict | None = None,
    progress: bool = True,
    rate: Rate = "control",
) -> ExportResult:
    """Write ``dataset_uri`` (at ``version``) as a LeRobot v3.0 dataset in the new local folder ``root``.

    Everything is written into a staging folder next to ``root`` and renamed into place at the
    end, so a failed export leaves nothing behind.

    >>> result = export_lerobot("data/demo", "lerobot/demo", version=1, rate="camera", vcodec="libx264", progress=False)
    >>> result.dataset_version, result.episodes, result.frames  # version 1 held episode 0
    (1, 1, 60)
    """
    if episodes_per_file < 1:
        raise ValueError(f"episodes_per_file must be at least 1, got {episodes_per_file}")
    target = Path(root)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise LeRobotFormatError(f"{target}: already exists and is not an empty folder; export writes a new one")
    ds = open_dataset(dataset_uri, version=version, storage_options=storage_options)
    fps = export_fps(ds.metadata, rate, dataset_uri)
    episodes, tasks, table = _plan(ds)
    # The upload columns say where this dataset's episodes came from: not data to export.
    extras = [
        c for c in table.column_names if c not in CORE_COLUMNS and c not in UPLOAD_COLUMNS and not c.startswith("__")
    ]
    features = lerobot_features(ds, table.schema, extras, robodata_columns=_robodata_columns(ds, table, fps, rate))
    staging = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        video = (vcodec, g, crf, pix_fmt, resolved_preset(vcodec, preset))
        writer = _Writer(ds, staging, fps, rate, features, extras, video, storage_options)
        groups = [episodes[i : i + episodes_per_file] for i in range(0, len(episodes), episodes_per_file)]
        bar = tqdm(total=len(episodes), desc="export-lerobot", unit="episode", disable=not progress)
        for file_number, group in enumerate(groups):
            writer.write_group(file_number, group, bar)
        bar.close()
        writer.finish(tasks, _splits(episodes))
        if target.exists():
            target.rmdir()
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportResult(
        root=str(target),
        dataset_version=ds.version,
        episodes=len(episodes),
        frames=writer.frames,
        fps=fps,
        data_files=len(groups),
        video_files=len(groups) * len(ds.cameras),
        video_bytes=writer.video_bytes,
    )


def _plan(ds) -> tuple[list[_Episode], list[str], pa.Table]:
    """Rows in (episode, frame) order, episodes renumbered 0..N-1 as LeRobot requires, tasks in
    order of first appearance."""
    refs = {c for camera in ds.cameras for c in ref_columns(camera)}
    # The GOP references travel under private names: needed to find frame times, never exported.
    private = {ref_columns(c)[i]: f"__{ref_columns(c)[i]}" for c in ds.cameras for i in (0, 2)}
    table = ds.to_table(columns=[c for c in ds.columns if c not in refs] + list(private))
    table = table.rename_columns([private.get(n, n) for n in table.column_names])
    if table.num_rows == 0:
        raise LeRobotFormatError(f"{ds.uri}: version {ds.version} has no rows to export")
    table = table.append_column("__offset", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    table = table.sort_by([("episode_index", "ascending"), ("frame_index", "ascending")])
    episode_index = table["episode_index"].to_numpy()
    starts = np.flatnonzero(np.diff(episode_index, prepend=-1))
    ends = np.append(starts[1:], len(episode_index))
    episodes, tasks = [], []
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        rows = table.slice(start, end - start)
        if not np.array_equal(rows["frame_index"].to_numpy(), np.arange(end - start)):
            raise LeRobotFormatError(f"episode {episode_index[start]}: frame_index does not run 0..{end - start - 1}")
        text = _task_text(rows)
        if text not in tasks:
            tasks.append(text)
        episodes.append(_Episode(i, int(episode_index[start]), rows, tasks.index(text), int(start)))
    return episodes, tasks, table


def _task_text(rows: pa.Table) -> str:
    """LeRobot's task is robodata's task column (what a LeRobot dataset imported into robodata
    keeps there); the language instruction travels as its own column, so import restores both."""
    return rows["task"][0].as_py() or ""


def _robodata_columns(ds, table: pa.Table, fps: int, rate: Rate) -> dict[str, dict]:
    """robodata's bookkeeping features: per camera the time of the frame each row shows (import
    undoes the frame repetition with it), and the row times when they lie off the 1/fps grid."""
    out = {camera_time_column(camera): {"dtype": "int64", "shape": [1], "names": None} for camera in ds.cameras}
    times = table["timestamp_ns"].to_numpy()
    grid = np.round(table["frame_index"].to_numpy() * (1e9 / fps)).astype(np.int64)
    if rate == "camera" or not np.array_equal(times, grid):  # sampled rows lie off the camera grid
        out[ROW_TIMESTAMP] = {"dtype": "int64", "shape": [1], "names": None}
    return out


def _splits(episodes: list[_Episode]) -> dict[str, str]:
    """LeRobot's "start:end" episode ranges; a split that is not one contiguous range is left to
    the per-episode robodata/split column."""
    by_split: dict[str, list[int]] = {}
    for episode in episodes:
        by_split.setdefault(episode.rows["split"][0].as_py() or "train", []).append(episode.lerobot_index)
    return {
        name: f"{idx[0]}:{idx[-1] + 1}" for name, idx in by_split.items() if idx == list(range(idx[0], idx[-1] + 1))
    }


class _Writer:
    def __init__(
        self, ds, staging: Path, fps: int, rate: Rate, features: dict, extras: list[str], video, storage_options
    ):
        self.ds, self.staging, self.fps, self.rate = ds, staging, fps, rate
        self.features, self.extras = features, extras
        self.vcodec, self.g, self.crf, self.pix_fmt, self.preset = video
        self.gops = open_table(gops_uri(ds.uri), storage_options)
        self.episode_rows: list[dict] = []
        self.episode_stats: list[dict[str, dict]] = []
        self.video_bytes = 0
        self.probed: set[str] = set()
        self.frames = 0  # LeRobot frames written so far: the next episode's dataset_from_index

    # --- one data file and one MP4 per camera for a group of episodes ---------------------------
    def write_group(self, file_number: int, group: list[_Episode], bar) -> None:
        chunk, file = chunk_and_file(file_number)
        location = {"chunk_index": chunk, "file_index": file}
        spans: dict[int, dict[str, object]] = {e.lerobot_index: {} for e in group}
        samples: dict[int, dict[str, list[np.ndarray]]] = {e.lerobot_index: {} for e in group}
        for episode in group:
            self._select_frames(episode)
        for camera in self.ds.cameras:
            self._write_video(camera, location, group, spans, samples)
        tables = []
        for episode in group:
            data = self._data_table(episode)
            tables.append(data)
            stats = self._stats(data, samples[episode.lerobot_index])
            self.episode_stats.append(stats)
            self.episode_rows.append(self._episode_row(episode, location, spans[episode.lerobot_index], stats))
            bar.update(1)
        path = self.staging / DATA_PATH.format(**location)
        path.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(path, tables[0].schema, compression="snappy") as parquet:
            for table in tables:  # one row group per episode, as LeRobot writes them
                parquet.write_table(table)

    def _write_video(self, camera: str, location: dict, group: list[_Episode], spans, samples) -> None:
        key = video_key(camera)
        info = self.ds.metadata.cameras[camera]
        path = self.staging / VIDEO_PATH.format(video_key=key, **location)
        path.parent.mkdir(parents=True, exist_ok=True)
        column = image_column(camera)
        with SharedVideoWriter(
            str(path),
            info.width,
            info.height,
            self.fps,
            self.vcodec,
            self.g,
            self.crf,
            self.pix_fmt,
            self.preset,
        ) as video:
            for episode in group:
                start = video.frames
                offsets = episode.rows["__offset"].to_numpy()
                keep = set(lerobot_stats.sample_indices(len(offsets)))  # the frames LeRobot samples
                sampled = samples[episode.lerobot_index].setdefault(key, [])
                for batch in range(0, len(offsets), _DECODE_BATCH):
                    frames = self.ds.get_frames(offsets[batch : batch + _DECODE_BATCH], cameras=column)[column]
                    for j, rgb in enumerate(frames):
                        video.add(rgb)
                        if batch + j in keep:
                            sampled.append(rgb)
                spans[episode.lerobot_index].update(
                    zip(
                        video_columns(key),
                        [
                            location["chunk_index"],
                            location["file_index"],
                            start / self.fps,
                            video.frames / self.fps,
                        ],
                        strict=True,
                    )
                )
        self.video_bytes += path.stat().st_size
        if key not in self.probed:  # the first MP4 of a camera says what its stream is
            self.features[key]["info"] = self._video_info(str(path))
            self.probed.add(key)

    def _video_info(self, path: str) -> dict:
        # Stream-derived entries first, then the encoder settings, as get_video_info orders them.
        return {
            **probe_video_info(path),
            "video.g": self.g,
            "video.crf": self.crf,
            "video.preset": self.preset,
            "video.fast_decode": 0,
            "video.video_backend": "pyav",
            "video.extra_options": {},
            "is_depth_map": False,
        }

    def _select_frames(self, episode: _Episode) -> None:
        """Keep the rows that become LeRobot frames (all of them at the control rate) with the
        camera frame times they show, and number them on from the frames written so far."""
        times = self._camera_times(episode)
        if self.rate == "camera":
            main = times[self.ds.cameras[0]]  # the cameras share one fps: the first sets the ticks
            keep = camera_rate_rows(episode.rows["timestamp_ns"].to_numpy(), main)
            episode.rows = episode.rows.take(pa.array(keep))
            times = {camera: t[keep] for camera, t in times.items()}
        episode.camera_times = times
        episode.from_index = self.frames
        self.frames += episode.rows.num_rows

    def _data_table(self, episode: _Episode) -> pa.Table:
        rows, n = episode.rows, episode.rows.num_rows
        joints = self.features[STATE]["shape"][0]
        columns: dict[str, pa.Array] = {
            STATE: _fixed_list(rows["observation_state"], joints),
            ACTION: _fixed_list(rows["action"], joints),
        }
        for name in self.extras:
            columns[name] = rows[name].combine_chunks()
        for camera in self.ds.cameras:
            columns[camera_time_column(camera)] = pa.array(episode.camera_times[camera], pa.int64())
        if ROW_TIMESTAMP in self.features:
            columns[ROW_TIMESTAMP] = rows["timestamp_ns"].combine_chunks()
        frame = np.arange(n, dtype=np.int64)
        columns["timestamp"] = pa.array((frame / self.fps).astype(np.float32))
        columns["frame_index"] = pa.array(frame)
        columns["episode_index"] = pa.array(np.full(n, episode.lerobot_index, dtype=np.int64))
        columns["index"] = pa.array(episode.from_index + frame)
        columns["task_index"] = pa.array(np.full(n, episode.task_index, dtype=np.int64))
        return pa.table(columns)

    def _camera_times(self, episode: _Episode) -> dict[str, np.ndarray]:
        """The timestamp of the camera frame each row shows (from the GOPs' frame times)."""
        columns, where = ["ref_id", "timestamps_ns"], episode_filter(episode.source_index)
        reading = f"reading episode {episode.source_index}'s GOP times"
        gops = storage_call(
            reading, gops_uri(self.ds.uri), self.ds.storage_options, self.gops.to_table, columns=columns, filter=where
        )
        times_of = dict(zip(gops["ref_id"].to_pylist(), gops["timestamps_ns"].to_pylist(), strict=True))
        out = {}
        for camera in self.ds.cameras:
            refs = episode.rows[f"__{ref_columns(camera)[0]}"].to_pylist()
            in_gop = episode.rows[f"__{ref_columns(camera)[2]}"].to_pylist()
            out[camera] = np.array([times_of[r][k] for r, k in zip(refs, in_gop, strict=True)], dtype=np.int64)
        return out

    def _stats(self, data: pa.Table, samples: dict[str, list[np.ndarray]]) -> dict[str, dict]:
        stats = {}
        for key, feature in self.features.items():
            if feature["dtype"] == "video":
                stats[key] = lerobot_stats.image_stats(samples[key])
            elif feature["dtype"] != "string" and key in data.column_names:
                values = data[key].combine_chunks()
                if values.null_count:
                    continue  # partially annotated columns have no meaningful statistics
                if pa.types.is_fixed_size_list(values.type):
                    array = values.values.to_numpy(zero_copy_only=False).reshape(len(values), -1)
                else:
                    array = values.to_numpy(zero_copy_only=False)
                stats[key] = lerobot_stats.vector_stats(array)
        return stats

    def _episode_row(self, episode: _Episode, location: dict, spans: dict, stats: dict) -> dict:
        row = {
            "episode_index": episode.lerobot_index,
            "tasks": [_task_text(episode.rows)],
            "length": episode.rows.num_rows,
            "data/chunk_index": location["chunk_index"],
            "data/file_index": location["file_index"],
            "dataset_from_index": episode.from_index,
            "dataset_to_index": episode.from_index + episode.rows.num_rows,
        }
        for camera in self.ds.cameras:
            for column in video_columns(video_key(camera)):
                row[column] = spans[column]
        for key, values in stats.items():
            for name, value in values.items():
                row[f"stats/{key}/{name}"] = value.tolist()
        row["meta/episodes/chunk_index"], row["meta/episodes/file_index"] = 0, 0
        row[ROBODATA_EPISODE_INDEX] = episode.source_index
        row[ROBODATA_TASK] = episode.rows["task"][0].as_py()
        row[ROBODATA_SPLIT] = episode.rows["split"][0].as_py()
        return row

    # --- metadata -------------------------------------------------------------------------------
    def finish(self, tasks: list[str], splits: dict[str, str]) -> None:
        meta = self.staging / "meta"
        episodes_path = self.staging / EPISODES_PATH.format(chunk_index=0, file_index=0)
        episodes_path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(self.episode_rows), episodes_path, compression="snappy")
        # LeRobot reads tasks with pandas: the task text is the index, task_index the one column.
        pd = import_extra("pandas", "interop", "LeRobot export")
        pd.DataFrame({"task_index": range(len(tasks))}, index=pd.Index(tasks, name="task")).to_parquet(
            self.staging / TASKS_PATH
        )
        keys = self.episode_stats[0].keys()
        stats = {k: lerobot_stats.aggregate([s[k] for s in self.episode_stats if k in s]) for k in keys}
        (meta / Path(STATS_PATH).name).write_text(json.dumps(lerobot_stats.to_json(stats), indent=4))
        info = {
            "codebase_version": CODEBASE_VERSION,
            "fps": self.fps,
            "features": self.features,
            "total_episodes": len(self.episode_rows),
            "total_frames": sum(r["length"] for r in self.episode_rows),
            "total_tasks": len(tasks),
            "chunks_size": DEFAULT_CHUNK_SIZE,
            "data_files_size_in_mb": DEFAULT_DATA_FILE_SIZE_IN_MB,
            "video_files_size_in_mb": DEFAULT_VIDEO_FILE_SIZE_IN_MB,
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if self.ds.cameras else None,
            "robot_type": self.ds.metadata.robot_type or None,
            "splits": splits,
        }
        (self.staging / INFO_PATH).write_text(json.dumps(info, indent=4))


def _fixed_list(column: pa.ChunkedArray, size: int) -> pa.Array:
    values = column.combine_chunks()
    return pa.FixedSizeListArray.from_arrays(values.flatten().cast(pa.float32()), size)


__all__ = ["LEROBOT_COMMIT", "ExportResult", "export_lerobot"]

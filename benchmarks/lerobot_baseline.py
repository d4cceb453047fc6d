"""Read a LeRobot v3 dataset the way LeRobot's PyAV video backend reads it: the benchmark baseline.

This is a re-implementation, not LeRobot itself (the ``lerobot`` package pulls in a large
dependency set, so it is not installed here). It mirrors, from huggingface/lerobot (main,
August 2026):

- ``lerobot.datasets.video_utils.decode_video_frames_pyav`` (which replaced
  ``decode_video_frames_torchvision(..., backend="pyav")`` in PR #3588): per call, open the
  file, ``container.seek(round(first_ts / time_base) - 1, backward=True, any_frame=False)`` to
  the keyframe before the first wanted timestamp, decode forward until ``last_ts``, pick the
  frame nearest each timestamp and fail when it is further than ``tolerance_s``;
- ``DatasetReader.get_item`` (``LeRobotDataset.__getitem__``), ``_get_query_indices``,
  ``_get_query_timestamps`` and ``_query_videos``: the row comes from the data Parquet, each
  camera's query timestamps are shifted by the episode's ``videos/<key>/from_timestamp`` in
  its shared MP4, and several cameras decode on a thread pool, one thread per camera. (Release
  0.4.4 decodes the cameras one after another; mirroring main is the faster, conservative choice.)

Frames come back as ``[T, H, W, 3]`` uint8 numpy arrays (LeRobot's ``return_uint8=True``
without the channel-first torch copy), so neither side pays a float conversion.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# LeRobotDataset(tolerance_s=1e-4) is the default every LeRobot training script uses.
LEROBOT_TOLERANCE_S = 1e-4


class FrameTimestampError(ValueError):
    """The closest decodable frame is further from the query than the tolerance (as in LeRobot)."""


def decode_video_frames_pyav(
    video_path: str | Path, timestamps: list[float], tolerance_s: float, counts: dict[str, int] | None = None
) -> np.ndarray:
    """Frames of ``video_path`` nearest ``timestamps`` (seconds in the file), decoded like
    LeRobot's ``decode_video_frames_pyav``: seek to the keyframe before the first timestamp and
    decode forward to the last. ``counts``, when given, gains the calls (seeks), frames decoded and frames wanted.

    >>> video = "videos/observation.images.top/chunk-000/file-000.mp4"  # doctest: +SKIP
    >>> decode_video_frames_pyav(video, [1.5], 1e-4).shape  # doctest: +SKIP
    (1, 480, 640, 3)
    """
    video_path = str(video_path)
    first_ts, last_ts = min(timestamps), max(timestamps)
    loaded_frames: list[np.ndarray] = []
    loaded_ts: list[float] = []
    with av.open(video_path) as container:
        stream = container.streams.video[0]
        if stream.time_base is None:
            raise ValueError(f"{video_path}: its video stream has no time base")
        # LeRobot's one-frame margin: seek strictly before first_ts, backward to a keyframe.
        container.seek(round(first_ts / stream.time_base) - 1, backward=True, any_frame=False, stream=stream)
        for frame in container.decode(stream):
            if frame.pts is None:
                continue
            current_ts = float(frame.pts * stream.time_base)
            loaded_frames.append(frame.to_ndarray(format="rgb24"))
            loaded_ts.append(current_ts)
            if current_ts >= last_ts:
                break
    if counts is not None:
        counts["calls"] = counts.get("calls", 0) + 1
        counts["decoded"] = counts.get("decoded", 0) + len(loaded_frames)
        counts["wanted"] = counts.get("wanted", 0) + len(timestamps)
    if not loaded_frames:
        raise FrameTimestampError(f"{video_path}: no frames decoded in [{first_ts}, {last_ts}]")
    distance = np.abs(np.asarray(timestamps)[:, None] - np.asarray(loaded_ts)[None, :])
    closest = distance.argmin(axis=1)
    nearest = distance[np.arange(len(timestamps)), closest]
    if not (nearest <= tolerance_s).all():
        raise FrameTimestampError(
            f"{video_path}: query timestamps {np.asarray(timestamps)[nearest > tolerance_s].tolist()} are further "
            f"than tolerance_s={tolerance_s} from every decoded frame (nearest {nearest.max():.6f} s)"
        )
    return np.stack([loaded_frames[i] for i in closest])


class LeRobotLayoutReader:
    """A local LeRobot v3 dataset (``meta/info.json``, ``meta/episodes``, ``data``, ``videos``)
    read sample by sample, as ``LeRobotDataset[idx]`` reads it with ``video_backend="pyav"``.

    >>> reader = LeRobotLayoutReader("exports/demo_lerobot")  # doctest: +SKIP
    >>> reader[10]["observation.images.top"].shape  # doctest: +SKIP
    (480, 640, 3)
    """

    def __init__(self, root: str | Path, tolerance_s: float = LEROBOT_TOLERANCE_S, camera_threads: bool = True) -> None:
        self.root = Path(root)
        info_path = self.root / "meta" / "info.json"
        if not info_path.is_file():
            raise FileNotFoundError(f"{info_path}: not a LeRobot v3 dataset (meta/info.json is missing)")
        self.info = json.loads(info_path.read_text())
        self.fps = float(self.info["fps"])
        self.tolerance_s = tolerance_s
        self.decode_counts: dict[str, int] = {}  # seeks, frames decoded and wanted, for profile notes
        self.video_keys = [k for k, f in self.info["features"].items() if f.get("dtype") == "video"]
        episodes = _read_parquet_dir(self.root / "meta" / "episodes", "episode_index")
        # As LeRobot's load_episodes: drop the per-episode stats, keep the file references.
        self.episodes = episodes.select([c for c in episodes.column_names if not c.startswith("stats/")]).to_pylist()
        self.data = _read_parquet_dir(self.root / "data", "index")
        # One thread per camera, as _query_videos (which makes a new pool per call; keeping one is
        # slightly kinder to the baseline). Off only to profile the decode in one thread.
        self._threads = (
            ThreadPoolExecutor(max(1, len(self.video_keys)), thread_name_prefix="lerobot-cameras")
            if camera_threads
            else None
        )

    def __len__(self) -> int:
        return self.data.num_rows

    @cached_property
    def timestamps(self) -> np.ndarray:
        """Every row's ``timestamp`` (seconds since its episode started), in row order."""
        return self.data["timestamp"].to_numpy()

    @cached_property
    def _row_of_index(self) -> dict[int, int]:
        return {int(index): row for row, index in enumerate(self.data["index"].to_numpy())}

    def video_path(self, episode_index: int, video_key: str) -> Path:
        """Mirrors ``LeRobotDatasetMetadata.get_video_file_path``."""
        ep = self.episodes[episode_index]
        relative = self.info["video_path"].format(
            video_key=video_key,
            chunk_index=ep[f"videos/{video_key}/chunk_index"],
            file_index=ep[f"videos/{video_key}/file_index"],
        )
        return self.root / relative

    def video_files(self) -> list[Path]:
        return sorted({self.video_path(e, k) for e in range(len(self.episodes)) for k in self.video_keys})

    def video_bytes(self) -> int:
        """Bytes of every camera MP4 of the dataset."""
        return sum(p.stat().st_size for p in self.video_files())

    def video_key(self, camera: str) -> str:
        """The video feature holding robodata camera ``camera`` (``observation.images.<camera>``)."""
        for key in self.video_keys:
            if key == camera or key.rsplit(".", 1)[-1] == camera:
                return key
        raise KeyError(f"{self.root}: no video feature for camera {camera!r} (have {self.video_keys})")

    def __getitem__(self, idx: int) -> dict:
        return self.get_item(idx)

    def get_item(self, idx: int, video_keys: list[str] | None = None, delta_indices: list[int] | None = None) -> dict:
        """One sample: the row's columns and each camera's frame (or frames, with
        ``delta_indices``, LeRobot's ``delta_timestamps`` in frames), as ``DatasetReader.get_item``."""
        keys = self.video_keys if video_keys is None else video_keys
        row = self.data.slice(int(idx), 1).to_pylist()[0]
        ep_idx = int(row["episode_index"])
        query_indices = None
        item = {name: np.asarray(value) if isinstance(value, list) else value for name, value in row.items()}
        if delta_indices is not None:
            query_indices, padding = self._get_query_indices(int(row["index"]), ep_idx, keys, delta_indices)
            item.update(padding)
        query_timestamps = self._get_query_timestamps(float(row["timestamp"]), keys, query_indices)
        item.update(self._query_videos(query_timestamps, ep_idx))
        return item

    def _get_query_indices(self, abs_idx: int, ep_idx: int, keys: list[str], delta_idx: list[int]):
        ep = self.episodes[ep_idx]
        ep_start, ep_end = ep["dataset_from_index"], ep["dataset_to_index"]
        query = {key: [max(ep_start, min(ep_end - 1, abs_idx + d)) for d in delta_idx] for key in keys}
        pad = np.asarray([(abs_idx + d < ep_start) | (abs_idx + d >= ep_end) for d in delta_idx])
        return query, {f"{key}_is_pad": pad for key in keys}

    def _get_query_timestamps(self, current_ts: float, keys: list[str], query_indices) -> dict[str, list[float]]:
        if query_indices is None:
            return {key: [current_ts] for key in keys}
        times = self.timestamps
        return {key: [float(times[self._row_of_index[i]]) for i in query_indices[key]] for key in keys}

    def _query_videos(self, query_timestamps: dict[str, list[float]], ep_idx: int) -> dict[str, np.ndarray]:
        ep = self.episodes[ep_idx]

        def decode_single(key: str, query_ts: list[float]) -> tuple[str, np.ndarray]:
            shifted = [ep[f"videos/{key}/from_timestamp"] + ts for ts in query_ts]
            path = self.video_path(ep_idx, key)
            frames = decode_video_frames_pyav(path, shifted, self.tolerance_s, self.decode_counts)
            return key, frames[0] if len(query_ts) == 1 else frames

        items = list(query_timestamps.items())
        if len(items) <= 1 or self._threads is None:  # LeRobot: one camera decodes without a pool
            return dict(decode_single(key, ts) for key, ts in items)
        return dict(f.result() for f in [self._threads.submit(decode_single, k, ts) for k, ts in items])


def _read_parquet_dir(folder: Path, sort_key: str) -> pa.Table:
    files = sorted(folder.glob("chunk-*/file-*.parquet"))
    if not files:
        raise FileNotFoundError(f"{folder}: no chunk-*/file-*.parquet files")
    return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default").sort_by(sort_key)


def real_lerobot_dataset(root: str | Path):
    """``lerobot.datasets.lerobot_dataset.LeRobotDataset`` on ``root`` with the PyAV backend, or
    None where the ``lerobot`` package is not importable (it is not a robodata dependency)."""
    try:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
    except ImportError:
        return None
    options = {"repo_id": f"local/{Path(root).name}", "root": root, "video_backend": "pyav"}
    try:  # uint8 frames, as the re-implementation returns (LeRobot releases before 0.5 lack the flag)
        return LeRobotDataset(**options, return_uint8=True)
    except TypeError:
        return LeRobotDataset(**options)

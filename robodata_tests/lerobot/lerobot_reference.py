"""A small reader of LeRobot v3.0 datasets written from LeRobot's documented format (lerobot
itself needs Python >= 3.12): meta/info.json, meta/episodes/*.parquet, meta/tasks.parquet,
data/*.parquet and one MP4 per camera per file. It follows LeRobotDataset.__getitem__: parquet
columns as tensors, ``delta_timestamps`` as ``round(delta * fps)`` frames clamped to the episode
with ``<key>_is_pad``, video frames decoded at ``from_timestamp + timestamp`` (nearest frame,
within ``tolerance_s``) as float32 CHW in [0, 1], and ``task`` from the tasks table.
"""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch


class LeRobotReference:
    def __init__(self, root: str | Path, delta_timestamps: dict | None = None, tolerance_s: float = 1e-4) -> None:
        self.root = Path(root)
        self.info = json.loads((self.root / "meta" / "info.json").read_text())
        self.fps = self.info["fps"]
        self.video_keys = [k for k, f in self.info["features"].items() if f["dtype"] == "video"]
        files = sorted((self.root / "data").rglob("*.parquet"))
        self.data = pa.concat_tables([pq.read_table(f) for f in files]).sort_by("index")
        self.episodes = pa.concat_tables(
            [pq.read_table(f) for f in sorted((self.root / "meta" / "episodes").rglob("*.parquet"))]
        ).to_pylist()
        tasks = pq.read_table(self.root / "meta" / "tasks.parquet").to_pandas()
        self.tasks = {int(i): text for text, i in zip(tasks.index, tasks["task_index"], strict=True)}
        self.delta_indices = {k: [round(d * self.fps) for d in v] for k, v in (delta_timestamps or {}).items()}
        self.tolerance_s = tolerance_s
        self._columns = {name: self.data[name].to_pylist() for name in self.data.column_names}
        self._frames: dict[tuple[str, str], dict[int, np.ndarray]] = {}

    def __len__(self) -> int:
        return self.data.num_rows

    def _episode(self, episode_index: int) -> dict:
        return next(e for e in self.episodes if e["episode_index"] == episode_index)

    def _value(self, name: str, idx: int):
        value = self._columns[name][idx]
        return value if isinstance(value, str) else torch.tensor(value)

    def prepare_videos(self, indices: list[int]) -> None:
        """Decode, once, every video frame the items ``indices`` need (only those are kept)."""
        wanted: dict[tuple[str, str], set[int]] = {}
        for idx in indices:
            for key, (path, times) in self._video_queries(idx).items():
                wanted.setdefault((key, path), set()).update(round(t * self.fps) for t in times)
        for (key, path), frames in wanted.items():
            kept = self._frames.setdefault((key, path), {})
            with av.open(path) as container:
                stream = container.streams.video[0]
                for frame in container.decode(stream):
                    t = float(frame.pts * stream.time_base)
                    k = round(t * self.fps)
                    if k in frames and abs(k / self.fps - t) <= self.tolerance_s:
                        kept[k] = frame.to_ndarray(format="rgb24")

    def _query(self, idx: int, key: str) -> tuple[list[int], list[bool]]:
        episode = self._episode(self._columns["episode_index"][idx])
        lo, hi = episode["dataset_from_index"], episode["dataset_to_index"]
        wanted = [idx + d for d in self.delta_indices[key]]
        return [min(max(w, lo), hi - 1) for w in wanted], [not lo <= w < hi for w in wanted]

    def _video_queries(self, idx: int) -> dict[str, tuple[str, list[float]]]:
        episode = self._episode(self._columns["episode_index"][idx])
        out = {}
        for key in self.video_keys:
            query = self._query(idx, key)[0] if key in self.delta_indices else [idx]
            start = episode[f"videos/{key}/from_timestamp"]
            path = self.root / self.info["video_path"].format(
                video_key=key,
                chunk_index=episode[f"videos/{key}/chunk_index"],
                file_index=episode[f"videos/{key}/file_index"],
            )
            out[key] = (str(path), [start + self._columns["timestamp"][q] for q in query])
        return out

    def __getitem__(self, idx: int) -> dict:
        item = {name: self._value(name, idx) for name in self.data.column_names}
        for key in self.delta_indices:
            if key in self.video_keys:
                continue
            query, pad = self._query(idx, key)
            item[key] = torch.stack([self._value(key, q) for q in query])
            item[f"{key}_is_pad"] = torch.tensor(pad)
        for key, (path, times) in self._video_queries(idx).items():
            frames = [self._frames[(key, path)][round(t * self.fps)] for t in times]
            video = torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2).float() / 255
            item[key] = video if key in self.delta_indices else video[0]
            if key in self.delta_indices:
                item[f"{key}_is_pad"] = torch.tensor(self._query(idx, key)[1])
        item["task"] = self.tasks[int(item["task_index"])]
        return item

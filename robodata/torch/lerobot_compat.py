"""``LeRobotCompatDataset``: one pinned robodata version as the map-style dataset LeRobot's
training code expects (its keys, dtypes, ``delta_timestamps``, ``*_is_pad``, ``meta``).

Items are ordered like LeRobot's: episodes in ``episode_index`` order, frames in order, so item i
of the dataset is frame i of ``robodata export-lerobot`` of the same version (the tests check it
value for value). ``episode_index`` keeps robodata's numbering; ``index`` is the frame's position
in the whole version, as LeRobot's global index.

``delta_timestamps`` are seconds. An offset that is a whole number of control steps (within
``tolerance_s``) reads the row that many steps away, exactly as LeRobot does at its fps. A camera
offset that is instead a whole number of camera frames (e.g. -1/30 s with 30 fps cameras and rows
at 100 Hz) reads that many camera frames before or after the frame the row shows, through the
first row showing it. Anything else is refused with the rates it would have to match. Offsets
past an episode's edge repeat the edge and are flagged in ``<key>_is_pad``.

>>> version = robodata.open("data/demo").tag("run-42")
>>> ds = LeRobotCompatDataset("data/demo", version="run-42", delta_timestamps={"action": [0, 0.01]})
>>> ds[0]["observation.images.top"].shape, ds[0]["action"].shape, ds.meta.fps
(torch.Size([3, 480, 640]), torch.Size([2, 14]), 100)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import Dataset

from robodata.format.provenance import UPLOAD_COLUMNS
from robodata.format.schema import image_column, ref_columns
from robodata.interop.lerobot_format import (
    ACTION,
    CODEBASE_VERSION,
    DEFAULT_FEATURES,
    STATE,
    feature_of_arrow,
    joint_names_feature,
    recorded_cameras,
    video_key,
)
from robodata.reader import PLANAR_RGB, RowIndex, SharedArrays, adopt_rows, open_dataset
from robodata.reader import to_numpy as _to_numpy
from robodata.torch.batch_reader import BatchReader, checked_indices
from robodata.torch.delta_timestamps import resolve_delta_timestamps
from robodata.torch.fork_safety import ForkedAfterLanceError, forked_from_lance, mark_lance_used, run_without_lance
from robodata.torch.lerobot_meta import DatasetInfo, LeRobotMeta
from robodata.torch.lerobot_version_stats import lerobot_stats_of
from robodata.torch.sampler import PlannedBatch, RowSampler
from robodata.torch.torch_dataset import SampleBatch, finish_sending_before_exit

# robodata column -> LeRobot key for the columns whose names differ.
RENAMED = {"observation_state": STATE, "action": ACTION}
# robodata's own per-row columns: not LeRobot features, so items carry them only when asked
# (``extra_columns``). Item keys LeRobot derives itself, robodata's task/split (``task`` comes
# from the task column), its provenance columns and the upload columns.
ROBODATA_OWN = {"language_instruction", "source", "is_intervention"}
NOT_IN_ITEMS = {"timestamp_ns", "task", "split", "episode_index", "frame_index", *UPLOAD_COLUMNS}


class ForkedWorkerError(ForkedAfterLanceError):
    text = (
        "LeRobotCompatDataset: this DataLoader worker was forked from a process that had already read "
        "through Lance, which is not fork-safe; pass multiprocessing_context=robodata.torch.worker_context() "
        "to the DataLoader (lerobot-train: --dataloader_multiprocessing_context=spawn, its default)"
    )


class LeRobotCompatDataset(Dataset):
    """A robodata version as LeRobot's ``LeRobotDataset``; see the module docstring."""

    def __init__(
        self,
        uri: str,
        *,
        version: int | str | None = None,
        episodes: Sequence[int] | None = None,
        delta_timestamps: Mapping[str, Sequence[float]] | None = None,
        image_transforms: Callable | None = None,
        tolerance_s: float = 1e-4,
        return_uint8: bool = False,
        storage_options: dict | None = None,
        extra_columns: Sequence[str] = (),
        resolution: tuple[int, int] | None = None,
    ) -> None:
        self.image_transforms = image_transforms
        self.return_uint8 = bool(return_uint8)
        self.tolerance_s = float(tolerance_s)
        self.delta_timestamps = dict(delta_timestamps) if delta_timestamps is not None else None
        self.episodes = None if episodes is None else sorted(set(int(e) for e in episodes))
        self._owner_pid, self._unpickled = os.getpid(), False
        # Owned by this process (named after it), filled by whichever process reads the dataset.
        self._shared = SharedArrays("lerobot")
        self._shared_rows = SharedArrays("rows")
        self._arrays: dict[str, np.ndarray] = {}
        # Every Lance read of the construction happens in a short-lived helper process when this
        # one has not used Lance, so DataLoader workers can still be forked from it (fork_safety).
        before = set(self.__dict__)

        def read() -> dict:
            self._read(uri, version, storage_options, extra_columns, resolution)
            return {k: v for k, v in self.__dict__.items() if k not in before}

        self.__dict__.update(run_without_lance(read))
        self.meta = self._make_meta()

    def _read(
        self, uri: str, version, storage_options, extra_columns: Sequence[str], resolution: tuple[int, int] | None
    ) -> None:
        """Everything the dataset needs from Lance, as plain Python and numpy, the row index and
        the item order written to the shared files."""
        ds = open_dataset(uri, version=version, storage_options=storage_options)
        refs = {c for cam in ds.cameras for c in ref_columns(cam)}
        unknown = [c for c in extra_columns if c not in ds.columns or c in refs]
        if unknown:
            raise ValueError(f"{uri}: version {ds.version} has no column {unknown}; its columns are {ds.columns}")
        wanted = set(extra_columns)
        self.item_columns = [
            c
            for c in ds.columns
            if c not in refs and (c in wanted or (c not in NOT_IN_ITEMS and c not in ROBODATA_OWN))
        ]
        self.reader = BatchReader(
            uri,
            version=ds.version,
            storage_options=storage_options,
            columns=self.item_columns,
            budget_bytes=0,
            resolution=resolution,  # frames of (H, W) from a training rendition when one fits
        )
        self.uri, self.version = uri, ds.version
        self.repo_id, self.root, self.revision = uri, uri, str(ds.version)
        ds = self.reader.dataset
        self.control_hz = float(ds.metadata.control_hz)
        self.cameras = recorded_cameras(ds.metadata, list(ds.cameras))
        rows = ds.rows
        for key, array in rows.arrays.items():
            self._shared_rows.put(key, array)
        self._total_frames = len(rows.order)
        sorted_rows = np.asarray(rows.order)
        if self.episodes is not None:
            wanted_episodes = np.asarray(self.episodes, dtype=np.int64)
            unknown_episodes = np.setdiff1d(wanted_episodes, np.unique(rows.episode_index))
            if unknown_episodes.size:
                raise ValueError(f"{uri}: version {ds.version} has no episode {unknown_episodes.tolist()}")
            sorted_rows = sorted_rows[np.isin(rows.episode_index[sorted_rows], wanted_episodes)]
        self._shared.put("rows", sorted_rows)
        self.offsets = resolve_delta_timestamps(
            self.delta_timestamps or {},
            control_hz=self.control_hz,
            camera_fps=lambda key: {image_column(c): ds.metadata.cameras[c].fps for c in self.cameras}.get(
                self._key_column(key)  # raises for a key that is not a feature
            ),
            tolerance_s=self.tolerance_s,
        )
        if any(kind == "camera" for per_key in self.offsets.values() for kind, _ in per_key):
            for cam in self.cameras:
                self._shared.put(f"shown.{cam}", self._shown_frames(ds, cam))
        self._task_index, self._tasks_text = self._tasks(ds, rows)
        self._features_read = self._features(ds)
        self._robot_type = ds.metadata.robot_type or None

    # --- LeRobotDataset's attributes -------------------------------------------------------------
    @property
    def fps(self) -> int | float:
        return self.meta.fps

    @property
    def features(self) -> dict[str, dict]:
        return self.meta.features

    @property
    def num_frames(self) -> int:
        """Frames of the selected episodes (all of the version's without ``episodes``)."""
        return len(self)

    @property
    def num_episodes(self) -> int:
        return len(self.episodes) if self.episodes is not None else self.meta.total_episodes

    @property
    def absolute_to_relative_idx(self) -> dict[int, int] | None:
        """``index`` -> item position, for a selection of episodes (None without), as LeRobot's."""
        if self.episodes is None:
            return None
        index = self._row_index().rank[self._array("rows")]
        return dict(zip(np.asarray(index).tolist(), range(len(index)), strict=True))

    def set_image_transforms(self, image_transforms: Callable | None) -> None:
        self.image_transforms = image_transforms

    def clear_image_transforms(self) -> None:
        self.image_transforms = None

    # --- construction helpers --------------------------------------------------------------------
    def _key_column(self, key: str) -> str:
        for cam in self.cameras:
            if key == video_key(cam):
                return image_column(cam)
        for column, lerobot in RENAMED.items():
            if key == lerobot:
                return column
        if key in self.item_columns:
            return key
        raise ValueError(
            f"delta_timestamps names {key!r}, which is not a feature of {self.uri}; features: "
            f"{[video_key(c) for c in self.cameras] + [RENAMED.get(c, c) for c in self.item_columns]}"
        )

    @staticmethod
    def _shown_frames(ds, camera: str) -> np.ndarray:
        """Per row, the number of the camera frame it shows within its episode (closed GOPs of a
        fixed size: GOP index x GOP size + frame in GOP)."""
        _, gop_index, in_gop = ref_columns(camera)
        table = ds.to_table(columns=[gop_index, in_gop])
        return table[gop_index].to_numpy().astype(np.int64) * ds.metadata.gop_size + table[in_gop].to_numpy()

    def _tasks(self, ds, rows) -> tuple[np.ndarray, list[str]]:
        """task_index per episode (tasks in order of first appearance, as the export numbers them)
        and the task texts: robodata's task column (an imported LeRobot dataset's task)."""
        episodes, first = np.unique(rows.episode_index[rows.order], return_index=True)
        first_rows = np.asarray(rows.order)[first]
        table = ds.take_rows(first_rows, ["task"])
        texts_of_episode = [text or "" for text in table["task"].to_pylist()]
        tasks: list[str] = []
        index = np.zeros(int(episodes.max()) + 1 if len(episodes) else 0, dtype=np.int64)
        for episode, text in zip(episodes, texts_of_episode, strict=True):
            if text not in tasks:
                tasks.append(text)
            index[episode] = tasks.index(text)
        self._episode_lengths = dict(zip(episodes.tolist(), np.diff(np.append(first, len(rows))).tolist(), strict=True))
        self._episode_task = dict(zip(episodes.tolist(), texts_of_episode, strict=True))
        return index, tasks

    def _features(self, ds) -> dict[str, dict]:
        """LeRobot's features in the export's order: state, action, cameras (recorded order),
        the other per-row columns, then LeRobot's index columns; shapes are tuples, as
        LeRobotDataset's are once its info is loaded."""
        features: dict[str, dict] = {}
        schema = ds.lance_dataset.schema
        for column in ("observation_state", "action"):
            if column in self.item_columns:
                feature = feature_of_arrow(column, schema.field(column).type)
                feature["names"] = joint_names_feature(ds.metadata)
                features[RENAMED[column]] = feature
        for cam in self.cameras:
            info = ds.metadata.cameras[cam]
            height, width = self.reader.resolution or (info.height, info.width)
            features[video_key(cam)] = {
                "dtype": "video",
                "shape": (height, width, 3),
                "names": ["height", "width", "channels"],
                "info": {
                    "video.height": height,
                    "video.width": width,
                    "video.channels": 3,
                    "video.fps": info.fps,
                    "video.is_depth_map": False,
                    "has_audio": False,
                },
            }
        for column in self.item_columns:
            if column not in RENAMED:
                features[column] = feature_of_arrow(column, schema.field(column).type)
        features.update({k: dict(v) for k, v in DEFAULT_FEATURES.items()})
        for feature in features.values():
            feature["shape"] = tuple(feature["shape"])
        return features

    def _make_meta(self) -> LeRobotMeta:
        fps = int(self.control_hz) if self.control_hz.is_integer() else self.control_hz
        features = self._features_read
        episode_rows, start = [], 0
        for episode, length in self._episode_lengths.items():
            episode_rows.append(
                {
                    "episode_index": int(episode),
                    "tasks": [self._episode_task[episode]],
                    "length": int(length),
                    "dataset_from_index": start,
                    "dataset_to_index": start + int(length),
                }
            )
            start += int(length)
        info = DatasetInfo(
            codebase_version=CODEBASE_VERSION,
            fps=fps,
            features=features,
            total_episodes=len(episode_rows),
            total_frames=self._total_frames,
            total_tasks=len(self._tasks_text),
            robot_type=self._robot_type,
        )
        columns = [c for c in self.item_columns if c not in ROBODATA_OWN or c in features]

        def compute() -> dict:
            ds = self._lance_dataset()
            computed = lerobot_stats_of(
                ds,
                order=np.asarray(ds.rows.order),
                columns=columns,
                cameras=self.cameras,
                fps=self.control_hz,
                task_index=self._task_index,
            )
            return {key: computed[key] for key in features if key in computed}

        return LeRobotMeta(
            uri=self.uri,
            version=self.version,
            info=info,
            episode_rows=episode_rows,
            tasks=self._tasks_text,
            stats=lambda: run_without_lance(compute),  # one read of the data, in a helper process
        )

    def _lance_dataset(self):
        """The pinned version's Lance-backed dataset in this process, on the shared row index."""
        ds = self.reader.dataset
        adopt_rows(ds, self._shared_rows)
        return ds

    def _row_index(self) -> RowIndex:
        """The row index, memory-mapped from the shared files (no Lance)."""
        index = self.__dict__.get("_rows_mapped")
        if index is None:
            index = self._rows_mapped = RowIndex.mapped(self._shared_rows, self.cameras)
        return index

    # --- Dataset ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._array("rows"))

    def _array(self, key: str) -> np.ndarray:
        array = self._arrays.get(key)
        if array is None:
            shared = self._shared.get(key)
            if shared is None:  # its owner, the training process, has exited and removed it
                raise RuntimeError(f"{self.uri}: the shared array {key!r} is gone")
            array = self._arrays[key] = shared
        return array

    def __getitem__(self, index: int) -> dict:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> SampleBatch:
        """A batch of items: one coalesced GOP read and one decode per GOP for every camera."""
        if forked_from_lance() and not self._unpickled and os.getpid() != self._owner_pid:
            raise ForkedWorkerError
        finish_sending_before_exit()
        items = checked_indices(indices, len(self), self.uri, self.version)
        if os.getpid() == self._owner_pid:
            mark_lance_used()  # reading here: children forked from now on are not safe
        ds = self._lance_dataset()
        index = ds.rows
        rows = np.asarray(self._array("rows")[items])
        batch: dict[str, Any] = {}
        windows = {key: self._window(index, rows, key, per_delta) for key, per_delta in self.offsets.items()}
        # Per-row columns: one Lance take over every row any key needs.
        needed = [rows] + [w for key, (w, _) in windows.items() if self._key_column(key) in self.item_columns]
        unique, inverse = np.unique(np.concatenate([n.reshape(-1) for n in needed]), return_inverse=True)
        table = ds.take_rows(unique, self.item_columns) if self.item_columns else pa.table({})
        positions, cursor = {}, 0
        for name, array in zip(
            ["__rows__", *[k for k in windows if self._key_column(k) in self.item_columns]], needed, strict=True
        ):
            positions[name] = inverse[cursor : cursor + array.size].reshape(array.shape)
            cursor += array.size
        for column in self.item_columns:
            key = RENAMED.get(column, column)
            values = _to_numpy(table[column])
            batch[key] = _as_torch(values[positions[key] if key in windows else positions["__rows__"]])
        # Cameras read at the same rows (all but those with their own delta_timestamps) share one
        # get_frames call: one coalesced Lance read of their GOPs and one decode task list.
        groups: dict[str, list[str]] = {}
        for cam in self.cameras:
            groups.setdefault(video_key(cam) if video_key(cam) in windows else "", []).append(cam)
        for windowed, cams in groups.items():
            cam_rows = windows[windowed][0] if windowed else rows
            # Decoded channels first (planar RGB written straight into [N, 3, H, W]): LeRobot's
            # CHW items without a transposing copy of packed RGB.
            decoded = ds.get_frames(
                cam_rows.reshape(-1), cameras=cams, resolution=self.reader.resolution, pixel_format=PLANAR_RGB
            )
            for cam in cams:
                frames = torch.from_numpy(decoded[cam].reshape(cam_rows.shape + decoded[cam].shape[1:]))
                batch[video_key(cam)] = frames if self.return_uint8 else frames.float().div_(255)
        frame_index = index.frame_index[rows]
        episode_index = index.episode_index[rows]
        batch["timestamp"] = torch.from_numpy((frame_index / self.control_hz).astype(np.float32))
        batch["frame_index"] = torch.from_numpy(frame_index.astype(np.int64))
        batch["episode_index"] = torch.from_numpy(episode_index.astype(np.int64))
        batch["index"] = torch.from_numpy(np.asarray(index.rank[rows], dtype=np.int64))
        batch["task_index"] = torch.from_numpy(self._task_index[episode_index])
        for key, (_, pad) in windows.items():
            batch[f"{key}_is_pad"] = torch.from_numpy(pad)
        if self.image_transforms is not None:
            for cam in self.cameras:
                key = video_key(cam)
                batch[key] = torch.stack([self.image_transforms(frame) for frame in batch[key]])
        batch["task"] = [self._episode_task[int(e)] for e in episode_index]
        # LeRobot's key order: cameras, the per-frame columns, the pad masks, task.
        cameras = [video_key(c) for c in self.cameras]
        pads = [f"{key}_is_pad" for key in self.offsets]
        rest = [k for k in batch if k not in cameras and k not in pads and k != "task"]
        batch = {k: batch[k] for k in cameras + rest + pads + ["task"]}
        if isinstance(indices, PlannedBatch):  # from a RowSampler: flag rows that only pad the last step
            batch["padding"] = torch.tensor(indices.padding, dtype=torch.bool)
        return SampleBatch(batch)

    def _window(self, index, rows: np.ndarray, key: str, per_delta: Sequence[tuple[str, int]]):
        """[N, T] rows read for ``key`` and the [N, T] pad mask."""
        out = np.empty((len(rows), len(per_delta)), dtype=np.int64)
        pad = np.zeros(out.shape, dtype=bool)
        row_steps = [(t, k) for t, (kind, k) in enumerate(per_delta) if kind == "row"]
        if row_steps:
            found, padded = index.window_rows(rows, np.array([k for _, k in row_steps], dtype=np.int64))
            for j, (t, _) in enumerate(row_steps):
                out[:, t], pad[:, t] = found[:, j], padded[:, j]
        camera_steps = [(t, j) for t, (kind, j) in enumerate(per_delta) if kind == "camera"]
        if camera_steps:
            camera = next(c for c in self.cameras if video_key(c) == key)
            shown = self._array(f"shown.{camera}")
            for n, row in enumerate(rows):
                start = int(index.rank[row]) - int(index.frame_index[row])
                episode_rows = np.asarray(index.order[start : start + int(index.episode_length[row])])
                episode_frames = np.asarray(shown[episode_rows])
                for t, j in camera_steps:
                    target = int(shown[row]) + j
                    p = int(np.searchsorted(episode_frames, target, side="left"))
                    p = min(max(p, 0), len(episode_rows) - 1)
                    out[n, t] = episode_rows[p]
                    pad[n, t] = target < episode_frames[0] or target > episode_frames[-1]
        return out, pad

    def sampler(self, *, batch_size: int, rank: int = 0, world_size: int = 1, seed: int = 0, **options) -> RowSampler:
        """A resumable, DDP-safe ``batch_sampler`` over this dataset's items (equal steps per
        rank, ``state_dict`` the same on every rank).

        >>> from torch.utils.data import DataLoader
        >>> from robodata.torch.torch_dataset import collate_batch
        >>> ds = LeRobotCompatDataset("data/demo")
        >>> sampler = ds.sampler(batch_size=32, rank=1, world_size=2)
        >>> loader = DataLoader(ds, batch_sampler=sampler, collate_fn=collate_batch)
        >>> len(loader), next(iter(loader))["action"].shape  # 591 items: 10 steps of 32 per rank
        (10, torch.Size([32, 14]))

        """
        return RowSampler(
            len(self),
            batch_size=batch_size,
            rank=rank,
            world_size=world_size,
            seed=seed,
            dataset_version=self.version,
            **options,
        )

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_arrays"] = {}  # workers map the shared files instead
        state.pop("_rows_mapped", None)
        state["meta"] = None  # stats and episode lists stay in the training process
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._unpickled = True  # a spawned worker opens its own Lance handles

    def __repr__(self) -> str:
        return (
            f"LeRobotCompatDataset({self.uri!r}, version={self.version}, frames={len(self)}, "
            f"cameras={self.cameras}, delta_timestamps={list(self.offsets)})"
        )


def _as_torch(values: np.ndarray):
    if values.dtype == object:
        return values.tolist()
    return torch.from_numpy(np.ascontiguousarray(values))

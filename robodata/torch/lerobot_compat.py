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

>>> ds = LeRobotCompatDataset("data/demo", version="run-42", delta_timestamps={"action": [0, 0.01]})  # doctest: +SKIP
>>> ds[0]["observation.images.top"].shape, ds.meta.fps  # doctest: +SKIP
(torch.Size([3, 480, 640]), 100)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch
from torch.utils.data import Dataset

from robodata.format import stats as feature_stats
from robodata.format.provenance import UPLOAD_COLUMNS
from robodata.format.schema import image_column, ref_columns
from robodata.interop.lerobot_format import ACTION, STATE, feature_of_arrow, video_key
from robodata.reader.batch_reader import BatchReader, checked_indices
from robodata.reader.dataset import _to_numpy, open_dataset
from robodata.reader.row_index import SharedArrays
from robodata.reader.sampler import PlannedBatch, RowSampler
from robodata.reader.torch_dataset import (
    SampleBatch,
    adopt_shared_rows,
    finish_sending_before_exit,
    share_rows,
)

# robodata column -> LeRobot key for the columns whose names differ.
RENAMED = {"observation_state": STATE, "action": ACTION}
# Per-row columns that LeRobot items do not carry (or carry under another form).
# Item keys LeRobot derives itself, and the upload provenance (not training data).
NOT_IN_ITEMS = {"timestamp_ns", "task", "split", "episode_index", "frame_index", *UPLOAD_COLUMNS}


@dataclass
class LeRobotMeta:
    """What LeRobot's ``dataset.meta`` offers that training code reads."""

    fps: float
    features: dict[str, dict]
    camera_keys: list[str]
    episodes: list[dict]  # {"episode_index", "length", "tasks"} per episode of the version
    total_frames: int
    tasks: list[str] = field(default_factory=list)  # task texts; an item's task_index points here
    robot_type: str = ""
    _stats: Callable[[], dict] | None = field(default=None, repr=False)

    @property
    def total_episodes(self) -> int:
        return len(self.episodes)

    @cached_property
    def stats(self) -> dict[str, dict[str, np.ndarray]]:
        """Per feature mean/std/min/max/count (numpy), aggregated from per-episode statistics
        stored at ingest; image features are per channel, shaped [3, 1, 1]."""
        return self._stats() if self._stats is not None else {}


class LeRobotCompatDataset(Dataset):
    """A robodata version with LeRobot's item layout; see the module docstring."""

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
        resolution: tuple[int, int] | None = None,
    ) -> None:
        ds = open_dataset(uri, version=version, storage_options=storage_options)
        refs = {c for cam in ds.cameras for c in ref_columns(cam)}
        self.item_columns = [c for c in ds.columns if c not in refs and c not in NOT_IN_ITEMS]
        self.reader = BatchReader(
            uri,
            version=ds.version,
            storage_options=storage_options,
            columns=self.item_columns,
            budget_bytes=0,
            resolution=resolution,  # frames of (H, W) from a training rendition when one fits
        )
        self.uri, self.version = uri, ds.version
        ds = self.reader.dataset  # the reader's handle: one row index in this process, shared with workers
        self.image_transforms = image_transforms
        self.return_uint8 = bool(return_uint8)
        self.tolerance_s = float(tolerance_s)
        self.control_hz = float(ds.metadata.control_hz)
        self.cameras = list(ds.cameras)
        rows = ds._rows  # RoboDataset's RowIndex (built once here, mapped by workers)
        sorted_rows = np.asarray(rows.order)
        if episodes is not None:
            wanted = np.asarray(sorted(set(int(e) for e in episodes)), dtype=np.int64)
            present = np.unique(rows.episode_index)
            unknown = np.setdiff1d(wanted, present)
            if unknown.size:
                raise ValueError(f"{uri}: version {ds.version} has no episode {unknown.tolist()}")
            sorted_rows = sorted_rows[np.isin(rows.episode_index[sorted_rows], wanted)]
        self._shared = SharedArrays("lerobot")
        self._shared.put("rows", sorted_rows)
        self._arrays: dict[str, np.ndarray] = {"rows": sorted_rows}
        self.offsets = self._resolve(delta_timestamps or {}, ds)
        if any(kind == "camera" for per_key in self.offsets.values() for kind, _ in per_key):
            for cam in self.cameras:
                shown = self._shown_frames(ds, cam)
                self._shared.put(f"shown.{cam}", shown)
                self._arrays[f"shown.{cam}"] = shown
        self._task_index, tasks_text = self._tasks(ds, rows)
        self.meta = self._make_meta(ds, rows, tasks_text)
        self._shared_rows: SharedArrays | None = None

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

    def _resolve(self, delta_timestamps: Mapping[str, Sequence[float]], ds) -> dict[str, list[tuple[str, int]]]:
        """key -> [("row", k) or ("camera", j) per delta]: k control steps or j camera frames."""
        resolved = {}
        for key, deltas in delta_timestamps.items():
            column = self._key_column(key)
            camera = next((c for c in self.cameras if image_column(c) == column), None)
            per_delta = []
            for delta in deltas:
                steps = float(delta) * self.control_hz
                if abs(round(steps) - steps) / self.control_hz <= self.tolerance_s:
                    per_delta.append(("row", int(round(steps))))
                    continue
                fps = ds.metadata.cameras[camera].fps if camera else None
                frames = float(delta) * fps if fps else None
                if frames is not None and abs(round(frames) - frames) / fps <= self.tolerance_s:
                    per_delta.append(("camera", int(round(frames))))
                    continue
                rates = f"1/{self.control_hz:g} s (control)" + (f" or 1/{fps:g} s (camera)" if fps else "")
                raise ValueError(
                    f"delta_timestamps[{key!r}] = {delta} is not a multiple of {rates} "
                    f"within tolerance_s={self.tolerance_s}"
                )
            resolved[key] = per_delta
        return resolved

    @staticmethod
    def _shown_frames(ds, camera: str) -> np.ndarray:
        """Per row, the number of the camera frame it shows within its episode (closed GOPs of a
        fixed size: GOP index x GOP size + frame in GOP)."""
        _, gop_index, in_gop = ref_columns(camera)
        table = ds.to_table(columns=[gop_index, in_gop])
        return table[gop_index].to_numpy().astype(np.int64) * ds.metadata.gop_size + table[in_gop].to_numpy()

    def _tasks(self, ds, rows) -> tuple[np.ndarray, list[str]]:
        """task_index per episode (tasks in order of first appearance, as the export numbers them)
        and the task texts: the language instruction, else the task name."""
        episodes, first = np.unique(rows.episode_index[rows.order], return_index=True)
        first_rows = np.asarray(rows.order)[first]
        columns = [c for c in ("task", "language_instruction") if c in ds.columns]
        table = ds.lance_dataset.take(first_rows.tolist(), columns=columns)
        texts_of_episode = []
        for i in range(table.num_rows):
            instruction = table["language_instruction"][i].as_py() if "language_instruction" in columns else ""
            texts_of_episode.append(instruction or table["task"][i].as_py() or "")
        tasks: list[str] = []
        index = np.zeros(int(episodes.max()) + 1 if len(episodes) else 0, dtype=np.int64)
        for episode, text in zip(episodes, texts_of_episode, strict=True):
            if text not in tasks:
                tasks.append(text)
            index[episode] = tasks.index(text)
        self._episode_lengths = dict(zip(episodes.tolist(), np.diff(np.append(first, len(rows))).tolist(), strict=True))
        self._episode_task = dict(zip(episodes.tolist(), texts_of_episode, strict=True))
        return index, tasks

    def _make_meta(self, ds, rows, tasks: list[str]) -> LeRobotMeta:
        features: dict[str, dict] = {}
        for cam in self.cameras:
            info = ds.metadata.cameras[cam]
            height, width = self.reader.resolution or (info.height, info.width)
            features[video_key(cam)] = {
                "dtype": "video",
                "shape": [height, width, 3],
                "names": ["height", "width", "channels"],
                "fps": info.fps,
            }
        schema = ds.lance_dataset.schema
        for column in self.item_columns:
            feature = feature_of_arrow(column, schema.field(column).type)
            if column in RENAMED:
                feature["names"] = list(ds.metadata.joint_names)
            features[RENAMED.get(column, column)] = feature
        for name, dtype in (
            ("timestamp", "float32"),
            ("frame_index", "int64"),
            ("episode_index", "int64"),
            ("index", "int64"),
            ("task_index", "int64"),
        ):
            features[name] = {"dtype": dtype, "shape": [1], "names": None}
        selected = set(rows.episode_index[self._arrays["rows"]].tolist()) if len(self._arrays["rows"]) else set()
        episodes = [
            {"episode_index": e, "length": n, "tasks": [self._episode_task[e]]}
            for e, n in self._episode_lengths.items()
            if e in selected
        ]
        fps = self.control_hz
        return LeRobotMeta(
            fps=int(fps) if float(fps).is_integer() else fps,
            features=features,
            camera_keys=[video_key(c) for c in self.cameras],
            episodes=episodes,
            total_frames=len(self._arrays["rows"]),
            tasks=tasks,
            robot_type=ds.metadata.robot_type,
            _stats=lambda: version_stats(ds, self._episode_lengths),
        )

    # --- Dataset ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._array("rows"))

    def _array(self, key: str) -> np.ndarray:
        array = self._arrays.get(key)
        if array is None:
            array = self._arrays[key] = self._shared.get(key)
        return array

    def __getitem__(self, index: int) -> dict:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> SampleBatch:
        """A batch of items: one coalesced GOP read and one decode per GOP for every camera."""
        finish_sending_before_exit()
        adopt_shared_rows(self.reader, self._shared_rows)
        items = checked_indices(indices, len(self), self.uri, self.version)
        ds = self.reader.dataset
        index = ds._rows
        rows = np.asarray(self._array("rows")[items])
        batch: dict[str, object] = {}
        windows = {key: self._window(index, rows, key, per_delta) for key, per_delta in self.offsets.items()}
        # Per-row columns: one Lance take over every row any key needs.
        needed = [rows] + [w for key, (w, _) in windows.items() if self._key_column(key) in self.item_columns]
        unique, inverse = np.unique(np.concatenate([n.reshape(-1) for n in needed]), return_inverse=True)
        table = ds.lance_dataset.take(unique.tolist(), columns=self.item_columns) if self.item_columns else None
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
        for cam in self.cameras:
            key = video_key(cam)
            cam_rows = windows[key][0] if key in windows else rows
            frames = ds.take_blobs_decoded(
                columns=image_column(cam), indices=cam_rows.reshape(-1), resolution=self.reader.resolution
            )[image_column(cam)]
            frames = torch.from_numpy(frames.reshape(cam_rows.shape + frames.shape[1:]))
            frames = frames.movedim(-1, -3)  # HWC -> CHW
            batch[key] = frames.contiguous() if self.return_uint8 else frames.float().div_(255)
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
        if isinstance(indices, PlannedBatch):  # from a RowSampler: flag rows that only pad the last step
            batch["padding"] = torch.tensor(indices.padding, dtype=torch.bool)
        return SampleBatch(batch)

    def _window(self, index, rows: np.ndarray, key: str, per_delta: list[tuple[str, int]]):
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

        >>> sampler = ds.sampler(batch_size=32, rank=r, world_size=w)  # doctest: +SKIP
        >>> DataLoader(ds, batch_sampler=sampler, collate_fn=collate_batch)  # doctest: +SKIP
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
        state["_shared_rows"] = share_rows(self.reader) if self.reader._dataset is not None else self._shared_rows
        state["meta"] = None  # stats and episode lists stay in the training process
        return state

    def __repr__(self) -> str:
        return (
            f"LeRobotCompatDataset({self.uri!r}, version={self.version}, frames={len(self)}, "
            f"cameras={self.cameras}, delta_timestamps={list(self.offsets)})"
        )


def _as_torch(values: np.ndarray):
    if values.dtype == object:
        return values.tolist()
    return torch.from_numpy(np.ascontiguousarray(values))


def version_stats(ds, episode_lengths: dict[int, int]) -> dict[str, dict[str, np.ndarray]]:
    """LeRobot-keyed statistics of ``ds``'s version from the per-episode moments stored at ingest;
    episodes without stored moments (ingested before robodata kept them) are computed here."""
    found, missing = feature_stats.episode_moments_at(ds.uri, ds.version, episode_lengths, ds._storage_options)
    for episode in missing:
        found[episode] = _compute_moments(ds, episode)
    aggregated = feature_stats.aggregate([found[e] for e in sorted(found)])
    keyed = {image_column(c): video_key(c) for c in ds.cameras}
    return {keyed.get(name, RENAMED.get(name, name)): value for name, value in aggregated.items()}


def _compute_moments(ds, episode: int) -> dict[str, dict]:
    """What ingest stores for ``episode``, from the dataset: state and action of every row, and
    the first frame of the sampled GOPs among those its rows show (in time order)."""
    rows = np.flatnonzero(np.asarray(ds._rows.episode_index) == episode)
    table = ds.lance_dataset.take(rows.tolist(), columns=["observation_state", "action"])
    moments = {name: feature_stats.vector_moments(_to_numpy(table[name])) for name in ("observation_state", "action")}
    for cam in ds.cameras:
        first = rows[np.asarray(ds._rows.frame_in_gop[cam])[rows] == 0]
        first = first[np.argsort(np.asarray(ds._rows.frame_index)[first], kind="stable")]
        _, keep = np.unique(np.asarray(ds._rows.ref_id[cam])[first], return_index=True)
        keep = np.sort(keep)[feature_stats.sampled_gops(len(keep))]
        column = image_column(cam)
        frames = ds.take_blobs_decoded(columns=column, indices=first[keep])[column] if len(keep) else []
        moments[image_column(cam)] = feature_stats.pixel_moments(list(frames))
    return moments

"""``LeRobotCompatDataset``'s items: a batch of rows read as LeRobot's items (its keys, in its key
order; camera frames CHW, float in [0, 1] or uint8 with ``return_uint8``; ``delta_timestamps``
windows with their ``<key>_is_pad`` masks), with one coalesced Lance take for the per-row columns
and one GOP read and decode per GOP for the cameras.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from robodata.lerobot._features import RENAMED, robodata_column
from robodata.lerobot._format import video_key
from robodata.reader import PLANAR_RGB
from robodata.reader import to_numpy as _to_numpy
from robodata.torch._handover import SharedOutputs

Offsets = Mapping[str, Sequence[tuple[str, int]]]  # resolve_delta_timestamps: key -> [(kind, steps)]


@dataclass(frozen=True)
class ItemLayout:
    """What an item holds, fixed when the dataset is built (sent to every worker)."""

    item_columns: list[str]  # robodata per-row columns, read under their LeRobot keys
    cameras: list[str]  # in recorded order
    offsets: Offsets  # per LeRobot key: (kind, steps) per delta_timestamps entry
    control_hz: float
    task_index: np.ndarray  # per episode_index
    episode_task: dict[int, str]
    resolution: tuple[int, int] | None  # frames of this (H, W) from a training rendition
    return_uint8: bool

    def column(self, key: str) -> str | None:
        return robodata_column(key, self.cameras, self.item_columns)


def read_items(
    ds,
    rows: np.ndarray,
    layout: ItemLayout,
    shown: Callable[[str], np.ndarray],
    image_transforms: Callable | None,
    read_frames: Callable[[np.ndarray], Mapping[str, np.ndarray]] | None = None,
    shared: SharedOutputs | None = None,
) -> dict[str, Any]:
    """The items of ``ds``'s ``rows`` (row numbers of the pinned version), batched; ``shown(cam)``
    is per row the camera frame it shows within its episode (camera-rate offsets need it).
    ``read_frames(rows)``, when given, reads the frames (planar RGB) of the cameras without
    ``delta_timestamps`` at ``rows``, e.g. from a worker's frame buffer; else ``get_frames`` does.
    Camera tensors are made in ``shared`` memory when given (the frames ``read_frames`` wrote
    there are used as they are)."""
    index = ds.rows
    batch: dict[str, Any] = {}
    windows = {key: _window(index, rows, key, per_delta, layout, shown) for key, per_delta in layout.offsets.items()}
    # Per-row columns: one Lance take over every row any key needs.
    windowed = [k for k in windows if layout.column(k) in layout.item_columns]
    needed = [rows] + [windows[k][0] for k in windowed]
    unique, inverse = np.unique(np.concatenate([n.reshape(-1) for n in needed]), return_inverse=True)
    table = ds.take_rows(unique, layout.item_columns) if layout.item_columns else pa.table({})
    positions, cursor = {}, 0
    for name, array in zip(["__rows__", *windowed], needed, strict=True):
        positions[name] = inverse[cursor : cursor + array.size].reshape(array.shape)
        cursor += array.size
    for column in layout.item_columns:
        key = RENAMED.get(column, column)
        values = _to_numpy(table[column])
        batch[key] = _as_torch(values[positions[key] if key in windows else positions["__rows__"]])
    # Cameras read at the same rows (all but those with their own delta_timestamps) share one
    # get_frames call: one coalesced Lance read of their GOPs and one decode task list.
    groups: dict[str, list[str]] = {}
    for cam in layout.cameras:
        groups.setdefault(video_key(cam) if video_key(cam) in windows else "", []).append(cam)
    for key, cams in groups.items():
        cam_rows = windows[key][0] if key else rows
        # Decoded channels first (planar RGB written straight into [N, 3, H, W]): LeRobot's
        # CHW items without a transposing copy of packed RGB.
        if not key and read_frames is not None:
            decoded = read_frames(cam_rows)
        else:
            decoded = ds.get_frames(
                cam_rows.reshape(-1), cameras=cams, resolution=layout.resolution, pixel_format=PLANAR_RGB
            )
        for cam in cams:
            array = decoded[cam]
            frames = (shared.as_tensor(array) if shared else torch.from_numpy(array)).reshape(
                cam_rows.shape + array.shape[1:]
            )
            batch[video_key(cam)] = frames if layout.return_uint8 else _unit_float(frames, shared)
    frame_index = index.frame_index[rows]
    episode_index = index.episode_index[rows]
    batch["timestamp"] = torch.from_numpy((frame_index / layout.control_hz).astype(np.float32))
    batch["frame_index"] = torch.from_numpy(frame_index.astype(np.int64))
    batch["episode_index"] = torch.from_numpy(episode_index.astype(np.int64))
    batch["index"] = torch.from_numpy(np.asarray(index.rank[rows], dtype=np.int64))
    batch["task_index"] = torch.from_numpy(layout.task_index[episode_index])
    for key, (_, pad) in windows.items():
        batch[f"{key}_is_pad"] = torch.from_numpy(pad)
    if image_transforms is not None:
        for cam in layout.cameras:
            key = video_key(cam)
            batch[key] = torch.stack([image_transforms(frame) for frame in batch[key]])
    batch["task"] = [layout.episode_task[int(e)] for e in episode_index]
    # LeRobot's key order: cameras, the per-frame columns, the pad masks, task.
    cameras = [video_key(c) for c in layout.cameras]
    pads = [f"{key}_is_pad" for key in layout.offsets]
    rest = [k for k in batch if k not in cameras and k not in pads and k != "task"]
    return {k: batch[k] for k in cameras + rest + pads + ["task"]}


def _window(
    index,
    rows: np.ndarray,
    key: str,
    per_delta: Sequence[tuple[str, int]],
    layout: ItemLayout,
    shown: Callable[[str], np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
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
        camera = next(c for c in layout.cameras if video_key(c) == key)
        frames = shown(camera)
        for n, row in enumerate(rows):
            start = int(index.rank[row]) - int(index.frame_index[row])
            episode_rows = np.asarray(index.order[start : start + int(index.episode_length[row])])
            episode_frames = np.asarray(frames[episode_rows])
            for t, j in camera_steps:
                target = int(frames[row]) + j
                p = int(np.searchsorted(episode_frames, target, side="left"))
                p = min(max(p, 0), len(episode_rows) - 1)
                out[n, t] = episode_rows[p]
                pad[n, t] = target < episode_frames[0] or target > episode_frames[-1]
    return out, pad


def _unit_float(frames: torch.Tensor, shared: SharedOutputs | None) -> torch.Tensor:
    """uint8 frames as float32 in [0, 1] (LeRobot's), in ``shared`` memory when given."""
    if shared is None:
        return frames.float().div_(255)
    out = shared.as_tensor(shared(tuple(frames.shape), np.float32))
    return torch.div(frames, 255, out=out)


def _as_torch(values: np.ndarray):
    if values.dtype == object:
        return values.tolist()
    return torch.from_numpy(np.ascontiguousarray(values))

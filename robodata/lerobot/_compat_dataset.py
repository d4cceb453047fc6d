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
from dataclasses import dataclass

import numpy as np
from torch.utils.data import Dataset

from robodata.format._provenance import UPLOAD_COLUMNS
from robodata.format._schema import image_column, ref_columns
from robodata.lerobot._block_order import BlockOrderSampler
from robodata.lerobot._decode_once import DecodeOnceOrder, ItemSource
from robodata.lerobot._features import features, lerobot_key, robodata_column
from robodata.lerobot._format import CODEBASE_VERSION, video_key
from robodata.lerobot._items import ItemLayout, read_items
from robodata.lerobot._meta import DatasetInfo, LeRobotMeta
from robodata.lerobot._version_stats import lerobot_stats_of
from robodata.reader import RowIndex, open_dataset
from robodata.reader._dataset import adopt_rows, gop_store
from robodata.reader._row_index import SharedArrays
from robodata.storage._uris import is_remote
from robodata.torch._batch_reader import DEFAULT_BUDGET_BYTES, BatchReader, checked_indices
from robodata.torch._block_order import BlockSampler
from robodata.torch._delta_timestamps import resolve_delta_timestamps
from robodata.torch._fork_safety import ForkedAfterLanceError, forked_from_lance, mark_lance_used, run_without_lance
from robodata.torch._frame_buffer import DEFAULT_FRAME_BUFFER_BYTES, FrameBuffer
from robodata.torch._gop_cache import GopCache
from robodata.torch._handover import HandOff, SampleBatch
from robodata.torch._planned_reads import FramePlan
from robodata.torch._torch_dataset import finish_sending_before_exit

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


@dataclass
class _Version:
    """What the dataset reads of its pinned version through Lance, as plain Python and numpy
    (read in a helper process, so it comes back pickled)."""

    version: int
    reader: BatchReader
    layout: ItemLayout
    features: dict[str, dict]
    total_frames: int
    episode_lengths: dict[int, int]
    tasks: list[str]
    robot_type: str | None
    gop_size: int


class LeRobotCompatDataset(DecodeOnceOrder, Dataset):
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
        frame_buffer_bytes: int = DEFAULT_FRAME_BUFFER_BYTES,
    ) -> None:
        self.uri = uri
        self.image_transforms = image_transforms
        self.tolerance_s = float(tolerance_s)
        self.delta_timestamps = dict(delta_timestamps) if delta_timestamps is not None else None
        self.episodes = None if episodes is None else sorted(set(int(e) for e in episodes))
        self._owner_pid, self._unpickled = os.getpid(), False
        # Owned by this process (named after it), filled by whichever process reads the dataset:
        # the item order and camera frame numbers, and the row index with the GOP index.
        self._shared = SharedArrays("lerobot")
        self._shared_rows = SharedArrays("rows")
        self._arrays: dict[str, np.ndarray] = {}
        self._rows_mapped: RowIndex | None = None
        # The decode-once order a sampler of this dataset was made in (``sampler``, ``item_sampler``):
        # a reading process works out from it the batches it reads next, and keeps decoded frames
        # for them in a frame buffer of ``frame_buffer_bytes`` (robodata.torch._planned_reads).
        self.frame_buffer_bytes = int(frame_buffer_bytes)
        self._order: BlockSampler | BlockOrderSampler | None = None
        self._frames: FramePlan | None = None
        self._hand_off = HandOff()
        # Every Lance read of the construction happens in a short-lived helper process when this
        # one has not used Lance, so DataLoader workers can still be forked from it (fork_safety).
        read = run_without_lance(
            lambda: self._read(uri, version, storage_options, extra_columns, resolution, bool(return_uint8))
        )
        self.version = read.version
        self.repo_id, self.root, self.revision = uri, uri, str(read.version)
        self.reader = read.reader
        self._layout = read.layout
        self.meta = self._make_meta(read)
        self._gop_size = read.gop_size

    def _read(
        self,
        uri: str,
        version: int | str | None,
        storage_options: dict | None,
        extra_columns: Sequence[str],
        resolution: tuple[int, int] | None,
        return_uint8: bool,
    ) -> _Version:
        """Everything the dataset needs from Lance; the row index and the item order go to the
        shared files."""
        ds = open_dataset(uri, version=version, storage_options=storage_options)
        refs = {c for cam in ds.cameras for c in ref_columns(cam)}
        unknown = [c for c in extra_columns if c not in ds.columns or c in refs]
        if unknown:
            raise ValueError(f"{uri}: version {ds.version} has no column {unknown}; its columns are {ds.columns}")
        wanted = set(extra_columns)
        item_columns = [
            c
            for c in ds.columns
            if c not in refs and (c in wanted or (c not in NOT_IN_ITEMS and c not in ROBODATA_OWN))
        ]
        reader = BatchReader(
            uri,
            version=ds.version,
            storage_options=storage_options,
            columns=item_columns,
            budget_bytes=0,
            resolution=resolution,  # frames of (H, W) from a training rendition when one fits
        )
        ds = reader.dataset
        control_hz = float(ds.metadata.control_hz)
        cameras = list(ds.cameras)  # in the order they were recorded
        rows = ds.rows
        for key, array in rows.arrays.items():
            self._shared_rows.put(key, array)
        if ds.cameras:  # every item holds every camera: one scan of gops.lance for all the readers
            gop_store(ds).index.share(self._shared_rows)
        sorted_rows = np.asarray(rows.order)
        if self.episodes is not None:
            wanted_episodes = np.asarray(self.episodes, dtype=np.int64)
            unknown_episodes = np.setdiff1d(wanted_episodes, np.unique(rows.episode_index))
            if unknown_episodes.size:
                raise ValueError(f"{uri}: version {ds.version} has no episode {unknown_episodes.tolist()}")
            sorted_rows = sorted_rows[np.isin(rows.episode_index[sorted_rows], wanted_episodes)]
        self._shared.put("rows", sorted_rows)

        def column(key: str) -> str:
            found = robodata_column(key, cameras, item_columns)
            if found is None:
                known = [video_key(c) for c in cameras] + [lerobot_key(c, cameras) for c in item_columns]
                raise ValueError(f"delta_timestamps names {key!r}, which is not a feature of {uri}; features: {known}")
            return found

        camera_fps = {image_column(c): ds.metadata.cameras[c].fps for c in cameras}
        offsets = resolve_delta_timestamps(
            self.delta_timestamps or {},
            control_hz=control_hz,
            camera_fps=lambda key: camera_fps.get(column(key)),  # raises for a key that is not a feature
            tolerance_s=self.tolerance_s,
        )
        if any(kind == "camera" for per_key in offsets.values() for kind, _ in per_key):
            for cam in cameras:
                self._shared.put(f"shown.{cam}", _shown_frames(ds, cam))
        task_index, tasks, episode_lengths, episode_task = _tasks(ds, rows)
        # LeRobotDataset's shapes are tuples once its info is loaded.
        described = features(ds, ds.lance_dataset.schema, item_columns, frame_size=reader.resolution)
        for feature in described.values():
            feature["shape"] = tuple(feature["shape"])
        layout = ItemLayout(
            item_columns=item_columns,
            cameras=cameras,
            offsets=offsets,
            control_hz=control_hz,
            task_index=task_index,
            episode_task=episode_task,
            resolution=reader.resolution,
            return_uint8=return_uint8,
        )
        return _Version(
            version=ds.version,
            reader=reader,
            layout=layout,
            features=described,
            total_frames=len(rows.order),
            episode_lengths=episode_lengths,
            tasks=tasks,
            robot_type=ds.metadata.robot_type or None,
            gop_size=int(ds.metadata.gop_size),
        )

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
    def return_uint8(self) -> bool:
        """Camera frames as uint8 (else float32 in [0, 1]), as LeRobotDataset's ``return_uint8``."""
        return self._layout.return_uint8

    @property
    def cameras(self) -> list[str]:
        """The cameras, in recorded order (their keys are ``observation.images.<camera>``)."""
        return self._layout.cameras

    @property
    def offsets(self) -> Mapping[str, Sequence[tuple[str, int]]]:
        """``delta_timestamps`` resolved: per key, (``"row"`` or ``"camera"``, steps) per offset."""
        return self._layout.offsets

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

    # --- meta ------------------------------------------------------------------------------------
    def _make_meta(self, read: _Version) -> LeRobotMeta:
        control_hz = self._layout.control_hz
        fps = int(control_hz) if control_hz.is_integer() else control_hz
        episode_rows, start = [], 0
        for episode, length in read.episode_lengths.items():
            episode_rows.append(
                {
                    "episode_index": int(episode),
                    "tasks": [self._layout.episode_task[episode]],
                    "length": int(length),
                    "dataset_from_index": start,
                    "dataset_to_index": start + int(length),
                }
            )
            start += int(length)
        info = DatasetInfo(
            codebase_version=CODEBASE_VERSION,
            fps=fps,
            features=read.features,
            total_episodes=len(episode_rows),
            total_frames=read.total_frames,
            total_tasks=len(read.tasks),
            robot_type=read.robot_type,
        )
        columns = [c for c in self._layout.item_columns if c not in ROBODATA_OWN or c in read.features]

        def compute() -> dict:
            ds = self._lance_dataset()
            computed = lerobot_stats_of(
                ds,
                order=np.asarray(ds.rows.order),
                columns=columns,
                cameras=self.cameras,
                fps=control_hz,
                task_index=self._layout.task_index,
            )
            return {key: computed[key] for key in read.features if key in computed}

        return LeRobotMeta(
            uri=self.uri,
            version=self.version,
            info=info,
            episode_rows=episode_rows,
            tasks=read.tasks,
            stats=lambda: run_without_lance(compute),  # one read of the data, in a helper process
        )

    def _lance_dataset(self):
        """The pinned version's Lance-backed dataset in this process, on the shared row index."""
        ds = self.reader.dataset
        adopt_rows(ds, self._shared_rows)
        return ds

    def _item_source(self) -> ItemSource:
        """What the training orders (``DecodeOnceOrder``) need of this dataset."""
        return ItemSource(
            self._array("rows"),
            self._row_index(),
            self._frame_sizes,
            self.version,
            self.frame_buffer_bytes,
            byte_sizes=lambda refs: gop_store(self._lance_dataset()).byte_sizes(refs),
            uri=self.uri,
        )

    def _frame_sizes(self) -> list[tuple[int, int]]:
        """(height, width) of each camera frame an item holds (cameras without delta_timestamps)."""
        sizes = []
        for camera in self.cameras:
            if video_key(camera) not in self.offsets:
                height, width, _ = self.meta.features[video_key(camera)]["shape"]
                sizes.append((int(height), int(width)))
        return sizes

    def _new_frame_buffer(self) -> FrameBuffer | None:
        cameras = [c for c in self.cameras if video_key(c) not in self.offsets]
        if not cameras or self.frame_buffer_bytes <= 0:
            return None
        ds = self._lance_dataset()
        return FrameBuffer(ds, cameras, resolution=self._layout.resolution, budget_bytes=self.frame_buffer_bytes)

    def _new_gop_cache(self) -> GopCache | None:
        """On object storage, the prefetcher of the decode-once order's GOPs (``robodata.torch``'s,
        as make_dataloader's): runs of GOPs stored together, one read each. A local disk reads
        GOPs in place, fast enough without one."""
        cameras = [c for c in self.cameras if video_key(c) not in self.offsets]
        if not cameras or self.frame_buffer_bytes <= 0 or not is_remote(self.uri):
            return None
        ds = self._lance_dataset()
        store, rows, resolution = gop_store(ds), self._item_source().rows, self._layout.resolution
        return GopCache(
            ds, lambda items: store.refs(rows[items], cameras, resolution), budget_bytes=DEFAULT_BUDGET_BYTES
        )

    def _row_index(self) -> RowIndex:
        """The row index, memory-mapped from the shared files (no Lance)."""
        if self._rows_mapped is None:
            self._rows_mapped = RowIndex.mapped(self._shared_rows, self.cameras)
        return self._rows_mapped

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
        """A batch of items (``robodata.lerobot._items``): one coalesced GOP read and one decode
        per GOP for every camera."""
        if forked_from_lance() and not self._unpickled and os.getpid() != self._owner_pid:
            raise ForkedWorkerError
        finish_sending_before_exit()
        items = checked_indices(indices, len(self), self.uri, self.version)
        if os.getpid() == self._owner_pid:
            mark_lance_used()  # reading here: children forked from now on are not safe
        rows = np.asarray(self._array("rows")[items])
        shown = lambda camera: self._array(f"shown.{camera}")  # noqa: E731
        # In a DataLoader worker the frames are written straight into shared memory, and PyTorch's
        # default collate hands the stacked batch over as it is (robodata.torch._handover).
        shared = self._hand_off.outputs()
        batch = read_items(
            self._lance_dataset(),
            rows,
            self._layout,
            shown,
            self.image_transforms,
            self._planned_frames(indices, shared),
            shared,
        )
        return self._hand_off.batch(batch, indices, shared)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_arrays"] = {}  # workers map the shared files instead
        state["_rows_mapped"] = None
        state["meta"] = None  # stats and episode lists stay in the training process
        state["_frames"] = None  # each process decodes its own
        state["_gops"] = None  # and fetches its own GOPs
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._unpickled = True  # a spawned worker opens its own Lance handles

    def __repr__(self) -> str:
        return (
            f"LeRobotCompatDataset({self.uri!r}, version={self.version}, frames={len(self)}, "
            f"cameras={self.cameras}, delta_timestamps={list(self.offsets)})"
        )


def _shown_frames(ds, camera: str) -> np.ndarray:
    """Per row, the number of the camera frame it shows within its episode (closed GOPs of a
    fixed size: GOP index x GOP size + frame in GOP)."""
    _, gop_index, in_gop = ref_columns(camera)
    table = ds.to_table(columns=[gop_index, in_gop])
    return table[gop_index].to_numpy().astype(np.int64) * ds.metadata.gop_size + table[in_gop].to_numpy()


def _tasks(ds, rows) -> tuple[np.ndarray, list[str], dict[int, int], dict[int, str]]:
    """task_index per episode (tasks in order of first appearance, as the export numbers them),
    the task texts (robodata's task column: an imported LeRobot dataset's task), and per episode
    its length and task text."""
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
    lengths = dict(zip(episodes.tolist(), np.diff(np.append(first, len(rows))).tolist(), strict=True))
    return index, tasks, lengths, dict(zip(episodes.tolist(), texts_of_episode, strict=True))

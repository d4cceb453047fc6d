"""``LeRobotCompatDataset.meta``: a pinned robodata version described the way LeRobot's
``LeRobotDatasetMetadata`` (0.6.1) describes a dataset, for the code that reads it
(``lerobot-train``, ``make_policy``, ``make_pre_post_processors``, ``EpisodeAwareSampler``).

- ``info``: LeRobot's ``DatasetInfo`` fields (attribute and item access): codebase_version, fps,
  features, total_episodes, total_frames, total_tasks, chunks_size, ..., robot_type, splits.
  There are no LeRobot files behind it, so ``data_path`` and ``video_path`` are None.
- ``episodes``: LeRobot's episodes table, one row per episode of the version in order, with
  ``episode_index``, ``tasks``, ``length``, ``dataset_from_index`` and ``dataset_to_index``
  (a ``datasets.Dataset`` when Hugging Face ``datasets`` is installed, as LeRobot's is; else
  a small table with the same indexing: ``episodes["length"]``, ``episodes[i]``). LeRobot
  0.6.1 drops the ``stats/*`` columns when it loads the table, so this one has none either.
- ``tasks``: LeRobot's table (pandas, task text as the index, a ``task_index`` column).
- ``stats``: LeRobot's statistics, computed from the data the way LeRobot computes them
  (``robodata.lerobot._stats``) on first use, for the whole version.
- totals describe the whole version; the episodes a dataset object selects are its own
  (``dataset.episodes``), as in LeRobot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from robodata.lerobot._format import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_DATA_FILE_SIZE_IN_MB,
    DEFAULT_VIDEO_FILE_SIZE_IN_MB,
)

# LeRobot's language columns (lerobot.datasets.language.LANGUAGE_COLUMNS): none in robodata yet.
LANGUAGE_COLUMNS = ("language_persistent", "language_events")


@dataclass
class DatasetInfo:
    """LeRobot's ``DatasetInfo`` fields; ``info.fps`` and ``info["fps"]`` both work."""

    codebase_version: str
    fps: int | float
    features: dict[str, dict]
    total_episodes: int = 0
    total_frames: int = 0
    total_tasks: int = 0
    chunks_size: int = DEFAULT_CHUNK_SIZE
    data_files_size_in_mb: int = DEFAULT_DATA_FILE_SIZE_IN_MB
    video_files_size_in_mb: int = DEFAULT_VIDEO_FILE_SIZE_IN_MB
    data_path: str | None = None
    video_path: str | None = None
    robot_type: str | None = None
    splits: dict[str, str] = field(default_factory=dict)
    tools: list[dict] | None = None

    def __getitem__(self, key: str):
        return getattr(self, key)

    def get(self, key: str, default=None):
        return getattr(self, key, default)

    def to_dict(self) -> dict:
        out = asdict(self)
        if out["tools"] is None:
            out.pop("tools")
        return out


class EpisodesTable:
    """The episodes table without Hugging Face ``datasets``: ``table["column"]`` is a list,
    ``table[i]`` a row dict, ``len(table)`` the number of episodes."""

    def __init__(self, rows: list[dict]) -> None:
        self._rows = rows
        self.column_names = list(rows[0]) if rows else []

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[dict]:
        return iter(self._rows)

    def __getitem__(self, key):
        if isinstance(key, str):
            return [row[key] for row in self._rows]
        if isinstance(key, slice):
            return {name: [row[name] for row in self._rows[key]] for name in self.column_names}
        return self._rows[int(key)]

    def filter(self, predicate: Callable[[dict], bool], **_) -> EpisodesTable:
        return EpisodesTable([row for row in self._rows if predicate(row)])

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self._rows)


def episodes_table(rows: list[dict]):
    """LeRobot's episodes table: a ``datasets.Dataset`` when ``datasets`` is installed."""
    try:
        import datasets
    except ImportError:
        return EpisodesTable(rows)
    return datasets.Dataset.from_list(rows)


def tasks_table(tasks: list[str]):
    """LeRobot's tasks table: task text as the index (named ``task``), a ``task_index`` column."""
    import pandas as pd

    return pd.DataFrame({"task_index": range(len(tasks))}, index=pd.Index(tasks, name="task"))


class LeRobotMeta:
    """What LeRobot's ``LeRobotDatasetMetadata`` offers to training code; see the module docstring."""

    def __init__(
        self,
        *,
        uri: str,
        version: int,
        info: DatasetInfo,
        episode_rows: list[dict],
        tasks: list[str],
        stats: Callable[[], dict],
    ) -> None:
        self.repo_id = uri
        self.root = Path(uri) if "://" not in uri else uri
        self.revision = str(version)
        self.repo_type = "dataset"
        self.info = info
        self._episode_rows = episode_rows
        self._task_list = list(tasks)
        self._compute_stats = stats
        self.latest_episode = None

    # --- LeRobot's tables --------------------------------------------------------------------
    @cached_property
    def episodes(self):
        return episodes_table(self._episode_rows)

    @cached_property
    def tasks(self):
        return tasks_table(self._task_list)

    @cached_property
    def stats(self) -> dict[str, dict[str, np.ndarray]]:
        """LeRobot's statistics of every feature (numpy), computed on first use; a plain dict
        that LeRobot's code may update (``use_imagenet_stats`` does)."""
        return self._compute_stats()

    # --- LeRobotDatasetMetadata's properties --------------------------------------------------
    @property
    def fps(self) -> int | float:
        return self.info.fps

    @property
    def features(self) -> dict[str, dict]:
        return self.info.features

    @property
    def robot_type(self) -> str | None:
        return self.info.robot_type

    @property
    def data_path(self) -> str | None:
        return self.info.data_path

    @property
    def video_path(self) -> str | None:
        return self.info.video_path

    @property
    def image_keys(self) -> list[str]:
        return [key for key, ft in self.features.items() if ft["dtype"] == "image"]

    @property
    def video_keys(self) -> list[str]:
        return [key for key, ft in self.features.items() if ft["dtype"] == "video"]

    @property
    def camera_keys(self) -> list[str]:
        return [key for key, ft in self.features.items() if ft["dtype"] in ("video", "image")]

    @property
    def depth_keys(self) -> list[str]:
        return [key for key, ft in self.features.items() if (ft.get("info") or {}).get("is_depth_map", False)]

    @property
    def has_language_columns(self) -> bool:
        return any(column in self.features for column in LANGUAGE_COLUMNS)

    @property
    def tools(self) -> list[dict]:
        return [dict(t) for t in self.info.tools or []]

    @property
    def names(self) -> dict[str, list | dict | None]:
        return {key: ft["names"] for key, ft in self.features.items()}

    @property
    def shapes(self) -> dict[str, tuple]:
        return {key: tuple(ft["shape"]) for key, ft in self.features.items()}

    @property
    def total_episodes(self) -> int:
        return self.info.total_episodes

    @property
    def total_frames(self) -> int:
        return self.info.total_frames

    @property
    def total_tasks(self) -> int:
        return self.info.total_tasks

    @property
    def chunks_size(self) -> int:
        return self.info.chunks_size

    @property
    def data_files_size_in_mb(self) -> int:
        return self.info.data_files_size_in_mb

    @property
    def video_files_size_in_mb(self) -> int:
        return self.info.video_files_size_in_mb

    @property
    def url_root(self) -> str:
        return self.repo_id

    def get_task_index(self, task: str) -> int | None:
        """The task_index of ``task`` (its text), or None when the dataset has no such task."""
        return self._task_list.index(task) if task in self._task_list else None

    def filter_episodes(self, predicate: Callable[[dict], bool], candidates: list[int] | None = None) -> list[int]:
        """Episode indices whose row of the episodes table satisfies ``predicate`` (sorted)."""
        wanted = None if candidates is None else set(candidates)
        rows = [r for r in self._episode_rows if (wanted is None or r["episode_index"] in wanted) and predicate(r)]
        return sorted(int(r["episode_index"]) for r in rows)

    def ensure_readable(self) -> None:
        """Nothing to load: everything is read when the dataset is opened."""

    def rescale_depth_stats(self, output_unit: str) -> None:
        """robodata has no depth cameras yet: nothing to rescale."""

    def __repr__(self) -> str:
        return (
            f"LeRobotMeta(repo_id={self.repo_id!r}, revision={self.revision}, total_episodes={self.total_episodes}, "
            f"total_frames={self.total_frames}, features={list(self.features)})"
        )

"""What an import wrote, and which episodes a dataset already holds (what makes imports resumable)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow.compute as pc

from robodata.format.tables import frames_uri, open_table


@dataclass
class ImportResult:
    """What one import wrote: robodata episode indices imported now and skipped as already present."""

    dataset_uri: str
    imported: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    rows: int = 0
    video_bytes: int = 0
    frames_version: int | None = None
    gops_version: int | None = None

    def add(self, written) -> None:
        """Count one episode ``write_episode`` wrote (its IngestResult)."""
        self.imported.append(written.episode_index)
        self.rows += written.rows
        self.video_bytes += written.video_bytes
        self.frames_version, self.gops_version = written.frames_version, written.gops_version


def existing_episodes(dataset_uri: str, *, storage_options: dict | None = None) -> set[int]:
    """Episode indices already in the robodata dataset (empty when it does not exist yet)."""
    frames = open_table(frames_uri(dataset_uri), storage_options)
    if frames is None:
        return set()
    return set(pc.unique(frames.to_table(columns=["episode_index"])["episode_index"]).to_pylist())

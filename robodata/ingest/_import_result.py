"""What an import wrote, and the error when a source episode would take another source's index."""

from __future__ import annotations

from dataclasses import dataclass, field

from robodata.errors import EpisodeIndexTakenError
from robodata.format._provenance import StoredUpload


@dataclass
class ImportResult:
    """What one import wrote: robodata episode indices imported now (``changed``: those imported
    again because their source content changed since it was stored) and skipped as already present."""

    dataset_uri: str
    imported: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    changed: list[int] = field(default_factory=list)
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


class SourceIndexTakenError(EpisodeIndexTakenError):
    """A source episode would become an episode_index the dataset holds for an episode of another
    source (another upload, another LeRobot dataset); raised before anything is written."""

    def __init__(self, episode_index: int, origin: str, held: StoredUpload, dataset: str) -> None:
        self.episode_index, self.episode_id, self.held_by = episode_index, origin, held.episode_id
        holder = f"episode {held.episode_id!r}" + (f" from {held.source_uri}" if held.source_uri else "")
        ValueError.__init__(
            self,
            f"{dataset}: {origin} would become episode_index {episode_index}, which already holds {holder}; "
            "nothing was written (import it into another dataset, or delete that episode first)",
        )

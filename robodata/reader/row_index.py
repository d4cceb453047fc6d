"""The small per-row columns every read needs (episode, frame, GOP references), held as numpy."""

from __future__ import annotations

import numpy as np

from robodata.format.schema import ref_columns


class RowIndex:
    def __init__(self, frames, cameras: list[str]) -> None:
        refs = {camera: ref_columns(camera) for camera in cameras}
        columns = ["episode_index", "frame_index"] + [c for cam in cameras for c in (refs[cam][0], refs[cam][2])]
        table = frames.to_table(columns=columns)
        self.episode_index = table["episode_index"].to_numpy()
        self.frame_index = table["frame_index"].to_numpy()
        self.ref_id = {cam: table[refs[cam][0]].to_numpy() for cam in cameras}
        self.frame_in_gop = {cam: table[refs[cam][2]].to_numpy() for cam in cameras}
        # rank[i] is row i's position when rows are sorted by (episode, frame): a window step of
        # +1 is a step of +1 in that order.
        self.order = np.lexsort((self.frame_index, self.episode_index))
        self.rank = np.empty_like(self.order)
        self.rank[self.order] = np.arange(len(self.order))
        episodes, inverse, counts = np.unique(self.episode_index, return_inverse=True, return_counts=True)
        self.episode_length = counts[inverse]

    def __len__(self) -> int:
        return len(self.episode_index)

    def window_rows(self, indices: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows at ``frame + offset`` in each row's episode, clamped to the episode's first and
        last rows, and the mask of clamped (padded) positions, like LeRobot's delta_timestamps.

        Relies on an episode's frame_index running 0..n-1, which ingest guarantees."""
        frame = self.frame_index[indices][:, None]
        wanted = frame + offsets[None, :]
        clamped = np.clip(wanted, 0, self.episode_length[indices][:, None] - 1)
        rows = self.order[self.rank[indices][:, None] - frame + clamped]
        return rows, wanted != clamped

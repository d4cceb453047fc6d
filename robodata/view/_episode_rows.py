"""One episode of an opened dataset, as the viewer needs it: its rows in time order, its label
columns, and for each camera the rows where a new camera frame starts."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from robodata.errors import InvalidArgumentError
from robodata.format._schema import ref_columns
from robodata.reader import RoboDataset

# Decoded frames are re-encoded as they arrive: at most this many are held in memory at once.
DECODE_CHUNK = 32

# Always-present per-row columns that are shown as bands (not plotted as signals).
SEGMENT_COLUMNS = ("source", "is_intervention")


@dataclass
class EpisodeRows:
    """An episode's rows in frame order.

    ``offsets`` are dataset row offsets (what ``get_frames`` takes), ``seconds`` each
    row's time since the episode's first row, ``table`` the per-row columns the page shows.
    """

    episode_index: int
    offsets: np.ndarray
    seconds: np.ndarray
    duration: float
    table: pa.Table
    label_columns: list[str]

    @property
    def task(self) -> str:
        return _first(self.table, "task")

    @property
    def language_instruction(self) -> str:
        return _first(self.table, "language_instruction")

    def column(self, name: str) -> np.ndarray:
        """A fixed-size-list column (state, action) as ``[rows, joints]`` float32."""
        values = self.table[name].combine_chunks()
        width = values.type.list_size
        return values.values.to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(values), width)


@dataclass
class CameraFrames:
    """The rows at which a camera's aligned frame changes: each one starts a video frame that
    lasts until the next (``seconds`` is its display time)."""

    camera: str
    offsets: np.ndarray
    seconds: np.ndarray


def load_episode(ds: RoboDataset, episode: int) -> EpisodeRows:
    """The rows of ``episode`` in ``ds``, or an InvalidArgumentError naming the episodes the version has.

    >>> load_episode(robodata.open("data/demo"), 0).duration  # seconds: 197 rows at 100 Hz
    1.97
    """
    keys = ds.to_table(columns=["episode_index", "frame_index"])
    episodes = keys["episode_index"].to_numpy()
    mine = np.flatnonzero(episodes == episode)
    if mine.size == 0:
        present = ", ".join(str(e) for e in np.unique(episodes)[:20]) or "none"
        raise InvalidArgumentError(f"{ds.uri}: no episode {episode} at version {ds.version} (episodes: {present})")
    offsets = mine[np.argsort(keys["frame_index"].to_numpy()[mine], kind="stable")]
    labels = ds.label_columns
    shown = ["timestamp_ns", "task", "language_instruction", "observation_state", "action", *SEGMENT_COLUMNS]
    table = ds.take_rows(offsets, shown + labels)
    stamps = table["timestamp_ns"].to_numpy()
    seconds = (stamps - stamps[0]) / 1e9
    # The last row lasts one control period, like every other row.
    duration = float(seconds[-1] + 1.0 / ds.metadata.control_hz)
    return EpisodeRows(episode, offsets, seconds, duration, table, labels)


def camera_frames(ds: RoboDataset, rows: EpisodeRows, camera: str) -> CameraFrames:
    """Where ``camera``'s frame changes along ``rows``: rows share a camera frame when they point
    at the same frame of the same GOP, and its bytes are decoded once."""
    ref_id, _, in_gop = ref_columns(camera)
    refs = ds.take_rows(rows.offsets, [ref_id, in_gop])
    ref = refs[ref_id].to_numpy()
    frame = refs[in_gop].to_numpy()
    starts = np.ones(len(ref), dtype=bool)
    starts[1:] = (ref[1:] != ref[:-1]) | (frame[1:] != frame[:-1])
    return CameraFrames(camera, rows.offsets[starts], rows.seconds[starts])


def decoded_frames(ds: RoboDataset, frames: CameraFrames) -> Iterator[np.ndarray]:
    """The camera's frames (H x W x 3 uint8) decoded by robodata's reader, a chunk at a time."""
    for start in range(0, len(frames.offsets), DECODE_CHUNK):
        chunk = frames.offsets[start : start + DECODE_CHUNK]
        yield from ds.get_frames(chunk, cameras=frames.camera)[frames.camera]


def _first(table: pa.Table, name: str) -> str:
    values = table[name].drop_null() if name in table.column_names else []
    return str(values[0]) if len(values) else ""

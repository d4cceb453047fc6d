"""An episode in memory, the shape every source (upload folder, LeRobot, HDF5) is read into."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

Frames = Iterator[tuple[int, np.ndarray]]  # (timestamp_ns, H x W x 3 uint8)


@dataclass
class CameraStream:
    """One camera of an episode. ``frames()`` yields (timestamp_ns, RGB frame) in time order and
    may raise BadUploadError; ``source`` names the file for errors."""

    name: str
    width: int
    height: int
    fps: float
    frames: Callable[[], Frames]
    source: str
    # How frames were changed on the way in (rotated upright, cropped to even sizes), for the
    # user and the run's metadata: "top.mp4: cropped 641x481 to 640x480 ...".
    notes: list[str] = field(default_factory=list)
    coded_size: tuple[int, int] | None = None  # (width, height) as the file codes its frames
    rotation: int = 0  # degrees counter-clockwise the frames were turned upright


@dataclass
class EpisodeData:
    """One episode at the control rate, with its cameras still undecoded."""

    episode_id: str
    episode_index: int
    control_hz: float
    joint_names: list[str]
    timestamps_ns: np.ndarray  # int64 [N], nanoseconds since the episode started
    observation_state: np.ndarray  # float32 [N, J]
    action: np.ndarray  # float32 [N, J]
    cameras: list[CameraStream]
    task: str = ""
    language_instruction: str = ""
    split: str = "train"
    robot_type: str = ""
    source: list[str] | None = None  # human / policy / intervention per step
    is_intervention: np.ndarray | None = None
    extra_columns: dict[str, pa.Array] = field(default_factory=dict)
    extra_metadata: dict[str, object] = field(default_factory=dict)
    origin: str = ""  # where the episode came from, for error messages
    fingerprint: str = ""  # of the source (upload folder), stored with the rows: see format/_provenance.py

    def __len__(self) -> int:
        return len(self.timestamps_ns)

    @property
    def notes(self) -> list[str]:
        """What ingest changed in this episode's camera frames (empty when nothing)."""
        return [note for camera in self.cameras for note in camera.notes]

    def camera_adjustments(self) -> list[dict]:
        """One record per camera whose frames ingest changed (turned upright, cropped to even
        sizes), stored with the episode's rows (``robodata.format._provenance``); empty when none.

        >>> from robodata.ingest._upload import read_upload
        >>> read_upload("uploads/episode_000000").camera_adjustments()  # upright, even sizes: none
        []
        """
        return [
            {
                "camera": camera.name,
                "file": posixpath.basename(camera.source),
                "original_size": list(camera.coded_size or (camera.width, camera.height)),
                "stored_size": [camera.width, camera.height],
                "rotation_degrees": camera.rotation,
                "done": list(camera.notes),
            }
            for camera in self.cameras
            if camera.notes
        ]

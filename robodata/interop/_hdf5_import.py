"""Import ALOHA / ACT recordings: one HDF5 file per episode, read with h5py (local or s3://).

Layout (as ALOHA's record_episodes.py and ACT's record_sim_episodes.py write it):

```
/observations/qpos               float [T, J]   -> observation_state
/observations/qvel               float [T, J]   -> column observation_qvel (optional)
/observations/effort             float [T, J]   -> column observation_effort (optional)
/observations/images/<camera>    uint8 [T, H, W, 3] raw RGB, or uint8 [T, L] JPEG bytes per
                                 step zero-padded to L (then /compress_len [cameras, T] holds
                                 the true lengths; JPEG decoders stop at the end marker)
/action                          float [T, J]   -> action
/base_action                     float [T, 2]   -> column base_action (optional, mobile ALOHA)
attrs: sim (bool), compress (bool)
```

The cameras keep the order h5py lists ``/observations/images`` in: the order they were written
when the group tracks creation order (h5py's ``track_order=True``), else by name (HDF5 groups
keep no creation order by default, and ALOHA's recorder does not ask for one).

One row per step at the file's control rate (ALOHA records at 50 Hz; ``control_hz`` says so);
every camera has one frame per step. ALOHA compresses with OpenCV, which treats arrays as BGR,
so JPEG bytes decode to the array ALOHA stored only after swapping channels back
(``jpeg_channel_order="bgr"``, the default; use "rgb" for files written by an RGB encoder).

>>> import_hdf5("recordings/episode_*.hdf5", "data/aloha", task="insertion", progress=False).imported
[0, 1]
>>> robodata.open("data/aloha").episodes()["task"].to_pylist()
['insertion', 'insertion']
"""

from __future__ import annotations

import glob as globlib
import io
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from PIL import Image

from robodata.codec import EncoderSettings
from robodata.errors import BadUploadError, NotFoundError, import_extra
from robodata.ingest import CameraStream, EpisodeData
from robodata.ingest._episode_source import import_episodes
from robodata.ingest._import_result import ImportResult
from robodata.ingest._source_fingerprint import source_fingerprint
from robodata.interop._aloha_layout import ALOHA_JOINTS
from robodata.storage import fsspec_filesystem, is_remote
from robodata.storage._failures import storage_call

if TYPE_CHECKING:
    import h5py

DEFAULT_CONTROL_HZ = 50.0
_OPTIONAL_VECTORS = {
    "/observations/qvel": "observation_qvel",
    "/observations/effort": "observation_effort",
    "/base_action": "base_action",
}
_EPISODE_NUMBER = re.compile(r"episode_(\d+)\.hdf5?$")


@dataclass
class _Camera:
    name: str
    width: int
    height: int
    jpeg: bool


def find_hdf5_files(path_or_glob: str, *, storage_options: dict | None = None) -> list[str]:
    """The files ``path_or_glob`` names, sorted; a FileNotFoundError when it matches none."""
    if is_remote(path_or_glob):
        fs = fsspec_filesystem(path_or_glob, storage_options)
        protocol = path_or_glob.split("://", 1)[0]
        found = [
            f"{protocol}://{p}"
            for p in storage_call("listing HDF5 files", path_or_glob, storage_options, fs.glob, path_or_glob)
        ]
    else:
        found = globlib.glob(path_or_glob)
    if not found:
        raise NotFoundError(f"{path_or_glob}: matches no HDF5 files")
    return sorted(found, key=_natural_key)


def _natural_key(path: str) -> tuple:
    match = _EPISODE_NUMBER.search(path)
    return (0, int(match.group(1)), path) if match else (1, 0, path)


def hdf5_episodes(path_or_glob: str, *, storage_options: dict | None = None) -> dict[int, str]:
    """Source episode number -> file: ``n`` for ``episode_<n>.hdf5``, else the file's position
    in sorted order.

    >>> hdf5_episodes("recordings/episode_*.hdf5")
    {0: 'recordings/episode_0.hdf5', 1: 'recordings/episode_1.hdf5'}
    """
    paths = find_hdf5_files(path_or_glob, storage_options=storage_options)
    numbers: dict[int, str] = {}
    for position, path in enumerate(paths):
        match = _EPISODE_NUMBER.search(path)
        number = int(match.group(1)) if match else position
        if number in numbers:
            raise BadUploadError(path, f"is episode {number}, and so is {numbers[number]}")
        numbers[number] = path
    return numbers


def import_hdf5(
    path_or_glob: str,
    dataset_uri: str,
    *,
    episodes: list[int] | None = None,
    control_hz: float = DEFAULT_CONTROL_HZ,
    joint_names: list[str] | None = None,
    task: str = "",
    jpeg_channel_order: str = "bgr",
    start_index: int = 0,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
    progress: bool = True,
) -> ImportResult:
    """Import ALOHA / ACT HDF5 episodes (source ``episodes``, default all) into ``dataset_uri``;
    episodes already there are skipped.

    Source episode ``n`` (see hdf5_episodes) becomes robodata episode ``start_index + n``. Every
    file is checked before the first episode is written.

    >>> result = import_hdf5("recordings/episode_*.hdf5", "data/aloha", episodes=[1], progress=False)  # or s3://
    >>> result.imported, result.rows
    ([1], 20)
    """
    source = Hdf5Episodes(
        path_or_glob,
        storage_options=storage_options,
        control_hz=control_hz,
        joint_names=joint_names,
        task=task,
        jpeg_channel_order=jpeg_channel_order,
        start_index=start_index,
    )
    return import_episodes(
        source, dataset_uri, episodes=episodes, settings=settings, storage_options=storage_options, progress=progress
    )


class Hdf5Episodes:
    """ALOHA / ACT HDF5 files as an ``EpisodeSource``: source number ``n`` is episode_<n>.hdf5."""

    format = "aloha_hdf5"

    def __init__(
        self,
        path_or_glob: str,
        *,
        storage_options: dict | None = None,
        control_hz: float = DEFAULT_CONTROL_HZ,
        joint_names: list[str] | None = None,
        task: str = "",
        jpeg_channel_order: str = "bgr",
        start_index: int = 0,
    ) -> None:
        if jpeg_channel_order not in ("bgr", "rgb"):
            raise ValueError(f"jpeg_channel_order must be 'bgr' or 'rgb', got {jpeg_channel_order!r}")
        if control_hz <= 0:
            raise ValueError(f"control_hz must be positive, got {control_hz}")
        self.location = path_or_glob
        self.start_index = start_index
        self._files = hdf5_episodes(path_or_glob, storage_options=storage_options)
        self._reader = _Hdf5Reader(control_hz, joint_names, task, jpeg_channel_order, storage_options)
        self._checked: dict[int, EpisodeData] = {}

    def episode_numbers(self) -> list[int]:
        return list(self._files)

    def robodata_index(self, number: int) -> int:
        return self.start_index + number

    def check(self, numbers: list[int]) -> None:
        # Reading a file's signals is its check; keep them (small) so the write does not reread.
        for number in numbers:
            self._checked[number] = self._read(number)

    def read_episode(self, number: int) -> EpisodeData:
        return self._checked.pop(number, None) or self._read(number)

    def _read(self, number: int) -> EpisodeData:
        path = self._files[number]
        episode = self._reader.episode(path, self.robodata_index(number))
        # The file's signals, and its size for the camera frames (only decoded when written).
        signals = [episode.observation_state, episode.action, pa.table(episode.extra_columns)]
        episode.fingerprint = source_fingerprint({"file_size": self._reader.size(path)}, *signals)
        return episode


class _Hdf5Reader:
    def __init__(self, control_hz, joint_names, task, channel_order, storage_options) -> None:
        self.control_hz, self.joint_names, self.task = float(control_hz), joint_names, task
        self.swap = channel_order == "bgr"
        self.storage_options = storage_options
        self._fs = None  # one s3 client for every file: making one costs about a second

    def _remote_fs(self, path: str):
        if self._fs is None:
            self._fs = fsspec_filesystem(path, self.storage_options)
        return self._fs

    def size(self, path: str) -> int:
        """The file's size in bytes."""
        return int(self._remote_fs(path).size(path) if is_remote(path) else os.path.getsize(path))

    def _open(self, path: str) -> h5py.File:
        h5py = import_extra("h5py", "interop", "HDF5 import")
        try:
            if is_remote(path):
                return h5py.File(self._remote_fs(path).open(path, "rb"), "r")
            return h5py.File(path, "r")
        except FileNotFoundError:
            raise BadUploadError(path, "file is missing") from None
        except OSError as exc:
            raise BadUploadError(path, f"is not a readable HDF5 file ({exc})") from None

    def episode(self, path: str, episode_index: int) -> EpisodeData:
        """Read and check one file's signals; camera frames are decoded when written."""
        with self._open(path) as f:
            state = _vector(f, path, "/observations/qpos")
            action = _vector(f, path, "/action")
            steps = len(state)
            if action.shape != state.shape:
                raise BadUploadError(path, f"/action has shape {action.shape}, /observations/qpos {state.shape}")
            extras = {}
            for name, column in _OPTIONAL_VECTORS.items():
                if name in f:
                    values = _vector(f, path, name)
                    if len(values) != steps:
                        raise BadUploadError(path, f"{name} has {len(values)} steps, /observations/qpos {steps}")
                    extras[column] = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])
            cameras = _cameras(f, path, steps)
            attrs = {k: _plain(f.attrs[k]) for k in ("sim", "compress") if k in f.attrs}
        names = self._joint_names(path, state.shape[1])
        times = np.round(np.arange(steps) * (1e9 / self.control_hz)).astype(np.int64)
        return EpisodeData(
            episode_id=f"hdf5_episode_{episode_index:06d}",
            episode_index=episode_index,
            control_hz=self.control_hz,
            joint_names=names,
            timestamps_ns=times,
            observation_state=state,
            action=action,
            cameras=[self._stream(path, camera, times) for camera in cameras],
            task=self.task,
            language_instruction=self.task,
            robot_type="aloha",
            extra_columns=extras,
            extra_metadata={"imported_from": {"format": "aloha_hdf5", "control_hz": self.control_hz, **attrs}},
            origin=path,
        )

    def _joint_names(self, path: str, joints: int) -> list[str]:
        if self.joint_names is not None:
            if len(self.joint_names) != joints:
                raise BadUploadError(path, f"has {joints} joints but {len(self.joint_names)} joint names were given")
            return list(self.joint_names)
        return list(ALOHA_JOINTS) if joints == len(ALOHA_JOINTS) else [f"joint_{i}" for i in range(joints)]

    def _stream(self, path: str, camera: _Camera, times: np.ndarray) -> CameraStream:
        def frames():
            with self._open(path) as f:
                images = f[f"/observations/images/{camera.name}"]
                for step, t_ns in enumerate(times):
                    yield int(t_ns), self._image(path, camera, step, images[step])

        return CameraStream(camera.name, camera.width, camera.height, self.control_hz, frames, path)

    def _image(self, path: str, camera: _Camera, step: int, value: np.ndarray) -> np.ndarray:
        if not camera.jpeg:
            return value
        try:
            rgb = np.asarray(Image.open(io.BytesIO(value.tobytes())).convert("RGB"))
        except OSError as exc:
            raise BadUploadError(path, f"camera {camera.name!r} step {step}: not a JPEG image ({exc})") from None
        if rgb.shape != (camera.height, camera.width, 3):
            raise BadUploadError(
                path,
                f"camera {camera.name!r} step {step} is {rgb.shape[1]}x{rgb.shape[0]}, "
                f"step 0 is {camera.width}x{camera.height}",
            )
        return np.ascontiguousarray(rgb[..., ::-1]) if self.swap else rgb


def _vector(f: h5py.File, path: str, name: str) -> np.ndarray:
    if name not in f:
        raise BadUploadError(path, f"has no {name} dataset")
    values = f[name][()]
    if values.ndim != 2 or not np.issubdtype(values.dtype, np.number):
        raise BadUploadError(path, f"{name} must be a numeric [steps, joints] array, got {values.dtype} {values.shape}")
    if len(values) == 0:
        raise BadUploadError(path, f"{name} has no steps")
    return values.astype(np.float32)


def _cameras(f: h5py.File, path: str, steps: int) -> list[_Camera]:
    if "/observations/images" not in f or not len(f["/observations/images"]):
        raise BadUploadError(path, "has no cameras under /observations/images")
    cameras = []
    for name, data in f["/observations/images"].items():
        if data.dtype != np.uint8:
            raise BadUploadError(path, f"camera {name!r} holds {data.dtype}, not uint8 images")
        if len(data) != steps:
            raise BadUploadError(path, f"camera {name!r} has {len(data)} steps, /observations/qpos {steps}")
        if data.ndim == 4 and data.shape[3] == 3:
            cameras.append(_Camera(name, data.shape[2], data.shape[1], jpeg=False))
        elif data.ndim == 2:  # JPEG bytes per step; the first frame tells the size
            try:
                width, height = Image.open(io.BytesIO(data[0].tobytes())).size
            except OSError as exc:
                raise BadUploadError(path, f"camera {name!r}: step 0 is not a JPEG image ({exc})") from None
            cameras.append(_Camera(name, width, height, jpeg=True))
        else:
            raise BadUploadError(
                path, f"camera {name!r} has shape {data.shape}: neither [T, H, W, 3] RGB nor [T, bytes] JPEG"
            )
    if "/compress_len" in f and f["/compress_len"].shape != (len(cameras), steps):
        raise BadUploadError(
            path, f"/compress_len has shape {f['/compress_len'].shape}, expected {(len(cameras), steps)}"
        )
    return cameras


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


__all__ = ["Hdf5Episodes", "find_hdf5_files", "hdf5_episodes", "import_hdf5"]

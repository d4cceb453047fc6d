"""Synthetic episodes in the upload format: three cameras at 30 fps over a moving, textured
scene (smooth like camera video, not noise), 14-DoF state and action at 100 Hz, a language
instruction and human / policy / intervention segments."""

from __future__ import annotations

import json
import tempfile
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from robodata.interop._aloha_layout import ALOHA_JOINTS  # sample episodes use ALOHA's joints
from robodata.storage import is_remote, join_uri
from robodata.storage._put_folder import put_folder

CAMERAS = {"top": (640, 480), "wrist_left": (320, 240), "wrist_right": (320, 240)}
TASKS = [
    ("pick_cube", "pick up the red cube and put it in the bin"),
    ("open_drawer", "open the top drawer"),
    ("stack_cups", "stack the blue cup on the green cup"),
]
CAMERA_FPS = 30
CONTROL_HZ = 100


def write_sample_uploads(
    out: str | Path, episodes: int = 4, seed: int = 0, seconds: float = 4.0, start_index: int = 0
) -> list[Path]:
    """Write ``episodes`` upload folders under ``out`` and return their paths.

    >>> [p.name for p in write_sample_uploads("more", episodes=2, seconds=0.5)]
    ['episode_000000', 'episode_000001']
    """
    out = Path(out)
    return [
        write_sample_episode(out, start_index + i, np.random.default_rng([seed, start_index + i]), seconds)
        for i in range(episodes)
    ]


def write_sample_episode_to(
    out: str, episode_index: int, rng: np.random.Generator, seconds: float, storage_options: dict | None = None
) -> str:
    """``write_sample_episode`` into a folder or an s3:// prefix. Videos are encoded into a local
    folder (FFmpeg writes files), then the upload is copied, ``episode.json`` last.

    >>> write_sample_episode_to("memory://lab/uploads", 0, np.random.default_rng(0), 0.5)  # or s3://
    'memory://lab/uploads/episode_000000'
    """
    if not is_remote(out):
        return str(write_sample_episode(Path(out), episode_index, rng, seconds))
    with tempfile.TemporaryDirectory(prefix="robodata-sample-") as scratch:
        folder = write_sample_episode(Path(scratch), episode_index, rng, seconds)
        return put_folder(folder, join_uri(out, folder.name), storage_options, last=("episode.json",))


def write_sample_episode(out: Path, episode_index: int, rng: np.random.Generator, seconds: float) -> Path:
    folder = out / f"episode_{episode_index:06d}"
    folder.mkdir(parents=True, exist_ok=True)
    n_frames = max(2, int(round(seconds * CAMERA_FPS)))
    for camera, (width, height) in CAMERAS.items():
        _write_video(folder / f"{camera}.mp4", _scene(rng, width, height, n_frames))
    last_frame_s = (n_frames - 1) / CAMERA_FPS
    n_steps = int(np.floor(last_frame_s * CONTROL_HZ)) + 1
    _write_states(folder / "states.parquet", rng, n_steps)
    task, instruction = TASKS[episode_index % len(TASKS)]
    meta = {
        "episode_index": episode_index,
        "task": task,
        "language_instruction": instruction,
        "split": "val" if episode_index % 10 == 9 else "train",
        "robot_type": "aloha",
        "joint_names": ALOHA_JOINTS,
        "control_hz": CONTROL_HZ,
        "cameras": {camera: {"file": f"{camera}.mp4"} for camera in CAMERAS},
    }
    # Written last: its presence marks the upload complete.
    (folder / "episode.json").write_text(json.dumps(meta, indent=2))
    return folder


def _scene(rng: np.random.Generator, width: int, height: int, n_frames: int):
    pan = n_frames * 2 + 8
    coarse = rng.integers(0, 256, ((height + pan) // 16 + 2, (width + pan) // 16 + 2, 3), dtype=np.uint8)
    texture = np.asarray(
        Image.fromarray(coarse).resize(
            ((width + pan) // 16 * 16 + 32, (height + pan) // 16 * 16 + 32), Image.Resampling.BICUBIC
        )
    )
    colour = rng.integers(60, 255, 3)
    yy, xx = np.mgrid[0:height, 0:width]
    for t in range(n_frames):
        frame = texture[t : t + height, 2 * t : 2 * t + width].copy()
        cx = width * (0.5 + 0.3 * np.sin(t / 15.0))
        cy = height * (0.5 + 0.25 * np.cos(t / 11.0))
        disc = (xx - cx) ** 2 + (yy - cy) ** 2 < (min(width, height) / 8) ** 2
        frame[disc] = colour
        yield frame


def _write_video(path: Path, frames) -> None:
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(CAMERA_FPS))
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "18", "preset": "ultrafast"}
        first = True
        for rgb in frames:
            if first:
                stream.height, stream.width = rgb.shape[:2]
                first = False
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def _write_states(path: Path, rng: np.random.Generator, n: int) -> None:
    t = np.arange(n) / CONTROL_HZ
    phase = rng.uniform(0, 2 * np.pi, 14)
    freq = rng.uniform(0.1, 0.5, 14)
    state = np.sin(2 * np.pi * freq[None, :] * t[:, None] + phase[None, :]).astype(np.float32)
    action = state + np.float32(0.01) * rng.standard_normal(state.shape).astype(np.float32)
    source = np.full(n, "policy", dtype=object)
    if rng.random() < 0.34:
        source[:] = "human"
    else:
        start = int(rng.integers(n // 4, n // 2))
        source[start : start + n // 5] = "intervention"
    table = pa.table(
        {
            "timestamp_ns": (np.arange(n, dtype=np.int64) * (1_000_000_000 // CONTROL_HZ)),
            "observation_state": pa.FixedSizeListArray.from_arrays(pa.array(state.reshape(-1)), 14),
            "action": pa.FixedSizeListArray.from_arrays(pa.array(action.reshape(-1)), 14),
            "source": source.tolist(),
            "is_intervention": source == "intervention",
        }
    )
    pq.write_table(table, path)

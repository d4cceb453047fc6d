"""Write the peers' dataset with LeRobot's own writer from the benchmark's source episodes.

Runs with the peers' Python (``scripts/peers.sh``), so it imports nothing from robodata: it reads
the same upload folders robodata ingests (each camera's lossless MP4, ``states.parquet``,
``episode.json``) and records them as a LeRobot user would, through ``LeRobotDataset.create``,
``add_frame`` per step, ``save_episode`` per episode and ``finalize``, with LeRobot's default
video encoding (its ``rgb_encoder_defaults``: libsvtav1, g=2, crf 30, yuv420p). The peers'
pixels therefore carry only their own loss against the source, as robodata's do.

    .peers-venv/bin/python benchmarks/peers/lerobot_writer.py OUT UPLOAD_DIR [UPLOAD_DIR ...]

One LeRobot frame per camera frame (all cameras share one rate; gym-aloha renders one frame per
50 Hz control step), with the state and action of the control step nearest the frame's time.
Prints ``LEROBOT_WRITTEN {json}`` (frames, episodes, seconds, the encoder settings) at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

RESULT_PREFIX = "LEROBOT_WRITTEN "
REPO_ID = "local/bench"


def video_key(camera: str) -> str:
    return f"observation.images.{camera}"


def read_episode_meta(folder: Path) -> dict:
    return json.loads((folder / "episode.json").read_text())


def camera_frames(path: Path) -> Iterator[tuple[float, object]]:
    """(seconds, H x W x 3 uint8) of every frame of a camera file, in order."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        time_base = stream.time_base
        for frame in container.decode(stream):
            pts = frame.pts
            seconds = float(pts * time_base) if pts is not None and time_base is not None else float("nan")
            yield seconds, frame.to_ndarray(format="rgb24")


def camera_rate(path: Path) -> tuple[float, int, int]:
    """(frames per second, height, width) of a camera file."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        rate = stream.average_rate or stream.base_rate or stream.guessed_rate
        if not rate:
            raise ValueError(f"{path}: video stream has no frame rate")
        return float(rate), stream.height, stream.width


def nearest_steps(step_seconds, frame_seconds):
    """For each frame time, the index of the nearest control step (ties go to the earlier one)."""
    import numpy as np

    steps = np.asarray(step_seconds, dtype=np.float64)
    frames = np.asarray(frame_seconds, dtype=np.float64)
    right = np.clip(np.searchsorted(steps, frames), 1, max(len(steps) - 1, 1))
    left = right - 1
    if len(steps) == 1:
        return np.zeros(len(frames), dtype=np.int64)
    return np.where(np.abs(steps[right] - frames) < np.abs(steps[left] - frames), right, left)


def features_of(uploads: Sequence[Path]) -> tuple[float, dict, list[str]]:
    """LeRobot's fps, its feature spec and the cameras, from the first upload (every upload of
    the benchmark has the same cameras and joints)."""
    import pyarrow.parquet as pq

    first = Path(uploads[0])
    meta = read_episode_meta(first)
    cameras = list(meta["cameras"])
    rates = {camera: camera_rate(first / meta["cameras"][camera]["file"]) for camera in cameras}
    fps_values = {round(fps, 6) for fps, _, _ in rates.values()}
    if len(fps_values) != 1:
        raise ValueError(f"{first}: cameras at different rates {sorted(fps_values)}; LeRobot stores one fps")
    states = pq.read_table(first / "states.parquet")
    names = list(meta.get("joint_names") or [])
    features: dict[str, dict] = {}
    for column, key in (("observation_state", "observation.state"), ("action", "action")):
        width = states.schema.field(column).type.list_size
        features[key] = {
            "dtype": "float32",
            "shape": (width,),
            "names": names if len(names) == width else [f"{column}_{i}" for i in range(width)],
        }
    for camera, (_, height, width) in rates.items():
        features[video_key(camera)] = {
            "dtype": "video",
            "shape": (height, width, 3),
            "names": ["height", "width", "channels"],
        }
    fps = fps_values.pop()
    return (int(fps) if float(fps).is_integer() else fps), features, cameras


def episode_frames(folder: Path, cameras: list[str]) -> Iterator[dict]:
    """LeRobot frames of one upload: every camera's i-th frame with the nearest step's state,
    action and the task text."""
    import numpy as np
    import pyarrow.parquet as pq

    meta = read_episode_meta(folder)
    task = meta.get("language_instruction") or meta.get("task") or ""
    states = pq.read_table(folder / "states.parquet")
    times = states["timestamp_ns"].to_numpy().astype(np.float64) / 1e9
    times = times - times[0]
    state = np.stack(states["observation_state"].to_numpy(zero_copy_only=False)).astype(np.float32)
    action = np.stack(states["action"].to_numpy(zero_copy_only=False)).astype(np.float32)
    streams = [camera_frames(folder / meta["cameras"][c]["file"]) for c in cameras]
    for shown in zip(*streams, strict=False):  # stops at the shortest camera
        seconds = shown[0][0]
        step = int(nearest_steps(times, [seconds])[0])
        frame = {"observation.state": state[step], "action": action[step], "task": task}
        for camera, (_, rgb) in zip(cameras, shown, strict=True):
            frame[video_key(camera)] = rgb
        yield frame


def write_lerobot(out: Path, uploads: Sequence[Path], dataset_cls=None) -> dict:
    """Record ``uploads`` (in episode order) into a new LeRobot dataset at ``out`` with
    ``dataset_cls`` (LeRobot's ``LeRobotDataset``; tests pass a stand-in) and its defaults."""
    if dataset_cls is None:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        dataset_cls = LeRobotDataset
    uploads = sorted((Path(u) for u in uploads), key=lambda f: int(read_episode_meta(f)["episode_index"]))
    fps, features, cameras = features_of(uploads)
    robot_type = read_episode_meta(uploads[0]).get("robot_type") or None
    start = time.perf_counter()
    dataset = dataset_cls.create(REPO_ID, fps, features, root=out, robot_type=robot_type, use_videos=True)
    frames = 0
    for folder in uploads:
        for frame in episode_frames(folder, cameras):
            dataset.add_frame(frame)
            frames += 1
        dataset.save_episode()
    dataset.finalize()
    return {
        "frames": frames,
        "episodes": len(uploads),
        "fps": fps,
        "cameras": cameras,
        "seconds": time.perf_counter() - start,
        "encoder": _encoder_defaults(),
    }


def _encoder_defaults() -> dict:
    """LeRobot's default RGB encoder settings (what ``create`` used), for the report."""
    try:
        from dataclasses import asdict

        from lerobot.configs.video import rgb_encoder_defaults
    except ImportError:
        return {}
    return {k: v for k, v in asdict(rgb_encoder_defaults()).items() if not k.startswith("_")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the new LeRobot dataset's root (must not exist)")
    parser.add_argument("uploads", type=Path, nargs="+", help="upload folders (episode.json, states, cameras)")
    args = parser.parse_args(argv)
    result = write_lerobot(args.out, args.uploads)
    sys.stdout.write("\n" + RESULT_PREFIX + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # LeRobot's encoder pool and image writer threads can hang interpreter teardown

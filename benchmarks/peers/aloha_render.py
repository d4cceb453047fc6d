"""Render ALOHA-sim episodes with gym-aloha into robodata's upload format (realistic footage).

Runs with the peers' Python (``scripts/peers.sh`` installs gym-aloha, MuJoCo and PyAV there), so
it imports nothing from robodata: robodata's own process only reads what this writes.

    MUJOCO_GL=osmesa PYOPENGL_PLATFORM=osmesa .peers-venv/bin/python benchmarks/peers/aloha_render.py \
        OUT --episodes 3 --steps 100

Each episode folder holds three 640x480 cameras at 50 fps (the sim's ``top``, ``angle`` and
``front_close`` renders, stored losslessly with libx264rgb crf 0 so PSNR is measured against
the rendered pixels), ``states.parquet`` (14 joint positions and the commanded joints at 50 Hz)
and ``episode.json`` (written last). The arms follow smooth joint trajectories around the
start pose, so the footage has the sim's lighting, textures and motion, not a random texture.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

CAMERAS = {"top": "top", "angle": "angle", "front_close": "vis"}  # upload name -> sim image key
FPS = 50  # gym-aloha's control rate; the sim renders one frame per control step
TASKS = {
    "transfer_cube": "pick up the cube with the right arm and hand it to the left arm",
    "insertion": "insert the peg into the socket",
}


def render_episode(out: Path, episode_index: int, steps: int, seed: int) -> Path:
    """Step one gym-aloha episode ``steps`` times and write it as an upload folder."""
    import numpy as np
    from gym_aloha.constants import START_ARM_POSE
    from gym_aloha.env import AlohaEnv

    task = list(TASKS)[episode_index % len(TASKS)]
    env = AlohaEnv(task, obs_type="pixels_agent_pos")
    env.reset(seed=seed + episode_index)
    rng = np.random.default_rng([seed, episode_index])
    start = np.asarray(START_ARM_POSE[:6] + [1.0] + START_ARM_POSE[8:14] + [1.0], dtype=np.float64)
    amplitude = rng.uniform(0.15, 0.45, 14) * np.r_[np.ones(6), 0, np.ones(6), 0]
    period = rng.uniform(1.5, 4.0, 14)
    phase = rng.uniform(0, 2 * np.pi, 14)
    folder = out / f"episode_{episode_index:06d}"
    folder.mkdir(parents=True, exist_ok=True)
    writers = {name: _VideoWriter(folder / f"{name}.mp4") for name in CAMERAS}
    states, actions = [], []
    try:
        for step in range(steps):
            t = step / FPS
            action = start + amplitude * np.sin(2 * np.pi * t / period + phase)
            action[[6, 13]] = 0.5 + 0.5 * np.cos(2 * np.pi * t / period[[6, 13]])  # grippers open and close
            observation = env._env.step(action).observation  # the raw one has every camera
            for name, key in CAMERAS.items():
                writers[name].write(observation["images"][key])
            states.append(np.asarray(observation["qpos"], dtype=np.float32))
            actions.append(action.astype(np.float32))
    finally:
        for writer in writers.values():
            writer.close()
    _write_states(folder / "states.parquet", np.stack(states), np.stack(actions))
    meta = {
        "episode_index": episode_index,
        "task": task,
        "language_instruction": TASKS[task],
        "split": "train",
        "robot_type": "aloha",
        "joint_names": [
            f"{side}_{j}"
            for side in ("left", "right")
            for j in ("waist", "shoulder", "elbow", "forearm_roll", "wrist_angle", "wrist_rotate", "gripper")
        ],
        "control_hz": FPS,
        "cameras": {name: {"file": f"{name}.mp4"} for name in CAMERAS},
        "source_of_footage": "gym-aloha (MuJoCo, OSMesa)",
    }
    (folder / "episode.json").write_text(json.dumps(meta, indent=2))  # last: marks the upload complete
    return folder


class _VideoWriter:
    """Lossless RGB H.264 (libx264rgb crf 0) at FPS, so the source keeps the rendered pixels."""

    def __init__(self, path: Path) -> None:
        import av

        self.container = av.open(str(path), "w")
        self.stream = self.container.add_stream("libx264rgb", rate=Fraction(FPS))
        self.stream.pix_fmt = "rgb24"
        self.stream.options = {"crf": "0", "preset": "ultrafast"}
        self.started = False

    def write(self, rgb) -> None:
        import av

        if not self.started:
            self.stream.height, self.stream.width = rgb.shape[:2]
            self.started = True
        for packet in self.stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
            self.container.mux(packet)

    def close(self) -> None:
        if self.started:
            for packet in self.stream.encode(None):
                self.container.mux(packet)
        self.container.close()


def _write_states(path: Path, states, actions) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(states)
    table = pa.table(
        {
            "timestamp_ns": np.arange(n, dtype=np.int64) * (1_000_000_000 // FPS),
            "observation_state": pa.FixedSizeListArray.from_arrays(pa.array(states.reshape(-1)), states.shape[1]),
            "action": pa.FixedSizeListArray.from_arrays(pa.array(actions.reshape(-1)), actions.shape[1]),
            "source": ["policy"] * n,
            "is_intervention": [False] * n,
        }
    )
    pq.write_table(table, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the upload folders")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100, help="control steps (camera frames) per episode")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "osmesa")
    os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")
    for index in range(args.episodes):
        if (args.out / f"episode_{index:06d}" / "episode.json").exists():
            continue  # cached: rendering is slow (~0.6 s a step on 2 cores)
        start = time.perf_counter()
        render_episode(args.out, index, args.steps, args.seed)
        print(f"episode {index}: {args.steps} steps in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # dm_control's OSMesa context otherwise complains at interpreter teardown

"""Write and read a tiny LeRobot dataset (LeRobot's own writer) and a tiny robodata dataset
(``robodata sample-data`` + ingest) in one Python process. Run by scripts/coinstall_lerobot.sh in
the venv that holds both packages; prints what each read returned."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np


def lerobot_item(work: Path) -> dict:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    features = {
        "observation.state": {"dtype": "float32", "shape": (2,), "names": None},
        "action": {"dtype": "float32", "shape": (2,), "names": None},
        "observation.images.top": {"dtype": "video", "shape": (48, 64, 3), "names": ["height", "width", "channels"]},
    }
    root = work / "lerobot"
    writer = LeRobotDataset.create("local/coinstall", fps=10, features=features, root=root, use_videos=True)
    rng = np.random.default_rng(0)
    for episode in range(2):
        for step in range(12):
            writer.add_frame(
                {
                    "observation.state": np.array([episode, step], dtype=np.float32),
                    "action": np.array([step, -step], dtype=np.float32),
                    "observation.images.top": rng.integers(0, 256, (48, 64, 3), dtype=np.uint8),
                    "task": "pick",
                }
            )
        writer.save_episode()
    writer.finalize()
    dataset = LeRobotDataset("local/coinstall", root=root, video_backend="pyav")
    return {"len": len(dataset), "episodes": dataset.meta.total_episodes, "item": dataset[13]}


def robodata_item(work: Path) -> dict:
    import robodata

    uploads, root = work / "uploads", work / "robodata"
    run = [str(Path(sys.executable).parent / "robodata")]  # the console script pip installed
    subprocess.run([*run, "sample-data", str(uploads), "--episodes", "2", "--seconds", "1"], check=True)
    subprocess.run([*run, "ingest", *map(str, sorted(uploads.iterdir())), str(root)], check=True)
    dataset = robodata.open(str(root))
    from robodata.lerobot import LeRobotCompatDataset  # robodata[torch]: the LeRobot-shaped view

    compat = LeRobotCompatDataset(str(root))[0]
    return {
        "len": len(dataset),
        "episodes": dataset.episodes().num_rows,
        "item": dataset[0],
        "compat": compat,
        "file": robodata.__file__,
    }


def describe(value) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape) > 0:
        return f"{type(value).__name__}{tuple(shape)} {value.dtype}"
    return repr(value.item() if hasattr(value, "item") else value)


def main(work: Path) -> None:
    import importlib.metadata as md

    lerobot = lerobot_item(work)
    print(f"LeRobot {md.version('lerobot')}: {lerobot['len']} frames, {lerobot['episodes']} episodes; item 13:")
    for key, value in sorted(lerobot["item"].items()):
        print(f"   {key}: {describe(value)}")
    assert int(lerobot["item"]["episode_index"]) == 1 and int(lerobot["item"]["frame_index"]) == 1

    ours = robodata_item(work)
    print(
        f"robodata {md.version('robodata')} ({ours['file']}): {ours['len']} rows, {ours['episodes']} episodes; item 0:"
    )
    for key, value in sorted(ours["item"].items()):
        print(f"   {key}: {describe(value)}")
    assert int(ours["item"]["episode_index"]) == 0 and int(ours["item"]["frame_index"]) == 0
    print("robodata.lerobot.LeRobotCompatDataset item 0:")
    for key, value in sorted(ours["compat"].items()):
        print(f"   {key}: {describe(value)}")
    print(f"both loaded in one process (pid {__import__('os').getpid()})")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

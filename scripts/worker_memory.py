"""Per-worker RSS, /dev/shm and samples/s of a training DataLoader as lerobot-train builds it (spawned
persistent workers, prefetch 4, default collate, the loop holding one batch at a time): robodata-train's
dataset (``LeRobotCompatDataset`` as robodata-train makes it, in the decode-once ``item_sampler``)
or, with ``--lerobot EXPORT``, ``LeRobotDataset`` on a LeRobot copy of the same episodes in
lerobot-train's ``EpisodeAwareSampler``. Prints the peaks and the samples/s after the first 10
batches as one JSON line (docs/training.md, "Memory").

    python scripts/worker_memory.py DATASET --workers 2 --batch-size 32 --steps 60 [--float]
    python scripts/worker_memory.py DATASET --lerobot EXPORT ...        # LeRobotDataset on EXPORT
    python scripts/worker_memory.py DATASET --frame-size 224x224 ...    # --robodata.frame_size=224x224;
        # with --lerobot: LeRobot's image_transforms=v2.Resize((224, 224))

/dev/shm is shared by everything on the host, so run it in a tmpfs of its own:

    sudo unshare -m sh -c 'mount -t tmpfs -o size=8g tmpfs /dev/shm && \\
        python scripts/worker_memory.py DATASET --workers 2 --batch-size 32 --steps 60 [--float]'

``ROBODATA_SHM_KEEP_MB`` sets the shared memory each robodata worker keeps for reuse.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def shm_used() -> int:
    stats = os.statvfs("/dev/shm")
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize


def memory_mb(pid: int) -> dict[str, int]:
    keys = ("VmRSS", "RssAnon", "RssFile", "RssShmem")
    with open(f"/proc/{pid}/status") as status:
        fields = (line.split(":") for line in status)
        return {k: int(v.split()[0]) // 1024 for k, v in fields if k in keys}


def robodata_loader(args: argparse.Namespace, frame_size: tuple[int, int] | None):
    """robodata-train's dataset and sampler for ``args.dataset``."""
    from robodata.lerobot.train import RobodataOptions, dataset_factory

    make = dataset_factory(original=None, options=RobodataOptions(frame_size=frame_size))  # type: ignore[arg-type]
    dataset = make(args.dataset, return_uint8=not args.float)
    sampler = dataset.item_sampler(batch_size=args.batch_size, num_workers=args.workers, seed=1)
    return dataset, sampler


def lerobot_loader(args: argparse.Namespace, frame_size: tuple[int, int] | None):
    """``LeRobotDataset`` on ``args.lerobot`` and lerobot-train's sampler."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.datasets.sampler import EpisodeAwareSampler
    from torchvision.transforms import v2

    transforms = None if frame_size is None else v2.Resize(frame_size)
    dataset = LeRobotDataset(
        "local/worker-memory", root=args.lerobot, image_transforms=transforms, return_uint8=not args.float
    )
    sampler = EpisodeAwareSampler(
        dataset.meta.episodes["dataset_from_index"],
        dataset.meta.episodes["dataset_to_index"],
        episode_indices_to_use=dataset.episodes,
        shuffle=True,
        seed=1,
        absolute_to_relative_idx=dataset.absolute_to_relative_idx,
    )
    return dataset, sampler


def main() -> None:
    from torch.utils.data import DataLoader

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="the robodata dataset")
    parser.add_argument("--lerobot", metavar="EXPORT", help="measure LeRobotDataset on this LeRobot copy instead")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--frame-size", metavar="WIDTHxHEIGHT", help="frames at this size (default: recorded)")
    parser.add_argument("--float", action="store_true", help="float32 frames (default: uint8, lerobot-train's)")
    args = parser.parse_args()
    frame_size = None
    if args.frame_size:
        width, height = (int(n) for n in args.frame_size.lower().split("x"))
        frame_size = (height, width)

    base = shm_used()
    dataset, sampler = (lerobot_loader if args.lerobot else robodata_loader)(args, frame_size)
    loader = DataLoader(
        dataset,
        sampler=sampler,
        batch_size=args.batch_size,
        num_workers=args.workers,
        prefetch_factor=4,
        persistent_workers=True,
        multiprocessing_context="spawn",
    )
    peak_shm, started = 0, time.perf_counter()
    peaks: dict[int, dict[str, int]] = {}
    batches = iter(loader)
    shapes: dict[str, list[int]] = {}
    for step in range(args.steps):
        if step == 10:
            started = time.perf_counter()
        try:
            batch = next(batches)
        except StopIteration:
            batches = iter(loader)
            batch = next(batches)
        shapes = {k: list(batch[k].shape) for k in dataset.meta.camera_keys}
        peak_shm = max(peak_shm, shm_used() - base)
        for worker in getattr(batches, "_workers", []):  # the DataLoader's worker processes
            for key, value in memory_mb(worker.pid).items():
                peaks.setdefault(worker.pid, {})[key] = max(peaks.get(worker.pid, {}).get(key, 0), value)
    rate = (args.steps - 10) * args.batch_size / (time.perf_counter() - started)
    print(
        json.dumps(
            {
                "dataset": "LeRobotDataset" if args.lerobot else "robodata-train",
                "frames": "float32" if args.float else "uint8",
                "frame_shapes": shapes,
                "workers": args.workers,
                "batch_size": args.batch_size,
                "keep_mb": os.environ.get("ROBODATA_SHM_KEEP_MB"),
                "peak_shm_mb": peak_shm >> 20,
                "samples_per_s": round(rate, 1),
                "worker_peaks_mb": list(peaks.values()),
            }
        )
    )


if __name__ == "__main__":
    main()

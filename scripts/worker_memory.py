"""Per-worker RSS and /dev/shm of ``LeRobotCompatDataset`` in lerobot-train's DataLoader (spawned
persistent workers, prefetch 4, the decode-once ``item_sampler``), the loop holding one batch at a
time; prints the peaks and the samples/s after the first 10 batches (docs/training.md, "Memory").

/dev/shm is shared by everything on the host, so run it in a tmpfs of its own:

    sudo unshare -m sh -c 'mount -t tmpfs -o size=8g tmpfs /dev/shm && \\
        python scripts/worker_memory.py DATASET --workers 2 --batch-size 32 --steps 60 [--float]'

``ROBODATA_SHM_KEEP_MB`` sets the shared memory each worker keeps for reuse.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    from torch.utils.data import DataLoader

    from robodata.lerobot import LeRobotCompatDataset
    from robodata.torch import worker_context

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--float", action="store_true", help="float32 frames (default: uint8, lerobot-train's)")
    args = parser.parse_args()

    base = shm_used()
    ds = LeRobotCompatDataset(args.dataset, return_uint8=not args.float)
    loader = DataLoader(
        ds,
        sampler=ds.item_sampler(batch_size=args.batch_size, num_workers=args.workers, seed=1),
        batch_size=args.batch_size,
        num_workers=args.workers,
        prefetch_factor=4,
        persistent_workers=True,
        multiprocessing_context=worker_context(),
    )
    peak_shm, peaks, started = 0, {}, time.perf_counter()
    batches = iter(loader)
    for step in range(args.steps):
        if step == 10:
            started = time.perf_counter()
        try:
            next(batches)
        except StopIteration:
            batches = iter(loader)
            next(batches)
        peak_shm = max(peak_shm, shm_used() - base)
        for worker in batches._workers:
            for key, value in memory_mb(worker.pid).items():
                peaks.setdefault(worker.pid, {})[key] = max(peaks.get(worker.pid, {}).get(key, 0), value)
    rate = (args.steps - 10) * args.batch_size / (time.perf_counter() - started)
    frames = "float32" if args.float else "uint8"
    print(
        f"{frames}, {args.workers} workers, batch {args.batch_size}: peak /dev/shm {peak_shm >> 20} MB, {rate:.0f} samples/s"
    )
    for pid, peak in peaks.items():
        print(f"  worker {pid}: " + ", ".join(f"{k} {v} MB" for k, v in peak.items()))


if __name__ == "__main__":
    main()

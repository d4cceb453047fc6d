"""Training-loader benchmark: PyTorch DataLoader samples/s for 0, 1, 2 workers and batch sizes 32
and 128, robodata against the LeRobot-layout baseline fed through the same DataLoader (random
order); ``robodata.lerobot.LeRobotCompatDataset`` against the same baseline; per-worker memory at
1M and 10M rows; time to the first batch by worker start method; resident memory over a long run.

Run ``robodata bench loader`` (``--help`` for sizes). Needs the ``torch`` extra.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from robodata.measure import every_epoch, time_batches

PAGE = os.sysconf("SC_PAGE_SIZE")


# --- resident memory of a process tree (from /proc; no extra dependency) -------------------------
def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    # The parent pid is the 2nd field after the parenthesised command name.
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                continue
    return kids


def tree_rss(pid: int | None = None) -> int:
    """Resident bytes of process ``pid`` (default: this one) and all its descendants (workers)."""
    todo, total = [pid or os.getpid()], 0
    while todo:
        current = todo.pop()
        total += _rss(current)
        todo.extend(_children(current))
    return total


class RssMonitor:
    """Samples the process tree's resident memory on a thread, every ``interval`` seconds."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        start = time.perf_counter()
        while not self._stop.is_set():
            self.samples.append((time.perf_counter() - start, tree_rss()))
            self._stop.wait(self.interval)

    def __enter__(self) -> RssMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak(self) -> int:
        return max((rss for _, rss in self.samples), default=0)


# --- throughput ---------------------------------------------------------------------------------
def robodata_throughput(
    uri: str, *, num_workers: int, batch_size: int, samples: int, cameras=None, version: int | None = None
) -> dict:
    """DataLoader samples/s reading ``uri`` (at ``version``) through robodata's adapter (its default order)."""
    from robodata.torch import make_dataloader

    loader = make_dataloader(
        uri, version=version, batch_size=batch_size, num_workers=num_workers, cameras=cameras, seed=1
    )
    figures = time_batches(every_epoch(loader), samples, lambda b: len(b["index"]))
    loader.close()
    return {"loader": "robodata", "workers": num_workers, "batch_size": batch_size, **figures}


def compat_throughput(uri: str, *, num_workers: int, batch_size: int, samples: int) -> dict:
    """DataLoader samples/s of ``LeRobotCompatDataset`` (every camera, float32 CHW, LeRobot keys),
    batches from its resumable sampler, read with one batched ``__getitems__`` per batch."""
    from torch.utils.data import DataLoader

    from robodata.lerobot import LeRobotCompatDataset
    from robodata.torch import collate_batch, worker_context

    dataset = LeRobotCompatDataset(uri)
    sampler = dataset.sampler(batch_size=batch_size, seed=1)
    loader = DataLoader(
        dataset,
        batch_sampler=sampler,
        collate_fn=collate_batch,
        num_workers=num_workers,
        multiprocessing_context=worker_context() if num_workers else None,
        persistent_workers=num_workers > 0,
    )

    def forever():
        while True:
            yield from loader
            sampler.set_epoch(sampler.epoch + 1)

    figures = time_batches(forever(), samples, lambda b: len(b["index"]))
    return {"loader": "lerobot-compat", "workers": num_workers, "batch_size": batch_size, **figures}


def baseline_throughput(root: str, *, num_workers: int, batch_size: int, samples: int) -> dict:
    """The same DataLoader (spawned workers, shuffled) over the LeRobot-layout baseline reader."""
    import torch
    from torch.utils.data import DataLoader

    dataset = LeRobotLayoutTorchDataset(root)
    loader: DataLoader = DataLoader(
        dataset,  # type: ignore[arg-type]  # any __getitem__/__len__ object; the stub asks for a Dataset
        batch_size=batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(1),
        num_workers=num_workers,
        multiprocessing_context="spawn" if num_workers else None,
        persistent_workers=num_workers > 0,
    )

    def forever():
        while True:
            yield from loader

    figures = time_batches(forever(), samples, lambda b: len(b["index"]))
    return {"loader": "lerobot-layout", "workers": num_workers, "batch_size": batch_size, **figures}


class LeRobotLayoutTorchDataset:
    """Map-style dataset over ``benchmarks.lerobot_baseline.LeRobotLayoutReader``: one
    ``__getitem__`` per sample, as LeRobotDataset is used. Opened lazily in each worker."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._reader = None
        self._len = len(self.reader)

    @property
    def reader(self):
        if self._reader is None:
            from benchmarks.lerobot_baseline import LeRobotLayoutReader

            self._reader = LeRobotLayoutReader(self.root)
        return self._reader

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, idx: int) -> dict:
        import torch

        item = self.reader[int(idx)]
        out = {
            name: torch.from_numpy(np.ascontiguousarray(value))
            if isinstance(value, np.ndarray) and value.dtype != object
            else value
            for name, value in item.items()
        }
        out["index"] = int(idx)  # default_collate stacks the rest, as for LeRobotDataset
        return out

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_reader": None}


def baseline_available() -> bool:
    try:
        import benchmarks.lerobot_baseline  # noqa: F401
        import robodata.lerobot  # noqa: F401
    except ImportError:
        return False
    return True


# --- memory over a long run ---------------------------------------------------------------------
def long_run_memory(uri: str, *, samples: int, batch_size: int, num_workers: int, cameras=None) -> dict:
    """Resident memory of the training process and its workers over ``samples`` random samples."""
    from robodata.torch import make_dataloader

    loader = make_dataloader(uri, batch_size=batch_size, num_workers=num_workers, cameras=cameras, seed=2)
    marks: list[tuple[int, int]] = []  # (samples so far, tree RSS)
    seen = 0
    progress = tqdm(total=samples, desc=f"long run ({num_workers} workers)", unit="sample")
    with RssMonitor() as monitor:
        start = time.perf_counter()
        for batch in every_epoch(loader):
            seen += len(batch["index"])
            progress.update(len(batch["index"]))
            if len(marks) < 10 and seen >= (len(marks) + 1) * samples / 10:
                marks.append((seen, tree_rss()))
            if seen >= samples:
                break
        elapsed = time.perf_counter() - start
    progress.close()
    loader.close()
    mib = 1 << 20
    return {
        "samples": seen,
        "batch_size": batch_size,
        "workers": num_workers,
        "samples_per_s": seen / elapsed,
        "rss_at_10pct_mib": marks[0][1] / mib,
        "rss_at_end_mib": marks[-1][1] / mib,
        "rss_peak_mib": monitor.peak / mib,
        "rss_by_decile_mib": [round(rss / mib) for _, rss in marks],
    }


# --- the command ----------------------------------------------------------------------------------
def _sample_dataset(workdir: str, episodes: int, seconds: float) -> str:
    from robodata.ingest import ingest_episode
    from robodata.sample_data import write_sample_uploads

    uri = os.path.join(workdir, "dataset")
    uploads = write_sample_uploads(os.path.join(workdir, "uploads"), episodes, seconds=seconds)
    for upload in tqdm(uploads, desc="ingest sample data", unit="episode"):
        ingest_episode(str(upload), uri)
    return uri


def measure_loaders(
    uri: str,
    version: int,
    baseline_root,
    workers: tuple[int, ...],
    batch_sizes: tuple[int, ...],
    samples: int,
    tick=lambda: None,
) -> list[dict]:
    """DataLoader samples/s for every (workers, batch size), robodata's adapter and the LeRobot-layout
    baseline at ``baseline_root`` interleaved, as rows for ``format_throughput``.

    >>> figures = measure_loaders("demo/dataset", 5, "bench_out/work/lerobot", (0, 2), (32,), 256)  # doctest: +SKIP
    >>> format_throughput(figures)  # doctest: +SKIP
    """
    rows: list[dict] = []
    if importlib.util.find_spec("torch") is None:  # the DataLoader needs the torch extra
        return rows
    for num_workers in workers:
        for batch_size in batch_sizes:
            count = max(samples, 3 * batch_size)
            rows.append(
                robodata_throughput(
                    f"{uri}", num_workers=num_workers, batch_size=batch_size, samples=count, version=version
                )
            )
            tick()
            rows.append(
                baseline_throughput(str(baseline_root), num_workers=num_workers, batch_size=batch_size, samples=count)
            )
            tick()
    return rows


def format_throughput(rows: list[dict]) -> str:
    """Samples/s as a Markdown table, one row per (workers, batch size), one column per loader."""
    loaders = sorted({r["loader"] for r in rows}, key=lambda name: name != "robodata")
    lines = [
        "| workers | batch | " + " | ".join(f"{name} samples/s | {name} first batch s" for name in loaders) + " |",
        "| --- | --- |" + " --- | --- |" * len(loaders),
    ]
    for workers, batch in sorted({(r["workers"], r["batch_size"]) for r in rows}):
        cells = []
        for name in loaders:
            match = [r for r in rows if (r["loader"], r["workers"], r["batch_size"]) == (name, workers, batch)]
            cells += [f"{match[0]['samples_per_s']:.1f}", f"{match[0]['first_batch_s']:.1f}"] if match else ["-", "-"]
        lines.append(f"| {workers} | {batch} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    workdir = args.workdir or tempfile.mkdtemp(prefix="robodata-bench-loader-")
    uri = args.dataset or _sample_dataset(workdir, args.episodes, args.seconds)
    cameras = args.cameras.split(",") if args.cameras else None
    rows = []
    baseline_root = None
    if args.baseline and baseline_available() and cameras is None:
        from robodata.lerobot import export_lerobot

        baseline_root = str(Path(workdir) / "lerobot")
        if not (Path(baseline_root) / "meta" / "info.json").is_file():
            export_lerobot(uri, baseline_root)
    for workers in args.workers:
        for batch_size in args.batch_sizes:
            samples = max(args.samples, 3 * batch_size)
            rows.append(
                robodata_throughput(uri, num_workers=workers, batch_size=batch_size, samples=samples, cameras=cameras)
            )
            tqdm.write(str(rows[-1]))
            if baseline_root:
                rows.append(
                    baseline_throughput(baseline_root, num_workers=workers, batch_size=batch_size, samples=samples)
                )
                tqdm.write(str(rows[-1]))
    print(f"\nDataLoader throughput ({uri}, {os.cpu_count()} CPUs)\n")
    print(format_throughput(rows))
    if not baseline_root:
        reason = "cameras were restricted" if cameras else "benchmarks.lerobot_baseline is not installed"
        print(f"\n(no LeRobot-layout baseline column: {reason})")
    compat = []
    for workers in args.compat_workers:
        compat.append(compat_throughput(uri, num_workers=workers, batch_size=32, samples=max(args.samples, 96)))
        tqdm.write(str(compat[-1]))
        baseline_rows = [
            r for r in rows if r["loader"] == "lerobot-layout" and (r["workers"], r["batch_size"]) == (workers, 32)
        ]
        if baseline_root and not baseline_rows:
            baseline_rows = [
                baseline_throughput(baseline_root, num_workers=workers, batch_size=32, samples=max(args.samples, 96))
            ]
        compat += baseline_rows
    if compat:
        print(
            "\nLeRobotCompatDataset in a DataLoader (batch 32, every camera, float32 CHW) against the "
            "per-sample LeRobot-layout baseline\n"
        )
        print(format_throughput(compat))
    scale = []
    for count in args.scale_rows:
        from benchmarks.loader_scale import synthetic_dataset, worker_memory

        synthetic = synthetic_dataset(uri, count, str(Path(workdir) / f"rows-{count}"))
        scale.append(worker_memory(synthetic))
        tqdm.write(json.dumps(scale[-1]))
    if scale:
        print(
            "\nMemory per process after 40 random batches (2 workers, batch 32, one camera), MiB: RSS counts "
            "the shared memory-mapped row index and order pages a process touched; private is its own\n"
        )
        print(
            "| rows | main RSS | main private | worker RSS | worker PSS | worker private |\n| --- | --- | --- | --- "
            "| --- | --- |"
        )
        for s in scale:
            for w in s["workers"]:
                print(
                    f"| {s['rows']:,} | {s['main']['rss_mib']:.0f} | {s['main']['private_mib']:.0f} | "
                    f"{w['rss_mib']:.0f} | {w.get('pss_mib', 0):.0f} | {w.get('private_mib', 0):.0f} |"
                )
    first_batch = []
    if args.first_batch:
        from benchmarks.loader_scale import first_batch_times

        first_batch = first_batch_times(uri)
        print(
            "\nSeconds to the first batch, 2 workers, batch 32, every camera, each in a fresh process "
            "(second loader: another DataLoader made afterwards in the same process)\n"
        )
        print("| start method | first loader s | second loader s |\n| --- | --- | --- |")
        for f in first_batch:
            print(f"| {f['start_method']} | {f['first_loader_s']} | {f['second_loader_s']} |")
    memory = None
    if args.rss_samples:
        memory = long_run_memory(
            uri, samples=args.rss_samples, batch_size=32, num_workers=args.rss_workers, cameras=cameras
        )
        print(
            f"\nResident memory over {memory['samples']:,} random samples (batch 32, "
            f"{memory['workers']} workers; main process + workers):\n"
        )
        print("| measure | value |\n| --- | --- |")
        for key, value in memory.items():
            print(f"| {key} | {value:.1f} |" if isinstance(value, float) else f"| {key} | {value} |")
    if args.json:
        report = {
            "dataset": uri,
            "cpu_count": os.cpu_count(),
            "throughput": rows,
            "memory": memory,
            "lerobot_compat": compat,
            "worker_memory_at_scale": scale,
            "first_batch": first_batch,
        }
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"\nwrote {args.json}")
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="an existing dataset; default: fresh sample data")
    p.add_argument("--workdir", default=None, help="where sample data and the baseline copy go (default: a temp dir)")
    p.add_argument("--episodes", type=int, default=4, help="sample episodes to generate (without --dataset)")
    p.add_argument("--seconds", type=float, default=6.0, help="length of each sample episode")
    p.add_argument("--cameras", default=None, help="comma-separated cameras (default: all; disables the baseline)")
    p.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2], help="DataLoader num_workers to time")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 128], help="batch sizes to time")
    p.add_argument("--samples", type=int, default=512, help="samples timed per configuration")
    p.add_argument("--rss-samples", type=int, default=100_000, help="length of the memory run (0 skips it)")
    p.add_argument("--rss-workers", type=int, default=2, help="DataLoader workers of the memory run")
    p.add_argument("--no-baseline", dest="baseline", action="store_false", help="skip the LeRobot-layout baseline")
    p.add_argument(
        "--compat-workers",
        type=int,
        nargs="*",
        default=[0, 2],
        help="workers for the LeRobotCompatDataset runs (batch 32; none: skip)",
    )
    p.add_argument(
        "--scale-rows",
        type=int,
        nargs="*",
        default=[1_000_000, 10_000_000],
        help="synthetic dataset sizes for per-worker memory (none: skip)",
    )
    p.add_argument(
        "--no-first-batch", dest="first_batch", action="store_false", help="skip the time-to-first-batch probes"
    )
    p.add_argument("--json", default=None, help="also write the figures to this JSON file (for the report)")

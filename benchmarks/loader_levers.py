"""What each training-loader lever buys: the bytes a batch carries from a DataLoader worker to the
training process, where decoding runs (spawned workers or threads in the training process), YUV
4:2:0 hand-over, training renditions, and how long the first batch takes.

``robodata bench levers OUT`` (``python -m benchmarks levers OUT``) ingests sample episodes (or
measures ``--dataset``), adds a 224x224 rendition to a copy, and runs, in interleaved rounds:

- **transfer**: a DataLoader whose dataset returns a ready batch (no decode), 2 spawned workers:
  what moving a batch of a given size through shared memory costs on its own, for fresh tensors
  (what every loader does) and for one shared tensor reused (the bound of a preallocated ring);
- **loaders**: ``make_dataloader`` (batch 32, every camera) per lever: native RGB with 2 workers
  and with 0 workers (decode threads in the training process), native YUV 4:2:0, 224x224 RGB
  from the rendition, 224x224 from the full frames (resized on decode), and the rendition in YUV.

Each figure: steady samples/s after the first batch (median over rounds), the time to the first
batch (loader construction included), and CPU seconds per 1,000 samples of the whole process
tree (workers included), which the machine's load disturbs less than wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

BATCH = 32
TICKS = os.sysconf("SC_CLK_TCK")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="folder for results.json and report.md")
    parser.add_argument("--dataset", default=None, help="measure this dataset (copied; default: sample episodes)")
    parser.add_argument("--episodes", type=int, default=4, help="sample episodes to ingest")
    parser.add_argument("--seconds", type=float, default=4.0, help="length of each sample episode")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--batches", type=int, default=10, help="batches per loader run after the first")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers of the worker runs")
    parser.add_argument("--skip-transfer", action="store_true", help="only the real loaders")


def _cpu() -> float:
    """CPU seconds of this process and its live descendants (the DataLoader workers), from /proc."""
    from benchmarks.loader import _children

    todo, total = [os.getpid()], 0.0
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        todo.extend(_children(pid))
    return total


class _ReadyBatches:
    """A map-style dataset whose every batch is ``shapes`` of uint8, made fresh or reused."""

    def __init__(self, shapes: list[tuple[int, ...]], reuse: bool) -> None:
        self.shapes, self.reuse, self._kept = shapes, reuse, None

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index):
        import torch

        if self.reuse:  # the same bytes written as below, into shared memory made once
            if self._kept is None:
                self._kept = [torch.zeros(s, dtype=torch.uint8).share_memory_() for s in self.shapes]
            for tensor in self._kept:
                tensor.numpy().fill(index % 255)
            return list(self._kept)
        return [torch.from_numpy(np.full(s, index % 255, dtype=np.uint8)) for s in self.shapes]


def _transfer_run(shapes, reuse: bool, workers: int, batches: int) -> dict:
    import torch

    # any object with __getitem__/__len__ works; the stub asks for a Dataset
    loader: torch.utils.data.DataLoader = torch.utils.data.DataLoader(
        _ReadyBatches(shapes, reuse),  # type: ignore[arg-type]
        batch_size=None,
        num_workers=workers,
        multiprocessing_context="spawn" if workers else None,
        prefetch_factor=2 if workers else None,
    )
    start = time.perf_counter()
    iterator = iter(loader)
    next(iterator)
    first = time.perf_counter() - start
    t0, cpu0 = time.perf_counter(), _cpu()
    for _ in range(batches):
        next(iterator)
    steady = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    del iterator
    return {
        "samples_per_s": BATCH * batches / steady,
        "first_batch_s": first,
        "cpu_s_per_1000": 1000 * cpu / (BATCH * batches),
    }


def _loader_run(uri: str, options: dict, workers: int, batches: int, seed: int) -> dict:
    from robodata.torch import make_dataloader

    start = time.perf_counter()
    loader = make_dataloader(uri, batch_size=BATCH, num_workers=workers, seed=seed, persistent_workers=False, **options)
    iterator = iter(loader)
    batch = next(iterator)
    first = time.perf_counter() - start
    t0, cpu0 = time.perf_counter(), _cpu()  # steady state: worker start-up left out
    taken = 0
    for _ in range(batches):
        try:
            batch = next(iterator)
        except StopIteration:
            break
        taken += 1
    steady = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    nbytes = sum(v.numel() * v.element_size() for k, v in batch.items() if k.startswith("observation_images_"))
    del iterator, loader
    return {
        "samples_per_s": BATCH * taken / steady,
        "first_batch_s": first,
        "cpu_s_per_1000": 1000 * cpu / (BATCH * taken),
        "batch_image_bytes": int(nbytes),
    }


def _prepare(args, work: Path) -> tuple[str, str]:
    import robodata
    from robodata.ingest import add_rendition
    from robodata.sample_data import write_sample_uploads

    plain = str(work / "plain")
    if args.dataset:
        shutil.copytree(args.dataset, plain)
    else:
        for upload in write_sample_uploads(work / "uploads", episodes=args.episodes, seed=0, seconds=args.seconds):
            robodata.ingest_episode(str(upload), plain)
    rendition = str(work / "rendition")
    shutil.copytree(plain, rendition)
    add_rendition(rendition, "224x224")
    return plain, rendition


def main(args: argparse.Namespace) -> int:
    import robodata
    from robodata.torch import yuv420_to_rgb

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="levers-", dir=out))
    plain, rendition = _prepare(args, work)
    ds = robodata.open(plain)
    sizes = [(ds.metadata.cameras[c].height, ds.metadata.cameras[c].width) for c in ds.cameras]
    loaders: dict[str, tuple[str, dict, int]] = {
        "rgb native, workers": (plain, {}, args.workers),
        "rgb native, in-process threads": (plain, {}, 0),
        "yuv420 native, workers": (plain, {"pixel_format": "yuv420p"}, args.workers),
        "rgb 224 rendition, workers": (rendition, {"resolution": (224, 224)}, args.workers),
        "rgb 224 rendition, in-process threads": (rendition, {"resolution": (224, 224)}, 0),
        "rgb 224 resized on decode, workers": (plain, {"resolution": (224, 224)}, args.workers),
        "yuv420 224 rendition, workers": (
            rendition,
            {"resolution": (224, 224), "pixel_format": "yuv420p"},
            args.workers,
        ),
    }
    transfers = {
        "rgb native, fresh tensors": ([(BATCH, h, w, 3) for h, w in sizes], False),
        "rgb native, one shared tensor reused": ([(BATCH, h, w, 3) for h, w in sizes], True),
        "yuv420 native, fresh tensors": ([(BATCH, h * 3 // 2, w) for h, w in sizes], False),
        "rgb 224, fresh tensors": ([(BATCH, 224, 224, 3) for _ in sizes], False),
    }
    runs: dict[str, list[dict]] = {}
    for r in range(args.rounds):
        names = list(loaders)[r % len(loaders) :] + list(loaders)[: r % len(loaders)]  # rotate the order
        for name in names:
            uri, options, workers = loaders[name]
            runs.setdefault(f"loader: {name}", []).append(_loader_run(uri, options, workers, args.batches, seed=r))
            print(name, runs[f"loader: {name}"][-1], flush=True)
        if not args.skip_transfer:
            for name, (shapes, reuse) in transfers.items():
                runs.setdefault(f"transfer: {name}", []).append(
                    _transfer_run(shapes, reuse, args.workers, args.batches)
                )
                print(name, runs[f"transfer: {name}"][-1], flush=True)
    # The device-side conversion, on this machine's CPU (the trainer pays it once per batch).
    import torch

    yuv = torch.from_numpy(ds.get_frames(range(BATCH), cameras=ds.cameras[0], pixel_format="yuv420p")[ds.cameras[0]])
    t0 = time.perf_counter()
    for _ in range(5):
        yuv420_to_rgb(yuv)
    convert_ms = (time.perf_counter() - t0) / 5 * 1000
    table = {
        name: {key: statistics.median(r[key] for r in results) for key in results[0]} for name, results in runs.items()
    }
    reuse_report = decode_reuse(ds)
    report = {
        "command": getattr(args, "command_line", ""),
        "cameras": dict(zip(ds.cameras, sizes, strict=True)),
        "rows": len(ds),
        "rounds": args.rounds,
        "medians": table,
        "runs": runs,
        "yuv420_to_rgb_cpu_ms_per_batch_one_camera": convert_ms,
        "decode_reuse": reuse_report,
    }
    (out / "results.json").write_text(json.dumps(report, indent=2))
    lines = [
        "| run | samples/s | first batch s | CPU s / 1000 samples | image bytes / batch |",
        "|---|---|---|---|---|",
    ]
    for name, row in table.items():
        lines.append(
            f"| {name} | {row['samples_per_s']:.0f} | {row['first_batch_s']:.2f} | "
            f"{row['cpu_s_per_1000']:.2f} | {int(row.get('batch_image_bytes', 0)):,} |"
        )
    lines += ["", f"yuv420_to_rgb on CPU: {convert_ms:.1f} ms a batch of one camera", ""]
    lines += ["| decoded-frame cache (simulated on the sampler's order) | frames decoded | saved |", "|---|---|---|"]
    lines += [f"| {k} | {v['frames_decoded']:,} | {v['saved_fraction']:.1%} |" for k, v in reuse_report.items()]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    return 0


def decode_reuse(ds, *, batch_size: int = BATCH, workers: int = 2, budgets_mb=(64, 256), window: int = 8) -> dict:
    """How many decoded frames a per-worker cache of decoded frames would save, from the sampler's
    real order (no decoding): for random batches (D) and for windows of ``window`` camera frames
    (C), with the default episode-pool shuffle and ``workers`` workers taking batches in turn.

    A GOP is skipped only when every frame a batch wants from it is cached (a decode restarts at
    the GOP's IDR); each decode caches every frame it produced (0..last wanted), LRU by bytes.
    """
    from collections import OrderedDict

    from robodata.torch import RowSampler

    rows = ds.rows
    control_hz = ds.metadata.control_hz
    results = {}
    for kind in ("D batches", f"C windows of {window} frames"):
        sampler = RowSampler.for_dataset(ds, batch_size=batch_size, seed=0)
        batches = sampler.batches()
        for budget_mb in (0, *budgets_mb):
            decoded = saved = 0
            caches: list[OrderedDict] = [OrderedDict() for _ in range(workers)]
            held = [0] * workers
            for b, batch in enumerate(batches):
                w = b % workers
                cache = caches[w]
                for camera in ds.cameras:
                    info = ds.metadata.cameras[camera]
                    frame_bytes = info.height * info.width * 3
                    wanted_rows = np.asarray(batch)
                    if kind.startswith("C"):
                        step = round(control_hz / info.fps)
                        offsets = np.arange(-(window - 1), 1) * step
                        wanted_rows, _ = rows.window_rows(wanted_rows, offsets)
                        wanted_rows = wanted_rows.reshape(-1)
                    refs = rows.ref_id[camera][wanted_rows]
                    frames = rows.frame_in_gop[camera][wanted_rows]
                    per_gop: dict[int, set[int]] = {}
                    for ref, k in zip(refs.tolist(), frames.tolist(), strict=True):
                        per_gop.setdefault(ref, set()).add(k)
                    for ref, wanted in per_gop.items():
                        last = max(wanted)
                        if budget_mb and all((ref, k) in cache for k in wanted):
                            saved += last + 1
                            for k in wanted:
                                cache.move_to_end((ref, k))
                            continue
                        decoded += last + 1
                        if not budget_mb:
                            continue
                        for k in range(last + 1):
                            if (ref, k) not in cache:
                                cache[(ref, k)] = frame_bytes
                                held[w] += frame_bytes
                            cache.move_to_end((ref, k))
                        while held[w] > budget_mb << 20:
                            _, size = cache.popitem(last=False)
                            held[w] -= size
            total = decoded + saved
            results[f"{kind}, cache {budget_mb} MB per worker"] = {
                "frames_decoded": decoded,
                "frames_saved": saved,
                "saved_fraction": saved / total if total else 0.0,
            }
    return results

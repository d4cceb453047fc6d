"""G x CRF x preset (x codec, fastdecode) sweep on the benchmark footage: for each point the cost
of a random read (CPU ms per sampled row, every camera: what a single sample, A, and a uniform
shuffle pay per wanted frame), the decode bound of random batches (every GOP they need decoded
once, as far as their last wanted frame, on every core), scenario D's DataLoader (the decode-once
order), bytes per camera frame and PSNR against the source; then the frontier and the default it
suggests.

>>> points = sweep_gop_crf(uploads, Path("out/work/sweep"), gop_sizes=(4, 8), crfs=(20,))  # doctest: +SKIP
>>> choose_default(points, max_bytes_per_frame=4279.0, min_psnr_db=43.99)["gop_size"]  # doctest: +SKIP
4
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from benchmarks.peers.peer_protocol import run_job
from benchmarks.peers.peer_storage import psnr_figures, quality_camera
from benchmarks.storage import camera_frame_counts, quality_sample, video_bytes
from robodata.codec import EncoderSettings
from robodata.ingest import ingest_episode
from robodata.reader import open_dataset

BOUND_WITHIN = 0.9  # the default may give up at most 10% of the best decode bound


def sweep_gop_crf(
    uploads: Mapping[int, Path],
    work: Path,
    *,
    gop_sizes=(4, 6, 8),
    crfs=(20,),
    presets=("veryfast", "faster", "medium"),
    codecs=("h264",),
    fast_decodes=(True,),
    batch_size: int = 32,
    workers: int = 2,
    loader_batches: int = 12,
    random_rows: int = 200,
    quality_rows: int | np.ndarray = 12,
    seed: int = 0,
    nice: int = 0,
    log: Path | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> list[dict]:
    """Ingest ``uploads`` at every (G, CRF, preset, codec, fastdecode) and measure each dataset: one
    row per point. ``quality_rows`` (row offsets, or how many to draw) are where PSNR is measured:
    pass the rows the peers' PSNR came from, so every point is compared on the same pictures."""
    points = []
    grid = ((g, c, p, k, f) for g in gop_sizes for c in crfs for p in presets for k in codecs for f in fast_decodes)
    for gop, crf, preset, codec, fast in grid:
        say(f"sweep G={gop} crf={crf} preset={preset} codec={codec} fastdecode={fast} ...")
        uri = str(work / f"g{gop}-crf{crf}-{preset}-{codec}{'-fastdecode' if fast else ''}")
        settings = EncoderSettings(gop_size=gop, crf=crf, preset=preset, codec=codec, fast_decode=fast)
        start = time.perf_counter()
        for upload in uploads.values():
            ingest_episode(str(upload), uri, settings=settings)
        ingest_seconds = time.perf_counter() - start
        ds = open_dataset(uri)
        frames = sum(camera_frame_counts(ds).values())
        if isinstance(quality_rows, int):
            rows = np.sort(np.random.default_rng(seed).choice(len(ds), min(quality_rows, len(ds)), replace=False))
        else:
            rows = np.asarray(quality_rows)
        sample = quality_sample(ds, uploads, rows)
        quality = psnr_figures(
            {c: s["source"] for c, s in sample.items()},
            {c: np.stack(s["robodata"]) for c, s in sample.items()},
            quality_camera(ds.cameras),
        )
        random_read = random_read_cost(ds, rows=random_rows, seed=seed)
        answer = run_loader(
            uri, batch_size=batch_size, workers=workers, batches=loader_batches, seed=seed, nice=nice, log=log
        )
        bound = run_bound(
            uri, rows=len(ds), batch_size=batch_size, batches=loader_batches, seed=seed, nice=nice, log=log
        )
        points.append(
            {
                "gop_size": gop,
                "crf": crf,
                "preset": preset,
                "codec": codec,
                "fast_decode": fast,
                "dataset_uri": uri,
                "ingest_seconds": ingest_seconds,
                "bytes_per_frame": video_bytes(ds) / frames,
                **quality,
                "random_row_cpu_ms": random_read,
                "loader_samples_per_s": answer["samples_per_s"],
                "loader_first_batch_s": answer["first_batch_s"],
                "bound_samples_per_s": bound,
            }
        )
    mark_frontier(points)
    return points


def random_read_cost(ds, *, rows: int = 200, seed: int = 0, passes: int = 3) -> float:
    """CPU milliseconds to read one uniformly random row's frames (every camera, one decode thread:
    the GOP bytes, the decode up to the frame, the RGB conversion), the median of ``passes`` over
    the same ``rows`` random rows. CPU time, so the machine's other load moves it little."""
    picked = np.random.default_rng(seed).integers(0, len(ds), rows).tolist()
    for row in picked[:10]:  # warm: open the tables, load the GOP index
        ds.get_frames([row], concurrency=1)
    costs = []
    for _ in range(passes):
        start = time.process_time()
        for row in picked:
            ds.get_frames([row], concurrency=1)
        costs.append(1000 * (time.process_time() - start) / len(picked))
    return float(np.median(costs))


def run_loader(
    uri: str, *, batch_size: int, workers: int, batches: int, seed: int, nice: int = 0, log: Path | None = None
) -> dict:
    """Scenario D on the dataset at ``uri``, in a process of its own: steady samples/s
    (``samples_per_s``) and ``first_batch_s``."""
    loader = {
        "name": "D",
        "kind": "loader",
        "batches": [[0]] * batches,
        "batch_size": batch_size,
        "workers": workers,
        "seed": seed,
    }
    job = {"system": "robodata", "root": uri, "measurements": [loader]}
    measured = run_job(sys.executable, job, log=log, nice=nice)["measurements"][0]
    return {**measured, "samples_per_s": sum(measured["samples"]) / sum(measured["seconds"])}


def run_bound(
    uri: str, *, rows: int, batch_size: int, batches: int, seed: int, nice: int = 0, log: Path | None = None
) -> float:
    """The decode bound of ``batches`` random batches of the dataset at ``uri`` (samples per CPU
    second over every core, ``RobodataSystem.bound`` in ``runner_robodata.py``): the throughput
    axis the default is chosen on, since one wall-clock DataLoader run per point measures the
    machine's other load."""
    rng = np.random.default_rng(seed)
    planned = [rng.integers(0, rows, batch_size).tolist() for _ in range(batches)]
    job = {"system": "robodata", "root": uri, "measurements": [{"name": "D", "kind": "bound", "batches": planned}]}
    measured = run_job(sys.executable, job, log=log, nice=nice)["measurements"][0]
    return sum(measured["samples"]) / (sum(measured["cpu_seconds"]) / measured["threads"])


def _speed(point: dict) -> float:
    """A point's throughput: its decode bound where measured, else its DataLoader's samples/s."""
    return point.get("bound_samples_per_s") or point["loader_samples_per_s"]


def _axes(point: dict) -> tuple[float, ...]:
    """A point's figures, each oriented so that larger is better."""
    random_read = point.get("random_row_cpu_ms")
    return (
        _speed(point),
        -random_read if random_read is not None else 0.0,
        -point["bytes_per_frame"],
        point["psnr_top_db"],
    )


def mark_frontier(points: list[dict]) -> list[dict]:
    """Flag each point that no other point beats on all of throughput (the decode bound, higher),
    random read cost (lower), bytes per frame (lower) and top-camera PSNR (higher) at once."""

    def beats(a: dict, b: dict) -> bool:
        ours, theirs = _axes(a), _axes(b)
        return all(x >= y for x, y in zip(ours, theirs, strict=True)) and ours != theirs

    for point in points:
        point["on_frontier"] = not any(beats(other, point) for other in points if other is not point)
    return points


def choose_default(
    points: list[dict], *, max_bytes_per_frame: float | None = None, min_psnr_db: float | None = None
) -> dict | None:
    """Among the frontier points within ``max_bytes_per_frame`` (LeRobot's) and at least
    ``min_psnr_db`` (LeRobot's top-camera PSNR), and within ``BOUND_WITHIN`` of the best
    decode bound of those: the cheapest random read (where measured; else the highest
    throughput). None if none qualifies."""
    fitting = [
        p
        for p in points
        if p.get("on_frontier", True)
        and (max_bytes_per_frame is None or p["bytes_per_frame"] <= max_bytes_per_frame)
        and (min_psnr_db is None or p["psnr_top_db"] >= min_psnr_db)
    ]
    if not fitting:
        return None
    fast_enough = [p for p in fitting if _speed(p) >= BOUND_WITHIN * max(_speed(q) for q in fitting)]
    if all(p.get("random_row_cpu_ms") is not None for p in fast_enough):
        return min(fast_enough, key=lambda p: (p["random_row_cpu_ms"], -_speed(p)))
    return max(fitting, key=_speed)


def sweep_table(points: list[dict], chosen: dict | None) -> str:
    """The sweep as Markdown, frontier points and the chosen default marked."""
    lines = [
        "| G | CRF | preset | fastdecode | random read CPU ms / row | decode bound samples/s | D samples/s "
        "| first batch s | bytes / frame | PSNR top dB | PSNR all dB | ingest s | frontier |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        mark = "**chosen**" if chosen is not None and p is chosen else ("yes" if p["on_frontier"] else "")
        bound = f"{p['bound_samples_per_s']:.1f}" if p.get("bound_samples_per_s") else "n/a"
        random_read = f"{p['random_row_cpu_ms']:.2f}" if p.get("random_row_cpu_ms") is not None else "n/a"
        ingest = f"{p['ingest_seconds']:.0f}" if p.get("ingest_seconds") is not None else "n/a"
        fast = "yes" if p.get("fast_decode", True) else "no"
        lines.append(
            f"| {p['gop_size']} | {p['crf']} | {p.get('preset', 'n/a')} | {fast} | {random_read} | {bound} | "
            f"{p['loader_samples_per_s']:.1f} | {p['loader_first_batch_s']:.2f} | {p['bytes_per_frame']:,.0f} | "
            f"{p['psnr_top_db']:.2f} | {p['psnr_db']:.2f} | {ingest} | {mark} |"
        )
    return "\n".join(lines)

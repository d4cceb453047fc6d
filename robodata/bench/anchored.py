"""Anchored GOPs (codec ``h264-anchored``) against normal ones, at each G, on realistic footage.

Two levels, both printed as one Markdown table each:

- **codec**, on one camera's frames (gym-aloha's ``top`` and the real camera clip): bytes per
  frame, PSNR against the source, encode CPU ms per frame (every encoder thread), single random
  frame decode CPU ms (one thread, ``decode_gop_frames``) and random batches of 8 frames decoded
  as the reader does (each GOP once, up to its wanted frames; frames per CPU second of one
  thread) and windows of 8 consecutive frames (scenario C), in interleaved rounds, medians. CPU time rather than wall time: on a shared machine
  it is the work itself, which is what a loader with every core busy pays.
- **dataset**, on the gym-aloha episodes (``gop_crf_sweep`` with a codec axis): ingest seconds,
  bytes per frame, PSNR of ``top``, B (``take_blobs_decoded`` of random batches of 32 rows, every
  camera) and D (the DataLoader with 2 spawned workers, batch 32, every camera).

>>> rows = codec_figures({"clip": (frames, 30.0)}, gop_sizes=(4, 8), rounds=3)  # doctest: +SKIP
>>> print(codec_table(rows))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import av
import numpy as np

from robodata.bench.quality import psnr
from robodata.codec import EncoderSettings, GopEncoder, decode_gop_frames

CODECS = ("h264", "h264-anchored")


def video_frames(path: str | Path, limit: int | None = None) -> tuple[list[np.ndarray], float]:
    """The RGB frames of a video file (the first ``limit``) and its frame rate."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate or 30)
        frames = []
        for frame in container.decode(stream):
            frames.append(frame.to_ndarray(format="rgb24"))
            if limit is not None and len(frames) == limit:
                break
    return frames, fps


def codec_figures(
    sources: Mapping[str, tuple[list[np.ndarray], float]],
    *,
    gop_sizes=(4, 8),
    crf: int = 23,
    rounds: int = 5,
    singles: int = 100,
    batches: int = 6,
    batch_size: int = 8,
    seed: int = 0,
    say: Callable[[str], None] = lambda _: None,
) -> list[dict]:
    """One row per (source, G, codec): storage, quality, encode and decode cost of the camera.
    A batch of 8 frames out of a 150-frame clip hits a camera as densely as D's batches of 32 rows
    out of 600 do."""
    rows = []
    for name, (frames, fps) in sources.items():
        for gop in gop_sizes:
            variants = {}
            for codec in CODECS:
                say(f"codec: encoding {name} at G={gop} {codec} ...")
                settings = EncoderSettings(gop_size=gop, crf=crf, codec=codec)
                start = time.process_time()  # x264's own threads included
                encoder = GopEncoder(frames[0].shape[1], frames[0].shape[0], fps, settings)
                gops = [g for f in frames for g in encoder.add(f)] + encoder.finish()
                encode_s = time.process_time() - start
                decoded = [
                    f for g in gops for f in decode_gop_frames(g.data, g.packet_sizes, range(g.n_frames), codec=codec)
                ]
                variants[codec] = {
                    "gops": gops,
                    "row": {
                        "source": name,
                        "size": f"{frames[0].shape[1]}x{frames[0].shape[0]}",
                        "frames": len(frames),
                        "gop_size": gop,
                        "codec": codec,
                        "bytes_per_frame": sum(len(g.data) for g in gops) / len(frames),
                        "psnr_db": statistics.fmean(psnr(a, b) for a, b in zip(frames, decoded, strict=True)),
                        "encode_ms_per_frame": 1e3 * encode_s / len(frames),
                        "single_ms": [],
                        "batch_frames_per_s": [],
                        "window_ms": [],
                    },
                }
            rng = np.random.default_rng(seed)
            for _ in range(rounds):  # interleaved: load hits both codecs alike
                picks = rng.integers(0, len(frames), singles)
                batch_picks = [rng.integers(0, len(frames), batch_size) for _ in range(batches)]
                # C: 8 consecutive frames from a random start.
                window_picks = [np.arange(s, s + 8) for s in rng.integers(0, len(frames) - 8, batches)]
                for codec in CODECS if _ % 2 == 0 else CODECS[::-1]:
                    v = variants[codec]
                    v["row"]["single_ms"].append(1e3 * _time_singles(v["gops"], gop, picks, codec) / singles)
                    seconds = sum(_time_batch(v["gops"], gop, p, codec) for p in batch_picks)
                    v["row"]["batch_frames_per_s"].append(batches * batch_size / seconds)
                    seconds = sum(_time_batch(v["gops"], gop, p, codec) for p in window_picks)
                    v["row"]["window_ms"].append(1e3 * seconds / batches)
            for codec in CODECS:
                row = variants[codec]["row"]
                row["single_ms"] = statistics.median(row["single_ms"])
                row["batch_frames_per_s"] = statistics.median(row["batch_frames_per_s"])
                row["window_ms"] = statistics.median(row["window_ms"])
                rows.append(row)
    return rows


def _time_singles(gops, gop: int, picks: np.ndarray, codec: str) -> float:
    start = time.thread_time()  # the decoders run on this thread (one thread each)
    for i in picks:
        g = gops[i // gop]
        decode_gop_frames(g.data, g.packet_sizes, [int(i % gop)], codec=codec)
    return time.thread_time() - start


def _time_batch(gops, gop: int, picks: np.ndarray, codec: str) -> float:
    wanted: dict[int, list[int]] = {}
    for i in picks:
        wanted.setdefault(int(i // gop), []).append(int(i % gop))
    start = time.thread_time()
    for j, ks in wanted.items():  # each GOP once, as the reader groups a batch
        decode_gop_frames(gops[j].data, gops[j].packet_sizes, ks, codec=codec)
    return time.thread_time() - start


def codec_table(rows: list[dict]) -> str:
    """The codec-level figures as Markdown, anchored rows with their ratio to normal ones."""
    lines = [
        "| footage | G | codec | bytes / frame | PSNR dB | encode CPU ms / frame | single frame CPU ms "
        "| batch-8 frames / CPU s | 8-frame window CPU ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    normal = {(r["source"], r["gop_size"]): r for r in rows if r["codec"] == "h264"}
    for r in rows:
        base = normal[(r["source"], r["gop_size"])]
        ratio = r is not base
        lines.append(
            f"| {r['source']} {r['size']} | {r['gop_size']} | {r['codec']} | "
            f"{r['bytes_per_frame']:,.0f}{_x(r['bytes_per_frame'], base['bytes_per_frame'], ratio)} | "
            f"{r['psnr_db']:.2f} | {r['encode_ms_per_frame']:.2f}"
            f"{_x(r['encode_ms_per_frame'], base['encode_ms_per_frame'], ratio)} | "
            f"{r['single_ms']:.2f}{_x(base['single_ms'], r['single_ms'], ratio, 'faster')} | "
            f"{r['batch_frames_per_s']:.0f}{_x(r['batch_frames_per_s'], base['batch_frames_per_s'], ratio)} | "
            f"{r['window_ms']:.2f}{_x(base['window_ms'], r['window_ms'], ratio, 'faster')} |"
        )
    return "\n".join(lines)


def dataset_figures(
    uploads: Mapping[int, Path],
    work: Path,
    *,
    gop_sizes=(4, 8),
    crf: int = 23,
    batches: int = 6,
    batch_size: int = 32,
    loader_batches: int = 12,
    loader_rounds: int = 3,
    seed: int = 0,
    nice: int = 0,
    log: Path | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> list[dict]:
    """The sweep's points for (G, codec) on ``uploads``, with B (random batches of 32 rows) and D
    as the median of ``loader_rounds`` interleaved DataLoader runs."""
    from robodata.bench.gop_crf_sweep import run_loader, sweep_gop_crf
    from robodata.reader import open_dataset

    points = sweep_gop_crf(
        uploads,
        work,
        gop_sizes=gop_sizes,
        crfs=(crf,),
        codecs=CODECS,
        batch_size=batch_size,
        loader_batches=loader_batches,
        seed=seed,
        nice=nice,
        log=log,
        say=say,
    )
    # More D rounds, interleaved (the order alternating), so machine load hits every point alike.
    loader = {p["dataset_uri"]: [p["loader_samples_per_s"]] for p in points}
    for r in range(1, loader_rounds):
        for p in points if r % 2 else points[::-1]:
            say(f"D round {r + 1}: G={p['gop_size']} {p['codec']} ...")
            loader[p["dataset_uri"]].append(
                run_loader(
                    p["dataset_uri"],
                    batch_size=batch_size,
                    workers=2,
                    batches=loader_batches,
                    seed=seed + r,
                    nice=nice,
                    log=log,
                )["samples_per_s"]
            )
    for p in points:
        p["loader_rounds"] = loader[p["dataset_uri"]]
        p["loader_samples_per_s"] = statistics.median(loader[p["dataset_uri"]])
    opened = {p["dataset_uri"]: open_dataset(p["dataset_uri"]) for p in points}
    n = len(next(iter(opened.values())))
    rng = np.random.default_rng(seed)
    rows = [rng.integers(0, n, batch_size) for _ in range(batches)]
    times: dict[str, list[float]] = {uri: [] for uri in opened}
    for r, batch in enumerate(rows):  # interleaved, the order alternating
        for uri, ds in opened.items() if r % 2 == 0 else list(opened.items())[::-1]:
            start = time.perf_counter()
            ds.take_blobs_decoded(batch, ds.image_columns)
            times[uri].append(time.perf_counter() - start)
    for p in points:
        p["batch_samples_per_s"] = batch_size / statistics.median(times[p["dataset_uri"]])
    return points


def dataset_table(points: list[dict]) -> str:
    """The dataset-level figures as Markdown, anchored rows with their ratio to normal ones."""
    lines = [
        "| G | codec | ingest s | bytes / frame | PSNR top dB | B samples/s | D samples/s (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    normal = {p["gop_size"]: p for p in points if p["codec"] == "h264"}
    for p in points:
        base = normal[p["gop_size"]]
        ratio = p is not base
        lines.append(
            f"| {p['gop_size']} | {p['codec']} | {p['ingest_seconds']:.1f}"
            f"{_x(p['ingest_seconds'], base['ingest_seconds'], ratio)} | "
            f"{p['bytes_per_frame']:,.0f}{_x(p['bytes_per_frame'], base['bytes_per_frame'], ratio)} | "
            f"{p['psnr_top_db']:.2f} | "
            f"{p['batch_samples_per_s']:.0f}{_x(p['batch_samples_per_s'], base['batch_samples_per_s'], ratio)} | "
            f"{p['loader_samples_per_s']:.0f}{_x(p['loader_samples_per_s'], base['loader_samples_per_s'], ratio)} |"
        )
    return "\n".join(lines)


def _x(value: float, base: float, show: bool, word: str = "") -> str:
    return f" ({value / base:.2f}x{' ' + word if word else ''})" if show else ""


def configure(parser: argparse.ArgumentParser) -> None:
    from robodata.bench.footage import cache_dir

    parser.add_argument("out_dir", help="scratch folder for the datasets (replaced)")
    parser.add_argument(
        "--uploads",
        default=str(cache_dir() / "aloha-4x150-seed0"),
        help="folder of gym-aloha upload folders (robodata bench renders and caches them)",
    )
    parser.add_argument(
        "--clip",
        default=str(Path(__file__).resolve().parents[2] / "robodata_tests" / "data" / "carphone_pristine.mp4"),
        help="a real camera video for the codec-level figures",
    )
    parser.add_argument("--gop-sizes", default="4,8", help="comma-separated G values")
    parser.add_argument("--crf", type=int, default=EncoderSettings.crf, help="x264 CRF of every encoding")
    parser.add_argument("--episodes", type=int, default=None, help="gym-aloha episodes for the dataset level (all)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of the codec level")
    parser.add_argument("--loader-rounds", type=int, default=5, help="interleaved D runs per dataset (median)")
    parser.add_argument("--no-dataset", action="store_true", help="codec-level figures only")
    parser.add_argument("--nice", type=int, default=0, help="niceness of the DataLoader process")


def main(args: argparse.Namespace) -> int:
    import shutil

    gop_sizes = tuple(int(g) for g in args.gop_sizes.split(","))
    uploads_dir = Path(args.uploads)
    uploads = {i: p for i, p in enumerate(sorted(uploads_dir.glob("episode_*")))}
    if args.episodes is not None:
        uploads = {i: uploads[i] for i in list(uploads)[: args.episodes]}
    if not uploads:
        raise FileNotFoundError(f"{uploads_dir}: no episode_* upload folders (run robodata bench --peers once)")
    say = print
    sources = {
        "gym-aloha top": video_frames(uploads[0] / "top.mp4"),
        "real camera clip": video_frames(args.clip),
    }
    rows = codec_figures(sources, gop_sizes=gop_sizes, crf=args.crf, rounds=args.rounds, say=say)
    print("\nCodec level (CPU time; decode on one thread; medians of interleaved rounds):\n")
    print(codec_table(rows))
    if not args.no_dataset:
        work = Path(args.out_dir)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        points = dataset_figures(
            uploads, work, gop_sizes=gop_sizes, crf=args.crf, loader_rounds=args.loader_rounds, nice=args.nice, say=say
        )
        print(f"\nDataset level ({len(uploads)} gym-aloha episodes; B in-process, D 2 spawned workers):\n")
        print(dataset_table(points))
    return 0

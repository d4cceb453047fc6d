"""``robodata bench s3-epoch --peers VENV``: robodata and the peers trained from the same S3 store,
with #43's aims and the 10 TB estimate.

The source episodes (robodata's synthetic scene, or gym-aloha footage with ``--source aloha``) are
ingested by robodata and written by LeRobot 0.6.1's own writer, then converted by
``lerobot-lance-convert`` (``benchmarks.peers``). robodata's dataset and LanceDB's tables go to one
moto server on 127.0.0.1, read through one ``LatencyProxy`` (``benchmarks.s3_epoch``'s store). Per
round, interleaved, each system opens its dataset, reads one cold epoch (its first batch, opening
included, is the first-batch figure) and one more epoch timed in full (D, samples/s):

- robodata ``make_dataloader`` and the ``robodata-train`` path (``LeRobotCompatDataset`` in the
  DataLoader robodata-train builds) from s3:// and from the local disk, in this process;
- ``LanceDBDataset`` (lerobot-lancedb) from s3:// (its root an s3:// URI with ``storage_options``)
  and from the local disk, in the peers' venv;
- LeRobot 0.6.1's ``StreamingLeRobotDataset`` as ``lerobot-train --dataset.streaming=true`` builds
  it, from a local root only: LeRobot 0.6.1 cannot read s3:// (its roots are local folders or Hub
  repositories);
- LeRobot's map-style ``LeRobotDataset`` from the local disk: the first-batch reference.

The proxy splits each epoch's requests at the epoch boundary (``EpochBoundary``: the peers' runner
calls in between its epochs), so every epoch's GETs, bytes and server CPU are its own.

    robodata bench s3-epoch --peers /work/venvs/peers --episodes 6 --seconds 3 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import socket
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.order_randomness import randomness_aim
from benchmarks.s3_aims import LARGE_GET_BYTES, evaluate_s3_aims, format_aims
from benchmarks.s3_epoch import BOTTLENECK_CPU_SHARE, MIB, full_resolution_gops, needed_gop_bytes
from benchmarks.s3_scale import PRICE_NOTE, epoch_at_scale, scale_table
from benchmarks.s3_store import LatencyProxy, StoreFigures, server_cpu_seconds
from robodata.edits import upkeep_dataset
from robodata.ingest import add_rendition

# Which requests carry a system's video: robodata's GOPs; LanceDBDataset's videos table (its MP4s).
VIDEO_KIND = {"robodata": "gops.lance data", "train": "gops.lance data", "lancedb": "videos.lance data"}
LABELS = {
    "robodata": "robodata make_dataloader",
    "train": "robodata, robodata-train path",
    "lancedb": "LanceDBDataset 0.3.1",
    "streaming": "LeRobot 0.6.1 StreamingLeRobotDataset",
    "lerobot": "LeRobot 0.6.1 LeRobotDataset (map-style)",
    "robodata224": "robodata make_dataloader, 224x224 (training rendition)",
    "lancedb224": "LanceDBDataset 0.3.1, 224x224 (its documented v2.Resize)",
}
POLICY_SIZE = (224, 224)  # the policy input size of #43's second local aim (systems named *224)


def add_peer_options(p: argparse.ArgumentParser) -> None:
    """``s3-epoch``'s options for the run with the peers (``--peers VENV``)."""
    p.add_argument("--peers", metavar="VENV", default=None, help="the peers' venv (scripts/peers.sh): run them too")
    p.add_argument("--rounds", type=int, default=2, help="with --peers: interleaved rounds (medians over rounds)")
    p.add_argument(
        "--source", choices=("sample", "aloha", "auto"), default="sample", help="with --peers: the source episodes"
    )
    p.add_argument("--work", default=None, help="with --peers: keep the datasets and the runners' log here")


@dataclass
class Epoch:
    """One epoch of one system at one place; ``store`` is what the store did during it (s3://)."""

    system: str
    where: str  # "s3" or "local"
    cold: bool  # the first epoch: opening and worker start-up included
    samples: int
    wall_s: float
    first_batch_s: float | None = None  # cold epochs: open + first batch
    store: StoreFigures | None = None

    @property
    def rate(self) -> float:
        return self.samples / self.wall_s

    def video(self) -> tuple[int, int]:
        """GETs and bytes of this s3:// epoch's requests for the system's video (``VIDEO_KIND``)."""
        if self.store is None:
            raise ValueError(f"{self.system} from {self.where}: no store figures")
        kind = VIDEO_KIND[self.system]
        return self.store.gets_by_kind()[kind], self.store.bytes_by_kind()[kind]

    def large_video_gets(self) -> tuple[int, int]:
        """GETs and bytes of this s3:// epoch's video requests of at least ``LARGE_GET_BYTES``
        (robodata's span ranges; the rest are scans of the GOP index and blob descriptors)."""
        self.video()  # the same refusal without store figures
        assert self.store is not None
        sizes = [r.body_bytes for r in self.store.requests if r.method == "GET" and r.kind == VIDEO_KIND[self.system]]
        large = [size for size in sizes if size >= LARGE_GET_BYTES]
        return len(large), sum(large)


class EpochBoundary:
    """A socket on 127.0.0.1 a runner connects to between its epochs: each call records where the
    proxy's record stands and the server's CPU, then answers, so the runner goes on only after."""

    def __init__(self, proxy: LatencyProxy, server_pid: int | None) -> None:
        self.proxy, self.server_pid = proxy, server_pid
        self.marks: list[tuple[int, float]] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.address = self._sock.getsockname()
        threading.Thread(target=self._accept, daemon=True, name="epoch-boundary").start()

    def now(self) -> tuple[int, float]:
        return self.proxy.mark(), server_cpu_seconds(self.server_pid) if self.server_pid else 0.0

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                self.marks.append(self.now())
                conn.sendall(b"k")

    def figures(self, start: tuple[int, float], end: tuple[int, float]) -> StoreFigures:
        return StoreFigures(tuple(self.proxy.requests[start[0] : end[0]]), end[1] - start[1])

    def close(self) -> None:
        self._sock.close()


def robodata_epochs(system: str, where: str, uri: str, options: dict | None, cfg, boundary: EpochBoundary | None):
    """A cold and a timed epoch of robodata in this process: ``make_dataloader`` (``robodata``) or
    ``LeRobotCompatDataset`` in the DataLoader robodata-train builds (``train``)."""
    marks = [boundary.now()] if boundary else []
    start = time.perf_counter()
    if system in ("robodata", "robodata224"):
        from robodata.torch import make_dataloader

        sized: dict[str, Any] = {"resolution": POLICY_SIZE} if system == "robodata224" else {}
        loader = make_dataloader(
            uri, batch_size=cfg.batch_size, num_workers=cfg.workers, storage_options=options, seed=cfg.seed, **sized
        )
        rows_of, close = (lambda b: int((~b["padding"]).sum())), loader.close
    else:
        from benchmarks.peers.runner_robodata import RobodataCompatSystem

        job = {"system": "robodata-compat", "root": uri, "storage_options": options}
        loader, indices_of, close = RobodataCompatSystem(job).loader(
            {"batch_size": cfg.batch_size, "workers": cfg.workers, "seed": cfg.seed}
        )
        rows_of = lambda b: len(indices_of(b))  # noqa: E731
    epochs = []
    try:
        for epoch in range(2):
            if hasattr(loader, "set_epoch"):
                loader.set_epoch(epoch)
            samples, first = 0, None
            for batch in loader:
                samples += rows_of(batch)
                if first is None:
                    first = time.perf_counter() - start
            cold = epoch == 0  # only the cold epoch's first batch is a first batch (opening included)
            epochs.append(Epoch(system, where, cold, samples, time.perf_counter() - start, first if cold else None))
            if boundary:
                marks.append(boundary.now())
            start = time.perf_counter()
    finally:
        close()
    if boundary:
        for done, (a, b) in zip(epochs, zip(marks, marks[1:], strict=False), strict=True):
            done.store = boundary.figures(a, b)
    return epochs


def peer_epochs(system: str, where: str, root: str, options: dict | None, cfg, boundary, rows: int, python, log):
    """A cold and a timed epoch of a peer in its runner (the peers' venv), uniform order as
    lerobot-train's ``shuffle=True``; ``lerobot`` reads only its first two batches (the first-batch
    reference)."""
    from benchmarks.peers.peer_protocol import run_job

    order = np.random.default_rng(cfg.seed).permutation(rows)
    batches = [order[i : i + cfg.batch_size].tolist() for i in range(0, rows, cfg.batch_size)]
    measurement = {
        "name": "D",
        "kind": "loader",
        "batches": batches[:2] if system == "lerobot" else batches,
        "batch_size": cfg.batch_size,
        "workers": cfg.workers,
        "warm_epochs": 0 if system == "lerobot" else 1,
    }
    if boundary is not None:
        measurement["epoch_boundary"] = list(boundary.address)
    job = {
        "system": {"streaming": "lerobot-streaming", "lancedb224": "lancedb"}.get(system, system),
        "root": root,
        "measurements": [measurement],
        "workers": cfg.workers,  # the streaming dataset is sharded for them
    }
    if system == "lancedb224":
        job["size"] = list(POLICY_SIZE)
    if options:
        job["storage_options"] = options
    before = boundary.now() if boundary else None
    first_mark = len(boundary.marks) if boundary else 0
    answer = run_job(python, job, log=log)
    done = answer["measurements"][0]
    first = answer["open_s"] + done["first_batch_s"]
    if system == "lerobot":
        return [Epoch(system, where, True, 0, first, first)]
    # the cold epoch's samples and wall are not reported by the runner: its first batch is
    cold = Epoch(system, where, True, 0, float("nan"), first)
    warm = Epoch(system, where, False, sum(done["samples"]), sum(done["seconds"]))
    if boundary is not None:
        middle, after = boundary.marks[first_mark], boundary.now()
        cold.store, warm.store = boundary.figures(before, middle), boundary.figures(middle, after)
    return [cold, warm]


@dataclass(frozen=True)
class RunConfig:
    batch_size: int
    workers: int
    seed: int
    latency_s: float


def folder_bytes(folder: str | Path) -> int:
    """Bytes of every file under a local folder: what a copy of a dataset stores."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def lerobot_rows(root: str | Path) -> int:
    """Frames (= samples) of a LeRobot v3 dataset, from its meta/info.json."""
    return int(json.loads((Path(root) / "meta" / "info.json").read_text())["total_frames"])


def run_rounds(rounds: int, cfg: RunConfig, places: dict, boundary: EpochBoundary, python, log, say) -> list[Epoch]:
    """``rounds`` interleaved rounds of every system; s3:// and local alternate which goes first."""
    epochs: list[Epoch] = []
    for r in range(rounds):
        wheres = ("s3", "local") if r % 2 == 0 else ("local", "s3")
        for system in ("robodata", "train", "lancedb", "streaming", "lerobot", "robodata224", "lancedb224"):
            for where in wheres:
                place = places.get((system, where))
                if place is None:
                    continue
                say(f"round {r + 1}/{rounds}: {LABELS[system]} from {where} ...")
                uri, options = place
                store = boundary if where == "s3" else None
                if system in ("robodata", "train", "robodata224"):
                    epochs += robodata_epochs(system, where, uri, options, cfg, store)
                else:
                    rows = lerobot_rows(places[("lerobot", "local")][0])
                    epochs += peer_epochs(system, where, uri, options, cfg, store, rows, python, log)
    return epochs


def _median(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def summarize(epochs: list[Epoch], cfg: RunConfig, needed: int, gops: int) -> dict:
    """The aims' figures (``benchmarks.s3_aims``): medians over rounds."""

    def of(system, where, cold):
        return [e for e in epochs if e.system == system and e.where == where and e.cold == cold]

    figures: dict[str, float] = {}
    for system in ("robodata", "train", "lancedb"):
        for where in ("s3", "local"):
            figures[f"{system}_{where}"] = _median(e.rate for e in of(system, where, False))
    for system in ("robodata224", "lancedb224"):
        figures[f"{system}_local"] = _median(e.rate for e in of(system, "local", False))
    cold_s3 = of("robodata", "s3", True)
    video = [e.video() for e in cold_s3 if e.store]
    figures["gets"] = _median(g for g, _ in video)
    figures["bytes"] = _median(b for _, b in video)
    figures["mean_bytes_per_get"] = _median(b / g for g, b in video if g)
    large = [e.large_video_gets() for e in cold_s3 if e.store]
    figures["large_gets"] = _median(g for g, _ in large)
    figures["large_get_mean_bytes"] = _median(b / g for g, b in large if g)
    figures["needed_gop_bytes"] = needed
    figures["gops"] = gops
    figures["first_batch_s3_s"] = _median(e.first_batch_s for e in cold_s3)
    figures["first_batch_local_s"] = _median(e.first_batch_s for e in of("robodata", "local", True))
    figures["lerobot_first_batch_local_s"] = _median(e.first_batch_s for e in of("lerobot", "local", True))
    for system in ("robodata", "train"):  # what the profile of a missed aim explains: the timed epochs
        timed_s3 = [e for e in of(system, "s3", False) if e.store]
        figures[f"{system}_s3_epoch_s"] = _median(e.wall_s for e in timed_s3)
        figures[f"{system}_local_epoch_s"] = _median(e.wall_s for e in of(system, "local", False))
        figures[f"{system}_server_cpu_s"] = _median(e.store.server_cpu_s for e in timed_s3 if e.store)
        figures[f"{system}_timed_gets"] = _median(e.store.gets for e in timed_s3 if e.store)
    figures["latency_s"] = cfg.latency_s
    figures["workers"] = cfg.workers
    return figures


def d_table(epochs: list[Epoch]) -> str:
    """D (samples/s, timed epoch) and the first batch (cold epoch, opening included), medians."""
    lines = [
        "| system | local disk | s3:// | s3 / local | first batch local | first batch s3:// |",
        "|---|---|---|---|---|---|",
    ]
    for system, label in LABELS.items():
        cells = []
        for where in ("local", "s3"):
            rates = [e.rate for e in epochs if (e.system, e.where, e.cold) == (system, where, False)]
            cells.append(_median(rates))
        firsts = [
            _median([e.first_batch_s for e in epochs if (e.system, e.where, e.cold) == (system, where, True)])
            for where in ("local", "s3")
        ]
        ratio = "-" if math.isnan(cells[0] + cells[1]) else f"{cells[1] / cells[0]:.2f}x"

        def cell(value, unit=""):
            return "-" if math.isnan(value) else f"{value:.1f}{unit}"

        lines.append(
            f"| {label} | {cell(cells[0])} | {cell(cells[1])} | {ratio} | {cell(firsts[0], ' s')} | {cell(firsts[1], ' s')} |"
        )
    return "\n".join(lines)


def store_table(epochs: list[Epoch], needed: int) -> str:
    """Every s3:// epoch: what the store did (all requests; the video's GETs apart)."""
    lines = [
        f"{'system':<10} {'epoch':<5} {'wall s':>7} {'GETs':>6} {'MiB':>8} {'MiB/GET':>8} {'video GETs':>10} "
        f"{'video MiB/GET':>13} {'video/needed':>12} {'server CPU s':>12} {'CPU/wall':>8}"
    ]
    flagged = False
    for e in epochs:
        if e.store is None or e.system == "lerobot":
            continue
        video_gets, video_bytes = e.video()
        wall = e.wall_s if e.wall_s == e.wall_s else None  # a peer's cold epoch has no wall of its own
        share = e.store.server_cpu_s / wall if wall else None
        flagged |= bool(share and share > BOTTLENECK_CPU_SHARE)
        lines.append(
            f"{e.system:<10} {'cold' if e.cold else 'timed':<5} {'-' if wall is None else f'{wall:.2f}':>7} {e.store.gets:>6} "
            f"{e.store.body_bytes / MIB:>8.2f} {e.store.mean_bytes_per_get / MIB:>8.3f} {video_gets:>10} "
            f"{(video_bytes / video_gets if video_gets else 0) / MIB:>13.3f} {video_bytes / max(needed, 1):>12.2f} "
            f"{e.store.server_cpu_s:>12.2f} {'-' if share is None else f'{share:.2f}':>8}"
        )
    for e in epochs:
        if e.store and not e.cold and e.system != "lerobot" and e.video()[1] < 0.9 * needed:
            lines.append(
                f"NOTE: {e.system}'s timed s3:// epoch fetched {e.video()[1] / max(needed, 1):.2f}x robodata's GOP "
                "bytes: the rest came from what its workers kept from the cold epoch (a dataset larger than their "
                "caches fetches it all every epoch), so this D is not all the store's"
            )
    lines.append(
        f"WARNING: the S3 server used more than {BOTTLENECK_CPU_SHARE:.0%} of a core in an epoch: a likely bottleneck"
        if flagged
        else f"server CPU under {BOTTLENECK_CPU_SHARE:.0%} of a core in every timed epoch: not the bottleneck"
    )
    return "\n".join(lines)


def scale_rows(epochs: list[Epoch], stored: dict[str, int]):
    """Each layout's 10 TB epoch from its cold s3:// epochs' video GETs and bytes (medians)."""
    rows = []
    for system in ("robodata", "train", "lancedb"):
        cold = [e for e in epochs if (e.system, e.where, e.cold) == (system, "s3", True) and e.store]
        if not cold:
            continue
        gets = round(_median(e.video()[0] for e in cold))
        read = round(_median(e.video()[1] for e in cold))
        store_key = "lancedb" if system == "lancedb" else "robodata"
        rows.append(
            epoch_at_scale(LABELS[system], stored_bytes=stored[store_key], bytes_per_epoch=read, gets_per_epoch=gets)
        )
    return rows


def main(args: argparse.Namespace) -> int:
    """The whole run: footage, the three copies, the store, the rounds, the report on stdout."""
    from benchmarks.moto_server import local_s3, upload_tree
    from benchmarks.peers.footage import benchmark_uploads
    from benchmarks.peers.peer_dataset import ingest_footage
    from benchmarks.peers.peer_layouts import write_peer_layouts
    from benchmarks.peers.peer_protocol import peer_python

    python = peer_python(args.peers)
    cfg = RunConfig(args.batch_size, args.workers, 0, args.latency_ms / 1000)
    load_before = os.getloadavg()
    say = lambda *a: print(*a, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="robodata-s3-peers-") as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        log = work / "runners.log"
        log.write_text("")
        # the peers' runners inherit it: LanceDBDataset's cache of an s3:// root's meta/ stays in the work folder
        os.environ["HF_LEROBOT_HOME"] = str(work / "hf-lerobot")
        steps = round(args.seconds * 50)  # gym-aloha runs at 50 Hz
        uploads, source = benchmark_uploads(
            work, python, source=args.source, episodes=args.episodes, steps=steps, seconds=args.seconds, log=log
        )
        say(
            f"ingest {len(uploads)} {source} episodes; the peers' copies by LeRobot's writer and lerobot-lance-convert ..."
        )
        local = str(work / "dataset")
        ingest_footage(uploads, local, None, None)
        # as a lab's copy lies once Dagster's upkeep has run: one fragment per table, GOPs in order;
        # the versions before it removed, so that what the copy stores (the 10 TB table) is its live bytes
        upkept = upkeep_dataset(local, older_than=timedelta(0), gc_min_age=timedelta(0)).summary().splitlines()
        roots, _ = write_peer_layouts(uploads, work, python, log)
        needed = needed_gop_bytes(local)
        stored = {"robodata": folder_bytes(local), "lancedb": folder_bytes(roots["lance"])}
        with local_s3() as s3:
            run = secrets.token_hex(4)  # LanceDBDataset caches an s3:// root's meta/ by its URI
            uris = {"robodata": s3.uri(f"s3-peers-{run}/robodata"), "lance": s3.uri(f"s3-peers-{run}/lance")}
            upload_tree(local, uris["robodata"], s3.storage_options)
            upload_tree(roots["lance"], uris["lance"], s3.storage_options)
            # the local copy only (after counting what is stored and uploading): robodata224 reads it
            add_rendition(local, POLICY_SIZE)
            host, port = s3.endpoint.removeprefix("http://").split(":")
            bandwidth = args.bandwidth_mibps * MIB if args.bandwidth_mibps else None
            with LatencyProxy((host, int(port)), latency_s=cfg.latency_s, bandwidth=bandwidth) as proxy:
                options = dict(s3.storage_options, aws_endpoint=proxy.endpoint)
                places = {
                    ("robodata", "s3"): (uris["robodata"], options),
                    ("robodata", "local"): (local, None),
                    ("train", "s3"): (uris["robodata"], options),
                    ("train", "local"): (local, None),
                    ("lancedb", "s3"): (uris["lance"], options),
                    ("lancedb", "local"): (roots["lance"], None),
                    ("streaming", "local"): (roots["lerobot"], None),
                    ("lerobot", "local"): (roots["lerobot"], None),
                    ("robodata224", "local"): (local, None),
                    ("lancedb224", "local"): (roots["lance"], None),
                }
                boundary = EpochBoundary(proxy, s3.pid)
                try:
                    epochs = run_rounds(args.rounds, cfg, places, boundary, python, log, say)
                finally:
                    boundary.close()
        gops = full_resolution_gops(local)  # before the work folder goes (a temporary one without --work)
    figures = summarize(epochs, cfg, needed, gops)
    randomness = randomness_aim(episodes=200)
    aims = evaluate_s3_aims(figures, randomness)
    cap = f"{args.bandwidth_mibps:g} MiB/s per connection" if args.bandwidth_mibps else "no bandwidth cap"
    rows = next(e.samples for e in epochs if e.system == "robodata" and not e.cold)
    print(args.command_line)
    print(
        f"{source} footage, {args.episodes} episodes, {rows} rows (robodata), {lerobot_rows(roots['lerobot'])} frames "
        f"(LeRobot); moto on 127.0.0.1 behind a proxy adding {args.latency_ms:g} ms first-byte latency per request, "
        f"{cap}; {args.rounds} interleaved rounds, medians; {cfg.workers} workers, batch {cfg.batch_size}, every camera; "
        f"load average {' '.join(f'{v:.2f}' for v in load_before)} at start, "
        f"{' '.join(f'{v:.2f}' for v in os.getloadavg())} at end"
    )
    frames = lerobot_rows(roots["lerobot"])
    if frames != rows:
        print(
            f"WARNING: robodata's epoch has {rows} rows (the control rate), the peers' {frames} frames (the camera "
            "rate): samples/s against the peers compare unequal samples, and so do the aims against LanceDBDataset; "
            "--source aloha records both at 50 Hz"
        )
    print(
        f"robodata's dataset after upkeep (robodata.edits.upkeep_dataset, as the Dagster upkeep asset runs it): {'; '.join(upkept[:2])}"
    )
    print(
        "D: samples/s of an epoch timed in full after a cold one; first batch: opening the dataset and the cold "
        "epoch's first batch. StreamingLeRobotDataset reads a local root: LeRobot 0.6.1 cannot read s3://."
    )
    print(d_table(epochs))
    print()
    print(f"GOP bytes an epoch needs: {needed / MIB:.2f} MiB; what the store did per s3:// epoch:")
    print(store_table(epochs, needed))
    print()
    print("aims (#43):")
    print(format_aims(aims))
    print()
    print(f"one epoch of a 10 TB dataset in each layout, from the cold s3:// epochs' video GETs ({PRICE_NOTE}):")
    print(scale_table(scale_rows(epochs, stored)))
    return 0

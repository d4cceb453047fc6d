"""``robodata bench s3-epoch [DATASET]``: training epochs of ``robodata.torch.make_dataloader``
from s3:// against the local disk, and what the object store did for them.

The dataset (DATASET, a local dataset folder, or fresh sample data) is copied object by object to
a moto S3 server on 127.0.0.1 (``benchmarks.moto_server``), which is read through
``benchmarks.s3_store.LatencyProxy``: a first-byte latency per request and a bandwidth cap per
connection, as a remote store has. Epochs run interleaved, s3:// then local, each loader kept
(workers persist across epochs). Per epoch the proxy's record gives the GETs, bytes and mean bytes
per GET; /proc gives the server's CPU seconds, flagged when the server is the likely limit.

    robodata bench s3-epoch --episodes 4 --epochs 2 --latency-ms 30 [--shuffle none]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.s3_store import LatencyProxy, StoreFigures, server_cpu_seconds

MIB = 1 << 20
BOTTLENECK_CPU_SHARE = 0.8  # server CPU s per wall s above which the server, not robodata, is the limit


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", nargs="?", default=None, help="a local dataset folder (default: fresh sample data)")
    p.add_argument("--episodes", type=int, default=4, help="sample episodes to generate without DATASET")
    p.add_argument("--seconds", type=float, default=4.0, help="length of each sample episode")
    p.add_argument("--epochs", type=int, default=2, help="epochs per store, interleaved")
    p.add_argument("--latency-ms", type=float, default=30.0, help="first-byte latency added to every request")
    p.add_argument(
        "--bandwidth-mibps", type=float, default=None, help="per-connection bandwidth cap in MiB/s (default: none)"
    )
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    p.add_argument("--batch-size", type=int, default=32, help="rows per batch")
    p.add_argument(
        "--shuffle",
        default="block",
        choices=("block", "uniform", "episode", "none"),
        help="the training order (make_dataloader's shuffle; none: sequential rows)",
    )
    from benchmarks.s3_peers import add_peer_options  # it imports this module

    add_peer_options(p)  # --peers VENV: the peers on the same store, and #43's aims


@dataclass
class EpochFigures:
    """One epoch of one loader, and (for s3://) what the store did during it."""

    where: str
    samples: int
    wall_s: float
    first_batch_s: float
    first_batch_samples: int
    store: StoreFigures | None = None  # for s3://: what the store did


@dataclass
class Comparison:
    needed_gop_bytes: int
    gops: int  # full-resolution GOPs of every camera: what one epoch decodes
    epochs: list[EpochFigures] = field(default_factory=list)

    def of(self, where: str) -> list[EpochFigures]:
        return [e for e in self.epochs if e.where == where]

    def samples_per_s(self, where: str) -> float:
        """Rows per second after each epoch's first batch (the first epoch's starts the workers and
        opens the dataset: that is the first-batch time, reported apart)."""
        epochs = self.of(where)
        return sum(e.samples - e.first_batch_samples for e in epochs) / sum(e.wall_s - e.first_batch_s for e in epochs)


def needed_gop_bytes(dataset: str) -> int:
    """The bytes of every full-resolution GOP of every camera: what one epoch over all rows and
    cameras must fetch at least once (each GOP's packets, summed)."""
    import pyarrow.compute as pc

    from robodata.format import full_resolution_only, gops_uri, open_table

    gops = open_table(gops_uri(dataset))
    sizes = gops.to_table(columns=["packet_sizes"], filter=full_resolution_only(gops))["packet_sizes"]
    return int(pc.sum(pc.list_flatten(sizes)).as_py() or 0)


def full_resolution_gops(dataset: str) -> int:
    from robodata.format import full_resolution_only, gops_uri, open_table

    gops = open_table(gops_uri(dataset))
    return gops.count_rows(filter=full_resolution_only(gops))


def run_epoch(
    loader, where: str, epoch: int, proxy: LatencyProxy | None = None, server_pid: int | None = None
) -> EpochFigures:
    """Iterate one whole epoch of ``loader``; with ``proxy``, what the store did meanwhile."""
    loader.set_epoch(epoch)
    mark = proxy.mark() if proxy is not None else 0
    cpu_before = server_cpu_seconds(server_pid) if server_pid else 0.0
    samples, first_batch_s, first_batch_samples = 0, 0.0, 0
    start = time.perf_counter()
    for batch in loader:
        rows = int((~batch["padding"]).sum())
        if not samples:
            first_batch_s, first_batch_samples = time.perf_counter() - start, rows
        samples += rows
    wall_s = time.perf_counter() - start
    store = None
    if proxy is not None:
        cpu = server_cpu_seconds(server_pid) - cpu_before if server_pid else 0.0
        store = StoreFigures(tuple(proxy.requests[mark:]), cpu)
    return EpochFigures(where, samples, wall_s, first_batch_s, first_batch_samples, store)


def compare(
    local: str,
    s3_uri: str,
    storage_options: dict[str, str],
    proxy: LatencyProxy,
    server_pid: int | None,
    *,
    epochs: int,
    workers: int,
    batch_size: int,
    shuffle: str = "block",
) -> Comparison:
    """``epochs`` epochs of make_dataloader (every camera) from s3:// through ``proxy`` and from
    ``local``, interleaved."""
    from robodata.torch import make_dataloader

    options = dict(storage_options, aws_endpoint=proxy.endpoint)
    loaders = {
        "s3": make_dataloader(
            s3_uri, batch_size=batch_size, num_workers=workers, shuffle=shuffle, storage_options=options
        ),
        "local": make_dataloader(local, batch_size=batch_size, num_workers=workers, shuffle=shuffle),
    }
    result = Comparison(needed_gop_bytes(local), full_resolution_gops(local))
    for epoch in range(epochs):
        result.epochs.append(run_epoch(loaders["s3"], "s3", epoch, proxy, server_pid))
        result.epochs.append(run_epoch(loaders["local"], "local", epoch))
    return result


def format_comparison(result: Comparison) -> str:
    s3, local = result.of("s3"), result.of("local")
    s3_rate, local_rate = result.samples_per_s("s3"), result.samples_per_s("local")
    lines = [
        f"samples/s after the first batch: s3:// {s3_rate:.1f}, local {local_rate:.1f}, ratio {s3_rate / local_rate:.2f}x",
        f"first batch (epoch 0, workers starting): s3:// {s3[0].first_batch_s:.2f} s, local {local[0].first_batch_s:.2f} s",
        f"GOP bytes an epoch needs: {result.needed_gop_bytes / MIB:.2f} MiB in {result.gops} GOPs",
        "",
        f"{'epoch':>5} {'wall s':>7} {'GETs':>6} {'MiB':>8} {'MiB/GET':>8} {'gops GETs':>9} {'gops MiB':>9} "
        f"{'bytes/needed':>12} {'gops/needed':>11} {'server CPU s':>12} {'CPU/wall':>8}",
    ]
    flagged, needed = False, max(result.needed_gop_bytes, 1)
    stores = [figures.store for figures in s3 if figures.store is not None]
    for epoch, (figures, store) in enumerate(zip(s3, stores, strict=True)):
        gops_gets = store.gets_by_kind()["gops.lance data"]
        gops_bytes = store.bytes_by_kind()["gops.lance data"]
        share = store.server_cpu_s / figures.wall_s
        flagged |= share > BOTTLENECK_CPU_SHARE
        lines.append(
            f"{epoch:>5} {figures.wall_s:>7.2f} {store.gets:>6} {store.body_bytes / MIB:>8.2f} "
            f"{store.mean_bytes_per_get / MIB:>8.3f} {gops_gets:>9} {gops_bytes / MIB:>9.2f} "
            f"{store.body_bytes / needed:>12.2f} {gops_bytes / needed:>11.2f} {store.server_cpu_s:>12.2f} {share:>8.2f}"
        )
    kinds = stores[-1].gets_by_kind()
    lines.append("")
    lines.append("GETs by path, last epoch: " + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()))
    lines.append("requests by method, last epoch: " + ", ".join(f"{m} {n}" for m, n in stores[-1].by_method().items()))
    if flagged:
        lines.append(
            f"WARNING: the S3 server used more than {BOTTLENECK_CPU_SHARE:.0%} of a core in an epoch: it is a likely "
            "bottleneck, and the s3:// figure understates robodata"
        )
    else:
        worst = max(store.server_cpu_s / e.wall_s for e, store in zip(s3, stores, strict=True))
        lines.append(f"server CPU at most {worst:.0%} of a core per epoch: not the bottleneck")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if args.peers:
        from benchmarks.s3_peers import main as with_peers

        return with_peers(args)
    from benchmarks.moto_server import local_s3, upload_tree

    with tempfile.TemporaryDirectory(prefix="robodata-s3-epoch-") as tmp:
        if args.dataset:
            local = str(Path(args.dataset).resolve())
        else:
            from benchmarks.loader import _sample_dataset

            local = _sample_dataset(tmp, args.episodes, args.seconds)
        with local_s3() as s3:
            uri = s3.uri("s3-epoch/dataset")
            upload_tree(local, uri, s3.storage_options)
            host, port = s3.endpoint.removeprefix("http://").split(":")
            bandwidth = args.bandwidth_mibps * MIB if args.bandwidth_mibps else None
            with LatencyProxy((host, int(port)), latency_s=args.latency_ms / 1000, bandwidth=bandwidth) as proxy:
                result = compare(
                    local,
                    uri,
                    s3.storage_options,
                    proxy,
                    s3.pid,
                    epochs=args.epochs,
                    workers=args.workers,
                    batch_size=args.batch_size,
                    shuffle=args.shuffle,
                )
    cap = f"{args.bandwidth_mibps:g} MiB/s per connection" if args.bandwidth_mibps else "no bandwidth cap"
    print(f"{args.command_line}")
    print(
        f"store: moto server on 127.0.0.1 behind a proxy adding {args.latency_ms:g} ms first-byte latency per "
        f"request, {cap}; {args.epochs} epochs each, interleaved; {args.workers} workers, batch {args.batch_size}, "
        f"{args.shuffle} order, every camera; {result.of('s3')[0].samples} samples an epoch"
    )
    print(format_comparison(result))
    s3_wall, local_wall = (statistics.median(e.wall_s for e in result.of(w)) for w in ("s3", "local"))
    print(f"median epoch wall s: s3:// {s3_wall:.2f}, local {local_wall:.2f}")
    return 0

"""CPU per storage call through ``fsspec_filesystem`` on a local moto S3 server: each call with a
client from this process's shared aiobotocore session (what robodata does), against a new
session per call (what it did before: botocore reads its endpoint and S3 models every time).

    python -m benchmarks s3-client --calls 20 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from benchmarks.moto_server import local_s3
from robodata.storage import fsspec_filesystem


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calls", type=int, default=20, help="listings per round and way")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are printed")


def cpu_ms_per_call(call: Callable[[], object], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - start) / calls * 1000


def main(args: argparse.Namespace) -> int:
    with local_s3() as s3:
        prefix = s3.uri("listing")
        fsspec_filesystem(prefix, s3.storage_options).pipe_file(f"{prefix}/file", b"x")

        def shared() -> object:
            return fsspec_filesystem(prefix, s3.storage_options).ls(prefix)

        def new_session() -> object:
            fs = fsspec_filesystem(prefix, s3.storage_options)
            fs.session = None  # as before: s3fs makes an aiobotocore session of its own for this call
            return fs.ls(prefix)

        shared()  # this process's session made once, before timing
        ways: dict[str, list[float]] = {"shared session": [], "new session per call": []}
        for _ in range(args.rounds):
            ways["shared session"].append(cpu_ms_per_call(shared, args.calls))
            ways["new session per call"].append(cpu_ms_per_call(new_session, args.calls))
    medians = {name: statistics.median(values) for name, values in ways.items()}
    print(f"CPU per listing, median of {args.rounds} rounds of {args.calls} ({args.command_line}):")
    for name, value in medians.items():
        print(f"  {name:<22} {value:6.1f} ms")
    print(f"  ratio                  {medians['new session per call'] / medians['shared session']:6.2f}x")
    return 0

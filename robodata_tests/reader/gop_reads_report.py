"""GOP bytes read in place (``robodata/integrity/_local_gop_files.py``: one pread each) against
Lance's ``read_blobs`` on a local dataset: the read alone, ``ds[i]``, an 8-frame window x every
camera and a batch of 32 rows. Two handles on the same dataset, one forced onto Lance's reads;
interleaved rounds (alternating which goes first), medians of per-call milliseconds. It measures
the reader's insides (its GOP store), so it lives beside the reader's tests, not in benchmarks/
(which uses robodata's public names only):

    python -m robodata_tests.reader.gop_reads_report /tmp/bench/work/dataset --rounds 6
"""

from __future__ import annotations

import argparse
import statistics
import time


def configure(parser: argparse.ArgumentParser) -> None:
    """The report's arguments."""
    parser.add_argument("dataset", help="a local robodata dataset (e.g. the peer benchmark's work/dataset)")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds")
    parser.add_argument("--calls", type=int, default=100, help="random calls per read and round")
    parser.add_argument("--window", type=int, default=8, help="rows per window")
    parser.add_argument("--seed", type=int, default=0)


def main(argv: list[str] | None = None) -> int:
    """Print the table (1 when the dataset's GOPs are not read in place)."""
    import numpy as np

    import robodata
    from robodata.reader._dataset import gop_store

    parser = argparse.ArgumentParser(prog="python -m robodata_tests.reader.gop_reads_report", description=__doc__)
    configure(parser)
    args = parser.parse_args(argv)

    in_place = robodata.open(args.dataset)
    through_lance = robodata.open(args.dataset, version=in_place.version)
    if gop_store(in_place)._local_files is None:
        print(f"{args.dataset}: its GOPs are not read in place (remote, or not inline): nothing to compare")
        return 1
    gop_store(through_lance).__dict__["_local_files"] = None  # the cached answer: read through Lance
    n, offsets = len(in_place), list(range(args.window))

    def reads(ds):
        store = gop_store(ds)
        return {
            "GOP bytes of a window": lambda i: store.read(store.refs(range(i, i + args.window), ds.cameras)),
            "ds[i]": lambda i: ds[i],
            f"{args.window}-frame window x {len(ds.cameras)} cameras": lambda i: ds.get_windows(
                [i], offsets, columns=[]
            ),
            "batch of 32 rows": lambda i: ds.get_frames(np.random.default_rng(i).integers(0, n, 32)),
        }

    sides = {"in place": reads(in_place), "read_blobs": reads(through_lance)}
    medians: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
        for name in sides["in place"]:
            starts = np.random.default_rng([args.seed, round_]).integers(0, n - args.window, args.calls)
            for side in order:
                call, seconds = sides[side][name], []
                for i in starts.tolist():
                    begin = time.perf_counter()
                    call(i)
                    seconds.append(time.perf_counter() - begin)
                medians.setdefault((name, side), []).append(1000 * statistics.median(seconds))
    print(f"{args.dataset}: {n} rows, {len(in_place.cameras)} cameras; {args.rounds} rounds x {args.calls} calls")
    print(f"{'read':<34} {'read_blobs':>11} {'in place':>10} {'ratio':>7}")
    for name in sides["in place"]:
        lance_ms = statistics.median(medians[(name, "read_blobs")])
        direct_ms = statistics.median(medians[(name, "in place")])
        print(f"{name:<34} {lance_ms:>8.2f} ms {direct_ms:>7.2f} ms {lance_ms / direct_ms:>6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

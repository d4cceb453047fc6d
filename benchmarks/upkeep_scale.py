"""``robodata bench upkeep``: read costs on a dataset of many small appends, before and after
upkeep (compaction, version cleanup, scalar indexes), on a local disk and on s3:// (moto).

Each episode is one ingest (1 s, one 32x32 camera: cheap to write), so the tables grow one
fragment and one version per episode, as a lab's do. The s3:// dataset is the local one copied
object by object (the same fragments and versions, without thousands of commits through moto).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--episodes",
        type=int,
        default=500,
        help="tiny episodes to ingest one by one (the setup grows as the square of this)",
    )
    p.add_argument(
        "--where",
        nargs="+",
        default=["local", "s3"],
        choices=["local", "s3"],
        help="local disk and/or a moto s3:// server",
    )


def main(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="robodata-upkeep-") as tmp:
        local = str(Path(tmp) / "ds")
        start = time.perf_counter()
        _write_new_episodes(local, args.episodes)
        print(f"{args.episodes} episodes written one ingest each in {time.perf_counter() - start:.0f} s")
        print(
            f"{'where':>6} {'state':>7} {'fragments':>10} {'versions':>9} {'open s':>8} {'ds[i] ms':>9} "
            f"{'batch64 ms':>11} {'filter ms':>10} {'upkeep s':>9}"
        )
        if "s3" in args.where:
            from benchmarks.moto_server import local_s3, upload_tree

            with local_s3() as s3:
                uri = s3.uri("upkeep/ds")
                upload_tree(local, uri, s3.storage_options)
                _compare("s3", uri, args.episodes, s3.storage_options)
        if "local" in args.where:
            _compare("local", local, args.episodes, None)
    return 0


def _write_new_episodes(root: str, episodes: int) -> None:
    """One ``robodata.write_episode`` per episode, each committing its own fragment and version to
    both tables, as a lab's ingests do between upkeeps. Each ingest looks up its episode (is it
    stored already? which GOPs does it replace?) in every fragment, so an ingest costs more the
    more fragments there are; the time per ingest is printed as the table grows, the other cost
    that upkeep's compaction takes away."""
    import robodata
    from benchmarks.tiny_episodes import tiny_episode

    milestones = {max(1, episodes * k // 4) for k in range(1, 5)}
    recent: list[float] = []
    for index in range(episodes):
        episode = tiny_episode(index)
        start = time.perf_counter()
        robodata.write_episode(episode, root)
        recent.append(time.perf_counter() - start)
        if index + 1 in milestones:
            print(
                f"ingest at {index + 1:>5} fragments: {1000 * statistics.median(recent[-20:]):.0f} ms an episode (median of the last {min(20, len(recent))})",
                flush=True,
            )


def _compare(where: str, uri: str, episodes: int, options) -> None:
    from robodata.edits import upkeep_dataset

    _report(where, "before", uri, episodes, options, None)
    start = time.perf_counter()
    upkeep_dataset(uri, older_than=timedelta(0), gc_min_age=timedelta(0), storage_options=options)
    _report(where, "after", uri, episodes, options, time.perf_counter() - start)


def _report(where: str, state: str, uri: str, episodes: int, options, upkeep_s: float | None) -> None:
    import robodata
    from robodata.format import episode_filter

    rng = np.random.default_rng(0)
    start = time.perf_counter()
    ds = robodata.open(uri, storage_options=options)
    rows = len(ds)
    open_s = time.perf_counter() - start
    ds[int(rng.integers(rows))]  # loads the GOP index once
    single = [_timed(lambda: ds[int(rng.integers(rows))]) for _ in range(10)]
    batch = [_timed(lambda: ds.get_frames(rng.choice(rows, min(64, rows), replace=False).tolist())) for _ in range(3)]
    filtered = [_timed(lambda: ds.to_table(filter=episode_filter(int(rng.integers(episodes))))) for _ in range(5)]
    frames = ds.lance_dataset
    print(
        f"{where:>6} {state:>7} {len(frames.get_fragments()):>10} {len(frames.versions()):>9} {open_s:>8.2f} "
        f"{1000 * statistics.median(single):>9.1f} {1000 * statistics.median(batch):>11.1f} "
        f"{1000 * statistics.median(filtered):>10.1f} {'' if upkeep_s is None else f'{upkeep_s:.1f}':>9}",
        flush=True,
    )


def _timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start

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
    p.add_argument("--episodes", type=int, default=2000, help="tiny episodes to append one by one")
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
    """One ingest per episode, each committing its own fragment and version to both tables. Every
    episode is new, so its rows are appended: the writer's merge (what keeps one copy of an episode
    written twice) would scan the whole table per episode, hours at 2,000 episodes (measured: 0.6 s
    an episode over the first 100, 1.2 s at 100). This setup is the one place benchmarks/ reaches
    into robodata's insides (test_layers.WHITE_BOX)."""
    from unittest import mock

    import lance

    from benchmarks.tiny_episodes import tiny_episode
    from robodata.format import frames_uri, open_table
    from robodata.ingest import _writer as writer
    from robodata.ingest._label_counts import LabelCounts

    replace_rows = writer.replace_episode_rows

    def append_rows(dataset_root, rows, *args):
        frames = open_table(frames_uri(dataset_root))
        if frames is None:
            return replace_rows(dataset_root, rows, *args)
        appended = lance.write_dataset(rows.select(frames.schema.names).cast(frames.schema), frames.uri, mode="append")
        return appended.version, LabelCounts(0, 0)

    with mock.patch.object(writer, "replace_episode_rows", append_rows):
        for index in range(episodes):
            writer.write_episode(tiny_episode(index), root)


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
    batch = [_timed(lambda: ds.get_frames(rng.choice(rows, 64, replace=False).tolist())) for _ in range(3)]
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

"""``robodata bench batches``: the same episodes ingested through Dagster as one run per episode
(per-episode partitions) and as one run per batch (``ROBODATA_PARTITIONING=batch``): runs,
partitions, wall time and the Lance versions each leaves.

Both run in this process (``dg.materialize`` on an ephemeral instance, checks included), so the
per-run cost measured is Dagster's run bookkeeping, not process start-up, which a run launcher
adds per run on top (see ``robodata bench landing``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--episodes", type=int, nargs="+", default=[8, 32], help="episodes per measurement")
    p.add_argument("--seconds", type=float, default=0.5, help="length of each sample episode")


def main(args: argparse.Namespace) -> int:
    import dagster as dg

    from robodata.format import current_versions
    from robodata.orchestration.defs.batches.batches import BATCH_ASSETS, register_upload_batches
    from robodata.orchestration.defs.batches.checks import batch_checks
    from robodata.orchestration.defs.ingest import checks, episodes
    from robodata.orchestration.defs.resources import DatasetStore
    from robodata.sample_data import write_sample_uploads

    print(f"ingest through Dagster in-process, {args.seconds:g} s sample episodes, checks included")
    print(
        f"{'episodes':>8} {'partitioning':>12} {'runs':>5} {'partitions':>10} {'wall s':>7} {'s/episode':>9} "
        f"{'frames v':>8} {'gops v':>6} {'load':>5}"
    )
    with tempfile.TemporaryDirectory(prefix="robodata-batches-") as tmp:
        for count in args.episodes:
            source = write_sample_uploads(Path(tmp) / f"src-{count}", episodes=count, seed=11, seconds=args.seconds)
            for mode in ("episode", "batch"):
                base = Path(tmp) / f"{mode}-{count}"
                for upload in source:
                    shutil.copytree(upload, base / "uploads" / ("batch-1" if mode == "batch" else "") / upload.name)
                store = DatasetStore(root=str(base / "dataset"), uploads_root=str(base / "uploads"))
                instance = dg.DagsterInstance.ephemeral()
                start = time.perf_counter()
                if mode == "episode":
                    keys = episodes.register_uploads(instance, store)
                    assets = [*episodes.EPISODE_ASSETS, *checks.episode_checks]
                else:
                    keys = register_upload_batches(instance, store)
                    assets = [*BATCH_ASSETS, *batch_checks]
                for key in keys:
                    result = dg.materialize(assets, partition_key=key, instance=instance, resources={"store": store})
                    assert result.success, key
                wall = time.perf_counter() - start
                versions = current_versions(store.root)
                print(
                    f"{count:>8} {mode:>12} {len(instance.get_runs()):>5} {len(keys):>10} {wall:>7.1f} "
                    f"{wall / count:>9.2f} {versions.frames:>8} {versions.gops:>6} {os.getloadavg()[0]:>5.1f}",
                    flush=True,
                )
                shutil.rmtree(base)
    return 0

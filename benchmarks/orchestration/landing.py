"""``robodata bench landing``: how long an episode takes from a complete upload to rows a reader
sees, through the ingest job exactly as Dagster's run launcher starts it (a fresh process that
loads the code location and executes the run).

Not counted: the wait for the sensor's next tick (at most its 30 s interval) and the run queue.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHECKOUT = Path(__file__).resolve().parents[2]


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, nargs="+", default=[1.0, 30.0], help="episode lengths")
    p.add_argument(
        "--executors",
        nargs="+",
        default=["in_process", "multiprocess"],
        choices=["in_process", "multiprocess"],
        help="Dagster executors to time the ingest job with",
    )


def main(args: argparse.Namespace) -> int:
    import robodata
    from robodata.orchestration import prepare_dagster_home
    from robodata.orchestration.defs.ingest.episodes import register_uploads
    from robodata.orchestration.defs.resources import DatasetStore
    from robodata.sample_data import write_sample_episode

    print("upload-to-visible through the ingest_episode job (3 cameras at 30 fps, 100 Hz states)")
    print(f"{'episode s':>9} {'executor':>13} {'rows':>6} {'upload-to-visible s':>20}")
    with tempfile.TemporaryDirectory(prefix="robodata-landing-") as tmp:
        base = Path(tmp)
        index = 0
        for seconds in args.seconds:
            for executor in args.executors:
                root, uploads = base / f"dataset-{index}", base / f"uploads-{index}"
                home = prepare_dagster_home(base / f"home-{index}")
                store = DatasetStore(root=str(root), uploads_root=str(uploads))
                write_sample_episode(uploads, index, np.random.default_rng(index), seconds)
                import dagster as dg

                with dg.DagsterInstance.get() as instance:
                    [key] = register_uploads(instance, store)
                start = time.perf_counter()  # episode.json is written: the upload is complete
                _run_job(executor, key, root, uploads, home)
                rows = len(robodata.open(str(root)))
                elapsed = time.perf_counter() - start
                print(f"{seconds:>9g} {executor:>13} {rows:>6} {elapsed:>20.1f}", flush=True)
                index += 1
    return 0


def _run_job(executor: str, key: str, root: Path, uploads: Path, home: Path) -> None:
    job = "ingest_episode" if executor == "in_process" else "ingest_episode_multiprocess"
    # The per-episode job exists only with per-episode partitions, whatever the caller's shell says.
    env = dict(
        os.environ,
        ROBODATA_ROOT=str(root),
        ROBODATA_UPLOADS=str(uploads),
        DAGSTER_HOME=str(home),
        ROBODATA_PARTITIONING="episode",
        # dagster loads benchmarks.orchestration.landing_defs: the checkout must be importable.
        PYTHONPATH=os.pathsep.join(p for p in (str(CHECKOUT), os.environ.get("PYTHONPATH", "")) if p),
    )
    command = [
        os.path.join(os.path.dirname(sys.executable), "dagster"),
        "job",
        "execute",
        "-m",
        "benchmarks.orchestration.landing_defs",
        "-j",
        job,
        "--tags",
        json.dumps({"dagster/partition": key}),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{job} failed for {key}:\n{done.stderr[-2000:]}")

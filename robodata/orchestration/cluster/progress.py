"""``deploy/cluster.sh wait EPISODES``: wait until the dataset holds that many episodes and no
run is queued or in flight; print progress, and fail (exit 1) on a timeout with the failed runs.

Run as ``deploy/cluster.sh wait 6`` (``main(["--episodes", "6"])`` with ROBODATA_ROOT and
DAGSTER_HOME set). It polls:

>>> stored_episodes("data/demo")
3
>>> stored_episodes("data/nothing-yet")  # before the first commit
0
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import dagster as dg

import robodata
from robodata.orchestration._instance import IN_FLIGHT
from robodata.storage import env_storage_options


def stored_episodes(root: str) -> int:
    """Episodes in the dataset at ``root`` (0 before its first commit)."""
    try:
        return robodata.open(root, storage_options=env_storage_options()).episodes().num_rows
    except (FileNotFoundError, ValueError, OSError, robodata.RoboDataError):
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deploy/cluster.sh wait")
    parser.add_argument("--episodes", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    root = os.environ["ROBODATA_ROOT"]
    deadline, said = time.monotonic() + args.timeout, ""
    with dg.DagsterInstance.get() as instance:
        while True:
            episodes = stored_episodes(root)
            in_flight = instance.get_runs_count(dg.RunsFilter(statuses=IN_FLIGHT))
            failed = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
            line = f"cluster: {episodes} episodes stored, {in_flight} runs in flight, {len(failed)} failed"
            if line != said:
                print(line, flush=True)
                said = line
            if episodes >= args.episodes and in_flight == 0:
                return 0
            if time.monotonic() > deadline:
                for run in failed:
                    print(
                        f"cluster: failed run {run.run_id} ({run.tags.get('dagster/partition', '')})", file=sys.stderr
                    )
                print(
                    f"cluster: error: fewer than {args.episodes} episodes after {args.timeout:.0f} s", file=sys.stderr
                )
                return 1
            time.sleep(2)


if __name__ == "__main__":
    sys.exit(main())

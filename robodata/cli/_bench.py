"""``robodata bench``: the benchmarks of a source checkout (``benchmarks/``, outside the wheel),
imported only after ``require_benchmarks`` found them."""

from __future__ import annotations

import argparse

from robodata.cli._registry import command


def _bench_args(p: argparse.ArgumentParser) -> None:
    # The arguments go to the benchmarks' own parser (``python -m benchmarks``): this command only
    # finds the benchmarks, so it knows no scenario's options and imports nothing until it runs.
    p.add_argument(
        "scenario",
        nargs=argparse.REMAINDER,
        metavar="[SCENARIO] ARGS",
        help="a scenario (default: report) and its arguments, e.g. OUT --peers VENV, or loader --workers 0 2",
    )


@command("bench", _bench_args)
def _bench(args: argparse.Namespace) -> int:
    """Benchmarks, from a source checkout. Scenarios: report (the default: `robodata bench OUT
    --peers VENV`, robodata against LeRobot 0.6.1 and LanceDBDataset), readpath, loader, levers, lerobot-path,
    s3-client, s3-epoch, order-randomness, order-loss, upkeep, sensor, landing, batches, cluster-drills;
    `robodata bench SCENARIO --help` shows a scenario's options."""
    from robodata._source_checkout import require_benchmarks

    require_benchmarks()
    from benchmarks.__main__ import main as run_scenario

    return run_scenario(args.scenario, prog="robodata bench")

"""``python -m benchmarks [SCENARIO] ARGS`` (also ``robodata bench [SCENARIO] ARGS`` from a source
checkout): run one benchmark scenario. SCENARIO defaults to ``report``, so
``robodata bench OUT --peers VENV`` is ``robodata bench report OUT --peers VENV``; name ``report``
when OUT is itself a scenario's name. ``SCENARIO --help`` lists a scenario's options.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
from typing import NamedTuple


class Scenario(NamedTuple):
    module: str  # has configure(parser) and main(args) -> exit code
    help: str


SCENARIOS: dict[str, Scenario] = {
    "report": Scenario(
        "benchmarks.report_command",
        "robodata against the LeRobot v3 layout (GOP-size sweep, plots); with --peers VENV against the real "
        "LeRobot 0.6.1 and LanceDBDataset (the default scenario: robodata bench OUT --peers VENV)",
    ),
    "readpath": Scenario(
        "benchmarks.readpath",
        "robodata.measure's read figures (random frame reads, batched takes against the decode bound, windows, "
        "the training loader)",
    ),
    "loader": Scenario(
        "benchmarks.loader", "training DataLoader samples/s (0/1/2 workers, batch 32/128) and memory over a long run"
    ),
    "levers": Scenario(
        "benchmarks.loader_levers",
        "training-loader levers: worker vs in-process decode, YUV 4:2:0 hand-over, 224x224 renditions, "
        "batch transfer cost, time to first batch",
    ),
    "lerobot-path": Scenario(
        "benchmarks.lerobot_path",
        "per-batch CPU of LeRobotCompatDataset.__getitems__ + default collate against make_dataloader's batch read",
    ),
    "s3-client": Scenario(
        "benchmarks.s3_client",
        "CPU per storage call on a local moto S3 server: one aiobotocore session per process against one per call",
    ),
    "s3-epoch": Scenario(
        "benchmarks.s3_epoch",
        "training epochs from s3:// (moto behind a latency/bandwidth proxy) against the local disk, with the "
        "store's GETs, bytes per GET and server CPU per epoch",
    ),
    "order-randomness": Scenario(
        "benchmarks.order_randomness",
        "distinct episodes and GOPs per batch of the decode-once order with runs and a pool, against the "
        "uniform order and blocks one by one, on a synthetic layout of 200+ episodes (no video)",
    ),
    "order-loss": Scenario(
        "benchmarks.order_loss",
        "a short training run's loss (tiny CNN, CPU, sample data) in the decode-once order with runs and a pool "
        "and in the uniform order",
    ),
    "upkeep": Scenario(
        "benchmarks.upkeep_scale",
        "open, ds[i], a 64-row batch and an episode filter before and after upkeep, local and s3://",
    ),
    "sensor": Scenario(
        "benchmarks.orchestration.sensor_scale",
        "upload sensor tick time and cursor size at thousands of uploads on a local moto S3 server",
    ),
    "landing": Scenario(
        "benchmarks.orchestration.landing", "upload-to-visible time of one episode through the ingest job, per executor"
    ),
    "batches": Scenario(
        "benchmarks.orchestration.batches",
        "the same episodes ingested as one Dagster run per episode and as one run per batch",
    ),
    "cluster-drills": Scenario(
        "benchmarks.orchestration.cluster_drills",
        "the cluster in deploy/ (docs/cluster.md's walk-through) recovering from a PostgreSQL restart with runs in "
        "flight, a Celery worker and the daemon killed with SIGKILL: seconds, lost runs, duplicate rows",
    ),
}


def usage(prog: str) -> str:
    """What ``prog --help`` prints: the scenarios and how to pick one."""
    width = max(map(len, SCENARIOS))
    lines = [
        f"usage: {prog} [SCENARIO] ARGS ...",
        "",
        f"SCENARIO defaults to report: `{prog} OUT --peers VENV` is `{prog} report OUT --peers VENV`.",
        f"`{prog} SCENARIO --help` lists a scenario's options.",
        "",
        "scenarios:",
    ]
    lines += [f"  {name:<{width}}  {scenario.help}" for name, scenario in SCENARIOS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "python -m benchmarks") -> int:
    """Parse ``argv`` as ``[SCENARIO] ARGS`` and run the scenario; returns its exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(prog), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = (argv[0], argv[1:]) if argv[0] in SCENARIOS else ("report", argv)
    scenario = SCENARIOS[name]
    module = importlib.import_module(scenario.module)
    from robodata.cli import HelpFormatter  # the product CLI's option help, defaults included

    parser = argparse.ArgumentParser(prog=f"{prog} {name}", description=scenario.help, formatter_class=HelpFormatter)
    module.configure(parser)
    args = parser.parse_args(rest)
    args.command_line = shlex.join([*prog.split(), *argv])  # recorded in the reports
    return module.main(args)


if __name__ == "__main__":
    sys.exit(main())

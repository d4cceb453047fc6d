"""The commands that run Dagster or change its instance: ``demo``, ``dagster-home``,
``register-uploads``, ``repartition`` and ``register-imports`` (each imports Dagster only when it runs)."""

from __future__ import annotations

import argparse
import shlex
import sys

from robodata.cli._registry import command


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workdir", default="demo", help="folder for uploads, dataset and DAGSTER_HOME")
    p.add_argument("--episodes", type=int, default=4, help="sample episodes to write and ingest")
    p.add_argument("--seconds", type=float, default=4.0, help="length of each sample episode")


@command("demo", _demo_args)
def _demo(args: argparse.Namespace) -> int:
    """The README's demo: sample uploads ingested through Dagster's assets, sensor and checks."""
    from robodata.orchestration import run_demo

    run_demo(args.workdir, episodes=args.episodes, seconds=args.seconds)
    return 0


def _dagster_home_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="the instance folder (made if missing; an existing dagster.yaml is kept)")


@command("dagster-home", _dagster_home_args)
def _dagster_home(args: argparse.Namespace) -> int:
    """Write robodata's Dagster instance config (SQLite under DIR, run queue, pools, run
    monitoring and retries) into DIR and print the DAGSTER_HOME to export."""
    from robodata.orchestration import write_dagster_home

    home, written = write_dagster_home(args.dir)
    print(f"{home / 'dagster.yaml'} {'written' if written else 'already there: kept'}", file=sys.stderr)
    print(f"export DAGSTER_HOME={shlex.quote(str(home))}")
    return 0


def _register_uploads_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="dataset root (default: $ROBODATA_ROOT, else ./demo/dataset)")
    p.add_argument("--uploads", default=None, help="uploads root (default: $ROBODATA_UPLOADS, else beside the dataset)")


@command("register-uploads", _register_uploads_args)
def _register_uploads(args: argparse.Namespace) -> int:
    """Add a Dagster partition (in $DAGSTER_HOME's instance) for every complete upload (every upload
    batch with ROBODATA_PARTITIONING=batch); no run is started."""
    from robodata.orchestration import register_uploads_from_cli

    for key in register_uploads_from_cli(args.dataset, args.uploads):
        print(key)
    return 0


def _repartition_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("to", choices=["episode", "batch"], help="the partitioning to carry the instance over to")
    _register_uploads_args(p)


@command("repartition", _repartition_args)
def _repartition(args: argparse.Namespace) -> int:
    """Carry $DAGSTER_HOME's instance over to per-episode or batch partitions (then set
    ROBODATA_PARTITIONING and restart the code location): what is ingested is recorded as such."""
    from robodata.orchestration import migrate_partitioning_from_cli

    done = migrate_partitioning_from_cli(args.to, args.dataset, args.uploads)
    print(f"{len(done['stored'])} partition(s) already ingested, {len(done['new'])} to ingest")
    print(f"now set ROBODATA_PARTITIONING={args.to} and restart the code location")
    return 0


def _register_imports_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="a LeRobot v3 root or an HDF5 glob (local or s3://)")
    p.add_argument("--format", choices=["lerobot", "aloha_hdf5"], default="lerobot", help="what SOURCE holds")


@command("register-imports", _register_imports_args)
def _register_imports(args: argparse.Namespace) -> int:
    """Add an imported_episodes partition (in $DAGSTER_HOME's instance) per source episode."""
    from robodata.orchestration import register_import_partitions_from_cli

    for key in register_import_partitions_from_cli(args.source, args.format):
        print(key)
    return 0

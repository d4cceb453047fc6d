"""``python -m robodata.bench OUT_DIR [--episodes N --seconds S --small]``: the benchmark report."""

from __future__ import annotations

import argparse
import shlex
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", help="folder for report.md, results.json and the PNG plots")
    parser.add_argument("--dataset", default=None, help="measure this dataset instead of fresh sample data")
    parser.add_argument("--version", default=None, help="version number or tag of --dataset")
    parser.add_argument("--episodes", type=int, default=None, help="sample episodes to generate (default 20)")
    parser.add_argument("--seconds", type=float, default=None, help="length of each sample episode (default 3)")
    parser.add_argument("--small", action="store_true", help="tiny sizes: a smoke run in well under a minute")


def run(args: argparse.Namespace, command: str) -> int:
    from robodata.bench.harness import run_benchmark  # heavy (matplotlib, Lance): only when running
    from robodata.storage import env_storage_options

    version = int(args.version) if args.version and args.version.isdigit() else args.version
    result = run_benchmark(
        args.out_dir, dataset_uri=args.dataset, version=version, small=args.small, episodes=args.episodes,
        seconds=args.seconds, storage_options=env_storage_options(), command=command,
    )
    print(result.table_markdown)
    print(f"\nwrote {result.report_path}, {result.results_path} and {len(result.plots)} plots")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m robodata.bench", description=__doc__)
    configure(parser)
    return run(parser.parse_args(argv), shlex.join(["python", "-m", "robodata.bench", *argv]))


if __name__ == "__main__":
    sys.exit(main())

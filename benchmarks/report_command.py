"""The ``report`` scenario (``robodata bench OUT``, ``python -m benchmarks OUT``): robodata against
the LeRobot v3 layout, with plots; with ``--peers VENV`` against the real LeRobot 0.6.1 and
lerobot-lancedb's ``LanceDBDataset``."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", help="folder for report.md, results.json and the PNG plots")
    parser.add_argument("--dataset", default=None, help="measure this dataset instead of fresh sample data")
    parser.add_argument("--version", default=None, help="version number or tag of --dataset")
    parser.add_argument("--episodes", type=int, default=None, help="sample episodes to generate (default 20)")
    parser.add_argument("--seconds", type=float, default=None, help="length of each sample episode (default 3)")
    parser.add_argument("--small", action="store_true", help="tiny sizes: a smoke run in well under a minute")
    peers = parser.add_argument_group("against the real peers (LeRobot 0.6.1, lerobot-lancedb 0.3.1)")
    peers.add_argument(
        "--peers",
        default=None,
        metavar="VENV",
        help="the peers' venv (bash scripts/peers.sh VENV): run LeRobotDataset and LanceDBDataset "
        "side by side with robodata instead of the re-implemented baseline",
    )
    peers.add_argument(
        "--source",
        choices=("auto", "aloha", "sample"),
        default="auto",
        help="footage: gym-aloha renders (auto: where the peers' venv has gym-aloha) or the synthetic sample scene",
    )
    peers.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3)")
    peers.add_argument("--steps", type=int, default=None, help="gym-aloha steps per episode (default 300; 6 episodes)")
    peers.add_argument(
        "--pyav", action="store_true", help="also measure LeRobot's pyav backend (slower than torchcodec)"
    )
    peers.add_argument("--gop-size", type=int, default=None, help="robodata's G for the ingest (default: robodata's)")
    peers.add_argument("--crf", type=int, default=None, help="robodata's CRF for the ingest (default: robodata's)")
    peers.add_argument(
        "--sweep",
        action="store_true",
        help="also sweep G x CRF on the footage (D throughput, bytes, PSNR) and pick a default",
    )
    peers.add_argument("--nice", type=int, default=0, help="niceness of the measuring processes (shared machines)")


def main(args: argparse.Namespace) -> int:
    command = args.command_line
    if args.peers:
        return _run_peers(args, command)
    from benchmarks.harness import run_benchmark  # heavy (matplotlib, Lance): only when running
    from robodata.storage import env_storage_options

    version = int(args.version) if args.version and args.version.isdigit() else args.version
    result = run_benchmark(
        args.out_dir,
        dataset_uri=args.dataset,
        version=version,
        small=args.small,
        episodes=args.episodes,
        seconds=args.seconds,
        storage_options=env_storage_options(),
        command=command,
    )
    print(result.table_markdown)
    print(f"\nwrote {result.report_path}, {result.results_path} and {len(result.plots)} plots")
    return 0


def _run_peers(args: argparse.Namespace, command: str) -> int:
    from dataclasses import replace

    from benchmarks.peers.peer_harness import Footage, run_peer_benchmark  # heavy: only when running
    from benchmarks.peers.peer_scenarios import PeerConfig

    config = PeerConfig.small() if args.small else PeerConfig()
    config = replace(config, rounds=args.rounds or config.rounds, pyav=args.pyav)
    footage = Footage(episodes=2, steps=30, seconds=1.0) if args.small else Footage()
    footage = replace(
        footage,
        source=args.source,
        episodes=args.episodes or footage.episodes,
        steps=args.steps or footage.steps,
        seconds=args.seconds or footage.seconds,
    )
    version = int(args.version) if args.version and args.version.isdigit() else args.version
    result = run_peer_benchmark(
        args.out_dir,
        args.peers,
        dataset_uri=args.dataset,
        version=version,
        footage=footage,
        config=config,
        gop_size=args.gop_size,
        crf=args.crf,
        sweep=args.sweep,
        nice=args.nice,
        command=command,
    )
    from benchmarks.peers.peer_report import readme_line, run_header

    print(run_header(result.results))
    print()
    print(result.table_markdown)
    print()
    print(result.results["aims_table"])
    sweep = result.results.get("gop_crf_sweep")
    if sweep:
        print(f"\nG x CRF x preset sweep (limits: LeRobot's bytes and PSNR; chosen: {sweep['chosen']}):\n")
        print(sweep["table"])
    print(f"\nREADME: {readme_line(result.results)}")
    print(f"\nwrote {result.report_path}, {result.results_path} and {len(result.plots)} plot")
    return 0

"""The ``robodata`` command: sample data, ingest, inspect, edit, demo and benchmarks."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from tqdm import tqdm

COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def command(name: str, configure: Callable[[argparse.ArgumentParser], None]):
    def register(run: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = (configure, run)
        return run

    return register


def _encoding_args(p: argparse.ArgumentParser) -> None:
    """GOP size and x264 quality for commands that encode video."""
    p.add_argument("--gop-size", type=int, default=8)
    p.add_argument("--crf", type=int, default=23)
    p.add_argument("--preset", default="veryfast")


def _print_import(result) -> None:
    print(
        f"imported episodes {result.imported} ({result.rows} rows), skipped {result.skipped} "
        f"already present; dataset version {result.frames_version}"
    )


def _sample_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", help="folder to write one upload folder per episode into")
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seconds", type=float, default=4.0, help="length of each episode")
    p.add_argument("--start-index", type=int, default=0)


@command("sample-data", _sample_data_args)
def _sample_data(args: argparse.Namespace) -> int:
    from pathlib import Path

    import numpy as np

    from robodata.sample_data import write_sample_episode

    for i in tqdm(range(args.episodes), desc="sample episodes", unit="episode"):
        index = args.start_index + i
        write_sample_episode(Path(args.out), index, np.random.default_rng([args.seed, index]), args.seconds)
    print(f"wrote {args.episodes} episodes to {args.out}")
    return 0


def _ingest_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("uploads", nargs="+", help="upload folders (each holds episode.json)")
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    _encoding_args(p)


@command("ingest", _ingest_args)
def _ingest(args: argparse.Namespace) -> int:
    from robodata.ingest import ingest_episode
    from robodata.storage import storage_options_from_env

    options = storage_options_from_env() or None
    for upload in tqdm(args.uploads, desc="ingest", unit="episode"):
        result = ingest_episode(
            upload, args.dataset, gop_size=args.gop_size, crf=args.crf, preset=args.preset, storage_options=options
        )
        tqdm.write(f"{result.episode_id}: {result.rows} rows, {result.gops} GOPs, version {result.frames_version}")
    return 0


def _dataset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset")
    p.add_argument("--version", default=None, help="a version number or a tag")


@command("info", _dataset_args)
def _info(args: argparse.Namespace) -> int:
    from robodata.storage import storage_options_from_env
    from robodata.summary import dataset_summary

    summary = dataset_summary(args.dataset, _version(args.version), storage_options_from_env() or None)
    print(json.dumps(summary, indent=2))
    return 0


def _delete_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset")
    p.add_argument("episodes", nargs="+", type=int)


@command("delete", _delete_args)
def _delete(args: argparse.Namespace) -> int:
    from robodata.edits import delete_episodes
    from robodata.storage import storage_options_from_env

    version = delete_episodes(args.dataset, args.episodes, storage_options_from_env() or None)
    print(f"deleted episodes {args.episodes}; dataset is now at version {version}")
    return 0


def _tag_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset")
    p.add_argument("name")
    p.add_argument("--version", type=int, default=None)


@command("tag", _tag_args)
def _tag(args: argparse.Namespace) -> int:
    from robodata.reader import open_dataset
    from robodata.storage import storage_options_from_env

    ds = open_dataset(args.dataset, version=args.version, storage_options=storage_options_from_env() or None)
    print(f"tagged version {ds.tag(args.name)} as {args.name!r}")
    return 0


def _gc_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--min-age-minutes", type=float, default=60.0,
                   help="keep unreferenced GOPs younger than this: an ingest may still be running")


@command("gc", _gc_args)
def _gc(args: argparse.Namespace) -> int:
    from datetime import timedelta

    from robodata.edits import collect_garbage
    from robodata.storage import storage_options_from_env

    report = collect_garbage(
        args.dataset, dry_run=args.dry_run, storage_options=storage_options_from_env() or None,
        min_age=timedelta(minutes=args.min_age_minutes),
    )
    verb = "would delete" if args.dry_run else "deleted"
    removable = report.unreferenced - report.too_recent
    print(f"{report.unreferenced} unreferenced GOP rows; {verb} {removable}, kept {report.too_recent} younger "
          f"than {args.min_age_minutes:g} min (gops.lance version {report.gops_version})")
    return 0


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workdir", default="demo", help="folder for uploads, dataset and DAGSTER_HOME")
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--seconds", type=float, default=4.0)


@command("demo", _demo_args)
def _demo(args: argparse.Namespace) -> int:
    from robodata.demo import run_demo

    run_demo(args.workdir, episodes=args.episodes, seconds=args.seconds)
    return 0


def _readpath_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="an existing dataset; default: fresh sample data")
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--samples", type=int, default=200)


@command("bench-readpath", _readpath_args)
def _bench_readpath(args: argparse.Namespace) -> int:
    from robodata.bench.readpath import main as readpath_main

    return readpath_main(args)


def _bench_args(p: argparse.ArgumentParser) -> None:
    from robodata.bench.__main__ import configure

    configure(p)


@command("bench", _bench_args)
def _bench(args: argparse.Namespace) -> int:
    """Benchmark report: GOP-size sweep and reads against the LeRobot v3 layout."""
    import shlex

    from robodata.bench.__main__ import run

    return run(args, shlex.join(["robodata", *sys.argv[1:]]))


def _export_lerobot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="robodata dataset root: a directory or s3://bucket/prefix")
    p.add_argument("root", help="new local folder for the LeRobot v3.0 dataset")
    p.add_argument("--version", default=None, help="a version number or a tag (default: latest)")
    p.add_argument("--episodes-per-file", type=int, default=50)
    p.add_argument("--vcodec", default="libsvtav1")
    p.add_argument("--crf", type=int, default=30)
    p.add_argument("--g", type=int, default=2, help="keyframe interval of the exported MP4s")
    p.add_argument(
        "--rate",
        choices=["control", "camera"],
        default="control",
        help="frames at the control rate (exact round trip, default) or one per camera frame, as LeRobot records",
    )


@command("export-lerobot", _export_lerobot_args)
def _export_lerobot(args: argparse.Namespace) -> int:
    """Export a dataset version as a LeRobot v3.0 dataset."""
    from robodata.interop.lerobot_export import export_lerobot
    from robodata.storage import storage_options_from_env

    result = export_lerobot(
        args.dataset,
        args.root,
        version=_version(args.version),
        episodes_per_file=args.episodes_per_file,
        vcodec=args.vcodec,
        crf=args.crf,
        g=args.g,
        storage_options=storage_options_from_env() or None,
        rate=args.rate,
    )
    print(
        f"exported version {result.dataset_version}: {result.episodes} episodes, {result.frames} frames "
        f"at {result.fps} fps to {result.root}"
    )
    return 0


def _import_lerobot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("root", help="LeRobot v3 dataset root: a directory or s3://bucket/prefix")
    p.add_argument("dataset", help="robodata dataset root to import into: a directory or s3://bucket/prefix")
    p.add_argument("--repo-id", default=None, help="recorded in the schema metadata (default: ROOT's name)")
    p.add_argument("--episodes", type=int, nargs="*", default=None, help="LeRobot episodes (all by default)")
    _encoding_args(p)


@command("import-lerobot", _import_lerobot_args)
def _import_lerobot(args: argparse.Namespace) -> int:
    """Import a LeRobot v3 dataset; episodes already in the dataset are skipped."""
    from robodata.interop.lerobot_import import import_lerobot
    from robodata.storage import storage_options_from_env

    result = import_lerobot(
        args.root,
        args.dataset,
        repo_id=args.repo_id,
        episodes=args.episodes,
        gop_size=args.gop_size,
        crf=args.crf,
        preset=args.preset,
        storage_options=storage_options_from_env() or None,
    )
    _print_import(result)
    return 0


def _import_hdf5_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="an ALOHA / ACT HDF5 file or a glob, e.g. 'rec/episode_*.hdf5' or s3://")
    p.add_argument("dataset", help="robodata dataset root: a directory or s3://bucket/prefix")
    p.add_argument("--episodes", type=int, nargs="*", default=None, help="source episodes (all by default)")
    p.add_argument("--control-hz", type=float, default=50.0, help="the recording's control rate")
    p.add_argument("--joint-names", nargs="+", default=None, help="default: ALOHA's 14 joints")
    p.add_argument("--task", default="")
    p.add_argument("--jpeg-channel-order", choices=["bgr", "rgb"], default="bgr", help="bgr: OpenCV wrote it")
    p.add_argument("--start-index", type=int, default=0, help="added to N of episode_N.hdf5")
    _encoding_args(p)


@command("import-hdf5", _import_hdf5_args)
def _import_hdf5(args: argparse.Namespace) -> int:
    """Import ALOHA / ACT HDF5 episodes; episodes already in the dataset are skipped."""
    from robodata.interop.hdf5_import import import_hdf5
    from robodata.storage import storage_options_from_env

    result = import_hdf5(
        args.path,
        args.dataset,
        episodes=args.episodes,
        control_hz=args.control_hz,
        joint_names=args.joint_names,
        task=args.task,
        jpeg_channel_order=args.jpeg_channel_order,
        start_index=args.start_index,
        gop_size=args.gop_size,
        crf=args.crf,
        preset=args.preset,
        storage_options=storage_options_from_env() or None,
    )
    _print_import(result)
    return 0


def _register_uploads_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="dataset root (default: $ROBODATA_ROOT, else ./demo/dataset)")
    p.add_argument("--uploads", default=None, help="uploads root (default: $ROBODATA_UPLOADS, else beside the dataset)")


@command("register-uploads", _register_uploads_args)
def _register_uploads(args: argparse.Namespace) -> int:
    """Add a Dagster partition (in $DAGSTER_HOME's instance) for every complete upload."""
    from robodata.defs.episodes import register_uploads_from_cli

    for key in register_uploads_from_cli(args.dataset, args.uploads):
        print(key)
    return 0


def _register_imports_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="a LeRobot v3 root or an HDF5 glob (local or s3://)")
    p.add_argument("--format", choices=["lerobot", "aloha_hdf5"], default="lerobot")


@command("register-imports", _register_imports_args)
def _register_imports(args: argparse.Namespace) -> int:
    """Add an imported_episodes partition (in $DAGSTER_HOME's instance) per source episode."""
    from robodata.defs.interop import register_import_partitions_from_cli

    for key in register_import_partitions_from_cli(args.source, args.format):
        print(key)
    return 0


def _bench_loader_args(p: argparse.ArgumentParser) -> None:
    from robodata.bench.loader import configure

    configure(p)


@command("bench-loader", _bench_loader_args)
def _bench_loader(args: argparse.Namespace) -> int:
    """Training DataLoader samples/s (0/1/2 workers, batch 32/128) and memory over a long run."""
    from robodata.bench.loader import main as loader_main

    return loader_main(args)


def _bench_sensor_args(p: argparse.ArgumentParser) -> None:
    from robodata.bench.sensor_scale import configure

    configure(p)


@command("bench-sensor", _bench_sensor_args)
def _bench_sensor(args: argparse.Namespace) -> int:
    """Upload sensor tick time and cursor size at thousands of uploads on a local moto S3 server."""
    from robodata.bench.sensor_scale import main as sensor_main

    return sensor_main(args)


def _bench_landing_args(p: argparse.ArgumentParser) -> None:
    from robodata.bench.landing import configure

    configure(p)


@command("bench-landing", _bench_landing_args)
def _bench_landing(args: argparse.Namespace) -> int:
    """Upload-to-visible time of one episode through the ingest job, per executor."""
    from robodata.bench.landing import main as landing_main

    return landing_main(args)


def _duration(text: str):
    """'7d', '12h', '30m', '45s' or '0' as a timedelta."""
    from datetime import timedelta

    units = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
    try:
        if text.strip() == "0":
            return timedelta(0)
        return timedelta(**{units[text.strip()[-1]]: float(text.strip()[:-1])})
    except (KeyError, ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 7d, 12h, 30m or 0") from None


def _compact_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("uri", help="dataset root (a directory or s3://)")
    p.add_argument("--older-than", type=_duration, default="7d",
                   help="remove untagged versions older than this (default 7d; tagged versions are kept)")
    p.add_argument("--retain-versions", type=int, default=None, help="keep at least this many newest versions")
    p.add_argument("--gc-min-age", type=_duration, default="1h",
                   help="keep unreferenced GOPs younger than this: an ingest may be about to commit (default 1h)")


@command("compact", _compact_args)
def _compact(args: argparse.Namespace) -> int:
    """Compact both tables, remove old untagged versions, collect unreferenced GOPs, refresh indexes."""
    from robodata.edits.upkeep import upkeep_dataset
    from robodata.storage import storage_options_from_env

    report = upkeep_dataset(
        args.uri,
        older_than=args.older_than,
        retain_versions=args.retain_versions,
        gc_min_age=args.gc_min_age,
        storage_options=storage_options_from_env() or None,
    )
    print(report.summary())
    return 0


def _bench_upkeep_args(p: argparse.ArgumentParser) -> None:
    from robodata.bench.upkeep_scale import configure

    configure(p)


@command("bench-upkeep", _bench_upkeep_args)
def _bench_upkeep(args: argparse.Namespace) -> int:
    """Open, ds[i], a 64-row batch and an episode filter before and after upkeep, local and s3://."""
    from robodata.bench.upkeep_scale import main as upkeep_main

    return upkeep_main(args)


def _version(value: str | None) -> int | str | None:
    if value is None:
        return None
    return int(value) if value.isdigit() else value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="robodata", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (configure, run) in COMMANDS.items():
        p = sub.add_parser(name, help=(run.__doc__ or "").strip() or None)
        configure(p)
        p.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        from robodata.storage import redact

        print(f"robodata {args.command}: {redact(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

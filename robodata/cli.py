"""The ``robodata`` command: sample data, ingest, inspect, edit, demo and benchmarks."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Callable

from tqdm import tqdm

from robodata.errors import InvalidArgumentError, RoboDataError
from robodata.storage.deadlines import exit_now_if_abandoned

COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" to an option's help, except for flags and options without a default
    (their help says what happens when they are left out)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.nargs == 0 or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def command(name: str, configure: Callable[[argparse.ArgumentParser], None]):
    """Register ``run`` as subcommand ``name``; its docstring is the command's help and description."""

    def register(run: Callable[[argparse.Namespace], int]):
        def configure_with_help(p: argparse.ArgumentParser) -> None:
            p.formatter_class = _HelpFormatter
            p.description = p.description or (run.__doc__ or "").strip() or None
            configure(p)

        COMMANDS[name] = (configure_with_help, run)
        return run

    return register


def _encoding_args(p: argparse.ArgumentParser) -> None:
    """GOP size and quality for commands that encode video. Left out, each keeps the dataset's own
    value (a new dataset: EncoderSettings' defaults)."""
    from robodata.codec import CODECS, EncoderSettings

    defaults = EncoderSettings()
    p.add_argument(
        "--gop-size",
        type=int,
        help=f"frames per closed GOP, the most a random read decodes (default: the dataset's; new: {defaults.gop_size})",
    )
    p.add_argument(
        "--crf",
        type=int,
        help=f"constant rate factor: lower is better quality, more bytes (default: the dataset's; new: {defaults.crf})",
    )
    p.add_argument(
        "--preset",
        help=f"encoder preset: slower presets make smaller files (default: the dataset's; new: {defaults.preset})",
    )
    p.add_argument(
        "--codec",
        choices=sorted(CODECS),
        help=f"video codec of the GOPs (default: the dataset's; new: {defaults.codec})",
    )


def _encoder_settings(args: argparse.Namespace, dataset_uri: str, storage_options: dict | None):
    """The EncoderSettings for writing into ``dataset_uri``: its own, with what the
    ``_encoding_args`` options ask for (None when they ask for nothing: the writer reads them)."""
    from robodata.codec import EncoderSettings
    from robodata.ingest import requested_settings

    asked = {name: getattr(args, name) for name in ("gop_size", "crf", "preset", "codec")}
    if all(value is None for value in asked.values()):
        return None
    try:  # the settings' own range checks (codec/ raises ValueError: it imports nothing of robodata)
        EncoderSettings(**{name: value for name, value in asked.items() if value is not None})
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from None
    return requested_settings(
        dataset_uri, storage_options, gop_size=args.gop_size, crf=args.crf, preset=args.preset, codec=args.codec
    )


def _print_import(result) -> None:
    changed = f", {result.changed} again as their source changed" if result.changed else ""
    print(
        f"imported episodes {result.imported} ({result.rows} rows){changed}, skipped {result.skipped} "
        f"already present; dataset version {result.frames_version}"
    )


def _sample_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", help="folder or s3:// prefix to write one upload folder per episode into")
    p.add_argument("--episodes", type=int, default=4, help="how many episodes to write")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed writes the same episodes")
    p.add_argument("--seconds", type=float, default=4.0, help="length of each episode")
    p.add_argument("--start-index", type=int, default=0, help="episode_index of the first episode")


@command("sample-data", _sample_data_args)
def _sample_data(args: argparse.Namespace) -> int:
    """Write synthetic episodes in the upload format: three cameras, 14-DoF state and action."""
    import numpy as np

    from robodata.sample_data import write_sample_episode_to
    from robodata.storage import env_storage_options

    options = env_storage_options()
    for i in tqdm(range(args.episodes), desc="sample episodes", unit="episode"):
        index = args.start_index + i
        write_sample_episode_to(args.out, index, np.random.default_rng([args.seed, index]), args.seconds, options)
    print(f"wrote {args.episodes} episodes to {args.out}")
    return 0


def _ingest_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("uploads", nargs="+", help="upload folders (each holds episode.json)")
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument(
        "--replace", action="store_true", help="let an upload replace a different episode that holds its episode_index"
    )
    _encoding_args(p)


@command("ingest", _ingest_args)
def _ingest(args: argparse.Namespace) -> int:
    """Ingest upload folders into a dataset (created on first use); one new version per episode."""
    from robodata.ingest import ingest_episode
    from robodata.storage import env_storage_options

    options = env_storage_options()
    for upload in tqdm(args.uploads, desc="ingest", unit="episode"):
        result = ingest_episode(
            upload,
            args.dataset,
            settings=_encoder_settings(args, args.dataset, options),
            storage_options=options,
            replace=args.replace,
        )
        labels = ""
        if result.labels_kept_rows or result.labels_dropped_rows:
            labels = (
                f", labelled rows: {result.labels_kept_rows} kept, "
                f"{result.labels_dropped_rows} dropped (their frame_index no longer exists)"
            )
        summary = f"{result.episode_id}: {result.rows} rows, {result.gops} GOPs, version {result.frames_version}"
        tqdm.write(summary + labels)
        for adjustment in result.camera_adjustments:  # stored with the episode, too
            tqdm.write("".join(f"  {note}\n" for note in adjustment["done"]).rstrip("\n"))
    return 0


def _dataset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("--version", default=None, help="a version number or a tag (default: latest)")


@command("info", _dataset_args)
def _info(args: argparse.Namespace) -> int:
    """Print a dataset's episodes, rows, cameras, bytes, versions and tags as JSON."""
    from robodata.storage import env_storage_options
    from robodata.summary import dataset_summary

    summary = dataset_summary(args.dataset, version=_version(args.version), storage_options=env_storage_options())
    print(json.dumps(summary, indent=2))
    return 0


def _add_rendition_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("size", help="WIDTHxHEIGHT of the rendition, e.g. 224x224 or 320x240 (even sizes)")
    p.add_argument("--camera", action="append", help="a camera to add it to (repeat; default: every camera)")


@command("add-rendition", _add_rendition_args)
def _add_rendition(args: argparse.Namespace) -> int:
    """Add a training rendition (smaller copies of the camera GOPs) to every episode; readers then
    read frames of that size with resolution=(H, W) without decoding the full frames."""
    from robodata.ingest.renditions import add_rendition
    from robodata.storage import env_storage_options

    result = add_rendition(args.dataset, args.size, args.camera, env_storage_options())
    print(
        f"rendition {result.rendition} of {', '.join(result.cameras)}: {result.gops_written} GOPs "
        f"({result.bytes_written} bytes) over {result.episodes} episodes; dataset version {result.frames_version}"
    )
    return 0


def _delete_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("episodes", nargs="+", type=int, help="episode_index of each episode to delete")


@command("delete", _delete_args)
def _delete(args: argparse.Namespace) -> int:
    """Delete episodes in one new version; older versions still hold them until cleaned up."""
    from robodata.edits import delete_episodes
    from robodata.storage import env_storage_options

    version = delete_episodes(args.dataset, args.episodes, storage_options=env_storage_options())
    print(f"deleted episodes {args.episodes}; dataset is now at version {version}")
    return 0


def _tag_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("name", help="the tag, e.g. the training run that used this version")
    p.add_argument("--version", type=int, default=None, help="the version to tag (default: latest)")


@command("tag", _tag_args)
def _tag(args: argparse.Namespace) -> int:
    """Name a dataset version so `--version NAME` (and robodata.open) find it again."""
    from robodata.reader import open_dataset
    from robodata.storage import env_storage_options

    ds = open_dataset(args.dataset, version=args.version, storage_options=env_storage_options())
    print(f"tagged version {ds.tag(args.name)} as {args.name!r}")
    return 0


def _gc_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("--dry-run", action="store_true", help="count what would be deleted, delete nothing")
    p.add_argument(
        "--min-age-minutes",
        type=float,
        default=60.0,
        help="keep unreferenced GOPs younger than this: an ingest may still be running",
    )


@command("gc", _gc_args)
def _gc(args: argparse.Namespace) -> int:
    """Delete GOP rows that no retained version of the frames table references."""
    from datetime import timedelta

    from robodata.edits import collect_garbage
    from robodata.storage import env_storage_options

    report = collect_garbage(
        args.dataset,
        dry_run=args.dry_run,
        storage_options=env_storage_options(),
        min_age=timedelta(minutes=args.min_age_minutes),
    )
    verb = "would delete" if args.dry_run else "deleted"
    removable = report.unreferenced - report.too_recent
    print(
        f"{report.unreferenced} unreferenced GOP rows; {verb} {removable}, kept {report.too_recent} younger "
        f"than {args.min_age_minutes:g} min (gops.lance version {report.gops_version}); "
        f"{'would remove' if args.dry_run else 'removed'} {report.leases_removed} lease files of crashed ingests, "
        f"{report.duplicate_gops} duplicate GOP rows and {report.data_files_removed} data files no version lists"
    )
    return 0


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workdir", default="demo", help="folder for uploads, dataset and DAGSTER_HOME")
    p.add_argument("--episodes", type=int, default=4, help="sample episodes to write and ingest")
    p.add_argument("--seconds", type=float, default=4.0, help="length of each sample episode")


@command("demo", _demo_args)
def _demo(args: argparse.Namespace) -> int:
    """The README's demo: sample uploads ingested through Dagster's assets, sensor and checks."""
    from robodata.demo import run_demo

    run_demo(args.workdir, episodes=args.episodes, seconds=args.seconds)
    return 0


def _export_lerobot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="robodata dataset root: a directory or s3://bucket/prefix")
    p.add_argument("root", help="new local folder for the LeRobot v3.0 dataset")
    p.add_argument("--version", default=None, help="a version number or a tag (default: latest)")
    p.add_argument("--episodes-per-file", type=int, default=50, help="episodes per LeRobot data / video file")
    p.add_argument("--vcodec", default="libsvtav1", help="FFmpeg encoder of the exported MP4s")
    p.add_argument("--crf", type=int, default=30, help="quality of the exported MP4s: lower is better, bigger")
    p.add_argument("--g", type=int, default=2, help="keyframe interval of the exported MP4s")
    p.add_argument(
        "--rate",
        choices=["control", "camera"],
        default="control",
        help="frames at the control rate (exact round trip) or one per camera frame, as LeRobot records",
    )


@command("export-lerobot", _export_lerobot_args)
def _export_lerobot(args: argparse.Namespace) -> int:
    """Export a dataset version as a LeRobot v3.0 dataset."""
    from robodata.interop.lerobot_export import export_lerobot
    from robodata.storage import env_storage_options

    result = export_lerobot(
        args.dataset,
        args.root,
        version=_version(args.version),
        episodes_per_file=args.episodes_per_file,
        vcodec=args.vcodec,
        crf=args.crf,
        g=args.g,
        storage_options=env_storage_options(),
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
    from robodata.storage import env_storage_options

    result = import_lerobot(
        args.root,
        args.dataset,
        repo_id=args.repo_id,
        episodes=args.episodes,
        settings=_encoder_settings(args, args.dataset, env_storage_options()),
        storage_options=env_storage_options(),
    )
    _print_import(result)
    return 0


def _import_hdf5_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="an ALOHA / ACT HDF5 file or a glob, e.g. 'rec/episode_*.hdf5' or s3://")
    p.add_argument("dataset", help="robodata dataset root: a directory or s3://bucket/prefix")
    p.add_argument("--episodes", type=int, nargs="*", default=None, help="source episodes (all by default)")
    p.add_argument("--control-hz", type=float, default=50.0, help="the recording's control rate")
    p.add_argument("--joint-names", nargs="+", default=None, help="default: ALOHA's 14 joints")
    p.add_argument("--task", default="", help="task name stored on every imported row")
    p.add_argument(
        "--jpeg-channel-order",
        choices=["bgr", "rgb"],
        default="bgr",
        help="channel order of JPEG-compressed frames; bgr when OpenCV wrote them",
    )
    p.add_argument("--start-index", type=int, default=0, help="added to N of episode_N.hdf5")
    _encoding_args(p)


@command("import-hdf5", _import_hdf5_args)
def _import_hdf5(args: argparse.Namespace) -> int:
    """Import ALOHA / ACT HDF5 episodes; episodes already in the dataset are skipped."""
    from robodata.interop.hdf5_import import import_hdf5
    from robodata.storage import env_storage_options

    result = import_hdf5(
        args.path,
        args.dataset,
        episodes=args.episodes,
        control_hz=args.control_hz,
        joint_names=args.joint_names,
        task=args.task,
        jpeg_channel_order=args.jpeg_channel_order,
        start_index=args.start_index,
        settings=_encoder_settings(args, args.dataset, env_storage_options()),
        storage_options=env_storage_options(),
    )
    _print_import(result)
    return 0


def _register_uploads_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="dataset root (default: $ROBODATA_ROOT, else ./demo/dataset)")
    p.add_argument("--uploads", default=None, help="uploads root (default: $ROBODATA_UPLOADS, else beside the dataset)")


@command("register-uploads", _register_uploads_args)
def _register_uploads(args: argparse.Namespace) -> int:
    """Add a Dagster partition (in $DAGSTER_HOME's instance) for every complete upload (every upload
    batch with ROBODATA_PARTITIONING=batch); no run is started."""
    from robodata.dagster_home import register_uploads_from_cli

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
    from robodata.dagster_home import migrate_partitioning_from_cli

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
    from robodata.dagster_home import register_import_partitions_from_cli

    for key in register_import_partitions_from_cli(args.source, args.format):
        print(key)
    return 0


def _verify_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("--version", default=None, help="a version number or a tag (default: the latest)")
    p.add_argument("--decode", action="store_true", help="also decode every GOP and check frame counts and sizes")


@command("verify", _verify_args)
def _verify(args: argparse.Namespace) -> int:
    """Check every GOP's checksum (and with --decode its frames) and every row's references; exit 1 on a problem."""
    from robodata.integrity import verify_dataset
    from robodata.storage import redact, storage_options_from_env

    options = storage_options_from_env() or None
    report = verify_dataset(args.dataset, version=_version(args.version), decode=args.decode, storage_options=options)
    print(redact(report.summary()))
    return 0 if report.ok else 1


def _view_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("--episode", type=int, required=True, help="episode_index of the episode to show")
    p.add_argument("--version", default=None, help="a version number or a tag (default: latest)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="write the page to this .html file (a path or s3://)")
    where.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1 until Ctrl-C")
    p.add_argument("--port", type=int, default=0, help="port for --serve; 0 picks a free one")


@command("view", _view_args)
def _view(args: argparse.Namespace) -> int:
    """Look at an episode: a self-contained page with its cameras in sync, state, action and labels."""
    from robodata.storage import env_storage_options

    options = env_storage_options()
    if args.out:
        from robodata.view import write_episode_page

        out = write_episode_page(
            args.dataset, args.episode, args.out, version=_version(args.version), storage_options=options
        )
        print(f"wrote episode {args.episode} to {out}")
        return 0
    from robodata.view import PageServer, episode_page

    page = episode_page(args.dataset, args.episode, version=_version(args.version), storage_options=options)
    try:
        server = PageServer(page, args.port)
    except OSError as exc:
        raise InvalidArgumentError(f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    with server:
        print(f"serving episode {args.episode} at {server.url} (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


def _annotate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("labels", help="Parquet, CSV or JSON-lines file: episode_index, optional frame_index, label columns")


@command("annotate", _annotate_args)
def _annotate(args: argparse.Namespace) -> int:
    """Add or correct label columns from a file; labels for rows the dataset lacks are reported."""
    from robodata.edits import add_annotations
    from robodata.edits.label_files import read_labels
    from robodata.storage import env_storage_options

    options = env_storage_options()
    labels = read_labels(args.labels, args.dataset, storage_options=options)
    result = add_annotations(args.dataset, labels, storage_options=options)
    print(f"{args.labels}: {result.describe()}")
    return 0


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
    p.add_argument(
        "--older-than",
        type=_duration,
        default="7d",
        help="remove untagged versions older than this (default 7d; tagged versions are kept)",
    )
    p.add_argument("--retain-versions", type=int, default=None, help="keep at least this many newest versions")
    p.add_argument(
        "--gc-min-age",
        type=_duration,
        default="1h",
        help="keep unreferenced GOPs younger than this: an ingest may be about to commit (default 1h)",
    )


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
    s3-client, upkeep, sensor, landing, batches; `robodata bench SCENARIO --help` shows a scenario's options."""
    from robodata.source_checkout import require_benchmarks

    require_benchmarks()
    from benchmarks.__main__ import main as run_scenario

    return run_scenario(args.scenario, prog="robodata bench")


def _version(value: str | None) -> int | str | None:
    if value is None:
        return None
    return int(value) if value.isdigit() else value


def main(argv: list[str] | None = None) -> int:
    """Run one ``robodata`` command. robodata's own errors (RoboDataError: a bad upload, a storage
    failure, a missing episode) are one line on stderr and exit code 2; anything else is a bug and
    keeps its traceback. ``--debug`` shows the traceback for robodata's errors too."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="robodata", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show the traceback of robodata's own errors too")
    sub = parser.add_subparsers(dest="command", required=True)
    # Only the command being run configures its options: a command whose options need an extra
    # (Dagster, a benchmark) never stops the others from running without it.
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)
    for name, (configure, run) in COMMANDS.items():
        p = sub.add_parser(name, help=(run.__doc__ or "").strip() or None)
        if name == chosen:
            configure(p)
            p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except RoboDataError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"robodata {args.command}: {one_line_error(exc)}", file=sys.stderr)
        if argv is None:  # the robodata command itself (not a caller of main): see exit_now_if_abandoned
            exit_now_if_abandoned(2)
        return 2


def one_line_error(exc: BaseException) -> str:
    """``exc``'s message on one line, credentials redacted (a store's multi-line XML answer
    included). Open progress bars are closed first, so the message starts its own line.

    >>> one_line_error(FileNotFoundError("uploads/ep/states.parquet: is missing"))
    'uploads/ep/states.parquet: is missing'
    """
    from robodata.storage import redact

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
    text = exc.args[0] if isinstance(exc, KeyError) and len(exc.args) == 1 else exc
    return redact(" ".join(str(text).split()) or type(exc).__name__)


if __name__ == "__main__":
    sys.exit(main())

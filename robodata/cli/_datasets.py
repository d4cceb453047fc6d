"""Inspecting and editing a dataset: ``info``, ``tag``, ``delete``, ``verify``, ``gc``, ``compact``,
``add-rendition``, ``annotate`` and ``view``."""

from __future__ import annotations

import argparse
import json

from robodata.cli._registry import command, version_or_tag
from robodata.errors import InvalidArgumentError


def _dataset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset root: a directory or s3://bucket/prefix")
    p.add_argument("--version", default=None, help="a version number or a tag (default: latest)")


@command("info", _dataset_args)
def _info(args: argparse.Namespace) -> int:
    """Print a dataset's episodes, rows, cameras, bytes, versions and tags as JSON."""
    from robodata._summary import dataset_summary
    from robodata.storage import env_storage_options

    summary = dataset_summary(args.dataset, version=version_or_tag(args.version), storage_options=env_storage_options())
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
    from robodata.ingest._renditions import add_rendition
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
    report = verify_dataset(
        args.dataset, version=version_or_tag(args.version), decode=args.decode, storage_options=options
    )
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
            args.dataset, args.episode, args.out, version=version_or_tag(args.version), storage_options=options
        )
        print(f"wrote episode {args.episode} to {out}")
        return 0
    from robodata.view import PageServer, episode_page

    page = episode_page(args.dataset, args.episode, version=version_or_tag(args.version), storage_options=options)
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
    from robodata.edits._label_files import read_labels
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
    from robodata.edits._upkeep import upkeep_dataset
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

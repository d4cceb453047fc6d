"""Getting episodes in and out: ``sample-data``, ``ingest``, ``import-lerobot``, ``import-hdf5`` and
``export-lerobot``, with the encoding options the commands that write video share."""

from __future__ import annotations

import argparse

from tqdm import tqdm

from robodata.cli._registry import command, version_or_tag
from robodata.errors import InvalidArgumentError


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
    from robodata.lerobot import export_lerobot
    from robodata.storage import env_storage_options

    result = export_lerobot(
        args.dataset,
        args.root,
        version=version_or_tag(args.version),
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
    from robodata.lerobot import import_lerobot
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
    from robodata.interop._hdf5_import import import_hdf5
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

"""``robodata-train``: LeRobot's own ``lerobot-train``, unchanged, on a robodata dataset.

LeRobot 0.6.1 has no dataset plugin hook (its plugins are robots, cameras, teleoperators,
policies and envs), so this wrapper substitutes the two names LeRobot's dataset factory builds
datasets with (``lerobot.datasets.factory.LeRobotDatasetMetadata`` and ``LeRobotDataset``) and
then runs ``lerobot.scripts.lerobot_train.main`` with the same command line. A dataset whose
``--dataset.repo_id`` (or ``--dataset.root``) is a robodata dataset (an ``s3://...`` URI or a
folder holding ``frames.lance``) is opened as ``LeRobotCompatDataset``, pinned to
``--dataset.revision`` (a tag or a version number; default: the latest, pinned at start);
every other dataset goes to LeRobot as before. Everything else (policy, processors, sampler,
accelerate, checkpoints, the loss) is LeRobot's code.

    robodata-train --dataset.repo_id=s3://bucket/demo --dataset.revision=run-42 \\
        --policy.type=act --policy.push_to_hub=false --steps=1000 --batch_size=8
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from robodata.storage import is_remote


def robodata_uri(repo_id: object, root: object = None) -> str | None:
    """The robodata dataset a LeRobot dataset config names, or None for a LeRobot dataset."""
    for candidate in (root, repo_id):
        if not isinstance(candidate, str | os.PathLike):
            continue
        text = os.fspath(candidate)
        if "://" in text and is_remote(text):
            return text
        if os.path.isdir(os.path.join(text, "frames.lance")):
            return text
    return None


def pinned(revision: str | None) -> int | str | None:
    """A LeRobot ``revision`` as a robodata version: a number, a tag, or None (the latest)."""
    if revision is None or revision == "":
        return None
    return int(revision) if str(revision).isdigit() else str(revision)


def metadata_factory(original: Callable) -> Callable:
    """``LeRobotDatasetMetadata`` that opens robodata datasets as ``LeRobotCompatDataset.meta``."""

    def make(repo_id, root=None, revision=None, *args, **kwargs):
        uri = robodata_uri(repo_id, root)
        if uri is None:
            return original(repo_id, root, revision, *args, **kwargs)
        from robodata.lerobot._compat_dataset import LeRobotCompatDataset

        return LeRobotCompatDataset(uri, version=pinned(revision)).meta

    return make


def dataset_factory(original: Callable) -> Callable:
    """``LeRobotDataset`` that opens robodata datasets as ``LeRobotCompatDataset``."""

    def make(repo_id, root=None, episodes=None, episode_filter=None, *args, **kwargs):
        uri = robodata_uri(repo_id, root)
        if uri is None:
            return original(repo_id, root, episodes, episode_filter, *args, **kwargs)
        from robodata.lerobot._compat_dataset import LeRobotCompatDataset

        version = pinned(kwargs.get("revision"))
        if episode_filter is not None:
            meta = LeRobotCompatDataset(uri, version=version).meta
            episodes = meta.filter_episodes(episode_filter, candidates=episodes)
            if not episodes:
                raise ValueError(f"{uri}: the episode filter matched no episode")
        return LeRobotCompatDataset(
            uri,
            version=version,
            episodes=episodes,
            delta_timestamps=kwargs.get("delta_timestamps"),
            image_transforms=kwargs.get("image_transforms"),
            tolerance_s=kwargs.get("tolerance_s", 1e-4),
            return_uint8=kwargs.get("return_uint8", False),
        )

    return make


def install() -> None:
    """Make LeRobot's dataset factory open robodata datasets (idempotent)."""
    from lerobot.datasets import factory

    if getattr(factory, "_robodata_installed", False):
        return
    factory.LeRobotDatasetMetadata = metadata_factory(factory.LeRobotDatasetMetadata)
    factory.LeRobotDataset = dataset_factory(factory.LeRobotDataset)
    factory._robodata_installed = True


def main(argv: list[str] | None = None) -> None:
    """``lerobot-train`` with robodata datasets: the same arguments, LeRobot's training loop."""
    try:
        from lerobot.scripts import lerobot_train
    except ImportError as exc:
        raise SystemExit(f"robodata-train needs LeRobot: pip install 'lerobot[training]' ({exc})") from exc
    install()
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    lerobot_train.main()


if __name__ == "__main__":
    main()

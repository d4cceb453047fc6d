"""``robodata-train``: LeRobot's own ``lerobot-train``, unchanged, on a robodata dataset.

LeRobot 0.6.1 has no dataset plugin hook (its plugins are robots, cameras, teleoperators,
policies and envs), so this wrapper substitutes the two names LeRobot's dataset factory builds
datasets with (``lerobot.datasets.factory.LeRobotDatasetMetadata`` and ``LeRobotDataset``) and
then runs ``lerobot.scripts.lerobot_train.main`` with the same command line. A dataset whose
``--dataset.repo_id`` (or ``--dataset.root``) is a robodata dataset (an ``s3://...`` URI or a
folder holding ``frames.lance``) is opened as ``LeRobotCompatDataset``, pinned to
``--dataset.revision`` (a tag or a version number; default: the latest, pinned at start);
every other dataset goes to LeRobot as before. Everything else (policy, processors,
accelerate, checkpoints, the loss) is LeRobot's code.

The training order: for a robodata dataset, the sampler LeRobot's script builds
(``EpisodeAwareSampler(..., shuffle=True, seed=cfg.seed)``, resumed with ``load_state_dict``) is
the decode-once block order instead (``LeRobotCompatDataset.item_sampler``, laid out for
``--batch_size``, ``--num_workers`` and accelerate's ranks), so each GOP is decoded once per epoch
per DataLoader worker. ``ROBODATA_TRAIN_ORDER=uniform`` keeps LeRobot's own uniform sampler.

    robodata-train --dataset.repo_id=s3://bucket/demo --dataset.revision=run-42 \\
        --policy.type=act --policy.push_to_hub=false --steps=1000 --batch_size=8
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from robodata.storage import is_remote
from robodata.torch._item_order import BlockItemSampler


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


ORDER_VARIABLE = "ROBODATA_TRAIN_ORDER"
ORDERS = ("block", "uniform")


def training_order() -> str:
    """The order robodata-train reads robodata datasets in: ``block`` (default) or ``uniform``."""
    order = os.environ.get(ORDER_VARIABLE, "block") or "block"
    if order not in ORDERS:
        raise SystemExit(f"{ORDER_VARIABLE} must be one of {ORDERS}, got {order!r}")
    return order


def process_place() -> tuple[int, int]:
    """(rank, world size) of this training process, as accelerate and torchrun set them."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def sampler_factory(original: Callable, training: dict) -> Callable:
    """LeRobot's ``EpisodeAwareSampler`` that, for the robodata dataset of this run
    (``training["dataset"]``, made with ``training["cfg"]``), is the decode-once block order."""

    def make(
        dataset_from_indices,
        dataset_to_indices,
        episode_indices_to_use=None,
        drop_n_first_frames=0,
        drop_n_last_frames=0,
        shuffle=False,
        seed=0,
        absolute_to_relative_idx=None,
    ):
        from robodata.lerobot._compat_dataset import LeRobotCompatDataset

        dataset, cfg = training.get("dataset"), training.get("cfg")
        if not isinstance(dataset, LeRobotCompatDataset) or not shuffle or training_order() == "uniform":
            return original(
                dataset_from_indices,
                dataset_to_indices,
                episode_indices_to_use=episode_indices_to_use,
                drop_n_first_frames=drop_n_first_frames,
                drop_n_last_frames=drop_n_last_frames,
                shuffle=shuffle,
                seed=seed,
                absolute_to_relative_idx=absolute_to_relative_idx,
            )
        rank, world_size = process_place()
        logging.info(
            f"robodata-train: {dataset.uri} in the decode-once block order ({ORDER_VARIABLE}=uniform: LeRobot's)"
        )
        return dataset.item_sampler(
            batch_size=cfg.batch_size,
            num_workers=cfg.num_workers,
            rank=rank,
            world_size=world_size,
            seed=seed,
            drop_n_first_frames=drop_n_first_frames,
            drop_n_last_frames=drop_n_last_frames,
        )

    return make


def install_training_order(script) -> None:
    """Make LeRobot's training script (``lerobot.scripts.lerobot_train``) read robodata datasets
    in the decode-once order: it remembers the dataset and config ``make_train_eval_datasets``
    made, and its ``EpisodeAwareSampler`` becomes ``sampler_factory``'s (idempotent)."""
    if getattr(script, "_robodata_order_installed", False):
        return
    training: dict = {}
    make_datasets = script.make_train_eval_datasets

    def make_train_eval_datasets(cfg, *args, **kwargs):
        made = make_datasets(cfg, *args, **kwargs)
        training.update(dataset=made[0], cfg=cfg)
        return made

    script.make_train_eval_datasets = make_train_eval_datasets
    script.EpisodeAwareSampler = sampler_factory(script.EpisodeAwareSampler, training)
    install_order_resume(script, training)
    script._robodata_order_installed = True


# --- resume: where the decode-once order stands, kept beside LeRobot's checkpoint ---------------
ORDER_STATE_FILE = "robodata_order.json"


def save_order_state(sampler: BlockItemSampler, checkpoint_dir: str | os.PathLike, step: int) -> Path:
    """Write ``robodata_order.json`` in ``checkpoint_dir``: the epoch and items the order had
    handed out after ``step`` steps, with the layout (batch size, workers, ranks, window) they
    count in, so a resume on another layout re-plans exactly the unread items. (LeRobot keeps only
    the step, and its ``{"epoch", "start_index"}`` counts items in the layout of the resumed run.)"""
    epoch, start = sampler.position_at_step(step)
    state = {"step": int(step), **sampler.resume_state(epoch, start)}
    path = Path(checkpoint_dir) / ORDER_STATE_FILE
    partial = path.with_name(f".{ORDER_STATE_FILE}.partial")
    partial.write_text(json.dumps(state, indent=1))
    os.replace(partial, path)  # whole or absent, never half-written
    return path


def load_order_state(sampler: BlockItemSampler, checkpoint_dir: str | os.PathLike) -> dict | None:
    """Continue the order where ``checkpoint_dir``'s ``robodata_order.json`` says it stood (None:
    the checkpoint has none, LeRobot's own position is used)."""
    path = Path(checkpoint_dir) / ORDER_STATE_FILE
    if not path.is_file():
        logging.warning(f"robodata-train: {path} is missing: resuming at LeRobot's position (exact in the same layout)")
        return None
    try:
        state = json.loads(path.read_text())
        sampler.restore(state)
    except (ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"robodata-train: cannot resume from {path}: {exc}") from exc
    logging.info(f"robodata-train: the order resumes at epoch {state['epoch']}, item {state['start_index']} ({path})")
    return state


def install_order_resume(script, training: dict) -> None:
    """Make LeRobot's training script keep the decode-once order's state in its checkpoints
    (``save_checkpoint`` also writes ``save_order_state``) and resume from it (the sampler its
    ``EpisodeAwareSampler`` makes on ``--resume=true`` loads ``load_order_state``, before LeRobot's
    own ``load_state_dict``, which it then outranks)."""
    make_sampler = script.EpisodeAwareSampler

    def make(*args, **kwargs):
        sampler = make_sampler(*args, **kwargs)
        if isinstance(sampler, BlockItemSampler):
            training["sampler"] = sampler
            cfg = training.get("cfg")
            if getattr(cfg, "resume", False) and getattr(cfg, "checkpoint_path", None) is not None:
                load_order_state(sampler, cfg.checkpoint_path)
        return sampler

    script.EpisodeAwareSampler = make
    if hasattr(script, "save_checkpoint"):
        script.save_checkpoint = order_saving_checkpoint(script.save_checkpoint, training)


def order_saving_checkpoint(original: Callable, training: dict) -> Callable:
    """LeRobot's ``save_checkpoint`` that also writes the order's state (``save_order_state``)."""
    signature = inspect.signature(original)

    def save(*args, **kwargs):
        result = original(*args, **kwargs)
        sampler = training.get("sampler")
        if isinstance(sampler, BlockItemSampler):
            called = signature.bind_partial(*args, **kwargs).arguments
            save_order_state(sampler, called["checkpoint_dir"], int(called["step"]))
        return result

    return save


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
    training_order()  # a wrong value fails before LeRobot starts
    install_training_order(lerobot_train)
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    lerobot_train.main()


if __name__ == "__main__":
    main()

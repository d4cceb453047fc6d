"""``robodata-train``: LeRobot's own ``lerobot-train``, unchanged, on a robodata dataset.

LeRobot 0.6.1 has no dataset plugin hook (its plugins are robots, cameras, teleoperators,
policies and envs), so this wrapper substitutes the two names LeRobot's dataset factory builds
datasets with (``lerobot.datasets.factory.LeRobotDatasetMetadata`` and ``LeRobotDataset``) and
then runs ``lerobot.scripts.lerobot_train.main`` with the same command line. A dataset whose
``--dataset.repo_id`` (or ``--dataset.root``) is a robodata dataset (an ``s3://...`` URI or a
folder holding ``frames.lance``) is opened as ``LeRobotCompatDataset``, pinned to
``--dataset.revision`` (a tag or a version number; default: the latest); every other dataset goes
to LeRobot as before. Everything else (policy, processors, accelerate, checkpoints, the loss) is
LeRobot's code.

The version: every run records the version it reads, as a tag ``robodata-train-v<N>`` that
becomes its ``dataset.revision`` (so the checkpoint's ``train_config.json`` holds it) and in the
training log; a resume reads that version or refuses (``robodata.lerobot._train_pin``).

The training order: for a robodata dataset, the sampler LeRobot's script builds
(``EpisodeAwareSampler(..., shuffle=True, seed=cfg.seed)``, resumed with ``load_state_dict``) is
the decode-once block order instead (``LeRobotCompatDataset.item_sampler``, laid out for
``--batch_size``, ``--num_workers`` and accelerate's ranks), so each GOP is decoded once per epoch
per DataLoader worker. ``--robodata.order=uniform`` keeps LeRobot's own uniform sampler;
``--robodata.window`` and ``--robodata.frame_size`` are robodata's other flags
(``robodata.lerobot._train_options``, ``robodata-train --help``).

    robodata-train --dataset.repo_id=s3://bucket/demo --dataset.revision=run-42 \\
        --policy.type=act --policy.push_to_hub=false --steps=1000 --batch_size=8 \\
        --robodata.frame_size=224x224
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from robodata.lerobot._train_options import UNIFORM, RobodataOptions, help_text, split_arguments
from robodata.lerobot._train_pin import Pin, as_version, pin_fresh_run, pin_resumed_run, recorded_revision
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


pinned = as_version  # a LeRobot ``revision`` as a robodata version: a number, a tag, or None (the latest)


def metadata_factory(original: Callable) -> Callable:
    """``LeRobotDatasetMetadata`` that opens robodata datasets as ``LeRobotCompatDataset.meta``."""

    def make(repo_id, root=None, revision=None, *args, **kwargs):
        uri = robodata_uri(repo_id, root)
        if uri is None:
            return original(repo_id, root, revision, *args, **kwargs)
        from robodata.lerobot._compat_dataset import LeRobotCompatDataset

        return LeRobotCompatDataset(uri, version=pinned(revision)).meta

    return make


def dataset_factory(original: Callable, options: RobodataOptions | None = None) -> Callable:
    """``LeRobotDataset`` that opens robodata datasets as ``LeRobotCompatDataset`` (frames of
    ``options.frame_size`` when given)."""
    options = options or RobodataOptions()

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
            resolution=options.frame_size,  # from a stored rendition of that size when there is one
        )

    return make


def training_order(options: RobodataOptions | None = None) -> str:
    """The order robodata-train reads robodata datasets in: ``decode_once`` (default) or
    ``uniform``, from ``--robodata.order``, else ``$ROBODATA_TRAIN_ORDER``."""
    return (options or RobodataOptions()).training_order()


def process_place() -> tuple[int, int]:
    """(rank, world size) of this training process, as accelerate and torchrun set them."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def sampler_factory(original: Callable, training: dict, options: RobodataOptions | None = None) -> Callable:
    """LeRobot's ``EpisodeAwareSampler`` that, for the robodata dataset of this run
    (``training["dataset"]``, made with ``training["cfg"]``), is the decode-once block order
    (mixing ``options.window`` rows when given)."""
    options = options or RobodataOptions()

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
        if isinstance(dataset, LeRobotCompatDataset):
            same_version_on_every_rank(dataset)
            check_shared_memory(dataset, cfg)
        if not isinstance(dataset, LeRobotCompatDataset) or not shuffle or training_order(options) == UNIFORM:
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
        sampler = dataset.item_sampler(
            batch_size=cfg.batch_size,
            num_workers=cfg.num_workers,
            rank=rank,
            world_size=world_size,
            seed=seed,
            window_rows=options.window,
            **options.order_bytes(),
            drop_n_first_frames=drop_n_first_frames,
            drop_n_last_frames=drop_n_last_frames,
        )
        logging.info(
            f"robodata-train: {dataset.uri} in the decode-once block order, a window of {sampler.window_rows} rows, "
            f"runs of {sampler.run_bytes / 2**20:g} MiB through a pool of {sampler.pool_bytes / 2**20:g} MiB per worker "
            "(--robodata.order=uniform: LeRobot's)"
        )
        return sampler

    return make


def batch_frame_bytes(dataset, batch_size: int) -> int:
    """Bytes of one batch's camera frames as the dataset hands them over (uint8 or float32)."""
    per_item = 0
    for key in dataset.meta.camera_keys:
        height, width, channels = dataset.meta.features[key]["shape"]
        per_item += int(height) * int(width) * int(channels) * len(dataset.offsets.get(key, [0]))
    return per_item * batch_size * (1 if dataset.return_uint8 else 4)


def check_shared_memory(dataset, cfg) -> None:
    """Before training: stop in one line when /dev/shm cannot hold even two batches per DataLoader
    worker (the one being written and the one being sent), and say what the workers may use: up to
    ``prefetch_factor`` + 2 batches each (more than /dev/shm has free: a warning)."""
    from robodata.torch._handover import SHM_DIR, shared_memory_free

    workers = int(getattr(cfg, "num_workers", 0) or 0)
    free = shared_memory_free()
    if workers == 0 or free is None:
        return
    batch = batch_frame_bytes(dataset, int(cfg.batch_size))
    least = workers * 2 * batch
    most = workers * (int(getattr(cfg, "prefetch_factor", 2) or 2) + 2) * batch
    mb = lambda n: f"{n / 2**20:.0f} MB"  # noqa: E731
    if free < least:
        raise SystemExit(
            f"robodata-train: {SHM_DIR} has {mb(free)} free, less than the {mb(least)} {workers} DataLoader workers "
            f"need for two batches of {mb(batch)} of frames each: give it more (docker run --shm-size={max(1, most >> 30) + 1}g), "
            "or lower --num_workers, --batch_size or the frame size (--robodata.frame_size=224x224)"
        )
    logging.info(
        f"robodata-train: {SHM_DIR}: up to {mb(most)} for {workers} workers' batches in flight "
        f"({mb(batch)} of frames a batch), {mb(free)} free"
    )
    if free < most:
        logging.warning(
            f"robodata-train: {SHM_DIR} has {mb(free)} free, less than the {mb(most)} the DataLoader workers may "
            "fill when they run ahead of training (a worker that finds no room stops the run, saying so); "
            "lower --prefetch_factor or give it more"
        )


def same_version_on_every_rank(dataset) -> None:
    """Every training process of a multi-process run reads the same version, or the run stops:
    each rank opened the dataset itself, and an append between two openings of an unpinned run
    would give them different versions (and different numbers of steps)."""
    try:
        import torch.distributed as dist
    except ImportError:
        return
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return
    versions: list = [None] * dist.get_world_size()
    dist.all_gather_object(versions, dataset.version)
    if len(set(versions)) > 1:
        raise SystemExit(
            f"robodata-train: the training processes opened different versions of {dataset.uri} ({versions}, "
            f"by rank): pass --dataset.revision=<one of them>"
        )


def pin_run(cfg) -> Pin | None:
    """For a run on a robodata dataset, the version it reads (a fresh run: ``--dataset.revision`` or
    the latest, tagged; a resume: its checkpoint's), made the run's ``cfg.dataset.revision`` so
    that LeRobot's checkpoints record it, and logged. None for a LeRobot dataset."""
    dataset_cfg = cfg.dataset
    uri = robodata_uri(dataset_cfg.repo_id, getattr(dataset_cfg, "root", None))
    if uri is None:
        return None
    from robodata.torch._fork_safety import run_without_lance

    # Lance read in a helper process, as LeRobotCompatDataset reads: this one stays safe to fork.
    revision = dataset_cfg.revision
    if getattr(cfg, "resume", False):
        recorded = recorded_revision(getattr(cfg, "checkpoint_path", None), revision)
        pin = run_without_lance(lambda: pin_resumed_run(uri, revision, recorded))
        logging.info(f"robodata-train: resuming on {pin.describe()}, the version its checkpoint recorded")
    else:
        pin = run_without_lance(lambda: pin_fresh_run(uri, revision))
        logging.info(
            f"robodata-train: training on {pin.describe()}; its checkpoints record --dataset.revision={pin.revision}"
        )
    dataset_cfg.revision = pin.revision
    return pin


def frame_size_sources(uri: str, version: int, frame_size: tuple[int, int]) -> str:
    """Where a run's frames of ``frame_size`` (height, width) come from, per camera: a stored
    training rendition of that size, or the full-size frames decoded and scaled."""
    from robodata.format._renditions import Rendition
    from robodata.reader import open_dataset
    from robodata.storage import env_storage_options

    name = Rendition.parse(frame_size).name
    ds = open_dataset(uri, version=version, storage_options=env_storage_options())
    stored = [c for c in ds.cameras if name in ds.metadata.renditions.get(c, [])]
    scaled = [c for c in ds.cameras if c not in stored]
    parts = [f"{', '.join(stored)} from the stored {name} rendition"] if stored else []
    if scaled:
        parts.append(f"{', '.join(scaled)} decoded at full size and scaled (robodata add-rendition DATASET {name})")
    return f"robodata-train: frames at {name}: " + "; ".join(parts)


def install_training_order(script, options: RobodataOptions | None = None) -> None:
    """Make LeRobot's training script (``lerobot.scripts.lerobot_train``) pin robodata datasets and
    read them in the decode-once order: ``make_train_eval_datasets`` pins the version
    (``pin_run``) and remembers the dataset and config it made, and its ``EpisodeAwareSampler``
    becomes ``sampler_factory``'s (idempotent)."""
    if getattr(script, "_robodata_order_installed", False):
        return
    training: dict = {}
    make_datasets = script.make_train_eval_datasets

    def make_train_eval_datasets(cfg, *args, **kwargs):
        pin = pin_run(cfg)  # LeRobot's logging is set up by now: these lines reach its log
        if pin is not None and options is not None and options.flags():
            logging.info(f"robodata-train: {' '.join(options.flags())}")
        if pin is not None and options is not None and options.frame_size is not None:
            from robodata.torch._fork_safety import run_without_lance

            frame_size = options.frame_size
            logging.info(run_without_lance(lambda: frame_size_sources(pin.uri, pin.version, frame_size)))
        made = make_datasets(cfg, *args, **kwargs)
        training.update(dataset=made[0], cfg=cfg)
        return made

    script.make_train_eval_datasets = make_train_eval_datasets
    script.EpisodeAwareSampler = sampler_factory(script.EpisodeAwareSampler, training, options)
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


def install(options: RobodataOptions | None = None) -> None:
    """Make LeRobot's dataset factory open robodata datasets (idempotent)."""
    from lerobot.datasets import factory

    if getattr(factory, "_robodata_installed", False):
        return
    factory.LeRobotDatasetMetadata = metadata_factory(factory.LeRobotDatasetMetadata)
    factory.LeRobotDataset = dataset_factory(factory.LeRobotDataset, options)
    factory._robodata_installed = True


def parse_arguments(argv: list[str]) -> tuple[RobodataOptions, list[str]]:
    """(robodata's ``--robodata.*`` options, LeRobot's arguments); ``--help`` prints robodata's
    flags first (LeRobot's help follows when it is installed)."""
    options, rest = split_arguments(argv)
    options.training_order()  # a wrong $ROBODATA_TRAIN_ORDER fails before LeRobot starts
    if "--help" in rest or "-h" in rest:
        print(help_text() + "\n", flush=True)
    return options, rest


def main(argv: list[str] | None = None) -> None:
    """``lerobot-train`` with robodata datasets: the same arguments, LeRobot's training loop."""
    options, rest = parse_arguments(sys.argv[1:] if argv is None else argv)
    try:
        from lerobot.scripts import lerobot_train
    except ImportError as exc:
        if "--help" in rest or "-h" in rest:
            print(f"LeRobot's own flags are listed once LeRobot is installed: pip install 'lerobot[training]' ({exc})")
            return
        raise SystemExit(f"robodata-train needs LeRobot: pip install 'lerobot[training]' ({exc})") from exc
    install(options)
    install_training_order(lerobot_train, options)
    sys.argv = [sys.argv[0], *rest]
    lerobot_train.main()


if __name__ == "__main__":
    main()

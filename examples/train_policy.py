"""Train a small convolutional policy on a pinned robodata version, LeRobot-style.

The data side is what LeRobot training code already does: a map-style dataset with LeRobot's keys
(``robodata.lerobot.LeRobotCompatDataset``), a torch DataLoader with 2 worker processes,
normalisation from ``dataset.meta.stats``. robodata adds a pinned version (a Lance tag), a
batch sampler in the decode-once order (each GOP decoded once per epoch by one worker) that gives
every DDP rank the same steps, and checkpoints that resume mid-epoch at the exact next batch, on
any number of processes.

The workers are never forked from this process (Lance is not fork-safe): by default they fork
from a fork server that imports torch, Lance and robodata once for all of them
(``robodata.torch.worker_context("forkserver")``); ``--start-method spawn`` starts each in a
fresh interpreter instead. The normalisation is computed once (rank 0, broadcast to the other
ranks) and saved in the checkpoint with the model, so a resumed run uses the same numbers without
another pass over the data.

    python examples/train_policy.py data/demo --tag run-42 --steps 300 --checkpoint ckpt.pt
    torchrun --nproc_per_node 2 examples/train_policy.py data/demo --tag run-42 --steps 300 --checkpoint ckpt.pt

Each run logs (JSON lines) the dataset URI, the tag and the version number it resolved to; the
same tag made through the Dagster ``training_snapshot`` asset is recorded there with the Lance
versions, so a checkpoint traces back to the exact rows and frames it was trained on.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

import robodata
from robodata.lerobot import LeRobotCompatDataset
from robodata.torch import collate_batch, worker_context


class ConvPolicy(nn.Module):
    """Image + state -> action: three strided convolutions and a small head (the image is the
    dataset's first camera)."""

    def __init__(self, state_dim: int, action_dim: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 16, 5, stride=4),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.head = nn.Sequential(nn.Linear(32 + state_dim, 64), nn.ReLU(), nn.Linear(64, action_dim))

    def forward(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([self.conv(image), state], dim=1))


def unwrapped_state(state: dict) -> dict:
    """A model state dict without DDP's ``module.`` prefixes: loads on any world size."""
    return {key.removeprefix("module."): value for key, value in state.items()}


def normalization(stats: dict, camera: str) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """(mean, std) of state, action and the camera from LeRobot-style ``meta.stats``."""
    return {
        k: (
            torch.as_tensor(stats[k]["mean"], dtype=torch.float32),
            torch.as_tensor(stats[k]["std"], dtype=torch.float32).clamp_min(1e-6),
        )
        for k in ("observation.state", "action", camera)
    }


def log(rank: int, **fields) -> None:
    if rank == 0:
        print(json.dumps(fields), flush=True)


def pinned_version(uri: str, tag: str) -> int:
    """The version ``tag`` names; a new tag names the latest version (like training_snapshot)."""
    ds = robodata.open(uri)
    return ds.tags[tag] if tag in ds.tags else ds.tag(tag)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset", help="robodata dataset URI (a folder or s3://)")
    p.add_argument("--tag", required=True, help="the dataset tag to train on (created on the latest version if new)")
    p.add_argument("--steps", type=int, default=300, help="optimizer steps in total")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--start-method",
        choices=("forkserver", "spawn"),
        default="forkserver",
        help="how the DataLoader workers start (never a fork of this process: Lance is not fork-safe); "
        "forkserver imports torch and robodata once for all workers",
    )
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default=None, help="save here every --save-every steps; resume from it if present")
    p.add_argument("--save-every", type=int, default=50)
    p.add_argument("--stop-after", type=int, default=None, help="stop after this many steps of this run (tests resume)")
    args = p.parse_args(argv)

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(args.seed)

    version = pinned_version(args.dataset, args.tag) if rank == 0 else None
    if distributed:  # every rank trains on the version rank 0 resolved
        shared = [version]
        dist.broadcast_object_list(shared, src=0)
        version = shared[0]
    dataset = LeRobotCompatDataset(args.dataset, version=version)
    sampler = dataset.sampler(
        batch_size=args.batch_size, rank=rank, world_size=world, seed=args.seed, num_workers=args.workers
    )  # the decode-once order laid out for the DataLoader's workers; shuffle="global": uniform
    loader = DataLoader(
        dataset,
        batch_sampler=sampler,
        collate_fn=collate_batch,
        num_workers=args.workers,
        multiprocessing_context=worker_context(args.start_method) if args.workers else None,
        persistent_workers=args.workers > 0,
    )
    if not dataset.meta.camera_keys:
        raise SystemExit(f"{args.dataset}: the policy needs a camera; this dataset has none")
    camera = dataset.meta.camera_keys[0]  # the cameras are read from the dataset, in recorded order

    checkpoint = None
    if args.checkpoint and os.path.exists(args.checkpoint):
        checkpoint = torch.load(args.checkpoint, weights_only=False)
        if checkpoint["dataset_version"] != version:
            raise SystemExit(
                f"{args.checkpoint} was trained on version {checkpoint['dataset_version']}, "
                f"tag {args.tag!r} names version {version}"
            )
    # The normalisation: the checkpoint's (the same version's statistics), else computed from
    # meta.stats; by rank 0 only (one pass over the data, not one per rank), sent to the others.
    norm = None
    if rank == 0:
        norm = (checkpoint or {}).get("normalization") or normalization(dataset.meta.stats, camera)
    if distributed:
        shared = [norm]
        dist.broadcast_object_list(shared, src=0)
        norm = shared[0]
    state_dim = dataset.meta.features["observation.state"]["shape"][0]
    action_dim = dataset.meta.features["action"]["shape"][0]
    policy = ConvPolicy(state_dim, action_dim)
    model = nn.parallel.DistributedDataParallel(policy) if distributed else policy
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    step, epoch, batches_in_epoch = 0, 0, 0
    if checkpoint is not None:
        policy.load_state_dict(unwrapped_state(checkpoint["model"]))  # saved on any world size
        optimizer.load_state_dict(checkpoint["optimizer"])
        sampler.load_state_dict(checkpoint["sampler"])  # any world size: continues at the next sample
        step, epoch = checkpoint["step"], checkpoint["sampler"]["epoch"]
        consumed = checkpoint["sampler"]["consumed_batches"]  # batches each rank took this epoch
        log(rank, event="resumed", step=step, epoch=epoch, consumed_batches=consumed)
    log(
        rank,
        event="start",
        dataset=args.dataset,
        camera=camera,
        tag=args.tag,
        version=version,
        world_size=world,
        workers=args.workers,
        start_method=args.start_method if args.workers else None,
        frames=len(dataset),
        step=step,
    )

    def save() -> None:
        if args.checkpoint and rank == 0:
            state = {
                "model": policy.state_dict(),  # no DDP prefixes
                "optimizer": optimizer.state_dict(),
                "step": step,
                "sampler": sampler.state_dict(batches_consumed=batches_in_epoch),
                "dataset": args.dataset,
                "tag": args.tag,
                "dataset_version": version,
                "normalization": norm,  # {key: (mean, std)}: what the model's inputs and targets were scaled by
            }
            torch.save(state, args.checkpoint + ".partial")
            os.replace(args.checkpoint + ".partial", args.checkpoint)  # never a half-written checkpoint

    started, run_steps = time.perf_counter(), 0
    while step < args.steps and (args.stop_after is None or run_steps < args.stop_after):
        batches_in_epoch = 0
        for batch in loader:
            image = (batch[camera] - norm[camera][0]) / norm[camera][1]
            state = (batch["observation.state"] - norm["observation.state"][0]) / norm["observation.state"][1]
            target = (batch["action"] - norm["action"][0]) / norm["action"][1]
            per_sample = F.mse_loss(model(image, state), target, reduction="none").mean(dim=1)
            weight = (~batch["padding"]).float()  # repeated rows that only pad the last step count 0
            loss = (per_sample * weight).sum() / weight.sum().clamp_min(1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step, run_steps, batches_in_epoch = step + 1, run_steps + 1, batches_in_epoch + 1
            if step % 10 == 0 or step == 1:
                log(rank, event="step", step=step, epoch=sampler.epoch, loss=round(loss.item(), 5))
            if step % args.save_every == 0:
                save()
            if step >= args.steps or (args.stop_after is not None and run_steps >= args.stop_after):
                break
        else:  # a full epoch: the next one starts from its first sample
            sampler.set_epoch(sampler.epoch + 1)
            batches_in_epoch = 0
    save()
    log(
        rank,
        event="done",
        step=step,
        epoch=sampler.epoch,
        version=version,
        tag=args.tag,
        seconds=round(time.perf_counter() - started, 1),
    )
    if distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

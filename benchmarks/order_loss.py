"""A short training run's loss in the decode-once order with runs and a pool, and in the uniform
order: a tiny CNN regresses the action from one camera and the state of sample data through
``robodata.torch.make_dataloader``, on CPU, the same model seed and steps in every order.

    python -m benchmarks order-loss WORKDIR [--episodes 6] [--seconds 2] [--steps 150]

The sample dataset is written and ingested into WORKDIR once (reused when there). Orders: ``pool``
(the default decode-once order: runs through the default pool), ``pool-tight`` (a pool of one
run at a time: the least mixing runs allow), ``block`` (blocks one by one: the order before runs),
``uniform``. Printed: the mean loss of every 25 steps
and of the last 50.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

ORDERS: dict[str, dict] = {
    "pool": {"shuffle": "block"},
    "pool-tight": {"shuffle": "block", "pool_bytes": 0},
    "block": {"shuffle": "block", "run_bytes": 0},
    "uniform": {"shuffle": "uniform"},
}
CAMERA = "wrist_left"
SIZE = (48, 64)  # (H, W) the frames are scaled to: a CPU trains in minutes


def sample_dataset(workdir: str, episodes: int, seconds: float) -> str:
    """The sample episodes ingested under ``workdir`` (made once)."""
    from robodata.ingest import ingest_episode
    from robodata.sample_data import write_sample_uploads

    uri = os.path.join(workdir, "dataset")
    if os.path.exists(os.path.join(uri, "frames.lance")):
        return uri
    for upload in write_sample_uploads(os.path.join(workdir, "uploads"), episodes, seconds=seconds):
        ingest_episode(str(upload), uri)
    return uri


def policy(state_dim: int, action_dim: int):
    """A tiny CNN on the camera, its features beside the state, regressing the action."""
    import torch
    from torch import nn

    class TinyPolicy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.vision = nn.Sequential(
                nn.Conv2d(3, 8, 5, stride=2),
                nn.ReLU(),
                nn.Conv2d(8, 16, 3, stride=2),
                nn.ReLU(),
                nn.AdaptiveAvgPool2d(1),
                nn.Flatten(),
            )
            self.head = nn.Sequential(nn.Linear(16 + state_dim, 64), nn.ReLU(), nn.Linear(64, action_dim))

        def forward(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
            return self.head(torch.cat([self.vision(image), state], dim=1))

    return TinyPolicy()


def train(uri: str, order: dict, steps: int, batch_size: int, workers: int, seed: int) -> list[float]:
    """Per-step loss (MSE over the batch's real rows) of ``steps`` steps in ``order``."""
    import torch

    from robodata.torch import make_dataloader

    loader = make_dataloader(
        uri,
        batch_size=batch_size,
        num_workers=workers,
        seed=seed,
        cameras=[CAMERA],
        columns=["observation_state", "action"],
        resolution=SIZE,
        **order,
    )
    model, optimizer = None, None
    losses: list[float] = []
    epoch = 0
    while len(losses) < steps:
        loader.set_epoch(epoch)
        for batch in loader:
            if model is None:  # made on the first batch, the same in every order for a seed
                torch.manual_seed(seed)
                model = policy(batch["observation_state"].shape[1], batch["action"].shape[1])
                optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            real = ~batch["padding"]
            image = batch[f"observation_images_{CAMERA}"][real].permute(0, 3, 1, 2).float() / 255
            predicted = model(image, batch["observation_state"][real].float())
            loss = torch.nn.functional.mse_loss(predicted, batch["action"][real].float())
            assert optimizer is not None
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
        epoch += 1
    return losses


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workdir", help="where the sample dataset is made (reused when there)")
    parser.add_argument("--episodes", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per episode (100 rows a second)")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--orders", nargs="+", default=list(ORDERS), choices=list(ORDERS))
    parser.add_argument("--window", type=int, default=None, help="rows mixed at a time (default: the frame buffer's)")


def main(args: argparse.Namespace) -> int:
    uri = sample_dataset(args.workdir, args.episodes, args.seconds)
    curves = {}
    for name in args.orders:
        began = time.perf_counter()
        order = dict(ORDERS[name])
        if args.window is not None and order["shuffle"] == "block":
            order["window_rows"] = args.window
        curves[name] = train(uri, order, args.steps, args.batch_size, args.workers, args.seed)
        print(f"{name}: {args.steps} steps in {time.perf_counter() - began:.0f} s", flush=True)
    every = 25
    print(f"mean loss of every {every} steps ({args.episodes} episodes, batch {args.batch_size}, seed {args.seed})")
    print("steps     " + "".join(f"{name:>12}" for name in curves))
    for first in range(0, args.steps, every):
        means = [np.mean(curve[first : first + every]) for curve in curves.values()]
        print(f"{first + 1:>4}-{min(first + every, args.steps):<4} " + "".join(f"{m:>12.4f}" for m in means))
    print("last 50   " + "".join(f"{np.mean(curve[-50:]):>12.4f}" for curve in curves.values()))
    return 0

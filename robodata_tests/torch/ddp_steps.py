"""One rank of the gloo DDP test (run by test_ddp.py as ``python -m``): an ``all_reduce`` per
step over several sizes whose last step is shorter than the world size. A rank with one step
more than the others would wait forever in its extra ``all_reduce``."""

from __future__ import annotations

import os
import sys

import numpy as np
import torch
import torch.distributed as dist

from robodata.torch._loader import TrainingLoader
from robodata.torch._sampler import RowSampler

SIZES = [(591, 59), (1027, 64), (10, 4), (2, 5), (1003, 16)]


def run_steps(batches) -> tuple[int, int]:
    """One all_reduce per batch of (real rows, padded rows); returns the world's totals."""
    totals = torch.zeros(2, dtype=torch.int64)
    for _rows, padding in batches:
        counts = torch.tensor([int((~padding).sum()), int(padding.sum())], dtype=torch.int64)
        dist.all_reduce(counts)
        totals += counts
    return int(totals[0]), int(totals[1])


def main() -> int:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    for rows, batch_size in SIZES:
        sampler = RowSampler(rows, batch_size=batch_size, rank=rank, world_size=world, seed=1)
        real, padded = run_steps(sampler.padded_batches())
        states = [None] * world
        dist.all_gather_object(states, sampler.state_dict(batches_consumed=len(sampler)))
        assert real == rows, (rows, batch_size, real)
        assert padded < world
        assert all(s == states[0] for s in states), states
    # The same with the loader over a real dataset: batches read and decoded in every rank.
    loader = TrainingLoader.create(
        sys.argv[1],
        batch_size=59,
        sampler_options={"rank": rank, "world_size": world, "seed": 2},
        cameras=["wrist_left"],
        columns=["episode_index"],
    )
    real, padded = run_steps((b["index"], np.asarray(b["padding"])) for b in loader)
    states = [None] * world
    dist.all_gather_object(states, loader.state_dict())
    assert real == loader.reader.num_rows and all(s == states[0] for s in states)
    dist.barrier()
    print(f"rank {rank}: ok {real} rows", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())

"""Per-batch cost of the LeRobot user's path against make_dataloader's batch read, on the same rows.

``robodata bench lerobot-path DATASET`` (``python -m benchmarks lerobot-path DATASET``; the module
also runs on its own, ``python benchmarks/lerobot_path.py DATASET``, so the same file measures an
older checkout put first on ``PYTHONPATH``). One process, one decode thread, the same random
batches of 32 every round, the paths interleaved; medians of CPU (``time.process_time``) and wall
milliseconds per batch of:

- **lerobot**: ``LeRobotCompatDataset(return_uint8=True).__getitems__`` + PyTorch's
  ``default_collate`` (what a plain ``DataLoader(shuffle=True, batch_size=32)`` runs per batch);
- **make_dataloader**: its ``BatchReader.read`` of the same rows (every camera, no GOP cache);
- the same two as a DataLoader worker runs them (``--as-worker``), each with its hand-over to the
  training process: what is not in shared memory yet (``default_collate`` returns a
  ``LeRobotCompatDataset`` batch as it is; ``get_frames`` decodes into private memory) is moved
  there, as the worker's queue does when it sends the batch.

``--loader N`` then runs the two DataLoaders themselves, 2 spawned workers, batch 32, N batches
each, alternating, and prints their steady samples/s (after the first batch; wall time, so the
machine's load moves it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", help="a robodata dataset URI (e.g. the peer benchmark's work/dataset)")
    parser.add_argument("--batches", type=int, default=8, help="random batches of --batch-size rows")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds over the batches")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--as-worker", action="store_true", help="also measure each path as a DataLoader worker")
    parser.add_argument("--loader", type=int, default=0, help="also run both DataLoaders for this many batches")


def main(args: argparse.Namespace) -> int:
    import numpy as np
    import torch
    from torch.utils.data import default_collate
    from torch.utils.data._utils import worker as worker_state

    import robodata
    from robodata.lerobot import LeRobotCompatDataset
    from robodata.torch import BatchReader

    torch.set_num_threads(1)
    os.environ["ROBODATA_DECODE_THREADS"] = "1"  # one decode thread, as the peer benchmark's profiles
    compat = LeRobotCompatDataset(args.dataset, return_uint8=True)
    reader = BatchReader(args.dataset, version=compat.version, budget_bytes=0)
    rng = np.random.default_rng(args.seed)
    batches = [rng.choice(len(compat), args.batch_size, replace=False).tolist() for _ in range(args.batches)]
    rows = [np.asarray(compat._array("rows")[b]) for b in batches]  # item i -> its dataset row

    def lerobot(i: int):
        return default_collate(compat.__getitems__(batches[i]))  # type: ignore[arg-type]  # a Sequence, as DataLoader passes it

    def own(i: int) -> None:
        reader.read(rows[i])

    def as_worker(read):
        def run(i: int) -> None:
            # get_worker_info() is not None: frames are decoded into shared memory where the path
            # can, and default_collate stacks into shared memory what it stacks
            worker_state._worker_info = worker_state.WorkerInfo(id=0, num_workers=1, seed=0, dataset=compat)
            try:
                sent(read(i))
            finally:
                worker_state._worker_info = None

        return run

    def sent(batch) -> None:
        """What the worker's queue does when it sends the batch: tensors not yet in shared memory move there."""
        for value in batch.values():
            if isinstance(value, torch.Tensor) and not value.is_shared():
                value.share_memory_()

    def own_sent(i: int) -> None:
        for value in reader.read(rows[i]).values():  # what pickling to the training process does
            torch.from_numpy(np.require(value, requirements="W")).share_memory_()

    paths = {"lerobot (__getitems__ + default_collate)": lerobot, "make_dataloader (BatchReader.read)": own}
    if args.as_worker:
        paths["lerobot, as a worker"] = as_worker(lerobot)
        paths["make_dataloader, as a worker (+ batch to shared memory)"] = own_sent
    for read in paths.values():
        read(0)  # warm: open files and decoders
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    wall: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.rounds):
        for i in range(len(batches)):
            for name, read in paths.items():
                c, w = time.process_time(), time.perf_counter()
                read(i)
                cpu[name].append(time.process_time() - c)
                wall[name].append(time.perf_counter() - w)
    print(
        f"robodata {robodata.__file__}; {args.dataset} version {compat.version}, cameras {compat.cameras}; "
        f"{args.batches} batches of {args.batch_size} x {args.rounds} rounds, one decode thread; ms per batch"
    )
    base = statistics.median(cpu["make_dataloader (BatchReader.read)"])
    for name in paths:
        median = statistics.median(cpu[name])
        print(
            f"  {name:<58} CPU {1000 * median:7.1f}  wall {1000 * statistics.median(wall[name]):7.1f}"
            f"  CPU / make_dataloader's read {median / base:.2f}x"
        )
    if args.loader:
        _loaders(args, compat)
    return 0


def _loaders(args: argparse.Namespace, compat) -> None:
    """Steady samples/s of the LeRobot user's DataLoader and make_dataloader's, rounds alternating."""
    import torch
    from torch.utils.data import DataLoader

    from robodata.torch import make_dataloader, worker_context

    def lerobot():
        torch.manual_seed(args.seed)
        return DataLoader(
            compat, batch_size=args.batch_size, shuffle=True, num_workers=2, multiprocessing_context=worker_context()
        )

    def own():
        return make_dataloader(args.dataset, version=compat.version, batch_size=args.batch_size, num_workers=2)

    rates: dict[str, list[float]] = {"lerobot DataLoader": [], "make_dataloader": []}
    for _ in range(args.rounds):
        for name, build in zip(rates, (lerobot, own), strict=True):
            loader = build()
            batches = iter(loader)
            next(batches)
            start = time.perf_counter()
            for _ in range(args.loader - 1):
                next(batches)
            rates[name].append((args.loader - 1) * args.batch_size / (time.perf_counter() - start))
            del batches
            getattr(loader, "close", lambda: None)()  # make_dataloader's persistent workers
    ours = statistics.median(rates["make_dataloader"])
    for name, values in rates.items():
        median = statistics.median(values)
        print(
            f"  DataLoader, 2 workers: {name:<22} {median:6.1f} samples/s "
            f"({median / ours:.2f}x make_dataloader; rounds {[round(v, 1) for v in values]})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    configure(parser)
    sys.exit(main(parser.parse_args()))

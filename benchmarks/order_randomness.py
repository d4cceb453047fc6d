"""How random the decode-once order's batches are with runs and a pool, against the uniform order
and the block order without runs, on a synthetic layout of many episodes (no video: an order is a
pure function of the rows' blocks and places).

The layout: ``episodes`` episodes of ``rows`` rows at G=4 (a block is 4 rows), 3 cameras of
~18 KB GOPs (so a block is ~54 KB of compressed bytes), as in the ALOHA-sim benchmark dataset.
Figures per batch (``robodata.torch.batch_randomness``): distinct episodes, distinct GOPs.

    python -m benchmarks order-randomness [--episodes 200] [--rows 300] [--pool-mb 128] [--run-mb 2]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from robodata.torch import BlockPlaces, BlockSampler, RowSampler, batch_randomness

GOP = 4  # rows per block (frames per GOP, one frame per row)
CAMERAS = 3
GOP_BYTES = 18_000  # one camera's GOP at G=4, 640x480 (ALOHA-sim)
AIM = 0.8  # distinct episodes per batch, against the uniform order's


def synthetic_layout(episodes: int = 200, rows: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray, BlockPlaces]:
    """(episode per row, block per row, the blocks' places): ``episodes`` x ``rows`` rows in
    blocks of ``GOP`` rows, each block ``CAMERAS`` GOPs of ~``GOP_BYTES`` (+-25 %)."""
    per_episode = -(-rows // GOP)
    episode_of_row = np.repeat(np.arange(episodes), rows)
    frame = np.tile(np.arange(rows), episodes)
    block_of_row = episode_of_row * per_episode + frame // GOP
    sizes = np.random.default_rng(seed).uniform(0.75, 1.25, (episodes * per_episode, CAMERAS)) * GOP_BYTES
    places = BlockPlaces(
        episode=np.repeat(np.arange(episodes), per_episode),
        start=np.tile(np.arange(per_episode) * GOP, episodes),
        nbytes=sizes.sum(axis=1).astype(np.int64),
    )
    return episode_of_row, block_of_row, places


def measure(
    episodes: int = 200,
    rows: int = 300,
    batch_size: int = 32,
    num_workers: int = 2,
    seeds: int = 2,
    **order: int,
) -> dict[str, dict]:
    """Mean distinct episodes and GOPs per batch of the uniform order, the block order (blocks one
    by one) and the pool order (runs through a pool; ``order``: ``run_bytes``, ``pool_bytes``,
    ``window_rows``, else the defaults), over ``seeds`` epochs' seeds."""
    episode_of_row, block_of_row, places = synthetic_layout(episodes, rows)
    figures: dict[str, list[dict]] = {"uniform": [], "block": [], "pool": []}
    options: dict = dict(order)
    for seed in range(seeds):
        samplers = {
            "uniform": RowSampler(len(block_of_row), batch_size=batch_size, seed=seed),
            "block": BlockSampler(block_of_row, batch_size=batch_size, num_workers=num_workers, seed=seed, **options),
            "pool": BlockSampler(
                block_of_row, batch_size=batch_size, num_workers=num_workers, seed=seed, places=places, **options
            ),
        }
        for name, sampler in samplers.items():
            figures[name].append(batch_randomness(sampler.batches(), episode_of_row, block_of_row))
    keys = ("distinct_episodes", "distinct_gops")
    return {name: {key: float(np.mean([f[key] for f in runs])) for key in keys} for name, runs in figures.items()}


def randomness_aim(episodes: int = 200) -> dict:
    """The aim "at 200+ episodes, distinct episodes per batch at least 0.8x the uniform order's"
    at the default pool, run and window (batch 32, 2 workers), as ``benchmarks.aims`` reports
    aims; the figures of the three orders ride along."""
    from benchmarks.aims import _aim

    figures = measure(episodes=episodes)
    ratio = figures["pool"]["distinct_episodes"] / figures["uniform"]["distinct_episodes"]
    return _aim(
        "order_randomness",
        f"distinct episodes per batch of the decode-once pool order / the uniform order ({episodes} episodes, "
        "batch 32, 2 workers, default pool)",
        AIM,
        ratio,
        True,
        figures=figures,
    )


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=200, help="episodes in the synthetic layout")
    parser.add_argument("--rows", type=int, default=300, help="rows per episode")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers: one stream each")
    parser.add_argument("--pool-mb", type=float, default=None, help="pool of open runs per stream (default 128)")
    parser.add_argument("--run-mb", type=float, default=None, help="bytes of one run (default 2)")
    parser.add_argument("--window", type=int, default=None, help="rows mixed at a time (default 512)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def main(args: argparse.Namespace) -> int:
    order = {}
    if args.pool_mb is not None:
        order["pool_bytes"] = int(args.pool_mb * (1 << 20))
    if args.run_mb is not None:
        order["run_bytes"] = int(args.run_mb * (1 << 20))
    if args.window is not None:
        order["window_rows"] = args.window
    figures = measure(args.episodes, args.rows, args.batch_size, args.workers, **order)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    uniform = figures["uniform"]
    print(f"{args.episodes} episodes x {args.rows} rows, G={GOP}, batch {args.batch_size}, {args.workers} workers")
    print(f"{'order':<8} {'episodes/batch':>15} {'x uniform':>10} {'GOPs/batch':>11} {'x uniform':>10}")
    for name, f in figures.items():
        episodes, gops = f["distinct_episodes"], f["distinct_gops"]
        print(
            f"{name:<8} {episodes:>15.1f} {episodes / uniform['distinct_episodes']:>10.2f} "
            f"{gops:>11.1f} {gops / uniform['distinct_gops']:>10.2f}"
        )
    return 0

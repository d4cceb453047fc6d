"""The LeRobot user's path (robodata-compat) planned in the harness's process: its
``LeRobotCompatDataset`` at each size, opened as its runner opens it, and the batches its
``item_sampler`` gives scenario D, so every system's loader is checked against the same rows.
"""

from __future__ import annotations

from benchmarks.peers.peer_scenarios import PeerConfig, compat_batches, scenario_key, split_key


def compat_datasets(uri: str, version: int, storage_options: dict | None, cfg: PeerConfig) -> dict:
    """The LeRobot user's dataset at each of ``cfg.sizes`` as its runner opens it
    (``{scenario_key("D", size): LeRobotCompatDataset}``), to plan the batches its ``item_sampler``
    gives D (the mixing window depends on the frame size)."""
    from benchmarks.peers.runner_robodata import robodata_takes_resolution
    from robodata.lerobot import LeRobotCompatDataset

    by_resolution = robodata_takes_resolution()
    return {
        scenario_key("D", size): LeRobotCompatDataset(
            uri,
            version=version,
            storage_options=storage_options,
            return_uint8=True,
            resolution=(int(size[0]), int(size[1])) if size is not None and by_resolution else None,
        )
        for size in cfg.sizes
    }


def compat_plan(compat: dict, cfg: PeerConfig, seed: int) -> tuple[dict, dict]:
    """D's batches of items for the LeRobot user's path at each size (what ``DataLoader(ds,
    sampler=ds.item_sampler(batch_size=, num_workers=, seed=))`` reads in the timed epoch) and,
    at native size, the same batches as robodata rows with the order's window (for the
    randomness figures)."""
    planned, native = {}, {}
    for key, dataset in compat.items():
        sampler = dataset.item_sampler(batch_size=cfg.batch_size, num_workers=cfg.loader_workers, seed=seed)
        planned[key] = compat_batches(sampler, cfg)
        if split_key(key)[1] is None:
            rows = dataset._array("rows")  # items -> robodata rows
            native = {"batches": [rows[b] for b in planned[key]], "window_rows": sampler.window_rows}
    return planned, native

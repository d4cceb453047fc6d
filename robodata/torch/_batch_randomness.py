"""How random a training order's batches are: what the decode-once block order gives up
against a uniform shuffle, in figures that sit next to its speed.

Per batch: the distinct episodes it draws from, the distinct GOPs (rows whose frames share a
GOP are near-duplicates: consecutive control steps), and the most rows it takes from one GOP.
A uniform shuffle of a large dataset gives ~batch_size distinct GOPs and 1 row per GOP; the
block order mixes ``window_rows`` rows at a time, so a batch draws from ~``window_rows / G``
GOPs and sometimes takes two rows of one.

>>> blocks = np.repeat(np.arange(4), 2)  # 8 rows, GOPs of 2 rows
>>> episodes = np.repeat([0, 1], 4)
>>> figures = batch_randomness([np.array([0, 1, 2]), np.array([4, 6, 7])], episodes, blocks)
>>> figures["distinct_gops"], figures["max_rows_from_one_gop"], figures["distinct_episodes"]
(2.0, 2, 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robodata.reader._dataset import gop_store


def batch_randomness(batches: Sequence[np.ndarray], episode_of_row: np.ndarray, gop_of_row: np.ndarray) -> dict:
    """Over ``batches`` (row indices): mean distinct episodes and GOPs per batch, the mean and
    the largest number of rows one batch takes from one GOP, and the mean batch size."""
    episodes, gops, most, sizes = [], [], [], []
    for batch in batches:
        rows = np.asarray(batch, dtype=np.int64)
        if rows.size == 0:
            continue
        episodes.append(len(np.unique(episode_of_row[rows])))
        _, per_gop = np.unique(gop_of_row[rows], return_counts=True)
        gops.append(len(per_gop))
        most.append(int(per_gop.max()))
        sizes.append(len(rows))
    if not sizes:
        return {"batches": 0}
    return {
        "batches": len(sizes),
        "batch_size": float(np.mean(sizes)),
        "distinct_episodes": float(np.mean(episodes)),
        "distinct_gops": float(np.mean(gops)),
        "mean_max_rows_from_one_gop": float(np.mean(most)),
        "max_rows_from_one_gop": int(max(most)),
    }


def dataset_randomness(dataset, batches: Sequence[np.ndarray], camera: str | None = None) -> dict:
    """``batch_randomness`` of ``batches`` of ``dataset`` (a RoboDataset), GOPs of ``camera``
    (default: the first camera).

    >>> from robodata.torch._block_order import BlockSampler
    >>> sampler = BlockSampler.for_dataset(ds, batch_size=32, window_rows=256)
    >>> dataset_randomness(ds, sampler.batches())["distinct_episodes"] > 1
    True
    """
    rows = np.arange(len(dataset))
    episodes = dataset.rows.episode_index
    refs, _ = gop_store(dataset).frame_refs(rows, camera or dataset.cameras[0])
    return batch_randomness(batches, episodes, np.unique(refs, return_inverse=True)[1])

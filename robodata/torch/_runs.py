"""Runs and the pool of the decode-once order: few large reads from object storage.

A block's GOPs are one small object range each (~18 KB at G=4); read one by one in random order
they make one small GET each. gops.lance lies in (episode, time, camera) order, so consecutive
blocks of one episode are adjacent in storage for every camera. A *run* is such a stretch:
consecutive blocks (in time) of one episode, about ``run_bytes`` of compressed GOP bytes over the
cameras read, which a fetcher reads in one range (``robodata.torch._gop_cache``). An episode of
``E`` bytes is cut into ``max(1, floor(E / run_bytes))`` runs of near-equal bytes, so a run holds
at least ``run_bytes`` (less only when its whole episode does: reads of at least ``run_bytes``)
and less than twice that (plus one block).

The order shuffles runs (instead of blocks) and lays them end to end; streams are cut as before.
Inside a stream a *pool* of open runs, at most ``pool_bytes`` of them (always at least one), is
drawn from at random block by block: each draw takes the next block, in storage order, of an
open run chosen uniformly; an exhausted run leaves the pool and the stream's next runs enter it,
in order, while they fit. Blocks of a run come in storage order because a run's bytes are fetched
together anyway (a random order inside it would mix nothing more: it is one episode), and a
fetcher holding less than a whole run then still reads a contiguous prefix. The row window then
mixes rows of the pooled blocks as before (``robodata.torch._block_order``), so its bound on
decoded frames holds unchanged.

On a dataset too small to give every stream ``MIN_RUNS_PER_STREAM`` runs of ``run_bytes``, runs
are cut smaller (``runs_for_streams``), so that a worker's batches do not come from a few whole
episodes of its own.

Without byte sizes every block counts as ``ASSUMED_BLOCK_BYTES`` (a run is then a fixed count of
blocks: ``run_bytes // ASSUMED_BLOCK_BYTES``).

>>> places = BlockPlaces(episode=np.repeat([0, 1], 6), start=np.tile(np.arange(6) * 4, 2))
>>> run_of_blocks(places, np.arange(12), run_bytes=3 * ASSUMED_BLOCK_BYTES)[0].tolist()
[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from robodata.reader import RowIndex
from robodata.storage._uris import is_remote

# the least compressed bytes of a run (its episode permitting): one read of >= 1 MiB per run. Runs
# of ~1.3 MiB at 200 ALOHA-sim-like episodes keep 0.82x the uniform order's distinct episodes per
# batch (python -m benchmarks order-randomness); 2 MiB runs give 0.77x.
DEFAULT_RUN_BYTES = 1 << 20
DEFAULT_POOL_BYTES = 128 << 20  # open runs' bytes per stream: half the GOP cache's default 256 MiB
ASSUMED_BLOCK_BYTES = 64 << 10  # a block's bytes when none are known (~3 cameras of 18 KB GOPs)
# A stream holds at least about this many runs: runs shrink below run_bytes on a dataset too small
# for it. Streams of runs as long as whole episodes would give each worker a few episodes of its
# own (6 sample episodes, 2 workers: 3 each; a tiny CNN's last-50-step loss 0.064 against 0.042
# uniform, benchmarks/order_loss.py); 8 keeps 1 MiB runs on the 6-episode ALOHA benchmark set.
MIN_RUNS_PER_STREAM = 8


def run_bytes_for(uri: str, run_bytes: int | None) -> int:
    """``run_bytes`` as given, or the default for where ``uri`` lies: runs of ``DEFAULT_RUN_BYTES``
    on object storage, where each read costs a request's latency and fee, and blocks one by one
    (0) on a local disk, where a read in place costs no more in random order and runs would only
    mix fewer episodes per batch (a tiny CNN's last-50-step loss on 6 sample episodes: 0.047 with
    blocks one by one, 0.060 with runs, 0.042 uniform; ``python -m benchmarks order-loss``).

    >>> run_bytes_for("s3://bucket/demo", None), run_bytes_for("data/demo", None), run_bytes_for("data/demo", 4096)
    (1048576, 0, 4096)
    """
    if run_bytes is not None:
        return int(run_bytes)
    return DEFAULT_RUN_BYTES if is_remote(uri) else 0


@dataclass(frozen=True)
class BlockPlaces:
    """Where each block (ids as ``block_of_rows`` numbers them) lies in storage: its episode, its
    first frame in the episode, and its compressed GOP bytes over the cameras read (None:
    unknown, each counted as ``ASSUMED_BLOCK_BYTES``)."""

    episode: np.ndarray
    start: np.ndarray
    nbytes: np.ndarray | None = None

    def sizes(self) -> np.ndarray:
        """Bytes of each block (``ASSUMED_BLOCK_BYTES`` when unknown)."""
        if self.nbytes is None:
            return np.full(len(self.episode), ASSUMED_BLOCK_BYTES, dtype=np.int64)
        return np.asarray(self.nbytes, dtype=np.int64)

    def digest(self) -> str:
        """A short fingerprint: a checkpoint's runs are only those of the same places."""
        sha = hashlib.sha1()
        for array in (self.episode, self.start, self.sizes()):
            sha.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
        return sha.hexdigest()[:16]


def block_places(
    index: RowIndex,
    block_of_row: np.ndarray,
    rows: np.ndarray | None = None,
    cameras: Sequence[str] | None = None,
    byte_sizes: Callable[[np.ndarray], np.ndarray] | None = None,
) -> BlockPlaces:
    """The places of the blocks of ``rows`` (default: every row of ``index``; ``block_of_row``
    per row of ``rows``): episode, first frame, and, given ``byte_sizes`` (ref_ids -> stored
    bytes, e.g. ``gop_store(ds).byte_sizes``), the bytes of the distinct GOPs of ``cameras``
    (default: all) that each block's rows decode from."""
    rows = np.arange(len(index), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    blocks = np.asarray(block_of_row, dtype=np.int64)
    count = int(blocks.max()) + 1 if len(blocks) else 0
    episode = np.zeros(count, dtype=np.int64)
    episode[blocks] = index.episode_index[rows]
    start = np.full(count, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(start, blocks, index.frame_index[rows].astype(np.int64))
    nbytes = None
    if byte_sizes is not None and index.cameras:
        nbytes = np.zeros(count, dtype=np.int64)
        for camera in index.cameras if cameras is None else cameras:
            pairs = np.unique(np.stack([blocks, index.ref_id[camera][rows].astype(np.int64)], axis=1), axis=0)
            refs, at = np.unique(pairs[:, 1], return_inverse=True)
            sizes = np.asarray(byte_sizes(refs), dtype=np.int64)
            np.add.at(nbytes, pairs[:, 0], sizes[at.reshape(-1)])
    return BlockPlaces(episode, start, nbytes)


def dataset_block_places(dataset, block_of_row: np.ndarray, cameras: Sequence[str] | None = None) -> BlockPlaces:
    """``block_places`` of every row of ``dataset`` (a RoboDataset), bytes from its GOP index."""
    from robodata.reader._dataset import gop_store

    return block_places(dataset.rows, block_of_row, cameras=cameras, byte_sizes=gop_store(dataset).byte_sizes)


def run_of_blocks(places: BlockPlaces, ids: np.ndarray, run_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per block of ``ids``: its run (numbered from 0) and its rank in storage order (episode,
    then time): each episode's blocks among ``ids`` cut into ``max(1, floor(bytes / run_bytes))``
    runs of near-equal bytes."""
    ids = np.asarray(ids, dtype=np.int64)
    episode, start, sizes = places.episode[ids], places.start[ids], places.sizes()[ids]
    storage = np.lexsort((ids, start, episode))
    rank = np.empty(len(ids), dtype=np.int64)
    rank[storage] = np.arange(len(ids))
    if len(ids) == 0:
        return rank, rank
    sorted_episode, sorted_sizes = episode[storage], sizes[storage]
    first = np.flatnonzero(np.r_[True, sorted_episode[1:] != sorted_episode[:-1]])
    of_episode = np.cumsum(np.r_[False, sorted_episode[1:] != sorted_episode[:-1]])
    ends = np.cumsum(sorted_sizes)
    before = ends - sorted_sizes
    episode_start = before[first][of_episode]
    total = np.add.reduceat(sorted_sizes, first)[of_episode]
    pieces = np.maximum(total // max(int(run_bytes), 1), 1)
    # a block's run: where its first byte falls among the episode's equal cuts
    local = ((before - episode_start) * pieces) // np.maximum(total, 1)
    _, run_sorted = np.unique(of_episode * (1 << 32) + local, return_inverse=True)
    run = np.empty(len(ids), dtype=np.int64)
    run[storage] = run_sorted.reshape(-1)
    return run, rank


def runs_for_streams(places: BlockPlaces, ids: np.ndarray, run_bytes: int, streams: int) -> int:
    """The run size for the blocks ``ids`` cut into ``streams`` streams: ``run_bytes``, less when
    their bytes would not give each stream ``MIN_RUNS_PER_STREAM`` runs (at least 1 byte).

    >>> places = BlockPlaces(np.zeros(64, np.int64), np.arange(64) * 4)  # 64 blocks of 64 KiB
    >>> runs_for_streams(places, np.arange(64), 1 << 20, streams=2) // ASSUMED_BLOCK_BYTES
    4
    """
    total = int(places.sizes()[np.asarray(ids, dtype=np.int64)].sum())
    return max(min(int(run_bytes), total // (max(streams, 1) * MIN_RUNS_PER_STREAM)), 1)


def pooled(chunk_run: np.ndarray, chunk_bytes: np.ndarray, pool_bytes: int, rng: np.random.Generator) -> np.ndarray:
    """The order in which a stream takes its chunks (a block's rows in the stream, in storage
    order, grouped by run in the stream's order: ``chunk_run`` per chunk, non-decreasing in the
    stream's run order) through a pool of open runs of at most ``pool_bytes`` (at least one run;
    ``chunk_bytes``: each chunk's block bytes). Returns the chunk order."""
    count = len(chunk_run)
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, chunk_run[1:] != chunk_run[:-1]])
    stops = np.r_[starts[1:], count]
    run_bytes = np.add.reduceat(np.asarray(chunk_bytes, dtype=np.int64), starts).tolist()
    starts_list, stops_list = starts.tolist(), stops.tolist()
    open_runs: list[list[int]] = []  # [run, next chunk]
    held, coming = 0, 0

    def admit() -> None:
        nonlocal held, coming
        while coming < len(starts_list) and (not open_runs or held + run_bytes[coming] <= pool_bytes):
            open_runs.append([coming, starts_list[coming]])
            held += run_bytes[coming]
            coming += 1

    admit()
    draws = rng.random(count).tolist()
    order = np.empty(count, dtype=np.int64)
    for i, draw in enumerate(draws):
        k = int(draw * len(open_runs))
        run = open_runs[k]
        order[i] = run[1]
        run[1] += 1
        if run[1] == stops_list[run[0]]:
            open_runs[k] = open_runs[-1]
            open_runs.pop()
            held -= run_bytes[run[0]]
            admit()
    return order

"""The decode-once training order: GOP-aligned blocks of rows, each decoded by one worker once
per epoch, their rows mixed in a bounded window before they form batches.

Why: a camera frame costs the decode of its GOP up to it. With rows in a uniform random order a
batch touches ~batch_size GOPs and uses one frame of each; at G=4 a frame costs ~2.5 decoded
frames. Here the rows of one GOP (a *block*: rows whose first camera's frames share a GOP) are
read by one DataLoader worker, which decodes the GOP once and keeps the frames it will hand over
later (``robodata.torch._frame_buffer``), so every decoded frame is used.

The order of one epoch is a pure function of (seed, epoch, the rows' blocks and their places,
world size, workers per rank, batch size, ``window_rows``, ``run_bytes``, ``pool_bytes``):

1. blocks are shuffled and their rows laid end to end; with the blocks' places (episode, time,
   bytes: ``robodata.torch._runs``) *runs* of consecutive blocks of one episode are shuffled
   instead, a run's blocks in storage order;
2. that sequence is cut into ``world_size * num_workers`` contiguous *streams* of equal length
   (within one row); stream ``s`` belongs to rank ``s // num_workers``, worker ``s % num_workers``.
   A block cut by a stream boundary (at most one per boundary) is decoded by both streams. With
   runs, a stream's blocks are then taken through its pool of open runs (``_runs.pooled``): a
   block's rows stay together, so what follows holds as without runs;
3. inside a stream, rows are mixed: row ``p`` of the stream gets the key ``p + window_rows * u``
   (``u`` uniform in [0, 1)) and rows are taken in key order. This is the shuffle buffer of
   LeRobot's streaming dataset and WebDataset, but exact: every row once. **The bound**: once
   the rows up to key ``k`` are handed over, a row not yet handed over has ``p > k - window_rows``,
   and a block already started began at a position ``<= k``, so its rows lie at ``p < k + B``
   (``B``: the most rows one block has; ``G`` when the first camera has a frame per row). So at
   most ``window_rows + B - 1`` rows of started blocks are decoded and not yet handed over, in
   every stream at every batch: what the frame buffer holds (``window_rows_for`` sizes the
   window to its budget). ``robodata_tests/torch/test_block_order.py`` checks the bound (reached
   without mixing), ``test_frame_buffer.py`` that the buffer holds exactly those rows' frames;
4. each stream is cut into ``K`` batches (the same ``K`` for every stream); rank ``r``'s batch
   ``j`` is batch ``j // num_workers`` of its stream ``j % num_workers``, which is the batch
   DataLoader hands to worker ``j % num_workers``.

Equal steps on every rank: every stream has ``K`` batches. Without ``drop_last`` a stream's last
batch is padded to the longest last batch with repeats of its own last rows (flagged as
``padding``; their frames are still in the worker's buffer); with ``drop_last`` every stream stops
after its last full batch.

Resuming: ``state_dict`` names the batches each rank took. With the same world size, workers,
batch size and window the epoch continues at exactly the next batch. With another layout, the
rows not yet consumed (every rank's first ``consumed`` batches, padding excluded) are planned again
with the new layout, so each remaining row is still read exactly once; the checkpoint of such a
run carries the earlier one (``resumed_from``). DataLoader workers of a resumed run each still
read one stream: the first batch after a resume goes to worker 0, whose stream is then
``consumed % num_workers``, and so on round the workers.

>>> sampler = BlockSampler(np.repeat(np.arange(100), 8), batch_size=32, num_workers=2, window_rows=64)
>>> batches = list(sampler)
>>> len(batches), sorted(np.concatenate(batches).tolist()) == list(range(800))
(26, True)
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from robodata.reader import RowIndex
from robodata.reader._selection import checked_cameras
from robodata.torch._frame_buffer import yuv_frame_bytes
from robodata.torch._runs import (
    DEFAULT_POOL_BYTES,
    DEFAULT_RUN_BYTES,
    BlockPlaces,
    dataset_block_places,
    pooled,
    run_of_blocks,
    runs_for_streams,
)
from robodata.torch._sampler import PlannedOrder, WorkerShard

DEFAULT_WINDOW_ROWS = 512  # rows mixed at a time in each stream (see frame_buffer for its bytes)
WINDOW_LIMIT = 4096  # the most rows a window sized to a frame buffer mixes


def block_of_rows(index: RowIndex, rows: np.ndarray | None = None, camera: str | None = None) -> np.ndarray:
    """Per row of ``rows`` (default: every row of ``index``), its block: the GOP its frame of
    ``camera`` (default: the first camera) is in, numbered from 0. Other cameras at the same rate
    and GOP size cut their GOPs at the same rows; a camera cut elsewhere decodes a GOP at most
    twice per epoch. Without cameras every row is its own block."""
    count = len(index.episode_index) if rows is None else len(rows)
    if not index.cameras:
        return np.arange(count, dtype=np.int64)
    refs = index.ref_id[camera or index.cameras[0]]
    _, blocks = np.unique(refs if rows is None else refs[rows], return_inverse=True)
    return blocks.astype(np.int64).reshape(-1)


def window_rows_for(
    budget_bytes: int, frame_sizes: Sequence[tuple[int, int]], block_of_row: np.ndarray, limit: int = WINDOW_LIMIT
) -> int:
    """The mixing window whose rows a frame buffer of ``budget_bytes`` holds at the bound (module
    docstring): ``window_rows + B - 1`` rows of frames of ``frame_sizes`` ((height, width) of each
    camera the buffer keeps, as YUV 4:2:0), ``B`` the largest block; at most ``limit``.

    >>> window_rows_for(100 * yuv_frame_bytes(48, 64), [(48, 64)], np.repeat(np.arange(10), 4))
    97
    """
    per_row = sum(yuv_frame_bytes(height, width) for height, width in frame_sizes)
    if per_row == 0:
        return limit
    largest = int(np.bincount(block_of_row).max()) if len(block_of_row) else 1
    return int(min(max(budget_bytes // per_row - (largest - 1), 0), limit))


class BlockSampler(PlannedOrder):
    """Batches of row indices for one rank in the decode-once block order (module docstring).

    Same interface as ``RowSampler``: iterate it as DataLoader's ``batch_sampler``; ``set_epoch``,
    ``state_dict(batches_consumed)``, ``load_state_dict``; ``worker_batches`` and ``batches(shard)``
    tell a worker what it will read.

    Parameters
    ----------
    block_of_row : numpy.ndarray
        Per row, the id of its block (rows whose frames share a GOP); see ``for_dataset``.
    batch_size : int
        Rows per batch.
    rank, world_size : int
        This process's place in distributed training.
    num_workers : int
        DataLoader workers per rank (0 counts as 1): one stream per worker.
    seed, epoch : int
        The order's seed and epoch.
    window_rows : int
        Rows mixed at a time in a stream: larger mixes more, and costs more frame-buffer memory.
    drop_last : bool
        Drop each stream's short last batch instead of padding it.
    places : BlockPlaces, optional
        Each block's episode, first frame and compressed bytes (``robodata.torch._runs``): with
        them blocks are taken in runs through a pool (few large reads); without, one by one.
    run_bytes, pool_bytes : int
        A run's compressed bytes (about; 0: blocks one by one, as without ``places``) and the most
        bytes of open runs a stream's pool holds (at least one run).
    """

    shuffle = "block"

    def __init__(
        self,
        block_of_row: np.ndarray,
        *,
        batch_size: int,
        rank: int = 0,
        world_size: int = 1,
        num_workers: int = 0,
        seed: int = 0,
        epoch: int = 0,
        window_rows: int = DEFAULT_WINDOW_ROWS,
        drop_last: bool = False,
        dataset_version: int | None = None,
        places: BlockPlaces | None = None,
        run_bytes: int = DEFAULT_RUN_BYTES,
        pool_bytes: int = DEFAULT_POOL_BYTES,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in range for world_size {world_size}")
        if num_workers < 0:
            raise ValueError(f"num_workers must be at least 0, got {num_workers}")
        if window_rows < 0:
            raise ValueError(f"window_rows must be at least 0, got {window_rows}")
        if run_bytes < 0 or pool_bytes < 0:
            raise ValueError(f"run_bytes and pool_bytes must be at least 0, got {run_bytes} and {pool_bytes}")
        self._blocks = np.asarray(block_of_row, dtype=np.int64)
        self.num_rows = len(self._blocks)
        self.batch_size = int(batch_size)
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.num_workers = max(int(num_workers), 1)
        self.seed = int(seed)
        self.epoch = int(epoch)
        self.window_rows = int(window_rows)
        self.drop_last = bool(drop_last)
        self.dataset_version = dataset_version
        self.places = places
        self.run_bytes = int(run_bytes) if places is not None else 0  # 0: blocks one by one
        self.pool_bytes = int(pool_bytes) if self.run_bytes else 0  # no runs: no pool
        self.start = 0  # batches of this rank already taken in this epoch
        self.resumed_from: dict | None = None  # a checkpoint of another layout this epoch continues
        self.salt = 0  # tells apart the plans of one epoch's rows planned again (item form's resume)
        self._plan_cache: tuple[tuple, tuple[list[np.ndarray], list[int]]] | None = None

    @classmethod
    def for_dataset(
        cls,
        dataset,
        *,
        batch_size: int,
        camera: str | None = None,
        cameras: Sequence[str] | None = None,
        **options,
    ) -> BlockSampler:
        """A sampler over every row of ``dataset`` (a RoboDataset): a row's block is the GOP its
        frame of ``camera`` (default: the first camera) is in. Other cameras at the same rate and
        GOP size cut their GOPs at the same rows; a camera cut elsewhere decodes a GOP at most
        twice per epoch. Runs are cut by the GOP bytes of ``cameras`` (default: all)."""
        if camera is not None:
            [camera] = checked_cameras(dataset.uri, dataset.cameras, camera)
        blocks = block_of_rows(dataset.rows, camera=camera)
        if cameras is not None:
            cameras = checked_cameras(dataset.uri, dataset.cameras, list(cameras)) if cameras else []
        # no GOP read (no camera): nothing to fetch in runs, blocks one by one
        places = dataset_block_places(dataset, blocks, cameras) if dataset.cameras and cameras != [] else None
        return cls(blocks, batch_size=batch_size, dataset_version=dataset.version, places=places, **options)

    # --- the epoch's plan -------------------------------------------------------------------
    @property
    def block_of_row(self) -> np.ndarray:
        """Per row, its block (read-only view)."""
        view = self._blocks.view()
        view.flags.writeable = False
        return view

    @property
    def streams(self) -> int:
        return self.world_size * self.num_workers

    def set_epoch(self, epoch: int) -> None:
        """Start epoch ``epoch`` from its first batch (call before each epoch, as with PyTorch)."""
        self.epoch = int(epoch)
        self.start = 0
        self.resumed_from = None

    def _rows_of_epoch(self) -> np.ndarray:
        """The rows this epoch plans: all of them, or those a checkpoint of another layout left."""
        if self.resumed_from is None:
            return np.arange(self.num_rows, dtype=np.int64)
        earlier = _sampler_from_state(self.resumed_from, self._blocks, self.dataset_version, self.places)
        taken = np.zeros(self.num_rows, dtype=bool)
        for rank in range(earlier.world_size):
            mine = earlier.positioned_rank(rank)
            for rows, padding in mine._stream_batches(range(mine.start)):
                taken[rows[~padding]] = True
        return np.flatnonzero(~taken & earlier._planned_mask())

    def _planned_mask(self) -> np.ndarray:
        mask = np.zeros(self.num_rows, dtype=bool)
        mask[self._rows_of_epoch()] = True
        return mask

    def _plan(self) -> tuple[list[np.ndarray], list[int]]:
        """Every stream's rows in order, and the number of real rows per batch slot bounds: K."""
        key = (self.epoch, self.salt, repr(self.resumed_from))
        if self._plan_cache is not None and self._plan_cache[0] == key:
            return self._plan_cache[1]
        rows = self._rows_of_epoch()
        salt = self.salt + (0 if self.resumed_from is None else 1 + _depth(self.resumed_from))
        rng = np.random.default_rng([self.seed, self.epoch, salt])
        ids, dense = np.unique(self._blocks[rows], return_inverse=True)
        dense = dense.reshape(-1)
        if self.run_bytes and self.places is not None:
            run, storage = run_of_blocks(
                self.places, ids, runs_for_streams(self.places, ids, self.run_bytes, self.streams)
            )
        else:  # every block a run of its own
            run, storage = np.arange(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=np.int64)
        run_rank = rng.permutation(int(run.max()) + 1 if len(run) else 0)
        # runs in random order, a run's blocks in storage order, a block's rows in (row) order
        laid = np.lexsort((rows, storage[dense], run_rank[run[dense]]))
        streams = []
        for part in np.array_split(laid, self.streams):
            if self.run_bytes:
                part = self._pooled(part, dense, run, ids, rng)
            part = rows[part]
            keys = np.arange(len(part)) + self.window_rows * rng.random(len(part))
            streams.append(part[np.argsort(keys, kind="stable")])
        sizes = [len(s) for s in streams]
        if self.drop_last:
            k = min(size // self.batch_size for size in sizes) if sizes else 0
        else:
            k = max(-(-size // self.batch_size) for size in sizes) if sizes else 0
        plan = (streams, [k])
        self._plan_cache = (key, plan)
        return plan

    def _pooled(
        self, part: np.ndarray, dense: np.ndarray, run: np.ndarray, ids: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """A stream's positions (``part``, runs laid end to end) in the order its pool of open runs
        takes their blocks (``robodata.torch._runs.pooled``)."""
        block = dense[part]
        starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]]) if len(part) else np.zeros(0, np.int64)
        lengths = np.diff(np.r_[starts, len(part)])
        assert self.places is not None
        order = pooled(run[block[starts]], self.places.sizes()[ids[block[starts]]], self.pool_bytes, rng)
        taken = lengths[order]
        # the chunks' positions laid one after another in the pool's order
        first = np.repeat(starts[order] - (np.cumsum(taken) - taken), taken)
        return part[first + np.arange(len(part))]

    def _batches_per_stream(self) -> int:
        return self._plan()[1][0]

    def _last_batch_rows(self) -> int:
        streams, [k] = self._plan()
        return max((min(len(s) - (k - 1) * self.batch_size, self.batch_size) for s in streams), default=0)

    def _stream_batch(self, stream: int, index: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, padding mask) of batch ``index`` of global stream ``stream``."""
        streams, [k] = self._plan()
        rows = streams[stream]
        first = index * self.batch_size
        if index < k - 1 or self.drop_last:
            picked = rows[first : first + self.batch_size]
            return picked, np.zeros(len(picked), dtype=bool)
        size = self._last_batch_rows()
        real = rows[first : first + size]
        pad = size - len(real)
        if pad <= 0:
            return real, np.zeros(len(real), dtype=bool)
        # repeats of the stream's own last rows: their frames are still in the worker's buffer
        source = rows[max(len(rows) - pad, 0) :] if len(rows) else np.zeros(0, np.int64)
        if len(source) == 0:
            source = np.concatenate(streams)[:1]
        repeats = np.resize(source, pad)
        mask = np.concatenate([np.zeros(len(real), dtype=bool), np.ones(pad, dtype=bool)])
        return np.concatenate([real, repeats]).astype(np.int64), mask

    def _rank_batch(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """This rank's batch ``j`` of the epoch (counted from the epoch's first batch)."""
        stream = self.rank * self.num_workers + j % self.num_workers
        return self._stream_batch(stream, j // self.num_workers)

    def _stream_batches(self, positions) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self._rank_batch(j) for j in positions]

    def positioned_rank(self, rank: int) -> BlockSampler:
        """This plan seen from another rank (what it took and will take)."""
        other = copy.copy(self)
        other.rank = int(rank)
        return other

    # --- this rank's share ----------------------------------------------------------------
    def __len__(self) -> int:
        """Batches this rank reads in the rest of the epoch: the same on every rank."""
        return max(self._batches_per_stream() * self.num_workers - self.start, 0)

    def _total(self) -> int:
        return self._batches_per_stream() * self.num_workers

    def padded_batches(self, shard: WorkerShard | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """(rows, padding mask) of this rank's remaining batches for one worker ``shard``."""
        shard = shard or WorkerShard()
        return self._stream_batches(range(self.start + shard.worker_id, self._total(), shard.num_workers))

    def worker_batches(self, shard: WorkerShard, first: int, count: int) -> list[np.ndarray]:
        """Batches ``first`` .. ``first + count - 1`` of worker ``shard``'s remaining share."""
        total = self._total()
        positions = [self.start + shard.worker_id + i * shard.num_workers for i in range(first, first + count)]
        return [rows for rows, _ in self._stream_batches([j for j in positions if j < total])]

    def positioned(self, epoch: int, start: int) -> BlockSampler:
        """This sampler at another epoch and start (the plan a PlannedBatch names); a plan of
        another epoch no longer continues a checkpoint's."""
        other = super().positioned(epoch, start)
        if other.epoch != self.epoch:
            other.resumed_from = None
        return other

    # --- resume -----------------------------------------------------------------------------
    def state_dict(self, batches_consumed: int = 0) -> dict:
        """What to checkpoint: the layout, the epoch and the batches each rank took in it (the
        same on every rank, so saving rank 0's is enough)."""
        return {
            "shuffle": "block",
            "seed": self.seed,
            "epoch": self.epoch,
            "consumed_batches": min(self.start + int(batches_consumed), self._total()),
            "num_rows": self.num_rows,
            "world_size": self.world_size,
            "num_workers": self.num_workers,
            "batch_size": self.batch_size,
            "window_rows": self.window_rows,
            "drop_last": self.drop_last,
            "run_bytes": self.run_bytes,
            "pool_bytes": self.pool_bytes,
            "places_digest": self._places_digest(),
            "dataset_version": self.dataset_version,
            "resumed_from": self.resumed_from,
        }

    def _places_digest(self) -> str | None:
        return None if not self.run_bytes or self.places is None else self.places.digest()

    def load_state_dict(self, state: dict) -> None:
        """Continue from a checkpoint: at the next batch with the same layout, else the rows not
        yet consumed planned again with this sampler's layout."""
        self._check_resumable(state, ("shuffle", "seed", "num_rows", "dataset_version"))
        consumed = int(state["consumed_batches"])
        self.epoch = int(state["epoch"])
        check_places(state, self._places_digest())
        layout = ("world_size", "num_workers", "batch_size", "window_rows", "drop_last", "run_bytes", "pool_bytes")
        if all(state.get(key, EARLIER_LAYOUT.get(key)) == getattr(self, key) for key in layout):
            self.resumed_from = state.get("resumed_from")
            self.start = consumed
        else:
            self.resumed_from = dict(state)
            self.start = 0
        self._plan_cache = None
        if not 0 <= self.start <= self._total():
            raise ValueError(f"cannot resume: consumed_batches={consumed} is outside 0..{self._total()}")

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_plan_cache"] = None  # workers re-plan (a pure function) rather than receive it
        return state

    def __repr__(self) -> str:
        return (
            f"BlockSampler(rows={self.num_rows}, batch_size={self.batch_size}, rank={self.rank}/"
            f"{self.world_size}, workers={self.num_workers}, seed={self.seed}, epoch={self.epoch}, "
            f"window_rows={self.window_rows}, run_bytes={self.run_bytes}, pool_bytes={self.pool_bytes}, "
            f"start={self.start})"
        )


# what a checkpoint written before runs existed planned with: blocks one by one
EARLIER_LAYOUT = {"run_bytes": 0, "pool_bytes": 0}


def check_places(state: dict | None, digest: str | None) -> None:
    """A checkpoint planned in runs continues only over runs cut from the same block places
    (the same cameras' GOP bytes): otherwise what it took could not be told."""
    while state is not None:
        if state.get("run_bytes", 0) and state.get("places_digest") != digest:
            raise ValueError(
                "cannot resume: the checkpoint's runs were cut from other GOP byte sizes (other cameras read, or "
                f"no byte sizes): places_digest={state.get('places_digest')!r}, this sampler's {digest!r}"
            )
        state = state.get("resumed_from")


def _depth(state: dict | None) -> int:
    return 0 if state is None else 1 + _depth(state.get("resumed_from"))


def _sampler_from_state(
    state: dict, blocks: np.ndarray, version: int | None, places: BlockPlaces | None = None
) -> BlockSampler:
    """The sampler (rank 0) that wrote checkpoint ``state``, positioned where it stopped."""
    earlier = BlockSampler(
        blocks,
        batch_size=state["batch_size"],
        world_size=state["world_size"],
        num_workers=state["num_workers"],
        seed=state["seed"],
        epoch=state["epoch"],
        window_rows=state["window_rows"],
        drop_last=state["drop_last"],
        dataset_version=version,
        places=places,
        run_bytes=state.get("run_bytes", 0),
        pool_bytes=state.get("pool_bytes", 0),
    )
    earlier.resumed_from = state.get("resumed_from")
    earlier.start = int(state["consumed_batches"])
    return earlier

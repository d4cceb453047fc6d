"""The decode-once training order: GOP-aligned blocks of rows, each decoded by one worker once
per epoch, their rows mixed in a bounded window before they form batches.

Why: a camera frame costs the decode of its GOP up to it. With rows in a uniform random order a
batch touches ~batch_size GOPs and uses one frame of each; at G=4 a frame costs ~2.5 decoded
frames. Here the rows of one GOP (a *block*: rows whose first camera's frames share a GOP) are
read by one DataLoader worker, which decodes the GOP once and keeps the frames it will hand over
later (``robodata.torch._frame_buffer``), so every decoded frame is used.

The order of one epoch is a pure function of (seed, epoch, the rows' blocks, world size,
workers per rank, batch size, ``window_rows``):

1. blocks are shuffled and their rows laid end to end;
2. that sequence is cut into ``world_size * num_workers`` contiguous *streams* of equal length
   (within one row); stream ``s`` belongs to rank ``s // num_workers``, worker ``s % num_workers``.
   A block cut by a stream boundary (at most one per boundary) is decoded by both streams;
3. inside a stream, rows are mixed: row ``p`` of the stream gets the key ``p + window_rows * u``
   (``u`` uniform in [0, 1)) and rows are taken in key order. A row is therefore handed over
   within ``window_rows`` rows of where its block entered: at most ``window_rows + G`` rows are
   decoded and not yet handed over at any time, which is what bounds the frame buffer. This is
   the shuffle buffer of LeRobot's streaming dataset and WebDataset, but exact: every row once;
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

import numpy as np

from robodata.reader._dataset import gop_store
from robodata.torch._sampler import PlannedOrder, WorkerShard

DEFAULT_WINDOW_ROWS = 512  # rows mixed at a time in each stream (see frame_buffer for its bytes)


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
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in range for world_size {world_size}")
        if num_workers < 0:
            raise ValueError(f"num_workers must be at least 0, got {num_workers}")
        if window_rows < 0:
            raise ValueError(f"window_rows must be at least 0, got {window_rows}")
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
        self.start = 0  # batches of this rank already taken in this epoch
        self.resumed_from: dict | None = None  # a checkpoint of another layout this epoch continues
        self._plan_cache: tuple[tuple, tuple[list[np.ndarray], list[int]]] | None = None

    @classmethod
    def for_dataset(cls, dataset, *, batch_size: int, camera: str | None = None, **options) -> BlockSampler:
        """A sampler over every row of ``dataset`` (a RoboDataset): a row's block is the GOP its
        frame of ``camera`` (default: the first camera) is in. Other cameras at the same rate and
        GOP size cut their GOPs at the same rows; a camera cut elsewhere decodes a GOP at most
        twice per epoch."""
        cameras = dataset.cameras
        if not cameras:
            blocks = np.arange(len(dataset), dtype=np.int64)  # no video: every row its own block
        else:
            refs, _ = gop_store(dataset).frame_refs(np.arange(len(dataset)), camera or cameras[0])
            _, blocks = np.unique(refs, return_inverse=True)
        return cls(blocks, batch_size=batch_size, dataset_version=dataset.version, **options)

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
        earlier = _sampler_from_state(self.resumed_from, self._blocks, self.dataset_version)
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
        key = (self.epoch, repr(self.resumed_from))
        if self._plan_cache is not None and self._plan_cache[0] == key:
            return self._plan_cache[1]
        rows = self._rows_of_epoch()
        salt = 0 if self.resumed_from is None else 1 + _depth(self.resumed_from)
        rng = np.random.default_rng([self.seed, self.epoch, salt])
        blocks = self._blocks[rows]
        ids, dense = np.unique(blocks, return_inverse=True)
        block_rank = rng.permutation(len(ids))
        # rows of a block stay in (row) order, blocks in random order
        sequence = rows[np.lexsort((rows, block_rank[dense]))]
        streams = []
        for part in np.array_split(sequence, self.streams):
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
            "dataset_version": self.dataset_version,
            "resumed_from": self.resumed_from,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from a checkpoint: at the next batch with the same layout, else the rows not
        yet consumed planned again with this sampler's layout."""
        self._check_resumable(state, ("shuffle", "seed", "num_rows", "dataset_version"))
        consumed = int(state["consumed_batches"])
        self.epoch = int(state["epoch"])
        layout = ("world_size", "num_workers", "batch_size", "window_rows", "drop_last")
        if all(state[key] == getattr(self, key) for key in layout):
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
            f"window_rows={self.window_rows}, start={self.start})"
        )


def _depth(state: dict | None) -> int:
    return 0 if state is None else 1 + _depth(state.get("resumed_from"))


def _sampler_from_state(state: dict, blocks: np.ndarray, version: int | None) -> BlockSampler:
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
    )
    earlier.resumed_from = state.get("resumed_from")
    earlier.start = int(state["consumed_batches"])
    return earlier

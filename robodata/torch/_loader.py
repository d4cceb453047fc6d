"""A resumable training loader: a RowSampler's batches read by a BatchReader, numpy only.

The loader counts the batches it has handed to the training loop (not the ones read ahead),
so ``state_dict()`` names exactly the next sample. ``robodata.torch._torch_dataset`` puts the
same pieces behind a PyTorch DataLoader with worker processes.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator

import numpy as np

from robodata.errors import LoaderWorkerError
from robodata.torch._batch_reader import BatchReader
from robodata.torch._block_order import BlockSampler
from robodata.torch._runs import DEFAULT_POOL_BYTES, run_bytes_for
from robodata.torch._sampler import RowSampler


def make_sampler(
    reader: BatchReader,
    *,
    batch_size: int,
    shuffle: str = "block",
    num_workers: int = 0,
    window_rows: int | None = None,
    pool_episodes: int = 8,
    run_bytes: int | None = None,
    pool_bytes: int | None = None,
    **options,
) -> RowSampler | BlockSampler:
    """The sampler of a training order over every row ``reader`` reads: the decode-once
    ``BlockSampler`` for ``shuffle="block"`` (its window sized to the reader's frame buffer unless
    ``window_rows`` is given; runs of ``run_bytes`` of the cameras read taken through a pool of
    ``pool_bytes``, default half the reader's GOP budget; ``run_bytes`` by default 1 MiB on
    object storage, none (blocks one by one) on a local disk: ``run_bytes_for``), else a ``RowSampler`` (``uniform``,
    ``episode`` or ``none``).

    >>> make_sampler(BatchReader("data/demo", cameras=["top"]), batch_size=32, num_workers=2).window_rows
    2317
    >>> make_sampler(BatchReader("data/demo"), batch_size=32, shuffle="uniform").shuffle
    'uniform'
    """
    if shuffle == "block":
        window = reader.window_rows() if window_rows is None else window_rows
        if pool_bytes is None:
            pool_bytes = reader.budget_bytes // 2 or DEFAULT_POOL_BYTES
        return BlockSampler.for_dataset(
            reader.dataset,
            batch_size=batch_size,
            num_workers=num_workers,
            window_rows=window,
            cameras=reader.image_columns,  # runs cut by the bytes of the cameras read
            run_bytes=run_bytes_for(reader.uri, run_bytes),
            pool_bytes=pool_bytes,
            **options,
        )
    return RowSampler.for_dataset(
        reader.dataset, batch_size=batch_size, shuffle=shuffle, pool_episodes=pool_episodes, **options
    )


class ResumableLoader:
    """What every robodata training loader offers: epochs, checkpoints, the pinned version."""

    def __init__(self, reader: BatchReader, sampler: RowSampler | BlockSampler) -> None:
        if sampler.num_rows != reader.num_rows:
            raise ValueError(
                f"the sampler covers {sampler.num_rows} rows but version {reader.dataset_version} "
                f"of {reader.uri} has {reader.num_rows}"
            )
        self.reader = reader
        self.row_sampler = sampler
        self._yielded = 0
        self._resume_pending = False

    @property
    def dataset_version(self) -> int:
        """The dataset version every batch of this run comes from (record it with the run)."""
        return self.reader.dataset_version

    def __len__(self) -> int:
        """Batches this rank takes in the rest of the epoch: the same on every rank."""
        return len(self.row_sampler)

    def set_epoch(self, epoch: int) -> None:
        """Begin ``epoch``; a position restored by ``load_state_dict`` for this epoch is kept."""
        if not (self._resume_pending and epoch == self.row_sampler.epoch):
            self.row_sampler.set_epoch(epoch)
            self._yielded = 0

    def state_dict(self) -> dict:
        """The checkpoint: epoch and rows of the epoch's order consumed (same on every rank)."""
        state = self.row_sampler.state_dict(batches_consumed=self._yielded)
        state["dataset_version"] = self.dataset_version
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue after a checkpoint; world size, batch size and workers may have changed."""
        self.row_sampler.load_state_dict(state)
        self._yielded = 0
        self._resume_pending = True

    def close(self) -> None:
        """Stop prefetching in this process and free the GOP bytes it holds."""
        self.reader.close()

    def __iter__(self) -> Iterator[dict]:
        self._resume_pending = False
        self._yielded = 0
        try:
            for batch in self._batches():
                self._yielded += 1
                yield batch
        except (RuntimeError, ConnectionError, EOFError) as exc:
            workers = getattr(self, "num_workers", 0)
            try:
                how = worker_death(exc, workers)
            except RuntimeError as report:  # PyTorch's SIGCHLD handler raised its own report meanwhile
                how = worker_death(report, workers)
            if how is None:
                raise
            raise LoaderWorkerError(
                f"{self.reader.uri} version {self.dataset_version}: {how} after {self._yielded} batches of epoch "
                f"{self.row_sampler.epoch}; the batches it held are lost: resume from the last state_dict() "
                "(a worker killed by signal 9 is often the out-of-memory killer: fewer workers or a smaller "
                "frame_buffer_bytes use less memory)"
            ) from None
        # A finished pass moves on to the next epoch, so the state names its first sample.
        self.row_sampler.set_epoch(self.row_sampler.epoch + 1)
        self._yielded = 0

    def _batches(self) -> Iterator[dict]:
        raise NotImplementedError


# PyTorch's words for a worker that died: its SIGCHLD handler's, and its status check's.
_WORKER_DIED = re.compile(
    r"DataLoader worker \(pid\(?s?\)? ([\d, ]+)\) (is killed by signal: [^.]+|exited unexpectedly)"
)


def worker_death(exc: BaseException, num_workers: int) -> str | None:
    """What PyTorch's ``exc`` says about a DataLoader worker that died, in a few words; None
    when it says nothing of the kind. A connection that closed under a batch being received
    (``ConnectionResetError``, ``EOFError``) means the same when workers send the batches.

    >>> worker_death(RuntimeError("DataLoader worker (pid(s) 5676) exited unexpectedly"), 2)
    'DataLoader worker (pid 5676) exited unexpectedly'
    >>> worker_death(RuntimeError("DataLoader worker (pid 12) is killed by signal: Killed. "), 2)
    'DataLoader worker (pid 12) was killed by signal: Killed'
    >>> worker_death(ConnectionResetError(104, "Connection reset by peer"), 0) is None
    True
    """
    found = _WORKER_DIED.search(str(exc))
    if found is not None:
        how = found.group(2).replace("is killed", "was killed").strip()
        return f"DataLoader worker (pid {found.group(1).strip()}) {how}"
    if num_workers > 0 and isinstance(exc, ConnectionError | EOFError):
        closed = f"its connection closed while it sent a batch ({type(exc).__name__})"
        dead = dead_child()
        if dead is not None:
            return f"DataLoader worker (pid {dead[0]}) {dead[1]}: {closed}"
        return f"a DataLoader worker died: {closed}"
    return None


def dead_child(wait_s: float = 1.0) -> tuple[int, str] | None:
    """(pid, how it ended) of a child process of this one that has ended and is not reaped yet,
    waiting up to ``wait_s`` for one; None if there is none. It is only looked at (``WNOWAIT``):
    whoever waits for the child still gets its status. A DataLoader worker's end reaches the
    training process as a closed connection a moment before the worker is a zombie, and
    PyTorch's own check of its workers may not have run yet."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return None
        if info is not None and info.si_pid:
            if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
                return info.si_pid, f"was killed by signal: {signal.Signals(info.si_status).name}"
            return info.si_pid, f"exited with status {info.si_status}"
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


class TrainingLoader(ResumableLoader):
    """Batches for one rank in this process (no PyTorch needed), GOPs prefetched in a thread.
    Each batch has a ``padding`` mask: rows repeated only to give every rank the same steps.

    >>> loader = TrainingLoader.create(  # an s3:// root alike
    ...     "data/demo", version=3, batch_size=64, cameras=["top"], sampler_options={"rank": 0, "world_size": 2}
    ... )
    >>> batch = next(iter(loader))
    >>> len(loader), batch["observation_images_top"].shape, int(batch["padding"].sum())
    (5, (64, 480, 640, 3), 0)

    """

    @classmethod
    def create(cls, uri: str, *, batch_size: int, sampler_options: dict | None = None, **reader_options):
        """A loader over ``uri``; ``sampler_options`` go to ``make_sampler`` (``shuffle``
        defaults to the decode-once ``"block"`` order), the rest to ``BatchReader``."""
        reader = BatchReader(uri, **reader_options)
        sampler = make_sampler(reader, batch_size=batch_size, **(sampler_options or {}))
        return cls(reader, sampler)

    def _batches(self) -> Iterator[dict[str, np.ndarray]]:
        batches = self.row_sampler.padded_batches()
        self.reader.schedule([rows for rows, _ in batches])
        self.reader.expect([rows for rows, _ in batches])
        for indices, padding in batches:
            batch = self.reader.read(indices)
            batch["padding"] = padding
            yield batch

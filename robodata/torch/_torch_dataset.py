"""PyTorch adapter: a map-style Dataset whose batched fetch is one ``get_frames``.

DataLoader calls ``__getitems__`` with a whole batch of indices (from the RowSampler used as
``batch_sampler``, or any sampler with ``batch_size=``), so a batch costs one coalesced GOP read
and one decode per GOP. ``__getitems__`` returns a ``SampleBatch``: a sequence of per-sample
dicts, which PyTorch's default collate hands over as the batch already stacked, without
copying (``robodata.torch._handover``). The training process builds the row index and the
GOP index once and its workers memory-map them (``robodata.reader._dataset.share_rows`` /
``adopt_rows``): a worker never scans gops.lance, and reads the version of it the training
process indexed. Workers are started by spawn (Lance is not fork-safe); each opens the pinned
dataset version lazily from the pickled (uri, version, storage options). Inside a worker,
``get_worker_info`` tells which of the rank's batches DataLoader will hand to it (batches w,
w + n, ...), and a background thread prefetches their GOPs within the byte budget.

>>> loader = make_dataloader("data/demo", batch_size=64)
>>> next(iter(loader))["observation_images_top"].shape
torch.Size([64, 480, 640, 3])
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.util
import threading
import time
from collections.abc import Iterator, Sequence

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("robodata's PyTorch adapter needs torch: pip install 'robodata[torch]'") from exc

from robodata.reader._dataset import adopt_rows
from robodata.reader._dataset import share_rows as share_dataset_rows
from robodata.reader._row_index import SharedArrays
from robodata.torch._batch_reader import BatchReader
from robodata.torch._block_order import BlockSampler
from robodata.torch._handover import HandOff, SampleBatch, collate_batch, to_tensors
from robodata.torch._item_order import BlockItemSampler
from robodata.torch._loader import ResumableLoader, make_sampler
from robodata.torch._planned_reads import batch_plan
from robodata.torch._sampler import RowSampler


def adopt_shared_rows(reader: BatchReader, shared: SharedArrays | None) -> None:
    """In a worker, make ``reader``'s dataset use the row index its training process shared,
    instead of scanning frames.lance and holding a private copy."""
    if shared is None or shared.owner:
        return
    adopt_rows(reader.dataset, shared)


def share_rows(reader: BatchReader) -> SharedArrays | None:
    """The training process's row index, and its GOP index where the reader decodes frames, as
    memory-mappable files (made once per dataset); None where the reader has not opened its
    dataset (a worker's copy)."""
    if not reader.is_open:
        return None
    return share_dataset_rows(reader.dataset, gop_index=bool(reader.image_columns))


START_METHODS = ("spawn", "forkserver")


def worker_context(start_method: str = "spawn"):
    """The multiprocessing context DataLoader workers start from.

    Lance is not fork-safe once a process has used it, so workers never fork the training
    process. ``spawn`` (the default) starts a fresh interpreter per worker, and each one imports
    torch, Lance, PyAV and the training script again. ``forkserver`` imports them once, in a
    server process that never opens a dataset, and forks every worker from it: later
    DataLoaders of the same process start their workers in a fraction of a second. The
    training script (``__main__``) is preloaded too, so functions defined there (transforms)
    unpickle in workers as with spawn. The fork server is shared by the whole process and
    keeps the environment it started with: another library's forkserver children (Dagster's
    multiprocess executor) would be forked from it too, which is why it is not the default.

    >>> context = worker_context("spawn")  # what DataLoader(..., multiprocessing_context=context) takes
    >>> context.get_start_method()
    'spawn'
    """
    if start_method not in START_METHODS:
        raise ValueError(f"start_method must be one of {START_METHODS}, got {start_method!r}")
    context = multiprocessing.get_context(start_method)
    if start_method == "forkserver":
        context.set_forkserver_preload(["__main__", "robodata.torch._forkserver_preload"])
        # Start it now: its imports overlap with opening the dataset in this process.
        from multiprocessing import forkserver

        forkserver.ensure_running()
    return context


class RoboTorchDataset(Dataset):
    """Map-style PyTorch dataset over one pinned dataset version; ``__getitems__`` reads a whole
    batch with one coalesced GOP read and one decode per GOP.

    ``make_dataloader`` builds one with its sampler and DataLoader; build it yourself to use
    your own DataLoader or sampler.

    Parameters
    ----------
    reader : BatchReader
        What to read: version, cameras, columns, offsets or delta_timestamps, image dtype and
        layout, transform, GOP cache budget.
    plan : RowSampler, BlockSampler or BlockItemSampler, optional
        The ``batch_sampler`` (or, for a ``BlockItemSampler``, the ``sampler``) DataLoader
        iterates: each worker then prefetches the batches it will be asked for and keeps decoded
        frames for them. Any other sampler works too, without prefetch.

    Examples
    --------
    >>> from robodata.torch import BatchReader
    >>> dataset = RoboTorchDataset(BatchReader("data/demo", cameras=["top"], pixel_format="rgbp"))
    >>> len(dataset), dataset.__getitems__([0, 1]).stacked["observation_images_top"].shape
    (591, torch.Size([2, 3, 480, 640]))
    >>> loader = DataLoader(dataset, batch_size=4, collate_fn=collate_batch)
    >>> next(iter(loader))["action"].shape
    torch.Size([4, 14])
    """

    def __init__(self, reader: BatchReader, plan: RowSampler | BlockSampler | BlockItemSampler | None = None) -> None:
        self.reader = reader
        self.plan = plan
        self._shared_rows: SharedArrays | None = None
        self._hand_off = HandOff()

    def __len__(self) -> int:
        return self.reader.num_rows

    def __getitems__(self, indices: Sequence[int]) -> SampleBatch:
        finish_sending_before_exit()
        adopt_shared_rows(self.reader, self._shared_rows)
        plan = batch_plan(indices, self.plan)
        # A batch of a new plan plans the frame buffer and has the GOP prefetcher fetch the GOPs
        # of every batch of it this worker reads, in first-need order, runs stored together in one read.
        self.reader.frame_plan.for_batch(plan)
        shared = self._hand_off.outputs()
        self.reader.allocate = shared
        return self._hand_off.batch(to_tensors(self.reader.read(indices), shared), indices, shared)

    def __getitem__(self, index: int) -> dict:
        return self.__getitems__([index])[0]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_shared_rows"] = share_rows(self.reader)
        return state


QUEUE_FEEDER = "QueueFeederThread"  # the thread a multiprocessing queue pickles and sends with
SEND_WAIT_S = 10.0  # DataLoader gives a stopping worker 5 s, then terminates it
_exit_wait_registered = False


def finish_sending_before_exit() -> None:
    """In a DataLoader worker, let the batches it has queued finish sending before it exits.

    A worker puts each batch on its data queue, whose feeder thread (a daemon) pickles it:
    torch moves the tensors to shared memory in C++ with the GIL released. When the training
    loop stops early (an abandoned iterator, a break, an error), DataLoader tells the worker to
    stop while batches are still queued, and torch's worker loop returns without waiting for
    the feeder. The worker's interpreter then finalizes; the feeder, back from C++, finds it
    finalizing and Python 3.11 ends it with ``pthread_exit``, whose unwinding through torch's
    C++ frame calls ``std::terminate``: "terminate called without an active exception",
    SIGABRT. Waiting for the feeders (at most ``SEND_WAIT_S``) before the interpreter
    finalizes removes the race; the queue was closed first, so a feeder ends once its last
    batch is in the pipe, and DataLoader terminates a worker that is still waiting after 5 s.

    ``RoboTorchDataset.__getitems__`` (and ``LeRobotCompatDataset``'s) calls it in every worker;
    elsewhere it does nothing:

    >>> finish_sending_before_exit()  # not in a DataLoader worker
    >>> _exit_wait_registered
    False
    """
    global _exit_wait_registered
    if _exit_wait_registered or torch.utils.data.get_worker_info() is None:
        return
    _exit_wait_registered = True
    # Priority 0: after the queues' own close finalizers (10), which hand their feeders the
    # stop sentinel, and before the interpreter finalizes.
    multiprocessing.util.Finalize(None, _join_queue_feeders, exitpriority=0)


def _join_queue_feeders() -> None:
    deadline = time.monotonic() + SEND_WAIT_S
    for thread in threading.enumerate():
        if thread.name == QUEUE_FEEDER and thread is not threading.current_thread():
            thread.join(timeout=max(deadline - time.monotonic(), 0))


class TorchLoader(ResumableLoader, DataLoader):
    """A real ``torch.utils.data.DataLoader`` (Lightning and Accelerate re-wrap it) over a
    RoboTorchDataset, with the resumable-loader interface: ``set_epoch``, ``state_dict``,
    ``load_state_dict``, ``dataset_version``. Its ``batch_sampler`` is the RowSampler.

    Batches are dicts of tensors plus ``padding`` ([B] bool, rows repeated only so that every
    rank takes the same number of steps); ``state_dict()`` counts batches the training loop
    received.
    """

    def __init__(
        self,
        reader: BatchReader,
        sampler: RowSampler | BlockSampler,
        *,
        num_workers: int = 0,
        prefetch_factor: int | None = None,
        pin_memory: bool = False,
        persistent_workers: bool = True,
        start_method: str = "spawn",
    ) -> None:
        DataLoader.__init__(
            self,
            RoboTorchDataset(reader, plan=sampler),
            batch_sampler=sampler,
            collate_fn=collate_batch,
            num_workers=num_workers,
            # Lance is not fork-safe: workers never fork this process (see worker_context).
            multiprocessing_context=worker_context(start_method) if num_workers > 0 else None,
            prefetch_factor=prefetch_factor if num_workers > 0 else None,
            # Spawned workers are slow to start: keep them across epochs. Each batch names its
            # plan (PlannedBatch), so a worker re-plans its prefetch on a new epoch or resume.
            persistent_workers=persistent_workers and num_workers > 0,
            pin_memory=pin_memory,
        )
        ResumableLoader.__init__(self, reader, sampler)

    def __len__(self) -> int:
        return ResumableLoader.__len__(self)

    def __iter__(self):
        return ResumableLoader.__iter__(self)

    def _batches(self) -> Iterator[dict]:
        return DataLoader.__iter__(self)

    def close(self) -> None:
        """Stop the persistent workers (DataLoader only does so when it is garbage collected)."""
        ResumableLoader.close(self)
        iterator = getattr(self, "_iterator", None)
        if iterator is not None and hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()
            self._iterator = None


def make_dataloader(
    uri: str,
    *,
    batch_size: int,
    num_workers: int = 0,
    rank: int = 0,
    world_size: int = 1,
    seed: int = 0,
    epoch: int = 0,
    shuffle: str = "block",
    drop_last: bool = False,
    pool_episodes: int = 8,
    window_rows: int | None = None,
    run_bytes: int | None = None,
    pool_bytes: int | None = None,
    prefetch_factor: int | None = None,
    pin_memory: bool = False,
    persistent_workers: bool = True,
    start_method: str = "spawn",
    **reader_options,
) -> TorchLoader:
    """A resumable, sharded PyTorch DataLoader over one pinned dataset version.

    Every rank takes the same number of batches: the last step is padded with flagged repeats
    (``batch["padding"]``) unless ``drop_last=True`` drops it. ``state_dict()`` names the next
    sample; ``load_state_dict`` resumes there, with another world size or batch size too.

    Parameters
    ----------
    uri : str
        The dataset root (local or s3://).
    batch_size : int
        Rows per batch on each rank.
    num_workers : int, default 0
        DataLoader worker processes (started by ``start_method``, never forked).
    rank, world_size : int, default 0 and 1
        This process's place in distributed training.
    seed, epoch : int, default 0
        The shuffle's seed and the epoch to start with.
    shuffle : {"block", "uniform", "episode", "none"}, default "block"
        ``block``: the decode-once order (``robodata.torch._block_order``): each GOP's rows read
        by one worker, which decodes the GOP once per epoch and keeps its frames for their
        batches; rows mixed in a window of ``window_rows`` rows. ``uniform``: all rows in a
        uniform random order (every frame pays for its GOP; ``global`` is its earlier name).
        ``episode``: episodes pooled ``pool_episodes`` at a time. ``none``: in order.
    drop_last : bool, default False
        Drop the last, short step instead of padding it.
    pool_episodes : int, default 8
        Episodes per pool with ``shuffle="episode"``.
    window_rows : int, optional
        Rows mixed at a time in each worker's stream with ``shuffle="block"``; by default as many
        as the frame buffer (``frame_buffer_bytes``, default 1 GiB per worker) holds, at most 4096.
    run_bytes : int, optional
        With ``shuffle="block"``: by default 1 MiB on object storage and 0 on a local disk
        (``run_bytes_for``). Blocks are taken in runs, consecutive blocks of one episode of at
        least this many compressed bytes of the cameras read (less only for a smaller episode) and
        under twice as many: adjacent in storage, one large read each from object storage; 0 takes
        blocks one by one (``robodata.torch._runs``).
    pool_bytes : int, optional
        With ``shuffle="block"``: each worker's stream draws blocks at random from a pool of open
        runs of at most this many bytes (at least one run); default half of ``budget_bytes``.
    prefetch_factor, pin_memory, persistent_workers
        As DataLoader's (workers persist across epochs by default).
    start_method : {"spawn", "forkserver"}, default "spawn"
        How workers start (see ``worker_context``).
    **reader_options
        Passed to BatchReader: ``version``, ``storage_options``, ``cameras``, ``columns``,
        ``offsets``, ``delta_timestamps``, ``image_dtype``, ``transform``,
        ``budget_bytes``, ``prefetch_batches``, ``frame_buffer_bytes`` (decoded frames kept per
        worker, as YUV 4:2:0; 0 turns the buffer off), ``resolution`` ((H, W): a training rendition where one
        fits), ``pixel_format`` (the image layout: "rgb24" [H, W, 3], "rgbp" [3, H, W], "yuv420p"
        [H*3/2, W] planar YUV 4:2:0 for ``robodata.torch.yuv420_to_rgb``).

    Returns
    -------
    TorchLoader
        A ``torch.utils.data.DataLoader`` with ``set_epoch``, ``state_dict``,
        ``load_state_dict`` and ``dataset_version``.

    Raises
    ------
    ValueError
        An unknown camera, column, shuffle mode or start method, or delta_timestamps that are
        not whole control steps.

    Examples
    --------
    >>> loader = make_dataloader("data/demo", batch_size=32, rank=0, world_size=2, cameras=["top"])
    >>> loader.dataset_version, len(loader)
    (3, 10)
    >>> batch = next(iter(loader))
    >>> batch["observation_images_top"].shape, batch["padding"].shape
    (torch.Size([32, 480, 640, 3]), torch.Size([32]))
    >>> loader.state_dict()["consumed_batches"]
    1
    """
    reader = BatchReader(uri, **reader_options)
    sampler = make_sampler(
        reader,
        batch_size=batch_size,
        rank=rank,
        world_size=world_size,
        num_workers=num_workers,
        seed=seed,
        epoch=epoch,
        shuffle=shuffle,
        drop_last=drop_last,
        pool_episodes=pool_episodes,
        window_rows=window_rows,
        run_bytes=run_bytes,
        pool_bytes=pool_bytes,
    )
    return TorchLoader(
        reader,
        sampler,
        num_workers=num_workers,
        prefetch_factor=prefetch_factor,
        pin_memory=pin_memory,
        persistent_workers=persistent_workers,
        start_method=start_method,
    )

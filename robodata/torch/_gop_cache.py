"""GOP bytes held in memory under a byte budget, filled ahead of need by a background thread.

A training worker knows the batches it will be asked for next (its share of the sampler's
order). A thread reads their GOPs with ``read_blobs`` while the worker decodes the current
batch, so decode rarely waits on storage. Every GOP is held once however many batches need
it; GOPs that no pending batch needs stay as a least-recently-used cache (episode-pool
shuffles reuse them) and are the first to go when the budget is full. Bytes come from
``gop_store(dataset).read``, which verifies their checksums; the decode verifies them again, so a
cached GOP is never trusted blindly (CorruptGopError reaches the consumer's ``acquire``/read).
"""

from __future__ import annotations

import multiprocessing.util
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from robodata.reader._dataset import gop_store


def batch_key(indices: np.ndarray) -> bytes:
    """Identity of a batch: its row indices, in order."""
    return np.ascontiguousarray(indices, dtype=np.int64).tobytes()


class GopCache:
    """GOP bytes by ref_id: pinned while a scheduled batch needs them, else an LRU cache.

    >>> from robodata.torch._batch_reader import BatchReader
    >>> reader = BatchReader("data/demo", cameras=["top"])  # needed_gops: rows -> the GOPs they show
    >>> cache = GopCache(reader.dataset, reader.needed_gops, budget_bytes=256 << 20, depth=4)
    >>> batches = [np.array([0, 1, 2]), np.array([300, 301])]
    >>> cache.schedule(batches)  # read ahead in a thread
    >>> gop_bytes = cache.acquire(batches[0])  # ref_id -> bytes, pinned until released
    >>> len(gop_bytes), cache.held_bytes >= sum(len(b) for b in gop_bytes.values())  # + what was read ahead
    (1, True)
    >>> cache.release(batches[0]); cache.close()
    """

    def __init__(
        self,
        dataset,
        needed_refs: Callable[[np.ndarray], np.ndarray],
        *,
        budget_bytes: int,
        depth: int = 4,
    ) -> None:
        self._dataset = dataset
        self._needed_refs = needed_refs
        self.budget_bytes = int(budget_bytes)
        self.depth = max(int(depth), 0)
        self._bytes: OrderedDict[int, bytes] = OrderedDict()  # unpinned entries in LRU order last
        self._pins: dict[int, int] = {}
        self._held = 0
        self.peak_held = 0
        # GOPs read ahead by the thread vs. read on demand while a batch waited (misses).
        self.prefetched_gops = 0
        self.on_demand_gops = 0
        self._plan: list[np.ndarray] = []
        self._plan_pos: dict[bytes, int] = {}
        self._ready: dict[int, tuple[np.ndarray, threading.Event]] = {}  # plan position -> refs
        self._cursor = 0  # next plan position the consumer is expected to take
        self._fetch_at = 0  # next plan position the thread will fetch
        self._generation = 0
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def held_bytes(self) -> int:
        return self._held

    # --- plan -------------------------------------------------------------------------------
    def schedule(self, batches: Sequence[np.ndarray]) -> None:
        """Replace the upcoming batches (in the order they will be read) and prefetch them."""
        with self._lock:
            self._unpin_scheduled()
            self._generation += 1
            self._plan = list(batches)
            self._plan_pos = {batch_key(b): i for i, b in enumerate(self._plan)}
            self._cursor = self._fetch_at = 0
            self._lock.notify_all()
        if self.depth and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="robodata-prefetch", daemon=True)
            self._thread.start()
            # Stop the thread (and let a read in flight finish) before the process exits;
            # multiprocessing runs these finalizers at exit, in DataLoader workers too.
            multiprocessing.util.Finalize(self, self.close, exitpriority=10)

    def _unpin_scheduled(self) -> None:
        for refs, _ in self._ready.values():
            self._unpin(refs)
        self._ready.clear()

    # --- consumer ---------------------------------------------------------------------------
    def acquire(self, indices: np.ndarray) -> dict[int, bytes]:
        """Every GOP batch ``indices`` needs, pinned until ``release``: prefetched ones when the
        batch was scheduled, cached ones, and the rest read now."""
        refs = self._needed_refs(indices)
        with self._lock:
            position = self._plan_pos.get(batch_key(indices))
            if position is not None and position >= self._cursor and self._prefetching():
                # Skip batches the consumer passed over; this batch is the thread's next job (so
                # its read, too, waits for room in the budget), unless it is already fetched.
                for skipped in range(self._cursor, position):
                    entry = self._ready.pop(skipped, None)
                    if entry is not None:
                        self._unpin(entry[0])
                self._cursor = position
                self._lock.notify_all()
                while not self._fetched(position) and self._prefetching():
                    self._lock.wait(timeout=1.0)
                self._cursor = position + 1
                entry = self._ready.pop(position, None)
                if entry is not None:
                    # The prefetch pin now belongs to this call; pin what it lacks below.
                    self._unpin(entry[0])
                self._lock.notify_all()
            self._pin(refs)
            missing = np.array([r for r in refs.tolist() if r not in self._bytes], dtype=np.int64)
            if missing.size:  # a batch outside the plan: make what room unpinned GOPs allow
                self._evict(int(gop_store(self._dataset).byte_sizes(missing).sum()))
        fetched = gop_store(self._dataset).read(missing) if missing.size else {}
        with self._lock:
            self.on_demand_gops += len(fetched)
            for ref, data in fetched.items():
                self._store(ref, data)
            self._lock.notify_all()
            return {int(r): self._bytes[int(r)] for r in refs}

    def release(self, indices: np.ndarray) -> None:
        """The batch is decoded: its GOPs may be evicted when room is needed."""
        refs = self._needed_refs(indices)
        with self._lock:
            self._unpin(refs)
            self._evict(0)
            self._lock.notify_all()

    # --- bookkeeping (lock held) ------------------------------------------------------------
    def _prefetching(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._closed

    def _fetched(self, position: int) -> bool:
        entry = self._ready.get(position)
        return entry is not None and entry[1].is_set()

    def _pin(self, refs: np.ndarray) -> None:
        for ref in refs.tolist():
            self._pins[ref] = self._pins.get(ref, 0) + 1

    def _unpin(self, refs: np.ndarray) -> None:
        for ref in refs.tolist():
            count = self._pins.get(ref, 0) - 1
            if count <= 0:
                self._pins.pop(ref, None)
                if ref in self._bytes:
                    self._bytes.move_to_end(ref)  # most recently used
            else:
                self._pins[ref] = count

    def _store(self, ref: int, data: bytes) -> None:
        if ref in self._bytes:
            return
        self._bytes[ref] = data
        self._held += len(data)
        self.peak_held = max(self.peak_held, self._held)
        if ref not in self._pins:
            self._evict(0)

    def _evict(self, room: int) -> None:
        """Drop least recently used unpinned GOPs until ``room`` more bytes fit the budget."""
        if self._held + room <= self.budget_bytes:
            return
        for ref in [r for r in self._bytes if r not in self._pins]:
            self._held -= len(self._bytes.pop(ref))
            if self._held + room <= self.budget_bytes:
                return

    def _pinned_bytes(self) -> int:
        return sum(len(self._bytes[r]) for r in self._pins if r in self._bytes)

    # --- background thread ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._lock:
                job = self._next_job()
                while job is None and not self._closed:
                    self._lock.wait()
                    job = self._next_job()
                if self._closed:
                    return
                position, refs, missing, generation = job
            try:
                fetched = gop_store(self._dataset).read(missing) if missing.size else {}
            except Exception:
                # The consumer reads what is missing itself, and its read reports the error.
                fetched = {}
            with self._lock:
                if generation == self._generation and position in self._ready:
                    self.prefetched_gops += len(fetched)
                    for ref, data in fetched.items():
                        self._store(ref, data)
                    self._ready[position][1].set()
                self._lock.notify_all()

    def _next_job(self):
        """The next batch to prefetch, pinned, if it is within depth and the budget has room."""
        position = max(self._fetch_at, self._cursor)
        if self._closed or position >= len(self._plan) or position >= self._cursor + self.depth:
            return None
        refs = self._needed_refs(self._plan[position])
        missing = np.array([r for r in refs.tolist() if r not in self._bytes], dtype=np.int64)
        need = int(gop_store(self._dataset).byte_sizes(missing).sum()) if missing.size else 0
        pinned = self._pinned_bytes()
        if pinned and pinned + need > self.budget_bytes:
            return None  # wait until the consumer releases a batch
        self._pin(refs)  # first, so that making room cannot evict this batch's cached GOPs
        self._evict(need)
        self._ready[position] = (refs, threading.Event())
        self._fetch_at = position + 1
        return position, refs, missing, self._generation

    def close(self) -> None:
        """Stop prefetching and wait for a read in flight to finish."""
        with self._lock:
            self._closed = True
            self._unpin_scheduled()
            self._lock.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)
        with self._lock:
            self._bytes.clear()
            self._pins.clear()
            self._held = 0

"""GOP bytes held in memory under a byte budget, fetched ahead of need by a background thread in
spans: GOPs stored next to each other that this worker needs, read in one range read.

A training worker knows the batches it will be asked for (its share of the sampler's order,
``schedule``). A thread walks them in order and fetches the GOPs they need, first need first. Each
fetch is a *span*: the next GOP needed and the GOPs stored right after it (consecutive row
addresses of gops.lance, docs/s3.md) that any batch further on needs too, up to ``max_span_bytes``;
spans are cut only once the horizon below is listed, and several go in one read of up to
``max_read_bytes`` (Lance reads their blob descriptors once, then every span's range side by side).
gops.lance keeps an episode's GOPs in (time, camera) order, so a run of consecutive rows of an
episode is one span for every camera: on object storage one GET of a MiB or more instead of one
per GOP (Lance's ``read_blobs`` coalesces adjacent blobs into one range request). A GOP is fetched
once and held until the last batch of the plan that needs it has been read; GOPs no batch needs
any more stay as a least-recently-used cache, the first to go when the budget is full.

How far ahead: from object storage the thread fetches as far ahead as the budget allows, within
``REMOTE_FETCH_AHEAD`` batches, so latency hides behind decoding; it looks for later uses of a
span's GOPs ``REMOTE_HORIZON`` batches ahead. On a local disk (GOPs read in place in microseconds)
it keeps to ``depth`` batches both ways, as little memory as before (issue #42).

Bytes come from ``gop_store(dataset).read``, which verifies their checksums; the decode verifies them
again, so a cached GOP is never trusted blindly (CorruptGopError reaches the consumer's
``acquire``/read: a span that failed is read again by the batch that needs it).
"""

from __future__ import annotations

import multiprocessing.util
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from robodata.reader._dataset import gop_store
from robodata.storage._uris import is_remote

REMOTE_FETCH_AHEAD = 64  # batches ahead of the consumer whose GOPs are fetched from object storage
REMOTE_HORIZON = 256  # batches ahead in which later uses of a span's GOPs are looked for (listing one costs ~0.6 ms)
MAX_SPAN_BYTES = 8 << 20  # one range read at most (and at most a quarter of the budget)
# one read_blobs call at most (and at most a quarter of the budget): Lance reads its spans' ranges
# side by side (8 ranges through a 200 ms proxy took 0.58 s against 0.44 s for one), after one
# read of their blob descriptors per data file, so fewer, larger calls cost fewer round trips.
MAX_READ_BYTES = 32 << 20
SCAN_CHUNK = 16  # batches whose GOPs are listed per step of the thread


def batch_key(indices: np.ndarray) -> bytes:
    """Identity of a batch: its row indices, in order."""
    return np.ascontiguousarray(indices, dtype=np.int64).tobytes()


class GopCache:
    """GOP bytes by ref_id: held while a scheduled batch needs them, else an LRU cache.

    >>> from robodata.torch._batch_reader import BatchReader
    >>> reader = BatchReader("data/demo", cameras=["top"])  # needed_gops: rows -> the GOPs they show
    >>> cache = GopCache(reader.dataset, reader.needed_gops, budget_bytes=256 << 20, depth=4)
    >>> batches = [np.array([0, 1, 2]), np.array([300, 301])]
    >>> cache.schedule(batches)  # fetched ahead in a thread, in spans
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
        remote = is_remote(dataset.uri)
        self.fetch_ahead = max(self.depth, REMOTE_FETCH_AHEAD) if remote and self.depth else self.depth
        self.horizon = max(self.depth, REMOTE_HORIZON) if remote and self.depth else self.depth
        self.max_span_bytes = max(1, min(MAX_SPAN_BYTES, self.budget_bytes // 4))
        self.max_read_bytes = max(1, min(MAX_READ_BYTES, self.budget_bytes // 4))
        self._bytes: OrderedDict[int, bytes] = OrderedDict()  # held GOPs, least recently used first
        self._pins: dict[int, int] = {}  # GOPs of batches the consumer holds
        self._held = 0
        self.peak_held = 0
        # GOPs read ahead by the thread vs. read on demand while a batch waited (misses), and the
        # thread's reads (spans).
        self.prefetched_gops = 0
        self.on_demand_gops = 0
        self.spans_fetched = 0
        self._plan: list[np.ndarray] = []
        self._plan_pos: dict[bytes, int] = {}
        self._new_plan_state()
        self._generation = 0
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def _new_plan_state(self) -> None:
        self._needs: dict[int, np.ndarray] = {}  # plan position -> its GOPs (listed, not yet read)
        self._uses: dict[int, int] = {}  # GOP -> listed batches not yet read that need it
        self._sizes: dict[int, int] = {}  # GOP -> bytes, for listed GOPs
        self._at_address: dict[int, int] = {}  # row address -> GOP, for listed GOPs
        self._address: dict[int, int] = {}
        self._in_flight: dict[int, int] = {}  # GOP -> bytes, being read by the thread
        self._failed: set[int] = set()  # GOPs whose span failed: the consumer reads them itself
        self._scanned = 0  # plan positions [0, scanned) are listed
        self._cursor = 0  # next plan position the consumer is expected to take
        self._fetch_at = 0  # plan positions before it have all their GOPs held or in flight

    @property
    def held_bytes(self) -> int:
        return self._held

    # --- plan -------------------------------------------------------------------------------
    def schedule(self, batches: Sequence[np.ndarray]) -> None:
        """Replace the upcoming batches (in the order they will be read: give the worker's whole
        plan) and fetch their GOPs ahead."""
        with self._lock:
            self._generation += 1
            self._plan = list(batches)
            self._plan_pos = {batch_key(b): i for i, b in enumerate(self._plan)}
            self._new_plan_state()
            self._lock.notify_all()
        if self.depth and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="robodata-prefetch", daemon=True)
            self._thread.start()
            # Stop the thread (and let a read in flight finish) before the process exits;
            # multiprocessing runs these finalizers at exit, in DataLoader workers too.
            multiprocessing.util.Finalize(self, self.close, exitpriority=10)

    # --- consumer ---------------------------------------------------------------------------
    def acquire(self, indices: np.ndarray) -> dict[int, bytes]:
        """Every GOP batch ``indices`` needs, pinned until ``release``: fetched ahead when the
        batch was scheduled, cached ones, and the rest read now."""
        refs = self._needed_refs(indices)
        with self._lock:
            position = self._plan_pos.get(batch_key(indices))
            if position is not None and position >= self._cursor and self._prefetching():
                for skipped in range(self._cursor, position):  # batches the consumer passed over
                    self._consume(skipped)
                self._cursor = position
                self._lock.notify_all()
                while self._prefetching() and self._coming(position, refs):
                    self._lock.wait(timeout=1.0)
                self._consume(position)
                self._cursor = position + 1
                self._lock.notify_all()
            self._pin(refs)
            missing = np.array([r for r in refs.tolist() if r not in self._bytes], dtype=np.int64)
            if missing.size:  # a batch outside the plan (or a failed span): make what room unpinned GOPs allow
                self._evict(int(gop_store(self._dataset).byte_sizes(missing).sum()))
        fetched = gop_store(self._dataset).read(missing) if missing.size else {}
        with self._lock:
            self.on_demand_gops += len(fetched)
            for ref, data in fetched.items():
                self._store(ref, data)
            self._lock.notify_all()
            return {int(r): self._bytes[int(r)] for r in refs}

    def release(self, indices: np.ndarray) -> None:
        """The batch is decoded: its GOPs may be evicted when no later batch needs them."""
        refs = self._needed_refs(indices)
        with self._lock:
            self._unpin(refs)
            self._evict(0)
            self._lock.notify_all()

    # --- bookkeeping (lock held) ------------------------------------------------------------
    def _prefetching(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._closed

    def _coming(self, position: int, refs: np.ndarray) -> bool:
        """Whether the thread will still bring GOPs of ``refs`` (plan position ``position``)."""
        missing = [r for r in refs.tolist() if r not in self._bytes and r not in self._failed]
        return bool(missing) and (self._fetch_at <= position or any(r in self._in_flight for r in missing))

    def _consume(self, position: int) -> None:
        """Plan position ``position`` is read (or passed over): its GOPs have one use fewer."""
        for ref in self._needs.pop(position, np.zeros(0, np.int64)).tolist():
            left = self._uses.get(ref, 0) - 1
            if left > 0:
                self._uses[ref] = left
                continue
            self._uses.pop(ref, None)
            self._sizes.pop(ref, None)
            self._at_address.pop(self._address.pop(ref, -1), None)
            if ref in self._bytes and ref not in self._pins:
                self._bytes.move_to_end(ref)  # most recently used

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

    def _evict(self, room: int) -> None:
        """Drop least recently used GOPs no held or listed batch needs until ``room`` more bytes
        fit the budget."""
        if self._held + room <= self.budget_bytes:
            return
        for ref in [r for r in self._bytes if r not in self._pins and r not in self._uses]:
            self._held -= len(self._bytes.pop(ref))
            if self._held + room <= self.budget_bytes:
                return

    def _committed_bytes(self) -> int:
        """Bytes held for batches still to come or held by the consumer, and bytes being read."""
        held = sum(len(data) for ref, data in self._bytes.items() if ref in self._pins or ref in self._uses)
        return held + sum(self._in_flight.values())

    # --- background thread ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._lock:
                step = self._next_step()
                while step is None and not self._closed:
                    self._lock.wait()
                    step = self._next_step()
                if self._closed:
                    return
                kind, generation, work = step
            if kind == "scan":
                first, batches = work
                store = gop_store(self._dataset)
                listed = []
                for batch in batches:
                    refs = np.asarray(self._needed_refs(batch), dtype=np.int64)
                    listed.append((refs, store.byte_sizes(refs), store.row_addresses(refs)))
                with self._lock:
                    if generation == self._generation:
                        self._list(first, listed)
                    self._lock.notify_all()
                continue
            spans, work = work, np.concatenate(work)
            try:
                fetched = gop_store(self._dataset).read(work)
            except Exception:
                # The consumer reads what is missing itself, and its read reports the error.
                fetched = {}
            with self._lock:
                if generation == self._generation:
                    self.spans_fetched += len(spans)
                    self.prefetched_gops += len(fetched)
                    for ref in work.tolist():
                        self._in_flight.pop(ref, None)
                        if ref not in fetched:
                            self._failed.add(ref)
                    for ref, data in fetched.items():
                        # room first: a read of several spans lands at once, and GOPs the consumer
                        # released while it was in flight may go now
                        self._evict(len(data))
                        self._store(ref, data)
                self._lock.notify_all()

    def _list(self, first: int, listed: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Add the GOPs of plan positions ``first, first + 1, ...`` to what the thread knows."""
        for position, (refs, sizes, addresses) in enumerate(listed, start=first):
            if position != self._scanned:
                return
            self._scanned += 1
            if position < self._cursor:
                continue  # the consumer has passed it already
            self._needs[position] = refs
            for ref, size, address in zip(refs.tolist(), sizes.tolist(), addresses.tolist(), strict=True):
                self._uses[ref] = self._uses.get(ref, 0) + 1
                self._sizes[ref] = size
                self._address[ref] = address
                self._at_address[address] = ref

    def _next_step(self):
        """("scan", generation, (first position, batches)) to list more of the plan, ("fetch",
        generation, span ref_ids) to read a span, or None (nothing to do until the consumer moves)."""
        if self._closed or not self._plan:
            return None
        self._scanned = max(self._scanned, min(self._cursor, len(self._plan)))
        listing_end = min(len(self._plan), self._cursor + self.horizon)
        # Spans are cut once the horizon is listed, so that each takes in every GOP stored next to
        # it that a batch in the horizon needs: cut from a part of it, the rest would be read later
        # as GOPs one by one between spans already held. Several spans go in one read, up to
        # max_read_bytes: Lance reads the blob descriptors once for them all and their ranges together.
        spans: list[np.ndarray] = []
        read_bytes = 0
        while self._scanned >= listing_end and read_bytes < self.max_read_bytes:
            position = max(self._fetch_at, self._cursor)
            span = self._next_span(position) if position < self._scanned else None
            if span is None:
                break
            spans.append(span)
            read_bytes += sum(self._in_flight[ref] for ref in span.tolist())
        if spans:
            return "fetch", self._generation, spans
        if self._scanned < listing_end:
            end = min(listing_end, self._scanned + SCAN_CHUNK)
            return "scan", self._generation, (self._scanned, self._plan[self._scanned : end])
        return None

    def _next_span(self, position: int) -> np.ndarray | None:
        """The GOPs of the next span to read, reserved as in flight, or None (all of the next
        batches are held or in flight, or the budget has no room until the consumer moves on)."""
        fetch_end = min(self._scanned, self._cursor + self.fetch_ahead)
        while position < fetch_end:
            missing = [r for r in self._needs.get(position, np.zeros(0, np.int64)).tolist() if self._wanted(r)]
            if missing:
                break
            position += 1
        self._fetch_at = position
        if position >= fetch_end:
            return None
        head = min(missing, key=self._address.__getitem__)  # the lowest address: spans run forward
        span, size = [head], self._sizes[head]
        committed = self._committed_bytes()
        consumer_waits = position == self._cursor and not self._pins
        if committed and committed + size > self.budget_bytes and not consumer_waits:
            return None  # wait until the consumer releases a batch
        address = self._address[head]
        while True:
            address += 1
            ref = self._at_address.get(address)
            if ref is None or not self._wanted(ref):
                break
            grown = size + self._sizes[ref]
            if grown > self.max_span_bytes or committed + grown > self.budget_bytes:
                break
            span.append(ref)
            size = grown
        self._evict(size)
        for ref in span:
            self._in_flight[ref] = self._sizes[ref]
        return np.array(span, dtype=np.int64)

    def _wanted(self, ref: int) -> bool:
        """A listed GOP the thread should read: not held, not being read, its read not failed."""
        return ref not in self._bytes and ref not in self._in_flight and ref not in self._failed

    def close(self) -> None:
        """Stop prefetching and wait for a read in flight to finish."""
        with self._lock:
            self._closed = True
            self._new_plan_state()
            self._lock.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)
        with self._lock:
            self._bytes.clear()
            self._pins.clear()
            self._held = 0

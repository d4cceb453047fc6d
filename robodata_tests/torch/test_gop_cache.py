"""The GOP prefetcher (``robodata.torch._gop_cache``) on a local disk: GOPs stored together are
fetched as one span, each needed GOP exactly once, and held until the last batch that needs it."""

from __future__ import annotations

import numpy as np

import robodata
from robodata.reader._dataset import gop_store
from robodata.torch._batch_reader import BatchReader
from robodata.torch._gop_cache import REMOTE_FETCH_AHEAD, REMOTE_HORIZON, SCAN_CHUNK, GopCache


def test_sequential_batches_fetch_each_gop_once_in_spans(ingested):
    ds = robodata.open(ingested)
    batches = [np.arange(start, min(start + 8, len(ds))) for start in range(0, len(ds), 8)]
    reader = BatchReader(ingested, budget_bytes=64 << 20, prefetch_batches=4, frame_buffer_bytes=0)
    store = gop_store(reader.dataset)
    needed = [reader.needed_gops(b) for b in batches]
    reader.schedule(batches)
    for indices in batches:
        batch = reader.read(indices)
        for camera in ds.cameras:
            column = f"observation_images_{camera}"
            assert np.array_equal(batch[column], ds.get_frames(indices, cameras=column)[column])
    cache = reader.cache
    distinct = np.unique(np.concatenate(needed))
    assert cache.on_demand_gops == 0 and cache.prefetched_gops == len(distinct)  # each GOP once
    # What sequential batches need lies together (gops.lance stores GOPs by time, then camera) ...
    addresses = np.sort(store.row_addresses(distinct))
    assert (np.diff(addresses) == 1).mean() > 0.9, np.diff(addresses)
    # ... so a span holds every camera's GOPs of its batches (camera-major, it would hold one camera's).
    # On a local disk the prefetcher looks 4 batches ahead: about a span per batch, no more.
    assert cache.prefetched_gops >= len(ds.cameras) * cache.spans_fetched
    assert cache.spans_fetched <= len(batches)
    reader.close()


def test_spans_are_cut_from_the_whole_horizon_never_from_the_first_batches_alone(ingested):
    """From object storage the prefetcher looks far ahead (``REMOTE_HORIZON`` batches). A span
    cut before that horizon is listed would stop at the first GOP no listed batch needs yet, and
    the GOPs after it would be read later in pieces between GOPs already held: one small GET each."""
    ds = robodata.open(ingested)
    reader = BatchReader(ingested, budget_bytes=64 << 20, frame_buffer_bytes=0)
    cache = GopCache(reader.dataset, reader.needed_gops, budget_bytes=64 << 20, depth=4)
    cache.fetch_ahead, cache.horizon = REMOTE_FETCH_AHEAD, REMOTE_HORIZON  # as on object storage
    first_episode = np.flatnonzero(ds.rows.episode_index == ds.rows.episode_index[0])
    last_episode = np.flatnonzero(ds.rows.episode_index == ds.rows.episode_index[-1])
    # the first GOP of episode 0, then SCAN_CHUNK batches of another episode, then the rest of episode 0
    rows = [first_episode[:1], last_episode[: 2 * SCAN_CHUNK : 2], first_episode[1:]]
    batches = [np.array([row]) for row in np.concatenate(rows)]
    needed = np.unique(np.concatenate([reader.needed_gops(b) for b in batches]))
    addresses = np.sort(gop_store(reader.dataset).row_addresses(needed))
    stretches = 1 + int((np.diff(addresses) != 1).sum())  # needed GOPs stored next to each other
    cache.schedule(batches)
    for indices in batches:
        cache.acquire(indices)
        cache.release(indices)
    assert cache.on_demand_gops == 0 and cache.prefetched_gops == len(needed)
    assert cache.spans_fetched == stretches == 2  # one span for each episode's stretch
    cache.close()

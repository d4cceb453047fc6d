"""The GOP prefetcher (``robodata.torch._gop_cache``) on a local disk: GOPs stored together are
fetched as one span, each needed GOP exactly once, and held until the last batch that needs it."""

from __future__ import annotations

import numpy as np

import robodata
from robodata.reader._dataset import gop_store
from robodata.torch._batch_reader import BatchReader


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

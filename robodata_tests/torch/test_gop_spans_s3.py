"""One epoch of the training loader from s3:// (moto's server, every request logged) reads each GOP
it needs once, in spans of GOPs stored together: counted GETs and bytes, never timings."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.reader._dataset import gop_store
from robodata.torch._runs import run_of_blocks, runs_for_streams

pytest.importorskip("torch")
from robodata.torch._torch_dataset import make_dataloader

MAX_EXTRA = 1.1  # bytes fetched per GOP byte needed
# Lance's read_blobs reads a span as one range request of its bytes after two small reads of the
# fragment's blob descriptors (measured on moto: 26 and 29 bytes a row); GETs under this are those.
SMALL_GET = 4096


def gop_data_gets(s3, since: int) -> list[int]:
    """Bytes asked of each GET on gops.lance's data files since ``since``."""
    return s3.ranged_get_sizes(since, "/gops.lance/data/")


@pytest.fixture(scope="module")
def s3_dataset(module_s3, eight_short_uploads) -> str:
    root = module_s3.uri("spans", "ds")
    for upload in eight_short_uploads[:3]:  # three episodes: three fragments of gops.lance
        robodata.ingest_episode(str(upload), root, storage_options=module_s3.storage_options)
    return root


def epoch_reads(s3, root: str, shuffle: str, batch_size: int = 8, **options) -> tuple[list[int], int, object]:
    """One epoch over every camera in ``shuffle`` order: the GOP-data GETs it made, the GOP bytes
    it needed, and its GOP cache (``cache.loader``: the loader, closed)."""
    loader = make_dataloader(
        root, storage_options=s3.storage_options, batch_size=batch_size, shuffle=shuffle, **options
    )
    ds, cache = loader.reader.dataset, loader.reader.cache
    store = gop_store(ds)
    needed = store.refs(np.arange(len(ds)), ds.cameras)
    needed_bytes = int(store.byte_sizes(needed).sum())  # builds the index first: its scan is not counted
    mark = s3.mark()
    rows = np.concatenate([batch["index"].numpy()[~batch["padding"].numpy()] for batch in loader])
    gets = gop_data_gets(s3, mark)
    assert np.array_equal(np.sort(rows), np.arange(len(ds)))  # every row once
    loader.close()
    cache.loader = loader
    return gets, needed_bytes, cache


def test_sequential_epoch_reads_each_episode_in_one_span(module_s3, s3_dataset):
    gets, needed_bytes, cache = epoch_reads(module_s3, s3_dataset, "none")
    # Each episode's GOPs, every camera, lie together: a sequential epoch is one span per episode.
    assert cache.spans_fetched == 3 and cache.on_demand_gops == 0
    assert sum(size > SMALL_GET for size in gets) == 3 and len(gets) <= 3 * 3
    assert needed_bytes <= sum(gets) <= MAX_EXTRA * needed_bytes


def test_decode_once_epoch_fetches_every_gop_byte_once_in_spans(module_s3, s3_dataset):
    gets, needed_bytes, cache = epoch_reads(module_s3, s3_dataset, "block")
    assert cache.on_demand_gops == 0 and cache.spans_fetched >= 3
    assert sum(size > SMALL_GET for size in gets) <= cache.spans_fetched and len(gets) <= 3 * cache.spans_fetched
    assert needed_bytes <= sum(gets) <= MAX_EXTRA * needed_bytes


def test_the_order_s_runs_are_each_read_whole(module_s3, s3_dataset):
    """Runs of the decode-once order drawn a block at a time from a pool, rows mixed in a window:
    each run's GOPs lie together and each is fetched in one span (or with a neighbouring run), never
    in pieces between GOPs already held."""
    gets, needed_bytes, cache = epoch_reads(module_s3, s3_dataset, "block", batch_size=2, run_bytes=64 << 10)
    sampler = cache.loader.batch_sampler
    ids = np.unique(sampler.block_of_row)
    runs = np.unique(run_of_blocks(sampler.places, ids, runs_for_streams(sampler.places, ids, 64 << 10, 1))[0])
    assert len(runs) >= 6  # several runs an episode, all open in the pool at once
    assert cache.on_demand_gops == 0 and cache.spans_fetched <= len(runs)
    assert sum(size > SMALL_GET for size in gets) <= len(runs)
    assert needed_bytes <= sum(gets) <= MAX_EXTRA * needed_bytes


def test_a_small_budget_bounds_what_is_held_and_still_reads_each_gop_once(module_s3, s3_dataset):
    ds = robodata.open(s3_dataset, storage_options=module_s3.storage_options)
    store = gop_store(ds)
    episode_bytes = int(store.byte_sizes(store.refs(np.arange(len(ds) // 3), ds.cameras)).sum())
    budget = episode_bytes  # a third of the epoch's GOPs: spans of a quarter of it at most
    gets, needed_bytes, cache = epoch_reads(module_s3, s3_dataset, "none", budget_bytes=budget)
    assert cache.on_demand_gops == 0 and cache.spans_fetched > 3  # more, shorter spans
    assert cache.peak_held <= budget + budget // 4
    assert needed_bytes <= sum(gets) <= MAX_EXTRA * needed_bytes


def frames_data_gets(s3, since: int) -> int:
    return sum(1 for r in s3.requests(since) if r.method == "GET" and "/frames.lance/data/" in r.path)


def test_the_rows_columns_are_read_once_per_process_not_per_batch(module_s3, s3_dataset, monkeypatch):
    columns = ["action", "frame_index"]
    batches = [list(range(len_start, len_start + 8))[::-1] for len_start in range(0, 96, 8)]  # 12 batches
    ds = robodata.open(s3_dataset, storage_options=module_s3.storage_options)
    stored = ds.to_table(columns=columns)  # what a take must give, read before counting
    files = len(ds.lance_dataset.get_fragments())  # one data file each
    mark = module_s3.mark()
    for rows in batches:
        assert ds.take_rows(rows, columns).equals(stored.take(rows))
    assert ds.take_rows([3], columns[::-1]).equals(stored.select(columns[::-1]).take([3]))  # the order asked
    # the columns read whole once (and each data file checked once per process), not once per batch
    assert frames_data_gets(module_s3, mark) <= 2 * files < len(batches)

    monkeypatch.setenv("ROBODATA_HELD_ROWS_MB", "0")  # too big to hold: taken from the store, as before
    unheld = robodata.open(s3_dataset, storage_options=module_s3.storage_options)
    mark = module_s3.mark()
    for rows in batches:
        assert unheld.take_rows(rows, columns).equals(stored.take(rows))
    assert frames_data_gets(module_s3, mark) >= len(batches)

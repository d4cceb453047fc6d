"""LeRobotCompatDataset (what robodata-train builds) on s3:// fetches its decode-once order's GOPs
as make_dataloader does: ahead, in spans of GOPs stored together, each GOP byte once an epoch.
Counted on moto's request log, never timed."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.reader._dataset import gop_store
from robodata_tests.torch.test_gop_spans_s3 import MAX_EXTRA, SMALL_GET, gop_data_gets

torch = pytest.importorskip("torch")

from robodata.lerobot import LeRobotCompatDataset  # noqa: E402


def test_compat_dataset_reads_an_epoch_of_gops_once_in_spans(s3, s3_root, eight_short_uploads):
    root = f"{s3_root}/ds"
    for upload in eight_short_uploads[:2]:
        robodata.ingest_episode(str(upload), root, storage_options=s3.storage_options)
    ds = LeRobotCompatDataset(root, storage_options=s3.storage_options, return_uint8=True)
    loader = torch.utils.data.DataLoader(ds, sampler=ds.item_sampler(batch_size=8), batch_size=8)
    stored = ds.reader.dataset
    store = gop_store(stored)
    needed_bytes = int(store.byte_sizes(store.refs(np.arange(len(stored)), stored.cameras)).sum())
    mark = s3.mark()

    seen = np.concatenate([batch["index"].numpy() for batch in loader])
    gets = gop_data_gets(s3, mark)
    assert np.array_equal(np.sort(seen), np.arange(len(ds)))  # every item once
    cache = ds._gops
    assert cache is not None and cache.on_demand_gops == 0 and cache.spans_fetched >= 2
    assert sum(size > SMALL_GET for size in gets) <= cache.spans_fetched and len(gets) <= 3 * cache.spans_fetched
    assert needed_bytes <= sum(gets) <= MAX_EXTRA * needed_bytes


def test_a_local_compat_dataset_reads_in_place_without_a_prefetcher(ingested):
    ds = LeRobotCompatDataset(ingested, return_uint8=True)
    loader = torch.utils.data.DataLoader(ds, sampler=ds.item_sampler(batch_size=8), batch_size=8)
    next(iter(loader))
    assert ds._gops is None

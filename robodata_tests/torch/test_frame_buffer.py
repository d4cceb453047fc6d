"""FrameBuffer with the block order: each GOP decoded once per epoch per worker, frames equal to
``get_frames``, held bytes within the budget; the loaders use it by default."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import robodata
from robodata.reader._dataset import gop_store
from robodata.reader._gop_store import GopStore
from robodata.torch._batch_reader import BatchReader
from robodata.torch._block_order import BlockSampler
from robodata.torch._frame_buffer import FrameBuffer, yuv_frame_bytes
from robodata.torch._loader import TrainingLoader
from robodata.torch._sampler import RowSampler, WorkerShard

CAMERAS = ["top", "wrist_left", "wrist_right"]


@pytest.fixture
def decoded(monkeypatch) -> Counter:
    """GOP ref_ids handed to the decoder, counted."""
    counts: Counter = Counter()
    original = GopStore.decodable

    def counting(self, ref_ids, gop_bytes=None):
        counts.update(int(r) for r in ref_ids)
        return original(self, ref_ids, gop_bytes)

    monkeypatch.setattr(GopStore, "decodable", counting)
    return counts


def read_epoch(ingested, sampler, workers, **reader_options) -> tuple[list, list[FrameBuffer]]:
    """Every worker's batches read through its own BatchReader, as DataLoader workers would."""
    out, buffers = [], []
    for w in range(workers):
        reader = BatchReader(ingested, cameras=CAMERAS, **reader_options)
        batches = sampler.batches(WorkerShard(w, workers))
        reader.expect(batches)
        out += [(rows, reader.read(rows)) for rows in batches]
        buffers.append(reader.frame_buffer)
    return out, buffers


def test_each_gop_decoded_once_per_epoch_and_frames_equal_get_frames(ingested, decoded):
    ds = robodata.open(ingested)
    sampler = BlockSampler.for_dataset(ds, batch_size=16, num_workers=2, seed=3, window_rows=64)
    batches, buffers = read_epoch(ingested, sampler, workers=2)
    every_gop = {int(r) for camera in CAMERAS for r in gop_store(ds).refs(np.arange(len(ds)), camera)}
    assert set(decoded) == every_gop
    # one block is cut between the two workers' streams: its GOPs (one per camera) decode twice
    assert sorted(decoded.values()) == [1] * (len(every_gop) - 3) + [2] * 3
    assert sum(b.decoded_gops for b in buffers) == len(every_gop) + 3
    for rows, batch in batches:
        expected = ds.get_frames(rows, cameras=CAMERAS)
        for camera in CAMERAS:
            assert np.array_equal(batch[f"observation_images_{camera}"], expected.data[camera])
    assert all(b.held_bytes == 0 and b.held_frames == 0 for b in buffers)  # all handed over


def test_held_bytes_stay_within_a_small_budget_and_frames_stay_exact(ingested, decoded):
    ds = robodata.open(ingested)
    info = ds.metadata.cameras["top"]
    budget = 5 * yuv_frame_bytes(info.height, info.width)
    sampler = BlockSampler.for_dataset(ds, batch_size=8, seed=1, window_rows=64)
    batches, [buffer] = read_epoch(ingested, sampler, workers=1, frame_buffer_bytes=budget)
    assert 0 < buffer.peak_bytes <= budget
    assert sum(decoded.values()) > len(decoded)  # what did not fit was decoded again
    for rows, batch in batches[:8]:
        assert np.array_equal(batch["observation_images_top"], ds.get_frames(rows, cameras="top").data["top"])


@pytest.mark.parametrize(
    "options",
    [{"pixel_format": "yuv420p"}, {"pixel_format": "rgbp"}, {"resolution": (96, 128), "image_dtype": "float32"}],
)
def test_buffered_frames_match_the_plain_read_in_every_output_format(ingested, options):
    ds = robodata.open(ingested)
    sampler = BlockSampler.for_dataset(ds, batch_size=12, seed=2, window_rows=32)
    batches = sampler.batches()[:6]
    buffered = BatchReader(ingested, cameras=["top"], **options)
    plain = BatchReader(ingested, cameras=["top"], frame_buffer_bytes=0, **options)
    buffered.expect(batches)
    plain.expect(batches)  # a zero budget keeps nothing: plain get_frames
    assert plain.frame_buffer is None
    for rows in batches:
        np.testing.assert_array_equal(
            buffered.read(rows)["observation_images_top"], plain.read(rows)["observation_images_top"]
        )
    assert buffered.frame_buffer.decoded_gops == len(np.unique(gop_store(ds).refs(np.concatenate(batches), "top")))


def test_uniform_order_reuses_decoded_frames_within_the_budget(ingested, decoded):
    ds = robodata.open(ingested)
    sampler = RowSampler.for_dataset(ds, batch_size=16, seed=0, shuffle="global")
    batches, [buffer] = read_epoch(ingested, sampler, workers=1)
    every_gop = {int(r) for camera in CAMERAS for r in gop_store(ds).refs(np.arange(len(ds)), camera)}
    assert sum(decoded.values()) == len(every_gop)  # the demo fits the default 1 GiB: decoded once
    rows, batch = batches[-1]
    assert np.array_equal(batch["observation_images_top"], ds.get_frames(rows, cameras="top").data["top"])


def test_training_loader_defaults_to_the_block_order_and_resumes(ingested):
    loader = TrainingLoader.create(ingested, batch_size=32, cameras=["top"], sampler_options={"seed": 5})
    assert isinstance(loader.row_sampler, BlockSampler)
    first = [batch["index"].tolist() for batch in loader]
    assert sorted(i for b in first for i in b) == list(range(591))
    again = TrainingLoader.create(ingested, batch_size=32, cameras=["top"], sampler_options={"seed": 5})
    iterator = iter(again)
    for _ in range(4):
        next(iterator)
    state = again.state_dict()
    assert state["consumed_batches"] == 4 and state["shuffle"] == "block"
    resumed = TrainingLoader.create(ingested, batch_size=32, cameras=["top"], sampler_options={"seed": 5})
    resumed.load_state_dict(state)
    assert [batch["index"].tolist() for batch in resumed] == first[4:]


def test_buffered_reads_verify_supplied_gop_bytes(ingested):
    from robodata import CorruptGopError

    ds = robodata.open(ingested)
    [ref] = gop_store(ds).refs([0], "top").tolist()
    buffer = FrameBuffer(ds, ["top"])
    buffer.expect([np.array([0])])
    with pytest.raises(CorruptGopError):
        buffer.read(np.array([0]), gop_bytes={ref: b"\x00" * 64})

"""LeRobotCompatDataset in the decode-once block order, as a LeRobot user reads it: through a real
DataLoader with two spawned workers, every item once per epoch, each GOP decoded once per epoch
per worker, items equal to the uniform path's; resume mid-epoch; the uniform order one option away."""

from __future__ import annotations

import functools
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

import robodata  # noqa: E402
from robodata.lerobot import LeRobotCompatDataset  # noqa: E402
from robodata.reader._dataset import gop_store  # noqa: E402
from robodata.reader._gop_store import GopStore  # noqa: E402
from robodata.torch import worker_context  # noqa: E402
from robodata.torch._block_order import BlockSampler  # noqa: E402
from robodata.torch._sampler import RowSampler, WorkerShard  # noqa: E402

CAMERAS = ["top", "wrist_left", "wrist_right"]


def count_decodes_to(folder: str, worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: every GOP this worker reads to decode (its position in the
    GOP table; the frame buffer and ``get_frames`` both read through ``_read_positions``), one
    line each, in ``folder/<worker_id>.txt`` (written as it happens: the test reads it between
    epochs)."""
    original = GopStore._read_positions

    def counting(self, positions):
        with open(os.path.join(folder, f"{worker_id}.txt"), "a") as out:
            out.writelines(f"{int(p)}\n" for p in positions)
        return original(self, positions)

    GopStore._read_positions = counting


def decodes(folder: Path) -> dict[int, Counter]:
    """Per worker, the GOPs it decoded so far, counted; the files are emptied."""
    counts = {}
    for path in sorted(folder.glob("*.txt")):
        counts[int(path.stem)] = Counter(int(line) for line in path.read_text().split())
        path.write_text("")
    return counts


def every_gop(uri: str) -> set[int]:
    """The positions in the GOP table of every GOP the dataset's rows show."""
    ds = robodata.open(uri)
    store = gop_store(ds)
    refs = np.concatenate([store.refs(np.arange(len(ds)), camera) for camera in CAMERAS])
    return {int(p) for p in store.index.positions(refs)}


def assert_items_equal_uniform_path(uri: str, batches: list[dict]) -> None:
    """Each batch equals what the dataset returns for the same items without a sampler (get_frames
    on every item), frames exactly."""
    plain = LeRobotCompatDataset(uri, return_uint8=True)
    for batch in batches:
        expected = plain.__getitems__(batch["index"].tolist()).stacked
        assert set(batch) - {"padding"} == set(expected)
        for key, value in expected.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(batch[key], value), key
            else:
                assert list(batch[key]) == list(value), key


@pytest.mark.parametrize("form", ["sampler", "batch_sampler"])
def test_two_spawned_workers_read_every_item_once_and_decode_each_gop_once_per_epoch(short_dataset, tmp_path, form):
    ds = LeRobotCompatDataset(short_dataset, return_uint8=True)
    counts = tmp_path / "decodes"
    counts.mkdir()
    common = dict(
        num_workers=2,
        multiprocessing_context=worker_context(),
        persistent_workers=True,
        worker_init_fn=functools.partial(count_decodes_to, str(counts)),
    )
    if form == "sampler":  # as LeRobot's training script builds its DataLoader
        sampler = ds.item_sampler(batch_size=16, num_workers=2, seed=5, window_rows=64)
        loader = DataLoader(ds, sampler=sampler, batch_size=16, **common)
    else:
        sampler = ds.sampler(batch_size=16, num_workers=2, seed=5, window_rows=64)
        loader = DataLoader(ds, batch_sampler=sampler, **common)
    gops = every_gop(short_dataset)
    epochs = []
    for epoch in range(2):
        if form == "batch_sampler":
            sampler.set_epoch(epoch)
        batches = list(loader)
        real = [b["index"][~b["padding"]] if "padding" in b else b["index"] for b in batches]
        items = torch.cat(real).tolist()
        assert sorted(items) == list(range(len(ds)))  # every item exactly once
        per_worker = decodes(counts)
        assert sorted(per_worker) == [0, 1]
        for decoded in per_worker.values():
            assert set(decoded.values()) == {1}  # each GOP decoded once by a worker that needs it
        assert set().union(*per_worker.values()) == gops
        epochs.append((items, batches))
    assert epochs[0][0] != epochs[1][0]  # the epoch is part of the order
    assert_items_equal_uniform_path(short_dataset, epochs[1][1])


def test_the_order_keeps_gops_together_and_differs_from_uniform(short_dataset):
    ds = LeRobotCompatDataset(short_dataset)
    sampler = ds.item_sampler(batch_size=8, num_workers=2, seed=1, window_rows=0)
    order = sampler.order(0)
    refs = gop_store(robodata.open(short_dataset)).frame_refs(order, "top")[0]
    # without mixing, a worker's stream reads one GOP's items together: a GOP changes at most once
    # per GOP (plus the cut between the two streams and their interleaving in batches of 8)
    for worker in (0, 1):
        stream = np.concatenate(sampler.worker_batches(0, 0, WorkerShard(worker, 2)))
        stream_refs = gop_store(robodata.open(short_dataset)).frame_refs(stream, "top")[0]
        changes = int((np.diff(stream_refs) != 0).sum())
        assert changes == len(np.unique(stream_refs)) - 1
    assert len(np.unique(refs)) == len(every_gop(short_dataset)) // len(CAMERAS)
    uniform = ds.sampler(batch_size=8, shuffle="global", seed=1)
    assert isinstance(uniform, RowSampler) and uniform.shuffle == "global"
    assert isinstance(ds.sampler(batch_size=8), BlockSampler)


def test_resume_mid_epoch_reads_exactly_the_remaining_items(short_dataset, monkeypatch):
    decoded: Counter = Counter()
    original = GopStore._read_positions
    monkeypatch.setattr(
        GopStore,
        "_read_positions",
        lambda self, positions: decoded.update(map(int, positions)) or original(self, positions),
    )
    ds = LeRobotCompatDataset(short_dataset, return_uint8=True)
    first = ds.item_sampler(batch_size=8, seed=2, window_rows=32)
    first.load_state_dict({"epoch": 1, "start_index": 0})
    loader = iter(DataLoader(ds, sampler=first, batch_size=8))
    taken = [next(loader)["index"] for _ in range(5)]
    # what LeRobot's compute_sampler_state gives after 5 steps of 8 on one process
    state = {"epoch": 1, "start_index": 5 * 8}
    resumed_ds = LeRobotCompatDataset(short_dataset, return_uint8=True)
    resumed = resumed_ds.item_sampler(batch_size=8, seed=2, window_rows=32)
    resumed.load_state_dict(state)
    decoded.clear()
    rest = [b["index"] for b in DataLoader(resumed_ds, sampler=resumed, batch_size=8)]
    assert torch.cat(rest).tolist() == resumed.order(1)[40:].tolist()
    assert sorted(torch.cat(taken + rest).tolist()) == list(range(len(ds)))
    assert set(decoded.values()) == {1}  # the resumed epoch decodes each GOP it still needs once
    assert len(decoded) < len(every_gop(short_dataset))  # ... and not those only the first 5 batches needed
    assert resumed_ds.frame_buffer is not None and resumed_ds.frame_buffer.held_frames == 0
    assert resumed.state_dict() == {"epoch": 2, "start_index": 0}  # iterating advanced the epoch
    with pytest.raises(ValueError, match=f"start_index=9999 is outside 0..{len(ds)}"):
        resumed.load_state_dict({"epoch": 0, "start_index": 9999})


def test_drop_last_frames_and_a_plain_list_of_items_uses_get_frames(short_dataset):
    ds = LeRobotCompatDataset(short_dataset)
    sampler = ds.item_sampler(batch_size=8, drop_n_last_frames=7)
    lengths = list(ds.meta.episodes["length"])
    assert len(sampler) == sum(lengths) - 7 * len(lengths)
    frame_index = ds.__getitems__(list(sampler.order(0))).stacked["frame_index"]
    assert int(frame_index.max()) == max(lengths) - 8
    assert ds.frame_buffer is None  # items not from a sampler's order: no plan, no buffer


@pytest.mark.parametrize(("world_size", "workers"), [(1, 2), (2, 2), (3, 1)])
def test_batches_cut_from_the_order_are_the_block_samplers_streams(world_size, workers):
    """DataLoader cuts batches of 16 from the order, accelerate gives rank r every world_size-th,
    DataLoader deals them round the workers: each worker gets its stream's batches of the block
    plan (all but the epoch's last, short ones, which DataLoader cuts across streams)."""
    from robodata.lerobot._block_order import BlockOrderSampler

    blocks = np.repeat(np.arange(60), 9)  # 540 items, blocks of 9
    items = BlockOrderSampler(blocks, batch_size=16, num_workers=workers, world_size=world_size, seed=4, window_rows=40)
    order = items.order(3)
    assert sorted(order.tolist()) == list(range(540))
    cut = [order[i : i + 16] for i in range(0, len(order), 16)]
    for rank in range(world_size):
        plan = BlockSampler(
            blocks,
            batch_size=16,
            rank=rank,
            world_size=world_size,
            num_workers=workers,
            seed=4,
            epoch=3,
            window_rows=40,
        )
        for worker in range(workers):
            shard = WorkerShard(worker, workers)
            received = cut[rank::world_size][worker::workers]
            full = [b for b in plan.padded_batches(shard) if len(b[0]) == 16 and not b[1].any()]
            assert [b.tolist() for b in received[: len(full)]] == [b.tolist() for b, _ in full]
            mine = BlockOrderSampler(
                blocks, batch_size=16, num_workers=workers, rank=rank, world_size=world_size, seed=4, window_rows=40
            )
            assert [b.tolist() for b in mine.worker_batches(3, 0, shard)] == [b.tolist() for b in received]


@pytest.mark.parametrize("return_uint8", [True, False])
def test_in_a_worker_default_collate_hands_over_the_frames_read_into_shared_memory(
    short_dataset, monkeypatch, return_uint8
):
    """What LeRobot's DataLoader (no collate_fn) does per batch in a worker: the frames are decoded
    into shared memory and ``default_collate`` returns the stacked batch itself, no copy."""
    from torch.utils.data import default_collate
    from torch.utils.data._utils import worker as worker_state

    ds = LeRobotCompatDataset(short_dataset, return_uint8=return_uint8)
    items = list(ds.item_sampler(batch_size=8, seed=3))[:8]
    expected = LeRobotCompatDataset(short_dataset, return_uint8=return_uint8).__getitems__([int(i) for i in items])
    monkeypatch.setattr(worker_state, "_worker_info", worker_state.WorkerInfo(id=0, num_workers=1, seed=0, dataset=ds))
    read = ds.__getitems__(items)
    collated = default_collate(read)
    assert collated is read.stacked
    for camera in CAMERAS:
        frames = collated[f"observation.images.{camera}"]
        assert frames.is_shared() and frames.dtype == (torch.uint8 if return_uint8 else torch.float32)
        assert torch.equal(frames, expected.stacked[f"observation.images.{camera}"])
    assert ds.frame_buffer is not None  # read through the decode-once order's frame buffer
    # samples gathered from elsewhere are collated as PyTorch always does: stacked anew
    regathered = default_collate([read[1], read[0]])
    assert torch.equal(regathered["action"], read.stacked["action"][[1, 0]])

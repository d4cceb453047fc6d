"""BlockSampler: the decode-once order covers every row once over ranks and workers, gives every
rank the same steps, keeps each block in one worker's stream, is a pure function of its inputs,
and resumes at exactly the remaining rows (same layout or another)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from robodata.torch._block_order import BlockSampler
from robodata.torch._sampler import WorkerShard

# 1003 rows in blocks of 8, with short blocks at the ends of 17 uneven episodes
EPISODES = np.repeat(np.arange(17), np.diff(np.linspace(0, 1003, 18).astype(int)))
FRAME = np.concatenate([np.arange(n) for n in np.bincount(EPISODES)])
BLOCKS = np.unique(EPISODES * 1000 + FRAME // 8, return_inverse=True)[1]
ROWS = len(BLOCKS)


def samplers(world_size: int, num_workers: int, **options) -> list[BlockSampler]:
    options.setdefault("batch_size", 16)
    options.setdefault("window_rows", 40)
    return [
        BlockSampler(BLOCKS, rank=r, world_size=world_size, num_workers=num_workers, **options)
        for r in range(world_size)
    ]


def worker_rows(sampler: BlockSampler, worker: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return sampler.padded_batches(WorkerShard(worker, sampler.num_workers))


def consumed_rows(batches) -> np.ndarray:
    return np.concatenate([rows[~pad] for rows, pad in batches]) if batches else np.zeros(0, np.int64)


@pytest.mark.parametrize(("world_size", "num_workers"), [(1, 1), (1, 2), (2, 2), (3, 4)])
def test_every_row_exactly_once_and_equal_steps(world_size, num_workers):
    ranks = samplers(world_size, num_workers, seed=3)
    visited = np.concatenate([consumed_rows(worker_rows(s, w)) for s in ranks for w in range(num_workers)])
    assert np.array_equal(np.sort(visited), np.arange(ROWS))
    assert len({len(s) for s in ranks}) == 1  # DDP: the same steps on every rank
    assert len({len(list(s)) for s in ranks}) == 1
    # iterating the rank (DataLoader's batch_sampler) gives the workers' batches interleaved
    for s in ranks:
        listed = [np.asarray(b) for b in s]
        for w in range(num_workers):
            mine = [rows for rows, _ in worker_rows(s, w)]
            assert all(np.array_equal(a, b) for a, b in zip(listed[w::num_workers], mine, strict=True))


def test_each_block_is_read_by_one_worker_except_at_stream_cuts():
    ranks = samplers(2, 2, seed=1)
    owners: dict[int, set] = {}
    for s in ranks:
        for w in range(2):
            for row in consumed_rows(worker_rows(s, w)).tolist():
                owners.setdefault(int(BLOCKS[row]), set()).add((s.rank, w))
    shared = [block for block, who in owners.items() if len(who) > 1]
    assert len(shared) <= 3  # at most one block per boundary between the 4 streams


def pending_rows(order: np.ndarray, blocks: np.ndarray) -> list[int]:
    """After each row of a stream handed over: rows of the stream's blocks already started (decoded)
    not yet handed over."""
    size = np.bincount(blocks[order], minlength=len(np.bincount(blocks)))
    started = np.zeros(len(size), dtype=bool)
    pending, counts = 0, []
    for block in blocks[order].tolist():
        if not started[block]:
            started[block] = True
            pending += int(size[block])
        pending -= 1
        counts.append(pending)
    return counts


@pytest.mark.parametrize("window", [0, 5, 40])
def test_rows_decoded_and_not_handed_over_stay_within_the_window_plus_a_block(window):
    """The bound of robodata.torch._block_order: at most window_rows + B - 1 rows (B: the largest
    block), in every stream; reached without mixing."""
    largest = int(np.bincount(BLOCKS).max())
    most = []
    for seed in range(8):
        for s in samplers(1, 2, window_rows=window, batch_size=1, seed=seed):
            for w in range(2):
                most.append(max(pending_rows(consumed_rows(worker_rows(s, w)), BLOCKS)))
    assert max(most) <= window + largest - 1
    if window == 0:
        assert set(most) == {largest - 1}  # the bound is tight


def test_window_rows_for_leaves_room_for_the_window_plus_a_block():
    from robodata.torch._block_order import window_rows_for
    from robodata.torch._frame_buffer import yuv_frame_bytes

    per_row = yuv_frame_bytes(48, 64) + yuv_frame_bytes(24, 32)
    largest = int(np.bincount(BLOCKS).max())
    window = window_rows_for(300 * per_row + 5, [(48, 64), (24, 32)], BLOCKS)
    assert (window + largest - 1) * per_row <= 300 * per_row + 5 < (window + largest) * per_row
    assert window_rows_for(10**12, [(48, 64)], BLOCKS) == 4096  # at most the limit
    assert window_rows_for(per_row, [(48, 64)], BLOCKS) == 0
    assert window_rows_for(per_row, [], BLOCKS) == 4096  # no frames kept: nothing bounds it


def test_deterministic_for_a_seed_and_different_across_seeds_and_epochs():
    def rows(**options):
        return [np.asarray(b).tolist() for b in samplers(1, 2, **options)[0]]

    assert rows(seed=4) == rows(seed=4)
    assert pickle.loads(pickle.dumps(samplers(1, 2, seed=4)[0])).batches() != []
    assert rows(seed=4) != rows(seed=5)
    assert rows(seed=4, epoch=0) != rows(seed=4, epoch=1)


def test_drop_last_keeps_only_full_batches_and_equal_steps():
    ranks = samplers(2, 2, seed=0, drop_last=True)
    for s in ranks:
        assert all(len(b) == 16 for b in s)
    assert len({len(s) for s in ranks}) == 1


def test_padding_repeats_rows_of_the_same_stream():
    ranks = samplers(3, 4, seed=2)
    sizes = set()
    for s in ranks:
        for w in range(4):
            batches = worker_rows(s, w)
            mine = set(consumed_rows(batches).tolist())
            rows, pad = batches[-1]
            assert set(rows[pad].tolist()) <= mine
            sizes.add(len(rows))
    assert len(sizes) == 1  # every stream's last batch has the same size


@pytest.mark.parametrize("taken", [0, 5, 17])
def test_resume_same_layout_continues_at_the_next_batch(taken):
    [full] = samplers(1, 2, seed=9)
    expected = [np.asarray(b).tolist() for b in full][taken:]
    state = full.state_dict(batches_consumed=taken)
    [resumed] = samplers(1, 2, seed=9)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    assert [np.asarray(b).tolist() for b in resumed] == expected
    assert resumed.state_dict()["consumed_batches"] == taken


@pytest.mark.parametrize(("old", "new"), [((2, 2), (1, 3)), ((1, 1), (3, 2))])
def test_resume_with_another_layout_reads_exactly_the_remaining_rows(old, new):
    before = samplers(*old, seed=6)
    taken = 7
    seen = np.concatenate([consumed_rows(s.padded_batches()[:taken]) for s in before])
    state = before[0].state_dict(batches_consumed=taken)
    after = samplers(*new, seed=6, batch_size=8)
    for s in after:
        s.load_state_dict(state)
    rest = np.concatenate([consumed_rows(worker_rows(s, w)) for s in after for w in range(new[1])])
    assert np.array_equal(np.sort(np.concatenate([seen, rest])), np.arange(ROWS))
    assert len({len(s) for s in after}) == 1
    # and a checkpoint of the resumed run resumes again, in the same layout
    again = samplers(*new, seed=6, batch_size=8)
    again[0].load_state_dict(after[0].state_dict(batches_consumed=2))
    assert [np.asarray(b).tolist() for b in again[0]] == [np.asarray(b).tolist() for b in after[0]][2:]


def test_resume_refuses_another_seed_or_dataset():
    [sampler] = samplers(1, 1, seed=1)
    state = sampler.state_dict(3)
    with pytest.raises(ValueError, match="seed=1 but this sampler has seed=2"):
        samplers(1, 1, seed=2)[0].load_state_dict(state)
    with pytest.raises(ValueError, match="num_rows=1003 but this sampler has num_rows=1002"):
        BlockSampler(BLOCKS[:-1], batch_size=16, seed=1).load_state_dict(state)


def test_invalid_arguments_are_refused():
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        BlockSampler(BLOCKS, batch_size=0)
    with pytest.raises(ValueError, match="rank 2 is not in range for world_size 2"):
        BlockSampler(BLOCKS, batch_size=4, rank=2, world_size=2)
    with pytest.raises(ValueError, match="window_rows must be at least 0"):
        BlockSampler(BLOCKS, batch_size=4, window_rows=-1)

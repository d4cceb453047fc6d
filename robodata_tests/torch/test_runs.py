"""The decode-once order in runs through a pool (robodata.torch._runs): runs are consecutive
blocks of one episode of at least run_bytes, a stream takes a run's blocks in storage order one
after another, its pool of open runs never holds more than pool_bytes, every row is read once per
epoch with equal steps on every rank, the decoded-frame bound holds, and resume is exact in the
same layout and in another."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from robodata.torch import BlockItemSampler, BlockPlaces, BlockSampler
from robodata.torch._runs import ASSUMED_BLOCK_BYTES, run_of_blocks
from robodata.torch._sampler import WorkerShard
from robodata_tests.torch.test_block_order import consumed_rows, pending_rows

# 23 episodes of uneven length (90..300 rows) in blocks of 4 rows (a short last block), rows
# stored in a shuffled order (row number says nothing of time), blocks of uneven bytes
RNG = np.random.default_rng(7)
LENGTHS = RNG.integers(90, 300, 23)
EPISODES = np.repeat(np.arange(23), LENGTHS)
FRAME = np.concatenate([np.arange(n) for n in LENGTHS])
SHUFFLED = RNG.permutation(len(EPISODES))
EPISODES, FRAME = EPISODES[SHUFFLED], FRAME[SHUFFLED]
BLOCKS = np.unique(EPISODES * 1000 + FRAME // 4, return_inverse=True)[1].reshape(-1)
ROWS = len(BLOCKS)
NUM_BLOCKS = int(BLOCKS.max()) + 1
BLOCK_EPISODE = np.zeros(NUM_BLOCKS, np.int64)
BLOCK_EPISODE[BLOCKS] = EPISODES
BLOCK_START = np.zeros(NUM_BLOCKS, np.int64)
BLOCK_START[BLOCKS] = FRAME // 4 * 4
PLACES = BlockPlaces(BLOCK_EPISODE, BLOCK_START, RNG.integers(30_000, 80_000, NUM_BLOCKS))
RUN = 1_000_000  # ~20 blocks a run, 2-7 runs an episode
POOL = 4_500_000  # ~3-4 runs open


def samplers(world_size: int, num_workers: int, **options) -> list[BlockSampler]:
    options = {"batch_size": 16, "window_rows": 40, "places": PLACES, "run_bytes": RUN, "pool_bytes": POOL, **options}
    return [
        BlockSampler(BLOCKS, rank=r, world_size=world_size, num_workers=num_workers, **options)
        for r in range(world_size)
    ]


def streams(world_size: int, num_workers: int, **options) -> list[np.ndarray]:
    """Every stream's rows in order (window 0 and batches of 1: the pool's order itself)."""
    ranks = samplers(world_size, num_workers, window_rows=0, batch_size=1, **options)
    return [consumed_rows(s.padded_batches(WorkerShard(w, num_workers))) for s in ranks for w in range(num_workers)]


def blocks_in_order(rows: np.ndarray) -> np.ndarray:
    """The blocks a stream takes, in order (a block's rows are consecutive without the window)."""
    blocks = BLOCKS[rows]
    return blocks[np.r_[True, blocks[1:] != blocks[:-1]]]


def test_runs_are_consecutive_blocks_of_one_episode_of_at_least_run_bytes():
    ids = np.arange(NUM_BLOCKS)
    run, storage = run_of_blocks(PLACES, ids, RUN)
    sizes = PLACES.sizes()
    by_storage = np.argsort(storage)
    assert np.array_equal(by_storage, np.lexsort((BLOCK_START, BLOCK_EPISODE)))  # episode, then time
    for r in np.unique(run):
        mine = np.flatnonzero(run == r)
        [episode] = np.unique(BLOCK_EPISODE[mine])
        # consecutive in time: the run's storage ranks are a range
        assert np.array_equal(np.sort(storage[mine]), np.arange(storage[mine].min(), storage[mine].max() + 1))
        total = sizes[BLOCK_EPISODE == episode].sum()
        assert sizes[mine].sum() >= min(RUN, total)
        assert sizes[mine].sum() < 2 * RUN + sizes.max()
    for episode in range(23):
        total = sizes[BLOCK_EPISODE == episode].sum()
        assert len(np.unique(run[BLOCK_EPISODE == episode])) == max(1, total // RUN)
    # without byte sizes a run is a fixed count of blocks
    unsized = BlockPlaces(BLOCK_EPISODE, BLOCK_START)
    run, _ = run_of_blocks(unsized, ids, 10 * ASSUMED_BLOCK_BYTES)
    counts = np.bincount(run)
    assert counts.min() >= 10 and counts.max() < 20


@pytest.mark.parametrize(("world_size", "num_workers"), [(1, 1), (1, 2), (2, 2), (3, 2)])
def test_every_row_exactly_once_and_equal_steps(world_size, num_workers):
    ranks = samplers(world_size, num_workers, seed=3)
    shards = [s.padded_batches(WorkerShard(w, num_workers)) for s in ranks for w in range(num_workers)]
    assert np.array_equal(np.sort(np.concatenate([consumed_rows(b) for b in shards])), np.arange(ROWS))
    assert len({len(s) for s in ranks}) == 1
    assert len({len(b) for b in shards}) == 1  # every stream the same batches, the last padded alike
    assert {len(rows) for b in shards for rows, _ in b[:-1]} == {16}


def test_a_stream_takes_each_run_in_storage_order_through_a_pool_of_at_most_pool_bytes():
    run, storage = run_of_blocks(PLACES, np.arange(NUM_BLOCKS), RUN)
    sizes = PLACES.sizes()
    most_open = []
    for rows in streams(2, 2, seed=5):
        taken = blocks_in_order(rows)
        assert len(np.unique(taken)) == len(taken)  # a block's rows come together: decoded once
        for r in np.unique(run[taken]):
            ranks = storage[taken[run[taken] == r]]
            # the run's blocks in this stream: consecutive blocks of its episode, in storage order
            assert np.array_equal(ranks, np.arange(ranks[0], ranks[0] + len(ranks)))
        # the pool: runs begun and not finished, counted at every block taken
        left = {int(r): int((run[taken] == r).sum()) for r in np.unique(run[taken])}
        held = {int(r): int(sizes[taken[run[taken] == r]].sum()) for r in left}
        open_runs: set[int] = set()
        counts = []
        for block in taken.tolist():
            r = int(run[block])
            open_runs.add(r)
            assert len(open_runs) == 1 or sum(held[o] for o in open_runs) <= POOL
            counts.append(len(open_runs))
            left[r] -= 1
            if left[r] == 0:
                open_runs.remove(r)
        most_open.append(max(counts))
    assert max(most_open) >= 3  # the pool mixes several runs at a time


def test_a_pool_smaller_than_a_run_takes_runs_one_after_another():
    run, _ = run_of_blocks(PLACES, np.arange(NUM_BLOCKS), RUN)
    for rows in streams(1, 2, seed=1, pool_bytes=0):
        taken_runs = run[blocks_in_order(rows)]
        changes = np.r_[True, taken_runs[1:] != taken_runs[:-1]]
        assert len(np.unique(taken_runs)) == changes.sum()  # each run once, whole


@pytest.mark.parametrize("window", [0, 40])
def test_rows_decoded_and_not_handed_over_stay_within_the_window_plus_a_block(window):
    largest = int(np.bincount(BLOCKS).max())
    most = []
    for seed in range(4):
        for rows in [
            consumed_rows(s.padded_batches(WorkerShard(w, 2)))
            for s in samplers(1, 2, seed=seed, window_rows=window, batch_size=1)
            for w in range(2)
        ]:
            most.append(max(pending_rows(rows, BLOCKS)))
    assert max(most) <= window + largest - 1


def test_deterministic_for_a_seed_and_epoch_and_different_across_them():
    def rows(**options):
        return [np.asarray(b).tolist() for b in samplers(1, 2, **options)[0]]

    assert rows(seed=4) == rows(seed=4)
    assert [np.asarray(b).tolist() for b in pickle.loads(pickle.dumps(samplers(1, 2, seed=4)[0]))] == rows(seed=4)
    assert rows(seed=4) != rows(seed=5)
    assert rows(seed=4, epoch=0) != rows(seed=4, epoch=1)
    # the runs change the order: not the block order's
    assert rows(seed=4) != rows(seed=4, run_bytes=0)


@pytest.mark.parametrize("taken", [0, 7, 30])
def test_resume_same_layout_continues_at_the_next_batch(taken):
    [full] = samplers(1, 2, seed=9)
    expected = [np.asarray(b).tolist() for b in full][taken:]
    state = pickle.loads(pickle.dumps(full.state_dict(batches_consumed=taken)))
    [resumed] = samplers(1, 2, seed=9)
    resumed.load_state_dict(state)
    assert [np.asarray(b).tolist() for b in resumed] == expected


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [((2, 2), (1, 3), {"batch_size": 8}), ((1, 1), (3, 2), {}), ((2, 1), (2, 1), {"pool_bytes": 2 * POOL})],
)
def test_resume_with_another_layout_reads_exactly_the_remaining_rows(old, new, changed):
    before = samplers(*old, seed=6)
    taken = 11
    seen = np.concatenate([consumed_rows(s.padded_batches()[:taken]) for s in before])
    state = before[0].state_dict(batches_consumed=taken)
    after = samplers(*new, seed=6, **changed)
    for s in after:
        s.load_state_dict(state)
    rest = np.concatenate(
        [consumed_rows(s.padded_batches(WorkerShard(w, new[1]))) for s in after for w in range(new[1])]
    )
    assert np.array_equal(np.sort(np.concatenate([seen, rest])), np.arange(ROWS))
    assert len({len(s) for s in after}) == 1


def test_resume_refuses_runs_cut_from_other_byte_sizes_and_keeps_earlier_checkpoints():
    state = samplers(1, 2, seed=1)[0].state_dict(3)
    other = BlockPlaces(BLOCK_EPISODE, BLOCK_START)  # no byte sizes: other runs
    with pytest.raises(ValueError, match="cannot resume: the checkpoint's runs were cut from other GOP byte sizes"):
        samplers(1, 2, seed=1, places=other)[0].load_state_dict(state)
    # a checkpoint from before runs (no run_bytes): blocks one by one, continued exactly
    [old] = samplers(1, 2, seed=1, places=None)
    earlier = {k: v for k, v in old.state_dict(5).items() if k not in ("run_bytes", "pool_bytes", "places_digest")}
    [resumed] = samplers(1, 2, seed=1, places=None)
    resumed.load_state_dict(earlier)
    assert [np.asarray(b).tolist() for b in resumed] == [np.asarray(b).tolist() for b in old][5:]


def test_item_sampler_in_runs_yields_every_item_once_and_resumes_in_another_layout():
    options = {"places": PLACES, "run_bytes": RUN, "pool_bytes": POOL, "window_rows": 40, "seed": 2}
    first = BlockItemSampler(BLOCKS, batch_size=16, num_workers=2, **options)
    order = first.order(0)
    assert np.array_equal(np.sort(order), np.arange(ROWS))
    assert not np.array_equal(order, BlockItemSampler(BLOCKS, batch_size=16, num_workers=2, seed=2).order(0))
    # each worker's batches are the BlockSampler's batches of that worker's stream
    [plan] = samplers(1, 2, seed=2)
    for w in range(2):
        mine = [b.tolist() for b in first.worker_batches(0, 0, WorkerShard(w, 2))]
        planned = [rows.tolist() for rows, _ in plan.padded_batches(WorkerShard(w, 2))]
        assert mine[: len(planned) - 2] == planned[:-2]  # (the last, short ones are cut from what is left)
    state = first.resume_state(0, 160)
    second = BlockItemSampler(BLOCKS, batch_size=8, num_workers=3, **options)
    second.load_state_dict(state)
    again = second.order(0)
    assert np.array_equal(again[:160], order[:160]) and np.array_equal(np.sort(again), np.arange(ROWS))


def test_make_sampler_cuts_runs_by_the_stored_bytes_of_the_cameras_read(ingested):
    import robodata
    from robodata.reader._dataset import gop_store
    from robodata.torch import BatchReader, make_sampler

    ds = robodata.open(ingested)
    reader = BatchReader(ingested, cameras=["top", "wrist_left"], budget_bytes=10 << 20)
    assert make_sampler(reader, batch_size=8, num_workers=2).run_bytes == 0  # a local disk: blocks one by one
    sampler = make_sampler(reader, batch_size=8, num_workers=2, window_rows=16, run_bytes=1 << 20)
    assert sampler.pool_bytes == 5 << 20 and sampler.run_bytes == 1 << 20  # half the GOP budget
    places = sampler.places
    assert places is not None
    gops = gop_store(ds)
    for block in range(int(sampler.block_of_row.max()) + 1):
        rows = np.flatnonzero(sampler.block_of_row == block)
        refs = np.unique(np.concatenate([ds.rows.ref_id[c][rows] for c in ("top", "wrist_left")]))
        assert places.nbytes is not None and places.nbytes[block] == gops.byte_sizes(refs).sum()
        assert places.episode[block] == ds.rows.episode_index[rows[0]]
        assert places.start[block] == ds.rows.frame_index[rows].min()
    batches = [rows for rows, _ in sampler.padded_batches(WorkerShard(0, 2))]
    batches += [rows for rows, _ in sampler.padded_batches(WorkerShard(1, 2))]
    assert np.array_equal(np.unique(np.concatenate(batches)), np.arange(len(ds)))
    # no camera read: no GOP to fetch, blocks one by one
    assert make_sampler(BatchReader(ingested, cameras=[]), batch_size=8).run_bytes == 0


def test_runs_shrink_on_a_dataset_too_small_to_give_every_stream_several_runs():
    few = np.isin(EPISODES, [0, 1, 2])  # 3 episodes: with 1 GiB runs, 3 runs in all
    blocks = BLOCKS[few]
    for world_size, num_workers in [(1, 2), (2, 2)]:
        ranks = [
            BlockSampler(
                blocks,
                batch_size=1,
                rank=r,
                world_size=world_size,
                num_workers=num_workers,
                window_rows=0,
                places=PLACES,
                run_bytes=1 << 30,
                pool_bytes=0,
                seed=4,
            )
            for r in range(world_size)
        ]
        for s in ranks:
            for w in range(num_workers):
                rows = consumed_rows(s.padded_batches(WorkerShard(w, num_workers)))
                taken = blocks_in_order(np.flatnonzero(few)[rows])
                # a pool of one run: the stream is its runs back to back; a new run starts where
                # the next block is not the one after it in its episode
                order = np.lexsort((BLOCK_START, BLOCK_EPISODE))
                place = np.empty(NUM_BLOCKS, np.int64)
                place[order] = np.arange(NUM_BLOCKS)
                starts = 1 + int(np.sum(place[taken[1:]] != place[taken[:-1]] + 1))
                assert starts >= 5, (world_size, num_workers, w, starts)

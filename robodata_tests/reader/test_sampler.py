"""RowSampler: exactly-once coverage over ranks and workers, determinism, balance, resume."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from robodata.reader.sampler import RowSampler, WorkerShard, current_worker

ROWS = 1003  # prime-ish: no world size or batch size divides it
EPISODES = np.repeat(np.arange(17), np.diff(np.linspace(0, ROWS, 18).astype(int)))


def rank_samplers(world_size: int, **options) -> list[RowSampler]:
    options.setdefault("batch_size", 16)
    return [RowSampler(ROWS, rank=r, world_size=world_size, **options) for r in range(world_size)]


def all_worker_batches(samplers: list[RowSampler], num_workers: int) -> list[list[np.ndarray]]:
    """Per (rank, worker), the batches it reads."""
    return [
        s.batches(WorkerShard(w, num_workers)) for s in samplers for w in range(num_workers)
    ]


@pytest.mark.parametrize("shuffle", ["global", "episode"])
@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_every_row_exactly_once_across_ranks_and_four_workers(world_size, shuffle):
    samplers = rank_samplers(world_size, seed=5, shuffle=shuffle, episode_index=EPISODES)
    shards = all_worker_batches(samplers, num_workers=4)
    visited = np.concatenate([b for shard in shards for b in shard])
    assert len(visited) == ROWS
    assert np.array_equal(np.sort(visited), np.arange(ROWS))
    # Workers of one rank together read exactly that rank's batches.
    for rank, sampler in enumerate(samplers):
        mine = np.concatenate([b for shard in shards[rank * 4 : rank * 4 + 4] for b in shard])
        assert np.array_equal(np.sort(mine), np.sort(np.concatenate(sampler.batches())))


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_ranks_are_balanced_within_one_batch(world_size):
    samplers = rank_samplers(world_size, batch_size=16)
    counts = [len(s) for s in samplers]
    rows = [sum(len(b) for b in s.batches()) for s in samplers]
    assert max(counts) - min(counts) <= 1
    assert max(rows) - min(rows) <= 1  # the short last step is shared row by row
    assert all(len(b) == 16 for s in samplers for b in s.batches()[:-1])


def test_drop_last_gives_every_rank_the_same_full_batches():
    samplers = rank_samplers(3, batch_size=16, drop_last=True)
    assert [len(s) for s in samplers] == [ROWS // 48] * 3
    visited = np.concatenate([b for s in samplers for b in s.batches()])
    assert all(len(b) == 16 for s in samplers for b in s.batches())
    assert len(np.unique(visited)) == len(visited) == (ROWS // 48) * 48


def test_same_seed_same_order_and_new_epoch_new_order():
    first = np.concatenate(RowSampler(ROWS, batch_size=8, seed=1).batches())
    again = np.concatenate(RowSampler(ROWS, batch_size=8, seed=1).batches())
    other_seed = np.concatenate(RowSampler(ROWS, batch_size=8, seed=2).batches())
    sampler = RowSampler(ROWS, batch_size=8, seed=1)
    sampler.set_epoch(1)
    next_epoch = np.concatenate(sampler.batches())
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other_seed)
    assert not np.array_equal(first, next_epoch)
    assert np.array_equal(np.sort(next_epoch), np.arange(ROWS))
    # The order does not depend on how the rows are split: one rank of 1 == ranks of 2 interleaved.
    two = rank_samplers(2, batch_size=4, seed=1)
    interleaved = np.concatenate([b for pair in zip(*(s.batches() for s in two), strict=False) for b in pair])
    assert np.array_equal(interleaved, RowSampler(ROWS, batch_size=8, seed=1).order()[: len(interleaved)])


def test_episode_shuffle_keeps_pools_of_whole_episodes_together():
    sampler = RowSampler(ROWS, batch_size=8, seed=3, shuffle="episode", episode_index=EPISODES, pool_episodes=4)
    episodes_in_order = EPISODES[sampler.order()]
    episodes, first_seen = np.unique(episodes_in_order, return_index=True)
    seen_episodes = episodes[np.argsort(first_seen)].tolist()
    first_pool = set(seen_episodes[:4])
    pool_rows = int(np.isin(EPISODES, list(first_pool)).sum())
    assert set(episodes_in_order[:pool_rows].tolist()) == first_pool
    assert seen_episodes != sorted(seen_episodes)  # episodes are shuffled too


def test_resume_with_another_world_size_and_batch_size_loses_and_repeats_nothing():
    # Two ranks take 7 steps of 2 x 16 rows, then the job restarts on three ranks with batch 10.
    before = rank_samplers(2, batch_size=16, seed=9, epoch=4)
    consumed = np.concatenate([b for s in before for b in s.batches()[:7]])
    state = before[0].state_dict(batches_consumed=7)
    assert state["consumed"] == 7 * 2 * 16 and state["epoch"] == 4
    after = rank_samplers(3, batch_size=10, seed=9)
    for sampler in after:
        sampler.load_state_dict(state)
    rest = np.concatenate([b for s in after for b in s.batches()])
    everything = np.concatenate([consumed, rest])
    assert len(everything) == ROWS
    assert np.array_equal(np.sort(everything), np.arange(ROWS))
    # The first batch after resuming is exactly the next rows of the epoch's order.
    assert np.array_equal(after[0].batches()[0], before[0].order()[224:234])


def test_resume_with_more_workers_than_before():
    sampler = RowSampler(ROWS, batch_size=16, seed=2)
    consumed = np.concatenate(sampler.batches()[:5])
    resumed = RowSampler(ROWS, batch_size=16, seed=2)
    resumed.load_state_dict(sampler.state_dict(batches_consumed=5))
    rest = np.concatenate([b for w in range(4) for b in resumed.batches(WorkerShard(w, 4))])
    assert np.array_equal(np.sort(np.concatenate([consumed, rest])), np.arange(ROWS))


def test_state_of_a_finished_epoch_resumes_to_nothing():
    sampler = RowSampler(ROWS, batch_size=100)
    state = sampler.state_dict(batches_consumed=len(sampler))
    assert state["consumed"] == ROWS
    sampler.load_state_dict(state)
    assert sampler.batches() == []


def test_resume_refuses_a_checkpoint_of_another_dataset_version():
    saved = RowSampler(ROWS, batch_size=8, dataset_version=3).state_dict(batches_consumed=2)
    with pytest.raises(ValueError, match="dataset_version=3 but this sampler has dataset_version=4"):
        RowSampler(ROWS, batch_size=8, dataset_version=4).load_state_dict(saved)
    with pytest.raises(ValueError, match="num_rows=1003 but this sampler has num_rows=1000"):
        RowSampler(1000, batch_size=8, dataset_version=3).load_state_dict(saved)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="rank 2 is not in range for world_size 2"):
        RowSampler(ROWS, batch_size=8, rank=2, world_size=2)
    with pytest.raises(ValueError, match="shuffle must be one of"):
        RowSampler(ROWS, batch_size=8, shuffle="random")
    with pytest.raises(ValueError, match="needs episode_index"):
        RowSampler(ROWS, batch_size=8, shuffle="episode")


def test_outside_a_dataloader_worker_the_sampler_yields_all_rank_batches():
    sampler = RowSampler(ROWS, batch_size=32, rank=1, world_size=2)
    assert current_worker() == WorkerShard(0, 1)
    planned = list(sampler)
    assert [list(b) for b in planned] == [b.tolist() for b in sampler.batches()]
    assert (planned[0].epoch, planned[0].start) == (0, 0)
    restored = pickle.loads(pickle.dumps(planned[0]))
    assert (list(restored), restored.epoch, restored.start) == (list(planned[0]), 0, 0)

"""RowSampler: exactly-once coverage over ranks and workers, determinism, balance, resume."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from robodata.torch._sampler import RowSampler, WorkerShard, current_worker

ROWS = 1003  # prime-ish: no world size or batch size divides it
EPISODES = np.repeat(np.arange(17), np.diff(np.linspace(0, ROWS, 18).astype(int)))


def rank_samplers(world_size: int, **options) -> list[RowSampler]:
    options.setdefault("batch_size", 16)
    return [RowSampler(ROWS, rank=r, world_size=world_size, **options) for r in range(world_size)]


def all_worker_batches(samplers: list[RowSampler], num_workers: int) -> list[list[np.ndarray]]:
    """Per (rank, worker), the rows it reads that are not padding."""
    return [
        [rows[~pad] for rows, pad in s.padded_batches(WorkerShard(w, num_workers))]
        for s in samplers
        for w in range(num_workers)
    ]


def real_rows(sampler: RowSampler) -> list[np.ndarray]:
    return [rows[~pad] for rows, pad in sampler.padded_batches()]


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
        assert np.array_equal(np.sort(mine), np.sort(np.concatenate(real_rows(sampler))))


@pytest.mark.parametrize(
    ("rows", "world_size", "batch_size"), [(591, 2, 59), (1027, 8, 64), (1003, 3, 16), (10, 3, 4), (2, 3, 5)]
)
@pytest.mark.parametrize("num_workers", [1, 2])
def test_every_rank_takes_the_same_steps_and_padding_is_flagged(rows, world_size, batch_size, num_workers):
    samplers = [
        RowSampler(rows, batch_size=batch_size, rank=r, world_size=world_size, seed=4) for r in range(world_size)
    ]
    steps = [sum(len(s.padded_batches(WorkerShard(w, num_workers))) for w in range(num_workers)) for s in samplers]
    assert steps == [-(-rows // (world_size * batch_size))] * world_size
    # Within a step every rank's batch has the same size; only the last step carries padding.
    per_rank = [s.padded_batches() for s in samplers]
    for step in zip(*per_rank, strict=True):
        assert len({len(r) for r, _ in step}) == 1
    real = np.concatenate([r[~p] for s in per_rank for r, p in s])
    padded = np.concatenate([r[p] for s in per_rank for r, p in s])
    assert np.array_equal(np.sort(real), np.arange(rows))  # exactly once without the flagged rows
    assert len(padded) < world_size
    assert np.array_equal(padded, samplers[0].order()[: len(padded)])  # repeats from the epoch's start
    # The planned batches carry the flags to the worker.
    planned = list(samplers[-1])
    assert [b.padding for b in planned] == [p.tolist() for _, p in per_rank[-1]]


@pytest.mark.parametrize("batches", [0, 3, 5, 6, 9])
def test_state_dict_is_the_same_on_every_rank(batches):
    samplers = [RowSampler(591, batch_size=59, rank=r, world_size=2, seed=1) for r in range(2)]
    states = [s.state_dict(batches_consumed=batches) for s in samplers]
    assert states[0] == states[1]
    assert states[0]["consumed"] == min(batches * 118, 591)


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
    assert np.array_equal(interleaved[: ROWS - 1], RowSampler(ROWS, batch_size=8, seed=1).order()[: ROWS - 1])


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
    consumed = np.concatenate([b for s in before for b in real_rows(s)[:7]])
    state = before[0].state_dict(batches_consumed=7)
    assert state["consumed"] == 7 * 2 * 16 and state["epoch"] == 4
    after = rank_samplers(3, batch_size=10, seed=9)
    for sampler in after:
        sampler.load_state_dict(state)
    rest = np.concatenate([b for s in after for b in real_rows(s)])
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
    rest = np.concatenate([r[~p] for w in range(4) for r, p in resumed.padded_batches(WorkerShard(w, 4))])
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


def test_a_worker_maps_the_order_its_training_process_shared():
    sampler = RowSampler(ROWS, batch_size=32, seed=3)
    order = sampler.order()
    in_worker = pickle.loads(pickle.dumps(sampler))
    in_worker._shared.owner_pid = -1  # as in a spawned worker: it must not compute or write
    in_worker._make_order = None  # would raise if the worker built its own permutation
    mapped = in_worker.order()
    assert isinstance(mapped, np.memmap)
    assert np.array_equal(mapped, order)


@pytest.mark.parametrize("num_workers", [1, 3])
def test_a_window_of_a_workers_batches_equals_the_same_slice_of_all_of_them(num_workers):
    sampler = RowSampler(ROWS, batch_size=16, rank=1, world_size=2, seed=6)
    sampler.load_state_dict(sampler.state_dict(batches_consumed=4))
    for w in range(num_workers):
        everything = [rows for rows, _ in sampler.padded_batches(WorkerShard(w, num_workers))]
        for first in (0, 5, len(everything) - 2):
            window = sampler.worker_batches(WorkerShard(w, num_workers), first, 4)
            assert [b.tolist() for b in window] == [b.tolist() for b in everything[first : first + 4]]


def test_global_is_the_earlier_name_of_the_uniform_order_and_its_checkpoints_resume():
    earlier = RowSampler(100, batch_size=8, seed=3, shuffle="global")
    uniform = RowSampler(100, batch_size=8, seed=3)
    assert earlier.shuffle == uniform.shuffle == "uniform"
    assert earlier.order().tolist() == uniform.order().tolist()
    saved = {**earlier.state_dict(batches_consumed=2), "shuffle": "global"}  # saved before the rename
    uniform.load_state_dict(saved)
    assert uniform.start == 16
    with pytest.raises(ValueError, match="shuffle='episode' but this sampler has shuffle='uniform'"):
        uniform.load_state_dict({**saved, "shuffle": "episode"})

"""The loader scenario's scale parts: synthetic rows over real GOPs, per-worker memory, compat throughput."""

from __future__ import annotations

import numpy as np

import robodata
from benchmarks.loader import compat_throughput
from benchmarks.loader_scale import synthetic_dataset, worker_memory


def test_synthetic_rows_repeat_the_base_as_new_episodes(ingested, tmp_path):
    base = robodata.open(ingested)
    uri = synthetic_dataset(ingested, 1500, str(tmp_path / "big"))
    big = robodata.open(uri)
    assert len(big) == 1500
    episodes = big.to_table(columns=["episode_index"])["episode_index"].to_numpy()
    assert np.array_equal(np.unique(episodes), np.arange(8))  # 2 copies of 3 episodes, then 197 + 121 rows
    got = big.get_frames([5, 591 + 5, 1200], cameras="wrist_left")["wrist_left"]
    expected = base.get_frames([5, 5, 1200 - 2 * 591], cameras="wrist_left")["wrist_left"]
    assert np.array_equal(got, expected)
    figures = worker_memory(uri, batches=3, num_workers=1)
    assert figures["rows"] == 1500 and len(figures["workers"]) == 1
    assert figures["workers"][0]["rss_mib"] > 0 and figures["main"]["rss_mib"] > 0


def test_compat_throughput_reads_the_asked_samples(ingested):
    row = compat_throughput(ingested, num_workers=0, batch_size=8, samples=20)
    assert (row["loader"], row["workers"], row["batch_size"], row["samples"]) == ("lerobot-compat", 0, 8, 24)
    assert row["samples_per_s"] > 0


def test_first_batch_is_timed_for_both_start_methods_in_fresh_processes(ingested):
    from benchmarks.loader_scale import first_batch_times

    figures = first_batch_times(ingested)
    assert [f["start_method"] for f in figures] == ["spawn", "forkserver"]
    assert all(f["first_loader_s"] > 0 and f["second_loader_s"] > 0 for f in figures)

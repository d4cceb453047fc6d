"""The order-randomness scenario: the aim at 200 episodes holds at the order's defaults, and the
synthetic layout is what it says."""

from __future__ import annotations

import numpy as np

from benchmarks.order_randomness import CAMERAS, GOP_BYTES, randomness_aim, synthetic_layout


def test_synthetic_layout_has_the_episodes_blocks_and_bytes_it_names():
    episode_of_row, block_of_row, places = synthetic_layout(episodes=5, rows=10)
    assert np.array_equal(np.bincount(episode_of_row), [10] * 5)
    assert np.array_equal(np.bincount(block_of_row), [4, 4, 2] * 5)  # G=4, a short last block
    assert np.array_equal(places.episode, np.repeat(np.arange(5), 3))
    assert np.array_equal(places.start, np.tile([0, 4, 8], 5))
    assert places.nbytes is not None
    assert np.all((places.nbytes >= 0.75 * CAMERAS * GOP_BYTES) & (places.nbytes <= 1.25 * CAMERAS * GOP_BYTES))


def test_the_pool_order_keeps_four_fifths_of_the_uniform_orders_episodes_per_batch_at_200_episodes():
    aim = randomness_aim(200)
    figures = aim["figures"]
    assert aim["target"] == 0.8 and aim["comparison"] == ">="
    assert aim["measured"] == figures["pool"]["distinct_episodes"] / figures["uniform"]["distinct_episodes"]
    assert aim["met"], aim
    # blocks one by one mix more; runs through the pool give some of it up
    assert figures["pool"]["distinct_episodes"] < figures["block"]["distinct_episodes"]

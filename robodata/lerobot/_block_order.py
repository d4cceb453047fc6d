"""The decode-once order under LeRobot's name for a training sampler: ``BlockOrderSampler`` is
``robodata.torch``'s ``BlockItemSampler`` (the order as a ``sampler`` of items, with the interface
of LeRobot's ``EpisodeAwareSampler``), which ``LeRobotCompatDataset.item_sampler`` and
``robodata-train`` hand to LeRobot's DataLoader.

>>> sampler = BlockOrderSampler(np.repeat(np.arange(100), 8), batch_size=32, num_workers=2, window_rows=64)
>>> len(sampler), sampler.state_dict()  # LeRobot's sampler state
(800, {'epoch': 0, 'start_index': 0})
"""

from __future__ import annotations

from robodata.torch._item_order import BlockItemSampler, PlannedIndex, WorkerShard

__all__ = ["BlockOrderSampler", "PlannedIndex", "WorkerShard"]


BlockOrderSampler = BlockItemSampler  # LeRobot's name: one sampler, robodata.torch's

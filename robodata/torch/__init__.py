"""robodata for training code: the training orders, the resumable loaders, the PyTorch datasets
and their worker start-up, in one place.

- ``make_dataloader`` (a ``TorchLoader``) over a ``RoboTorchDataset``: batches in the decode-once
  ``BlockSampler`` order by default (``shuffle="uniform"``: the uniform ``RowSampler`` order),
  resumable (``state_dict``), DDP-safe; ``worker_context`` starts its workers safely after Lance.
  ``BlockItemSampler``: the same order as a ``sampler=`` of items (LeRobot's DataLoader takes one).
- ``TrainingLoader`` and ``BatchReader``: the same reads as numpy, without PyTorch.
- ``resolve_delta_timestamps``: LeRobot's ``delta_timestamps`` as row offsets; ``yuv420_to_rgb``:
  frames handed over as YUV 4:2:0, converted on the training device; ``dataset_randomness`` and
  ``batch_randomness``: how random an order's batches are; ``BlockPlaces``: where blocks lie in
  storage (the decode-once order's runs); ``take_frames_on_device``: GOPs decoded on an NVIDIA GPU.

Only ``RoboTorchDataset``, ``TorchLoader``, ``make_dataloader``, ``collate_batch``,
``worker_context``, ``yuv420_to_rgb`` and ``take_frames_on_device`` need PyTorch
(``pip install 'robodata[torch]'``): this package imports torch only when one of them is asked for.

>>> from robodata.torch import make_dataloader
>>> make_dataloader("data/demo", batch_size=8).dataset_version
3
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robodata._lazy_exports import lazy_exports

# name -> the module that defines it (imported on first use: torch only when needed)
_EXPORTS = {
    "RoboTorchDataset": "robodata.torch._torch_dataset",
    "TorchLoader": "robodata.torch._torch_dataset",
    "collate_batch": "robodata.torch._handover",
    "make_dataloader": "robodata.torch._torch_dataset",
    "worker_context": "robodata.torch._torch_dataset",
    "resolve_delta_timestamps": "robodata.torch._delta_timestamps",
    "BatchReader": "robodata.torch._batch_reader",
    "BlockSampler": "robodata.torch._block_order",
    "BlockPlaces": "robodata.torch._runs",
    "BlockItemSampler": "robodata.torch._item_order",
    "RowSampler": "robodata.torch._sampler",
    "TrainingLoader": "robodata.torch._loader",
    "make_sampler": "robodata.torch._loader",
    "dataset_randomness": "robodata.torch._batch_randomness",
    "batch_randomness": "robodata.torch._batch_randomness",
    "yuv420_to_rgb": "robodata.torch._yuv",
    "take_frames_on_device": "robodata.torch._nvdec",
}

__all__ = [
    "BatchReader",
    "BlockItemSampler",
    "BlockPlaces",
    "BlockSampler",
    "RoboTorchDataset",
    "RowSampler",
    "TrainingLoader",
    "TorchLoader",
    "batch_randomness",
    "collate_batch",
    "dataset_randomness",
    "make_dataloader",
    "make_sampler",
    "resolve_delta_timestamps",
    "take_frames_on_device",
    "worker_context",
    "yuv420_to_rgb",
]

if TYPE_CHECKING:
    from robodata.torch._batch_randomness import batch_randomness, dataset_randomness
    from robodata.torch._batch_reader import BatchReader
    from robodata.torch._block_order import BlockSampler
    from robodata.torch._delta_timestamps import resolve_delta_timestamps
    from robodata.torch._handover import collate_batch
    from robodata.torch._item_order import BlockItemSampler
    from robodata.torch._loader import TrainingLoader, make_sampler
    from robodata.torch._nvdec import take_frames_on_device
    from robodata.torch._runs import BlockPlaces
    from robodata.torch._sampler import RowSampler
    from robodata.torch._torch_dataset import (
        RoboTorchDataset,
        TorchLoader,
        make_dataloader,
        worker_context,
    )
    from robodata.torch._yuv import yuv420_to_rgb


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

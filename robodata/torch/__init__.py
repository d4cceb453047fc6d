"""robodata for training code: the sampler, the resumable loaders, the PyTorch datasets and their
worker start-up, in one place.

``RoboTorchDataset`` and ``make_dataloader`` need PyTorch
(``pip install 'robodata[torch]'``); the sampler (``robodata.torch.sampler``), the batch reader
(``robodata.torch.batch_reader``) and the numpy-only ``TrainingLoader``
(``robodata.torch.loader``) do not, so this package imports torch only when one of the former is
asked for.

>>> from robodata.torch import make_dataloader
>>> make_dataloader("data/demo", batch_size=8).dataset_version
3
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# name -> the module that defines it (imported on first use: torch only when needed)
_EXPORTS = {
    "RoboTorchDataset": "robodata.torch.torch_dataset",
    "TorchLoader": "robodata.torch.torch_dataset",
    "collate_batch": "robodata.torch.torch_dataset",
    "make_dataloader": "robodata.torch.torch_dataset",
    "worker_context": "robodata.torch.torch_dataset",
    "resolve_delta_timestamps": "robodata.torch.delta_timestamps",
}

__all__ = [
    "RoboTorchDataset",
    "TorchLoader",
    "collate_batch",
    "make_dataloader",
    "resolve_delta_timestamps",
    "worker_context",
]

if TYPE_CHECKING:
    from robodata.torch.delta_timestamps import resolve_delta_timestamps
    from robodata.torch.torch_dataset import (
        RoboTorchDataset,
        TorchLoader,
        collate_batch,
        make_dataloader,
        worker_context,
    )


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'robodata.torch' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

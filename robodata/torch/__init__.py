"""robodata for PyTorch training code.

>>> from robodata.torch import LeRobotCompatDataset      # LeRobot's item layout, keys and meta  # doctest: +SKIP
>>> from robodata.torch import make_dataloader           # robodata's resumable, DDP-safe DataLoader  # doctest: +SKIP
"""

from robodata.reader.torch_dataset import RoboTorchDataset, TorchLoader, collate_batch, make_dataloader, worker_context
from robodata.torch.lerobot_compat import LeRobotCompatDataset
from robodata.torch.lerobot_meta import LeRobotMeta

__all__ = [
    "LeRobotCompatDataset",
    "LeRobotMeta",
    "RoboTorchDataset",
    "TorchLoader",
    "collate_batch",
    "make_dataloader",
    "worker_context",
]

"""Everything LeRobot in one place: LeRobot v3 export and import, LeRobot's statistics, a pinned
robodata version as LeRobot's ``LeRobotDataset`` (``LeRobotCompatDataset``, with its
LeRobot-shaped ``meta``), and ``robodata-train`` (LeRobot's ``lerobot-train`` on robodata
datasets, ``robodata.lerobot.train``).

``LeRobotCompatDataset`` needs PyTorch (``pip install 'robodata[torch]'``); nothing else here
does, so this package imports torch only when it is asked for.

>>> from robodata.lerobot import LeRobotCompatDataset, export_lerobot
>>> export_lerobot("data/demo", "lerobot/demo", version=1, vcodec="libx264", progress=False).episodes
1
>>> LeRobotCompatDataset("data/demo", version=1).meta.total_frames
197
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robodata._lazy_exports import lazy_exports

# name -> the module that defines it (imported on first use: torch only when needed)
_EXPORTS = {
    "LEROBOT_COMMIT": "robodata.lerobot._format",
    "LeRobotFormatError": "robodata.lerobot._format",
    "camera_time_column": "robodata.lerobot._format",
    "ExportResult": "robodata.lerobot._export",
    "export_lerobot": "robodata.lerobot._export",
    "LeRobotEpisodes": "robodata.lerobot._import",
    "import_lerobot": "robodata.lerobot._import",
    "stored_stats": "robodata.lerobot._version_stats",
    "LeRobotMeta": "robodata.lerobot._meta",
    "LeRobotCompatDataset": "robodata.lerobot._compat_dataset",
}

__all__ = [
    "LEROBOT_COMMIT",
    "ExportResult",
    "LeRobotCompatDataset",
    "LeRobotEpisodes",
    "LeRobotFormatError",
    "LeRobotMeta",
    "camera_time_column",
    "export_lerobot",
    "import_lerobot",
    "stored_stats",
]

if TYPE_CHECKING:
    from robodata.lerobot._compat_dataset import LeRobotCompatDataset
    from robodata.lerobot._export import ExportResult, export_lerobot
    from robodata.lerobot._format import LEROBOT_COMMIT, LeRobotFormatError, camera_time_column
    from robodata.lerobot._import import LeRobotEpisodes, import_lerobot
    from robodata.lerobot._meta import LeRobotMeta
    from robodata.lerobot._version_stats import stored_stats


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

"""Moving data in and out: LeRobot v3 export; LeRobot v3 and ALOHA / ACT HDF5 import through
one driver (``import_episodes``) over ``EpisodeSource``s."""

from robodata.interop.episode_source import EpisodeSource, import_episodes
from robodata.interop.hdf5_import import import_hdf5
from robodata.interop.import_result import ImportResult
from robodata.interop.lerobot_export import ExportResult, export_lerobot
from robodata.interop.lerobot_import import import_lerobot
from robodata.interop.sources import IMPORT_FORMATS, open_episode_source

__all__ = [
    "IMPORT_FORMATS",
    "EpisodeSource",
    "ExportResult",
    "ImportResult",
    "export_lerobot",
    "import_episodes",
    "import_hdf5",
    "import_lerobot",
    "open_episode_source",
]

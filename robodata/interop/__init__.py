"""Importing recordings: ALOHA / ACT HDF5 (``import_hdf5``), and the format registry
(``IMPORT_FORMATS``, ``open_episode_source``) that names every ``EpisodeSource`` robodata reads
(LeRobot's is ``robodata.lerobot.LeRobotEpisodes``) for ``import_episodes``, the one import driver."""

from robodata.ingest._episode_source import EpisodeSource, import_episodes
from robodata.ingest._import_result import ImportResult
from robodata.interop._hdf5_import import import_hdf5
from robodata.interop._sources import IMPORT_FORMATS, open_episode_source

__all__ = [
    "IMPORT_FORMATS",
    "EpisodeSource",
    "ImportResult",
    "import_episodes",
    "import_hdf5",
    "open_episode_source",
]

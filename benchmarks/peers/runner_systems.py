"""The systems a runner job can name, and opening the one it names."""

from __future__ import annotations

from benchmarks.peers.runner_peers import LanceDBSystem, LeRobotSystem, StreamingLeRobotSystem
from benchmarks.peers.runner_robodata import RobodataCompatSystem, RobodataSystem

SYSTEMS = ("robodata", "robodata-compat", "lerobot", "lerobot-streaming", "lancedb")


def open_system(job: dict):
    """The reader a job names."""
    system = job.get("system")
    if system not in SYSTEMS:
        raise ValueError(f"job names system {system!r}; expected one of {SYSTEMS}")
    classes = {
        "robodata": RobodataSystem,
        "robodata-compat": RobodataCompatSystem,
        "lerobot": LeRobotSystem,
        "lerobot-streaming": StreamingLeRobotSystem,
        "lancedb": LanceDBSystem,
    }
    return classes[system](job)

"""Where the local instance keeps its files: a folder named relative to the instance folder
($DAGSTER_HOME), so that ``DAGSTER_HOME=$PWD`` at the repository root keeps everything under
``.dagster/`` (git-ignored) and ``robodata demo``'s instance under its own folder, with the same
dagster.yaml. Dagster's own classes take a ``base_dir`` relative to the working directory of
each process; these resolve it against $DAGSTER_HOME first. Named in dagster.yaml.

>>> os.environ["DAGSTER_HOME"] = "/srv/lab"
>>> in_instance_folder(".dagster/storage"), in_instance_folder("/var/dagster")
('/srv/lab/.dagster/storage', '/var/dagster')
"""

from __future__ import annotations

import os
from typing import Any

from dagster._core.storage.local_compute_log_manager import LocalComputeLogManager
from dagster._core.storage.root import LocalArtifactStorage
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData


def in_instance_folder(path: str) -> str:
    """``path`` under $DAGSTER_HOME when relative (under the working directory without one)."""
    return os.path.join(os.environ.get("DAGSTER_HOME") or os.getcwd(), path)


class InstanceFolderSqliteStorage(DagsterSqliteStorage):
    """Runs, event logs and schedule/sensor state in SQLite files under ``base_dir``."""

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> DagsterSqliteStorage:  # type: ignore[override]
        return cls.from_local(in_instance_folder(config_value["base_dir"]), inst_data=inst_data)


class InstanceFolderArtifactStorage(LocalArtifactStorage):
    """Runs' local files (IO manager outputs) under ``base_dir``."""

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> LocalArtifactStorage:  # type: ignore[override]
        return cls(base_dir=in_instance_folder(config_value["base_dir"]), inst_data=inst_data)


class InstanceFolderComputeLogs(LocalComputeLogManager):
    """Steps' stdout and stderr under ``base_dir``."""

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> LocalComputeLogManager:  # type: ignore[override]
        return cls(inst_data=inst_data, **{**config_value, "base_dir": in_instance_folder(config_value["base_dir"])})

"""The Dagster instance robodata runs against, apart from the definitions: the shipped
``dagster.yaml`` (a copy of the repository root's, checked equal by the tests: SQLite storage in
the instance folder, run queue, run monitoring and retries, the video_encode pool), preparing a
``$DAGSTER_HOME`` with it, and opening the instance it names."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import yaml

from robodata.errors import InvalidArgumentError

# Package data (pyproject's [tool.setuptools.package-data]), so a wheel install has it too.
INSTANCE_CONFIG = Path(__file__).with_name("dagster.yaml")

# The run statuses of a run that has not finished: what a migration waits for, and what
# `deploy/cluster.sh wait` counts.
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def prepare_dagster_home(path: str | os.PathLike) -> Path:
    """Create ``path`` with robodata's dagster.yaml (kept if one is there) and point
    DAGSTER_HOME at it for this process and its children. The shipped file names its storage
    folders relative to the working directory (the repository root, for ``DAGSTER_HOME=$PWD``);
    this copy names them under ``path``, wherever the process runs.

    >>> home = prepare_dagster_home("demo/dagster_home")
    >>> home
    PosixPath('.../demo/dagster_home')
    >>> os.environ["DAGSTER_HOME"] == str(home), (home / "dagster.yaml").is_file()
    (True, True)
    """
    home = Path(path).resolve()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text(instance_config_in(home))
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def instance_config_in(home: Path) -> str:
    """The shipped dagster.yaml with every relative ``base_dir`` made absolute under ``home``.

    >>> print(instance_config_in(Path("/srv/lab")).split("storage:")[1].split("local_")[0].strip())
    sqlite:
        base_dir: /srv/lab/.dagster
    """

    def under_home(node):
        if isinstance(node, dict):
            return {
                key: str(home / value) if key == "base_dir" and not os.path.isabs(value) else under_home(value)
                for key, value in node.items()
            }
        return node

    return yaml.safe_dump(under_home(yaml.safe_load(INSTANCE_CONFIG.read_text())), sort_keys=False)


@contextmanager
def home_instance():
    """The Dagster instance in $DAGSTER_HOME, or a ValueError saying how to point at one."""
    if not os.environ.get("DAGSTER_HOME"):
        raise InvalidArgumentError(
            "DAGSTER_HOME is not set: point it at the Dagster instance folder (holding dagster.yaml)"
        )
    with dg.DagsterInstance.get() as instance:
        yield instance

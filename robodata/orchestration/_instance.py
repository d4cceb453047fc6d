"""The Dagster instance robodata runs against, apart from the definitions: the shipped
``dagster.yaml`` (a copy of the repository root's, checked equal by the tests: SQLite storage in
the instance folder, run queue, run monitoring and retries, the video_encode pool), preparing a
``$DAGSTER_HOME`` with it, and opening the instance it names."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

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
    DAGSTER_HOME at it for this process and its children.

    >>> home = prepare_dagster_home("demo/dagster_home")
    >>> home
    PosixPath('.../demo/dagster_home')
    >>> os.environ["DAGSTER_HOME"] == str(home), (home / "dagster.yaml").is_file()
    (True, True)
    """
    home = Path(path).resolve()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copyfile(INSTANCE_CONFIG, home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


@contextmanager
def home_instance():
    """The Dagster instance in $DAGSTER_HOME, or a ValueError saying how to point at one."""
    if not os.environ.get("DAGSTER_HOME"):
        raise InvalidArgumentError(
            "DAGSTER_HOME is not set: point it at the Dagster instance folder (holding dagster.yaml)"
        )
    with dg.DagsterInstance.get() as instance:
        yield instance

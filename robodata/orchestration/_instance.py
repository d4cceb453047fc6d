"""The Dagster instance robodata runs against, apart from the definitions: the shipped
``dagster.yaml`` (a copy of the repository root's, checked equal by the tests: SQLite storage in
the instance folder, run queue, run monitoring and retries, the video_encode pool), writing a
``$DAGSTER_HOME`` with it, and opening the instance it names."""

from __future__ import annotations

import os
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


def write_dagster_home(path: str | os.PathLike) -> tuple[Path, bool]:
    """Create the instance folder ``path`` with robodata's dagster.yaml in it (``robodata
    dagster-home DIR``). A dagster.yaml already there is kept: it may be a deployment's own.
    Returns the folder, absolute (DAGSTER_HOME must be), and whether the file was written.
    Dagster keeps the instance's storage under the folder, whatever the working directory.

    >>> write_dagster_home("lab_home")
    (PosixPath('.../lab_home'), True)
    >>> write_dagster_home("lab_home")[1]  # kept
    False
    """
    home = Path(path).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if config.exists():
        return home, False
    config.write_bytes(INSTANCE_CONFIG.read_bytes())
    return home, True


def prepare_dagster_home(path: str | os.PathLike) -> Path:
    """``write_dagster_home(path)``, and DAGSTER_HOME pointed at it for this process and its
    children.

    >>> home = prepare_dagster_home("demo/dagster_home")
    >>> home
    PosixPath('.../demo/dagster_home')
    >>> os.environ["DAGSTER_HOME"] == str(home), (home / "dagster.yaml").is_file()
    (True, True)
    """
    home, _ = write_dagster_home(path)
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

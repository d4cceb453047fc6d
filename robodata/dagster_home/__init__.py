"""A local Dagster instance for the embedded default: DAGSTER_HOME with the dagster.yaml shipped
in this package (SQLite storage in the instance folder, run queue, the video_encode pool)."""

import os
import shutil
from pathlib import Path

# Package data (pyproject's [tool.setuptools.package-data]), so a wheel install has it too; the
# repository root holds the same file for Dagster commands run there.
INSTANCE_CONFIG = Path(__file__).with_name("dagster.yaml")


def prepare_dagster_home(path: str | os.PathLike) -> Path:
    """Create ``path`` with robodata's dagster.yaml (kept if one is there) and point
    DAGSTER_HOME at it for this process and its children.

    >>> prepare_dagster_home("demo/dagster_home")  # doctest: +SKIP
    PosixPath('/home/me/robodata/demo/dagster_home')
    """
    home = Path(path).resolve()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copyfile(INSTANCE_CONFIG, home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home)
    return home

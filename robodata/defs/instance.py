"""A local Dagster instance for the embedded default: DAGSTER_HOME with the repository's
dagster.yaml (SQLite storage, run queue, the video_encode pool)."""

import os
import shutil
from pathlib import Path

INSTANCE_CONFIG = Path(__file__).resolve().parents[2] / "dagster.yaml"


def prepare_dagster_home(path: str | os.PathLike) -> Path:
    """Create ``path`` with the repository's dagster.yaml (kept if one is there) and point
    DAGSTER_HOME at it for this process and its children.

    >>> prepare_dagster_home("demo/dagster_home")
    PosixPath('/home/me/robodata/demo/dagster_home')
    """
    home = Path(path).resolve()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        if not INSTANCE_CONFIG.exists():
            raise FileNotFoundError(f"{INSTANCE_CONFIG}: instance config missing; run from a robodata checkout")
        shutil.copyfile(INSTANCE_CONFIG, home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home)
    return home

"""The Dagster instance robodata runs against, apart from the definitions: the shipped
``dagster.yaml`` (the one instance config: SQLite storage in the instance folder, run queue, run
monitoring and retries, the video_encode pool), preparing a ``$DAGSTER_HOME`` with it, and what
the ``robodata`` command does to the instance (add partitions for uploads and import sources, so
a person or a script need not open the UI)."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from robodata.defs.batches.batches import register_upload_batches
from robodata.defs.ingest.episodes import register_uploads
from robodata.defs.interop.imports import register_import_partitions
from robodata.defs.resources import PER_BATCH, DatasetStore, partitioning
from robodata.storage import env_storage_options

# Package data (pyproject's [tool.setuptools.package-data]), so a wheel install has it too.
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


@contextmanager
def home_instance():
    """The Dagster instance in $DAGSTER_HOME, or a ValueError saying how to point at one."""
    if not os.environ.get("DAGSTER_HOME"):
        raise ValueError("DAGSTER_HOME is not set: point it at the Dagster instance folder (holding dagster.yaml)")
    with dg.DagsterInstance.get() as instance:
        yield instance


def register_uploads_from_cli(root: str | None = None, uploads_root: str | None = None) -> list[str]:
    """``register_uploads`` for ``robodata register-uploads``; unset folders take the store's defaults.
    With ``ROBODATA_PARTITIONING=batch``, one partition per upload batch (``register_upload_batches``).

    >>> register_uploads_from_cli("demo/dataset")  # doctest: +SKIP
    ['episode_000000', 'episode_000001']
    """
    store = DatasetStore(**{k: v for k, v in {"root": root, "uploads_root": uploads_root}.items() if v})
    register = register_upload_batches if partitioning() == PER_BATCH else register_uploads
    with home_instance() as instance:
        return register(instance, store)


def register_import_partitions_from_cli(source: str, format: str = "lerobot") -> list[str]:
    """``register_import_partitions`` for ``robodata register-imports``.

    >>> register_import_partitions_from_cli("exports/demo_lerobot")  # doctest: +SKIP
    ['source_episode_000000', 'source_episode_000001']
    """
    with home_instance() as instance:
        return register_import_partitions(instance, source, format, env_storage_options())

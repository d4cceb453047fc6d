"""What the ``robodata`` command does to the Dagster instance in ``$DAGSTER_HOME``: add partitions
for uploads and import sources (so a person or a script need not open the UI) and carry the
instance over to the other partitioning."""

from __future__ import annotations

from typing import Any

from robodata.errors import InvalidArgumentError
from robodata.orchestration._instance import home_instance, prepare_dagster_home  # noqa: F401  (doctests use it)
from robodata.orchestration._repartition import migrate_partitioning
from robodata.orchestration.defs.batches.batches import register_upload_batches
from robodata.orchestration.defs.ingest.episodes import register_uploads
from robodata.orchestration.defs.interop.imports import register_import_partitions
from robodata.orchestration.defs.resources import PER_BATCH, DatasetStore, partitioning, partitioning_refusal
from robodata.storage import env_storage_options


def _store_of(root: str | None, uploads_root: str | None) -> DatasetStore:
    """The store with the folders a user named; the others take the store's defaults."""
    named: dict[str, Any] = {k: v for k, v in {"root": root, "uploads_root": uploads_root}.items() if v}
    return DatasetStore(**named)


def register_uploads_from_cli(root: str | None = None, uploads_root: str | None = None) -> list[str]:
    """``register_uploads`` for ``robodata register-uploads``; unset folders take the store's defaults.
    With ``ROBODATA_PARTITIONING=batch``, one partition per upload batch (``register_upload_batches``).

    >>> _ = prepare_dagster_home("dagster_home")
    >>> register_uploads_from_cli("data/demo", "uploads")
    ['episode_000000', 'episode_000001', 'episode_000002']
    """
    store = _store_of(root, uploads_root)
    register = register_upload_batches if partitioning() == PER_BATCH else register_uploads
    with home_instance() as instance:
        if refusal := partitioning_refusal(instance):
            raise InvalidArgumentError(refusal)
        return register(instance, store)


def migrate_partitioning_from_cli(to: str, root: str | None = None, uploads_root: str | None = None) -> dict:
    """``migrate_partitioning`` for ``robodata repartition``, on $DAGSTER_HOME's instance."""
    store = _store_of(root, uploads_root)
    with home_instance() as instance:
        return migrate_partitioning(instance, store, to)


def register_import_partitions_from_cli(source: str, format: str = "lerobot") -> list[str]:
    """``register_import_partitions`` for ``robodata register-imports``.

    >>> _ = prepare_dagster_home("dagster_home")
    >>> register_import_partitions_from_cli("exports/demo_lerobot")
    ['source_episode_000000', 'source_episode_000001', 'source_episode_000002']
    """
    with home_instance() as instance:
        return register_import_partitions(instance, source, format, env_storage_options())

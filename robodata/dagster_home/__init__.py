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
from typing import Any

import dagster as dg

from robodata.defs.batches.batches import register_upload_batches
from robodata.defs.ingest.episodes import register_uploads
from robodata.defs.interop.imports import register_import_partitions
from robodata.defs.resources import (
    PARTITIONS_OF,
    PER_BATCH,
    PER_EPISODE,
    DatasetStore,
    partitioning,
    partitioning_refusal,
)
from robodata.errors import InvalidArgumentError
from robodata.format.provenance import stored_uploads
from robodata.storage import env_storage_options
from robodata.storage.upload_batches import scan_upload_batches
from robodata.storage.uploads import list_complete_uploads

# Package data (pyproject's [tool.setuptools.package-data]), so a wheel install has it too.
INSTANCE_CONFIG = Path(__file__).with_name("dagster.yaml")


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


INGEST_ASSETS = ("raw_episodes", "gop_blobs", "aligned_frames")


def migrate_partitioning(instance: dg.DagsterInstance, store: DatasetStore, to: str) -> dict[str, list[str]]:
    """Carry the instance over to partitioning ``to`` (``episode`` or ``batch``): add a partition
    per upload (or batch) the new layout finds, record the ones the dataset already holds in full
    as materialized (a runless materialization of each ingest asset naming the episodes, so
    nothing is ingested again and the asset pages show them done), then remove the old
    partitions. Their runs and materializations stay in the event log under their old keys.
    Refused while an ingest run is in flight. Returns the new keys, ``"stored"`` and ``"new"``.

    >>> import shutil  # batch 2026-12-01 holds a stored episode, 2026-12-02 a new one
    >>> _ = shutil.copytree("uploads/episode_000000", "batches/2026-12-01/episode_000000")
    >>> from robodata.sample_data import write_sample_uploads
    >>> _ = write_sample_uploads("batches/2026-12-02", episodes=1, seconds=0.5, start_index=3)
    >>> store = DatasetStore(root="data/demo", uploads_root="batches")
    >>> migrate_partitioning(dg.DagsterInstance.ephemeral(), store, "batch")
    {'stored': ['2026-12-01'], 'new': ['2026-12-02']}
    """
    if to not in PARTITIONS_OF:
        raise InvalidArgumentError(f"partitioning {to!r}: use '{PER_EPISODE}' or '{PER_BATCH}'")
    running = instance.get_runs(dg.RunsFilter(statuses=_IN_FLIGHT))
    if running:
        raise InvalidArgumentError(f"{len(running)} run(s) in flight: let them finish (or cancel them), then migrate")
    options = store.storage_options()
    held = {k: u.fingerprint for k, u in stored_uploads(store.root, storage_options=options).items()}
    if to == PER_BATCH:
        units = {
            b.batch_id: [(u.episode_id, u.fingerprint) for u in b.complete]
            for b in scan_upload_batches(store.uploads_root, options)
            if b.complete
        }
        register = register_upload_batches
    else:
        units = {
            u.episode_id: [(u.episode_id, u.fingerprint)] for u in list_complete_uploads(store.uploads_root, options)
        }
        register = register_uploads
    register(instance, store)
    stored = sorted(k for k, episodes in units.items() if all(held.get(e) == fp for e, fp in episodes))
    for key in stored:
        episodes = [e for e, _ in units[key]]
        for asset in INGEST_ASSETS:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(
                    asset_key=asset,
                    partition=key,
                    description=f"already ingested (migrated from {PARTITIONS_OF[_other(to)]} partitions)",
                    metadata={"episodes": ", ".join(episodes), "dataset_uri": store.safe_uri()},
                )
            )
    old = PARTITIONS_OF[_other(to)]
    for key in instance.get_dynamic_partitions(old):
        instance.delete_dynamic_partition(old, key)
    return {"stored": stored, "new": sorted(set(units) - set(stored))}


_IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def _other(mode: str) -> str:
    return PER_EPISODE if mode == PER_BATCH else PER_BATCH


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


def run_named_job(
    name: str,
    assets: list,
    *,
    instance: dg.DagsterInstance,
    resources: dict,
    asset_checks: list | None = None,
    job: dg.UnresolvedAssetJobDefinition | None = None,
    partition_key: str | None = None,
    run_config: dict | None = None,
) -> dg.ExecuteInProcessResult:
    """Run ``assets`` (and their ``asset_checks``) in-process as job ``name`` (``job``, e.g.
    ``ingest_episode``, or one made here over all of ``assets``), so the runs carry a name in
    the UI instead of ``__ephemeral_asset_job__``.

    >>> @dg.asset
    ... def greeting() -> str:
    ...     return "hello"
    >>> result = run_named_job("say_hello", [greeting], instance=dg.DagsterInstance.ephemeral(), resources={})
    >>> result.success, result.dagster_run.job_name
    (True, 'say_hello')
    """
    job = job or dg.define_asset_job(name, selection=assets)
    defs = dg.Definitions(assets=assets, asset_checks=asset_checks or [], jobs=[job], resources=resources)
    return defs.resolve_job_def(job.name).execute_in_process(
        instance=instance, partition_key=partition_key, run_config=run_config or {}
    )

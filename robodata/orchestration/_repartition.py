"""Carrying a Dagster instance over from one partitioning (per episode, per upload batch) to the
other, without ingesting anything again (``robodata repartition``)."""

from __future__ import annotations

import dagster as dg

from robodata.errors import InvalidArgumentError
from robodata.format._provenance import stored_uploads
from robodata.orchestration._instance import IN_FLIGHT
from robodata.orchestration.defs.batches.batches import register_upload_batches
from robodata.orchestration.defs.ingest.episodes import register_uploads
from robodata.orchestration.defs.resources import PARTITIONS_OF, PER_BATCH, PER_EPISODE, DatasetStore
from robodata.storage._upload_batches import scan_upload_batches
from robodata.storage._uploads import list_complete_uploads

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
    running = instance.get_runs(dg.RunsFilter(statuses=IN_FLIGHT))
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


def _other(mode: str) -> str:
    return PER_EPISODE if mode == PER_BATCH else PER_BATCH

"""One partition per episode: validate the upload, write its GOPs, write its aligned rows.

Every run re-checks the dataset first: when it already holds the partition's episode from the
upload the run was asked for (the sensor's fingerprint tag, else the upload as it is now), the
run writes nothing and succeeds saying so. A run retried after its worker died, or requested
again, therefore never ingests an episode twice; ``gop_blobs``' ``force`` ingests anyway (new
encoder settings).
"""

import json

import dagster as dg
from pydantic import Field

from robodata.errors import RoboDataError
from robodata.format._ids import validate_episode_id
from robodata.format._provenance import StoredUpload, stored_uploads
from robodata.format._schema import FRAMES_TABLE, GOPS_TABLE
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.ingest import read_upload
from robodata.ingest._two_step import commit_episode_frames, stage_gops
from robodata.ingest._upload_summary import describe_upload
from robodata.integrity._gop_leases import staged_gops_uri
from robodata.orchestration.defs.encoding import EncodingConfig
from robodata.orchestration.defs.ingest.views import episode_view_metadata
from robodata.orchestration.defs.lineage import code_version_of, failure, lineage_result, refused
from robodata.orchestration.defs.resources import (
    PARTITIONS_OF,
    PER_EPISODE,
    DatasetStore,
    partitioning_refusal,
    with_partitioning,
)
from robodata.orchestration.defs.retries import storage_retries
from robodata.storage import fsspec_filesystem
from robodata.storage._failures import storage_call
from robodata.storage._uploads import list_complete_uploads, upload_fingerprint

episode_partitions = dg.DynamicPartitionsDefinition(name=PARTITIONS_OF[PER_EPISODE])
FINGERPRINT_TAG = "robodata/upload_fingerprint"


class GopBlobsConfig(EncodingConfig):
    """The encoding, whether this upload may replace a different episode holding its index, and
    whether to ingest it even when the dataset holds it already."""

    replace: bool = Field(
        default=False, description="Let this upload replace a different episode holding its episode_index."
    )
    force: bool = Field(
        default=False,
        description="Ingest even when the dataset already holds this episode from this upload "
        "(e.g. to re-encode with other settings). Default: such a run writes nothing and succeeds.",
    )


class AlignedFramesConfig(dg.Config):
    """Whether to commit the rows even when the dataset holds this upload already, and whether
    to also write the episode's page (``robodata view``) next to the dataset."""

    force: bool = Field(
        default=False,
        description="Commit the episode's rows even when the dataset already holds them from this upload "
        "(a backfill of aligned_frames alone then stages the GOPs again: identical ones are reused).",
    )
    episode_page: bool = Field(
        default=False,
        description="Also write the episode's HTML page (every camera, in sync) under <root>/views/: "
        "about 1.2 MB per 4-second, 3-camera episode (the page embeds its GOPs), so off by default; "
        "`robodata view` makes one on demand.",
    )


def already_stored(context: dg.AssetExecutionContext, store: DatasetStore) -> StoredUpload | None:
    """The partition's episode as the dataset holds it, when it was stored from the upload this
    run was asked for: the fingerprint the sensor tagged the run with, else the upload's now.
    None when the run has something to write."""
    options = store.storage_options()
    stored = stored_uploads(store.root, storage_options=options).get(context.partition_key)
    if stored is None:
        return None
    requested = context.run.tags.get(FINGERPRINT_TAG) or upload_fingerprint(
        store.upload_uri(context.partition_key), options
    )
    return stored if stored.fingerprint == requested else None


def _episode_rows(store: DatasetStore, table_uri: str, episode_index: int) -> int:
    table = open_table(table_uri, store.storage_options())
    if table is None:
        return 0
    count = f"counting episode {episode_index}'s rows"
    return storage_call(count, table_uri, store.storage_options(), table.count_rows, f"episode_index = {episode_index}")


def _skipped(store: DatasetStore, stored: StoredUpload, table: str) -> dg.MaterializeResult:
    """The result of a run that found its episode stored already: nothing written, said so."""
    rows_uri = gops_uri(store.root) if table == GOPS_TABLE else frames_uri(store.root)
    return lineage_result(
        store,
        rows_written=0,
        bytes_written=0,
        table=table,
        row_count=_episode_rows(store, rows_uri, stored.episode_index),
        extra={
            "episode_index": stored.episode_index,
            "already_stored": f"{stored.episode_id} is already stored from this upload "
            f"(fingerprint {stored.fingerprint}): nothing written",
        },
    )


@dg.asset(
    partitions_def=episode_partitions,
    group_name="episodes",
    code_version=code_version_of(__file__, "raw_episodes"),
    kinds={"python"},
    description="A validated, complete upload (<uploads>/<episode_id>/ with episode.json written last).",
)
@storage_retries
def raw_episodes(context: dg.AssetExecutionContext, store: DatasetStore) -> dg.MaterializeResult:
    if refusal := partitioning_refusal(context.instance, PER_EPISODE):
        raise refused(refusal)
    upload = store.upload_uri(context.partition_key)
    try:
        summary = describe_upload(upload, store.storage_options(), store.uploads_root)
    except (RoboDataError, FileNotFoundError) as exc:
        raise failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=0,
        bytes_written=0,
        table=None,  # the upload itself: no dataset table
        extra={
            "upload": store.safe_uri(upload),
            "episode_index": summary.episode_index,
            "state_samples": summary.state_samples,
            "duration_s": round(summary.duration_s, 3),
            "control_hz": summary.control_hz,
            "cameras": json.dumps(summary.cameras),
            "task": summary.task,
            "camera_adjustments": "; ".join(summary.notes),  # rotated upright, cropped to even sizes
            "upload_fingerprint": context.run.tags.get(FINGERPRINT_TAG, ""),
        },
    )


@dg.asset(
    partitions_def=episode_partitions,
    deps=[raw_episodes],
    group_name="episodes",
    code_version=code_version_of(__file__, "gop_blobs"),
    kinds={"lance"},
    pool="video_encode",
    description="The episode's cameras cut into closed H.264 GOPs, appended to gops.lance as blobs.",
)
@storage_retries
def gop_blobs(context: dg.AssetExecutionContext, config: GopBlobsConfig, store: DatasetStore) -> dg.MaterializeResult:
    options = store.storage_options()
    stored = None if config.force else already_stored(context, store)
    if stored is not None:
        context.log.info(f"{stored.episode_id}: already stored from this upload; no GOPs written")
        return _skipped(store, stored, GOPS_TABLE)
    try:
        settings = config.encoder_settings(store.root, options)
        episode = read_upload(store.upload_uri(context.partition_key), options, store.uploads_root)
        staged = stage_gops(episode, store.root, settings, options, replace=config.replace)
    except (RoboDataError, FileNotFoundError) as exc:
        raise failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=staged.gops_written,
        bytes_written=staged.bytes_written,
        gops_version=staged.gops_version,
        table=GOPS_TABLE,
        row_count=staged.gops,  # the episode's GOP rows (written now or reused)
        extra={
            "episode_index": staged.episode_index,
            "gops": staged.gops,
            "gops_reused": staged.gops - staged.gops_written,
            "video_bytes": staged.video_bytes,
            "gop_size": settings.gop_size,
            "crf": settings.crf,
            "preset": settings.preset,
        },
    )


@dg.asset(
    partitions_def=episode_partitions,
    deps=[gop_blobs],
    group_name="episodes",
    code_version=code_version_of(__file__, "aligned_frames"),
    kinds={"lance"},
    description="The episode's control-rate rows in frames.lance, replacing any earlier copy in one commit. "
    "Materialized alone (a backfill of this asset only), it stages the episode's GOPs again first; "
    "identical GOPs are found already stored, so no GOP rows are added.",
)
@storage_retries
def aligned_frames(
    context: dg.AssetExecutionContext, config: AlignedFramesConfig, store: DatasetStore
) -> dg.MaterializeResult:
    options = store.storage_options()
    stored = None if config.force else already_stored(context, store)
    if stored is not None and not _staged(store, stored.episode_index):  # gop_blobs staged nothing
        context.log.info(f"{stored.episode_id}: already stored from this upload; no rows written")
        return _skipped(store, stored, FRAMES_TABLE)
    try:
        episode = read_upload(store.upload_uri(context.partition_key), options, store.uploads_root)
        result, restaged = commit_episode_frames(episode, store.root, options)
    except (RoboDataError, FileNotFoundError) as exc:
        raise failure(store, exc) from None
    extra = {
        "episode_index": result.episode_index,
        # The GOPs version the rows reference (Dagster's own input tag hashes partition versions).
        "input_gops_version": f"{GOPS_TABLE}@{result.gops_version}",
        "gops": result.gops,
        "restaged_gops": restaged is not None,
        "labels_kept_rows": result.labels_kept_rows,
        "labels_dropped_rows": result.labels_dropped_rows,
    }
    if restaged is not None:
        extra["gops_written"] = restaged.gops_written
    if config.episode_page:
        extra |= episode_view_metadata(context, store, result.episode_index, result.frames_version)
    return lineage_result(
        store,
        rows_written=result.rows,
        bytes_written=result.rows_bytes,
        frames_version=result.frames_version,
        row_count=result.rows,  # this episode's rows, not the table's
        extra=extra,
    )


def _staged(store: DatasetStore, episode_index: int) -> bool:
    """Whether GOPs wait staged for ``episode_index`` (a forced gop_blobs in this run)."""
    uri = staged_gops_uri(store.root, episode_index)
    fs = fsspec_filesystem(uri, store.storage_options())
    return storage_call(
        f"looking for episode {episode_index}'s staged GOPs", uri, store.storage_options(), fs.exists, uri
    )


def register_uploads(instance: dg.DagsterInstance, store: DatasetStore) -> list[str]:
    """Add a partition for every complete upload under the store's uploads root (the sensor does
    this on its own; this is for the CLI and the demo). Returns the episode ids, sorted.

    >>> register_uploads(dg.DagsterInstance.ephemeral(), DatasetStore(root="data/demo", uploads_root="uploads"))
    ['episode_000000', 'episode_000001', 'episode_000002']
    """
    keys = [u.episode_id for u in list_complete_uploads(store.uploads_root, store.storage_options())]
    for key in keys:
        validate_episode_id(key)
    existing = set(instance.get_dynamic_partitions(PARTITIONS_OF[PER_EPISODE]))
    new = [k for k in keys if k not in existing]
    if new:
        instance.add_dynamic_partitions(PARTITIONS_OF[PER_EPISODE], new)
    return keys


# With batch partitioning (ROBODATA_PARTITIONING=batch), batches/batches.py defines these keys.
EPISODE_ASSETS = [raw_episodes, gop_blobs, aligned_frames]
defs = with_partitioning(PER_EPISODE, dg.Definitions(assets=EPISODE_ASSETS))

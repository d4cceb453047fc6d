"""One partition per episode: validate the upload, write its GOPs, write its aligned rows."""

import json

import dagster as dg
from pydantic import Field

from robodata.defs.encoding import EncodingConfig
from robodata.defs.ingest.views import episode_view_metadata
from robodata.defs.lineage import CODE_VERSION, failure, lineage_result
from robodata.defs.resources import PER_EPISODE, DatasetStore, partitioning
from robodata.errors import RoboDataError
from robodata.format.ids import validate_episode_id
from robodata.format.schema import GOPS_TABLE
from robodata.ingest import read_upload
from robodata.ingest.staging import commit_episode_frames, stage_gops
from robodata.ingest.upload_summary import describe_upload
from robodata.storage.uploads import list_complete_uploads

episode_partitions = dg.DynamicPartitionsDefinition(name="episodes")
FINGERPRINT_TAG = "robodata/upload_fingerprint"
# A storage hiccup (a timeout, a 503, a dropped connection: StorageError) is retried after 3,
# 6 and 12 s (+-50% jitter, so parallel runs do not retry in step); a bad upload fails at once
# (``failure`` marks robodata's other errors as not retryable).
STORAGE_RETRY = dg.RetryPolicy(max_retries=3, delay=3, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)


class GopBlobsConfig(EncodingConfig):
    """The encoding, and whether this upload may replace a different episode holding its index."""

    replace: bool = Field(
        default=False, description="Let this upload replace a different episode holding its episode_index."
    )


@dg.asset(
    partitions_def=episode_partitions,
    group_name="episodes",
    code_version=CODE_VERSION,
    kinds={"python"},
    retry_policy=STORAGE_RETRY,
    description="A validated, complete upload (<uploads>/<episode_id>/ with episode.json written last).",
)
def raw_episodes(context: dg.AssetExecutionContext, store: DatasetStore) -> dg.MaterializeResult:
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
    code_version=CODE_VERSION,
    kinds={"lance"},
    pool="video_encode",
    retry_policy=STORAGE_RETRY,
    description="The episode's cameras cut into closed H.264 GOPs, appended to gops.lance as blobs.",
)
def gop_blobs(context: dg.AssetExecutionContext, config: GopBlobsConfig, store: DatasetStore) -> dg.MaterializeResult:
    options = store.storage_options()
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
    code_version=CODE_VERSION,
    kinds={"lance"},
    retry_policy=STORAGE_RETRY,
    description="The episode's control-rate rows in frames.lance, replacing any earlier copy in one commit. "
    "Materialized alone (a backfill of this asset only), it stages the episode's GOPs again first; "
    "identical GOPs are found already stored, so no GOP rows are added.",
)
def aligned_frames(context: dg.AssetExecutionContext, store: DatasetStore) -> dg.MaterializeResult:
    options = store.storage_options()
    try:
        episode = read_upload(store.upload_uri(context.partition_key), options, store.uploads_root)
        result, restaged = commit_episode_frames(episode, store.root, options)
    except (RoboDataError, FileNotFoundError) as exc:
        raise failure(store, exc) from None
    extra = {
        "episode_index": result.episode_index,
        "gops": result.gops,
        "restaged_gops": restaged is not None,
        "labels_kept_rows": result.labels_kept_rows,
        "labels_dropped_rows": result.labels_dropped_rows,
    }
    if restaged is not None:
        extra["gops_written"] = restaged.gops_written
    extra |= episode_view_metadata(context, store, result.episode_index, result.frames_version)
    return lineage_result(
        store,
        rows_written=result.rows,
        bytes_written=result.rows_bytes,
        frames_version=result.frames_version,
        extra=extra,
    )


def register_uploads(instance: dg.DagsterInstance, store: DatasetStore) -> list[str]:
    """Add a partition for every complete upload under the store's uploads root (the sensor does
    this on its own; this is for the CLI and the demo). Returns the episode ids, sorted.

    >>> register_uploads(dg.DagsterInstance.get(), DatasetStore())  # doctest: +SKIP
    ['episode_000000', 'episode_000001']
    """
    keys = [u.episode_id for u in list_complete_uploads(store.uploads_root, store.storage_options())]
    for key in keys:
        validate_episode_id(key)
    existing = set(instance.get_dynamic_partitions(episode_partitions.name))
    new = [k for k in keys if k not in existing]
    if new:
        instance.add_dynamic_partitions(episode_partitions.name, new)
    return keys


# With batch partitioning (ROBODATA_PARTITIONING=batch), robodata.defs.batches.batches defines these keys.
EPISODE_ASSETS = [raw_episodes, gop_blobs, aligned_frames]
defs = dg.Definitions(assets=EPISODE_ASSETS if partitioning() == PER_EPISODE else [])

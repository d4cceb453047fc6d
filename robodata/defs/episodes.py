"""One partition per episode: validate the upload, write its GOPs, write its aligned rows."""

import json

import dagster as dg
from pydantic import Field

from robodata.codec import EncoderSettings
from robodata.defs.lineage import failure, lineage_result
from robodata.defs.resources import DatasetStore
from robodata.errors import RoboDataError
from robodata.format.ids import validate_episode_id
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


class EncodingConfig(dg.Config):
    """How camera video is cut into GOPs and compressed (H.264 through PyAV/FFmpeg)."""

    gop_size: int = Field(default=8, description="Frames per closed GOP (G): a random read decodes at most G.")
    crf: int = Field(default=23, description="x264 constant rate factor: lower is better quality, bigger.")
    preset: str = Field(default="veryfast", description="x264 speed preset.")


@dg.asset(
    partitions_def=episode_partitions,
    group_name="episodes",
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
    kinds={"lance"},
    pool="video_encode",
    retry_policy=STORAGE_RETRY,
    description="The episode's cameras cut into closed H.264 GOPs, appended to gops.lance as blobs.",
)
def gop_blobs(context: dg.AssetExecutionContext, config: EncodingConfig, store: DatasetStore) -> dg.MaterializeResult:
    options = store.storage_options()
    settings = EncoderSettings(gop_size=config.gop_size, crf=config.crf, preset=config.preset)
    try:
        episode = read_upload(store.upload_uri(context.partition_key), options, store.uploads_root)
        staged = stage_gops(episode, store.root, settings, options)
    except (RoboDataError, FileNotFoundError) as exc:
        raise failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=staged.gops_written,
        bytes_written=staged.bytes_written,
        gops_version=staged.gops_version,
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
    kinds={"lance"},
    retry_policy=STORAGE_RETRY,
    description="The episode's control-rate rows in frames.lance, replacing any earlier copy in one commit. "
    "Materialized alone (a backfill of this asset only), it stages the episode's GOPs again first; "
    "identical GOPs are found already stored, so no video is written twice.",
)
def aligned_frames(context: dg.AssetExecutionContext, store: DatasetStore) -> dg.MaterializeResult:
    options = store.storage_options()
    try:
        episode = read_upload(store.upload_uri(context.partition_key), options, store.uploads_root)
        result, restaged = commit_episode_frames(episode, store.root, options)
    except (RoboDataError, FileNotFoundError) as exc:
        raise failure(store, exc) from None
    extra = {"episode_index": result.episode_index, "gops": result.gops, "restaged_gops": restaged is not None}
    if restaged is not None:
        extra["gops_written"] = restaged.gops_written
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

    >>> register_uploads(dg.DagsterInstance.get(), DatasetStore())
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


def register_uploads_from_cli(root: str | None = None, uploads_root: str | None = None) -> list[str]:
    """``register_uploads`` against the instance in $DAGSTER_HOME, for ``robodata register-uploads``."""
    import os

    if not os.environ.get("DAGSTER_HOME"):
        raise ValueError("DAGSTER_HOME is not set: point it at the Dagster instance folder (holding dagster.yaml)")
    store = DatasetStore(**{k: v for k, v in {"root": root, "uploads_root": uploads_root}.items() if v})
    with dg.DagsterInstance.get() as instance:
        return register_uploads(instance, store)


defs = dg.Definitions(assets=[raw_episodes, gop_blobs, aligned_frames])

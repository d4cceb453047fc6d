"""Blocking checks on each episode's aligned_frames: a failure stops downstream assets in the run."""

import warnings

import dagster as dg

from robodata.defs.episodes import aligned_frames, episode_partitions
from robodata.defs.resources import DatasetStore
from robodata.ingest.upload_summary import upload_episode_index, upload_state_samples
from robodata.reader.integrity import (
    IntegrityResult,
    check_alignment,
    check_references,
    check_row_count,
    check_sample_decodes,
    check_schema_metadata,
)

# Per-partition checks are a preview feature in Dagster 1.13; they are what makes a check see
# its episode, so accept them without a warning on every load.
warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
)

DECODE_SAMPLES = 8


def _episode_check(description: str):
    return dg.asset_check(
        asset=aligned_frames, blocking=True, partitions_def=episode_partitions, description=description
    )


def _result(store: DatasetStore, outcome: IntegrityResult) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=outcome.passed,
        description=store.redact(outcome.description),
        metadata={
            key: value if isinstance(value, int | float | str) else str(value) for key, value in outcome.details.items()
        },
    )


def _episode_index(context: dg.AssetCheckExecutionContext, store: DatasetStore) -> int:
    return upload_episode_index(store.upload_uri(context.partition_key), store.storage_options())


@_episode_check("frames.lance's schema metadata names control rate, joints, cameras, GOP size and codec.")
def schema_metadata_complete(context: dg.AssetCheckExecutionContext, store: DatasetStore) -> dg.AssetCheckResult:
    return _result(store, check_schema_metadata(store.root, store.storage_options()))


@_episode_check("Every row's camera references resolve to this episode's rows of gops.lance.")
def references_resolve(context: dg.AssetCheckExecutionContext, store: DatasetStore) -> dg.AssetCheckResult:
    return _result(store, check_references(store.root, _episode_index(context, store), store.storage_options()))


@_episode_check("Every row is within one camera period of its frame (half a period plus jitter).")
def alignment_within_half_period(context: dg.AssetCheckExecutionContext, store: DatasetStore) -> dg.AssetCheckResult:
    return _result(store, check_alignment(store.root, _episode_index(context, store), store.storage_options()))


@_episode_check("The episode has one row per state sample of its upload.")
def row_count_matches_upload(context: dg.AssetCheckExecutionContext, store: DatasetStore) -> dg.AssetCheckResult:
    upload = store.upload_uri(context.partition_key)
    options = store.storage_options()
    expected = upload_state_samples(upload, options)
    return _result(store, check_row_count(store.root, upload_episode_index(upload, options), expected, options))


@_episode_check(f"{DECODE_SAMPLES} random rows decode, every camera, to the recorded frame size.")
def sampled_frames_decode(context: dg.AssetCheckExecutionContext, store: DatasetStore) -> dg.AssetCheckResult:
    index = _episode_index(context, store)
    return _result(
        store,
        check_sample_decodes(store.root, index, DECODE_SAMPLES, seed=index, storage_options=store.storage_options()),
    )


episode_checks = [
    schema_metadata_complete,
    references_resolve,
    alignment_within_half_period,
    row_count_matches_upload,
    sampled_frames_decode,
]

defs = dg.Definitions(asset_checks=episode_checks)

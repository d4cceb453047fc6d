"""The checks on each episode's committed aligned_frames, run as ONE blocking multi-asset check
(one step, not one per check): a failure stops downstream assets in the run.

The same checks (and a decode of every GOP) already ran on the staged episode before its rows
were committed (robodata.integrity.audit); these confirm what landed, with the code
``robodata verify`` runs. With batch partitioning (robodata.defs.batches.batches) one step runs them on
every episode of the batch and reports each check once for the batch."""

import warnings
from collections.abc import Callable

import dagster as dg

from robodata.defs.batches.batches import upload_batches
from robodata.defs.ingest.episodes import aligned_frames, episode_partitions
from robodata.defs.resources import PER_EPISODE, DatasetStore, partitioning
from robodata.ingest.upload_summary import upload_episode_index, upload_state_samples
from robodata.integrity.episode_checks import (
    IntegrityResult,
    check_alignment,
    check_references,
    check_row_count,
    check_sample_decodes,
    check_schema_metadata,
)
from robodata.integrity.verify import verify_dataset
from robodata.reader import open_dataset
from robodata.storage.uploads import list_complete_uploads

# Per-partition checks are a preview feature in Dagster 1.13; they are what makes a check see
# its episode, so accept them without a warning on every load.
warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
)

DECODE_SAMPLES = 8

CHECK_DESCRIPTIONS = {
    "schema_metadata_complete": (
        "frames.lance's schema metadata names control rate, joints, cameras, GOP size and codec."
    ),
    "gops_match_checksums": "Every GOP of the episode matches the checksum stored with it (as `robodata verify`).",
    "references_resolve": "Every row's camera references resolve to this episode's rows of gops.lance.",
    "alignment_within_half_period": "Every row is within one camera period of its frame (half a period plus jitter).",
    "row_count_matches_upload": "The episode has one row per state sample of its upload.",
    "sampled_frames_decode": f"{DECODE_SAMPLES} random rows decode, every camera, to the recorded frame size.",
}


def _result(store: DatasetStore, name: str, outcome: IntegrityResult) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=aligned_frames.key,
        check_name=name,
        passed=outcome.passed,
        description=store.redact(outcome.description),
        metadata={
            key: value if isinstance(value, int | float | str) else str(value) for key, value in outcome.details.items()
        },
    )


def _gops_match_checksums(store: DatasetStore, episode_index: int) -> IntegrityResult:
    report = verify_dataset(store.root, episode_index=episode_index, storage_options=store.storage_options())
    gop_problems = [p for p in report.problems if not p.startswith(f"episode {episode_index}: rows point")]
    details = {"gops_checked": report.gops.checked}
    if gop_problems:
        return IntegrityResult(False, f"episode {episode_index}: " + "; ".join(gop_problems[:5]), details)
    checked = report.gops.checked
    return IntegrityResult(True, f"episode {episode_index}: all {checked} GOPs match their checksums", details)


def _episode_outcomes(store: DatasetStore, upload: str) -> dict[str, Callable[[], IntegrityResult]]:
    """The checks of the episode stored from ``upload``, by name (run when called)."""
    options = store.storage_options()
    index = upload_episode_index(upload, options)
    return {
        "schema_metadata_complete": lambda: check_schema_metadata(store.root, options),
        "gops_match_checksums": lambda: _gops_match_checksums(store, index),
        "references_resolve": lambda: check_references(store.root, index, options),
        "alignment_within_half_period": lambda: check_alignment(store.root, index, options),
        "row_count_matches_upload": lambda: check_row_count(
            store.root, index, upload_state_samples(upload, options), options
        ),
        "sampled_frames_decode": lambda: check_sample_decodes(
            open_dataset(store.root, storage_options=options), index, DECODE_SAMPLES, seed=index
        ),
    }


def _specs(partitions: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(name, asset=aligned_frames, blocking=True, description=description, partitions_def=partitions)
        for name, description in CHECK_DESCRIPTIONS.items()
    ]


@dg.multi_asset_check(
    specs=_specs(episode_partitions),
    description="The episode's checks on its committed rows and GOPs, in one step.",
)
def episode_integrity(context: dg.AssetCheckExecutionContext, store: DatasetStore):
    for name, outcome in _episode_outcomes(store, store.upload_uri(context.partition_key)).items():
        yield _result(store, name, outcome())


@dg.multi_asset_check(
    specs=_specs(upload_batches),
    description="The same checks on every episode of the batch (batch partitioning), in one step.",
)
def batch_integrity(context: dg.AssetCheckExecutionContext, store: DatasetStore):
    uploads = list_complete_uploads(store.batch_uri(context.partition_key), store.storage_options())
    checks = [_episode_outcomes(store, upload.uri) for upload in uploads]
    for name in CHECK_DESCRIPTIONS:
        # The dataset-wide check once; the others on each episode of the batch.
        outcomes = [checks[0][name]()] if checks and name == "schema_metadata_complete" else [c[name]() for c in checks]
        yield _result(store, name, combined(outcomes, [u.episode_id for u in uploads]))


def combined(outcomes: list[IntegrityResult], episodes: list[str]) -> IntegrityResult:
    """One result for a batch: passed when every episode's passed; the failures described.

    >>> combined([IntegrityResult(True, "ok"), IntegrityResult(False, "episode 1: 2 rows")], ["a", "b"]).description
    '1 of 2 episodes failed: episode 1: 2 rows'
    """
    failed = [o.description for o in outcomes if not o.passed]
    if not outcomes:
        return IntegrityResult(False, "the batch holds no complete upload", {"episodes_checked": 0})
    details = {"episodes_checked": len(outcomes), "episodes_failed": len(failed)}
    if failed:
        return IntegrityResult(
            False, f"{len(failed)} of {len(outcomes)} episodes failed: " + "; ".join(failed[:5]), details
        )
    if len(outcomes) == 1:
        return IntegrityResult(True, outcomes[0].description, details | dict(outcomes[0].details))
    more = f" and {len(episodes) - 5} more" if len(episodes) > 5 else ""
    return IntegrityResult(True, f"all {len(outcomes)} episodes passed: {', '.join(episodes[:5])}{more}", details)


episode_checks = [episode_integrity]
batch_checks = [batch_integrity]

defs = dg.Definitions(asset_checks=episode_checks if partitioning() == PER_EPISODE else batch_checks)

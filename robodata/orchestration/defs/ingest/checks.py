"""The checks on each episode's committed aligned_frames, run as ONE blocking multi-asset check
(one step, not one per check): a failure stops downstream assets in the run.

The same checks (and a decode of every GOP) already ran on the staged episode before its rows
were committed (robodata.integrity._audit); these confirm what landed, with the code
``robodata verify`` runs. With batch partitioning, ``batches/checks.py`` runs them in one step on
every episode of the batch and reports each check once for the batch."""

import warnings
from collections.abc import Callable, Mapping

import dagster as dg

from robodata.ingest._upload_summary import upload_episode_index, upload_state_samples
from robodata.integrity._episode_checks import (
    IntegrityResult,
    check_alignment,
    check_references,
    check_row_count,
    check_sample_decodes,
    check_schema_metadata,
)
from robodata.integrity._verify import verify_dataset
from robodata.orchestration.defs.ingest.episodes import aligned_frames, episode_partitions
from robodata.orchestration.defs.resources import PER_EPISODE, DatasetStore, with_partitioning
from robodata.reader import open_dataset

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
        metadata=check_metadata(outcome.details),
    )


def check_metadata(details: Mapping[str, object]) -> dict[str, int | float | str]:
    """A check's details as metadata Dagster can plot: numbers stay numbers, and a number per
    camera (``max_error_ms``) becomes one entry per camera plus the worst of them.

    >>> check_metadata({"max_error_ms": {"top": 1.5, "wrist": 4.0}, "gops_checked": 12})
    {'max_error_ms': 4.0, 'max_error_ms/top': 1.5, 'max_error_ms/wrist': 4.0, 'gops_checked': 12}
    """
    metadata: dict[str, int | float | str] = {}
    for key, value in details.items():
        if isinstance(value, dict) and all(isinstance(v, int | float) for v in value.values()):
            if value:
                metadata[key] = max(value.values())
            metadata.update({f"{key}/{part}": number for part, number in value.items()})
        else:
            metadata[key] = value if isinstance(value, int | float | str) else str(value)
    return metadata


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
    # Per-partition checks are a preview feature in Dagster 1.13; they are what makes a check see
    # its episode (or batch), so accept them without a warning on every load.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
        )
        return [
            dg.AssetCheckSpec(
                name, asset=aligned_frames, blocking=True, description=description, partitions_def=partitions
            )
            for name, description in CHECK_DESCRIPTIONS.items()
        ]


@dg.multi_asset_check(
    specs=_specs(episode_partitions),
    description="The episode's checks on its committed rows and GOPs, in one step.",
)
def episode_integrity(context: dg.AssetCheckExecutionContext, store: DatasetStore):
    for name, outcome in _episode_outcomes(store, store.upload_uri(context.partition_key)).items():
        yield _result(store, name, outcome())


episode_checks = [episode_integrity]

defs = with_partitioning(PER_EPISODE, dg.Definitions(asset_checks=episode_checks))
